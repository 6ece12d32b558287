#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/test_gpu_sources_build.sh - every GPU program still builds, on a machine without a
# GPU: each .cu of tests/gpu/ and bench/ compiled and linked by nvcc the way the
# run_*_on_gpu.sh scripts build them (against this build's libgdrapi and the toolkit's stub
# libcuda), the C programs of "make gpu-tests", dmabuf_r610_checks and the bridge's C probes
# (tests/gpu/bridge/*.c), and gdrcopy_pplat with its GPU kernel (the
# fatbin tools/gen_fatbin.sh embeds). A GPU test that no longer builds fails here, not on the
# next GPU call. Skips without nvcc, except under CI, which has the toolkit.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
BUILD=${BUILD:-build}
CUDA=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$(command -v nvcc || echo "$CUDA/bin/nvcc")}
if ! [ -x "$NVCC" ]; then
    [ -n "${CI:-}" ] && { t_fail nvcc "CI has the CUDA toolkit, but no nvcc at $NVCC"; t_done; }
    t_skip_all "no nvcc: the GPU programs cannot be compiled here"
fi
t_make lib "lib" || t_done
out=$BUILD/gpu-sources
mkdir -p "$out"

# The flags of run_bridge_on_gpu.sh / run_reads_on_gpu.sh / run_alloc_probe_on_gpu.sh, plus
# the include paths any of them adds. One compile at a time: CI has two cores.
for src in $(find tests/gpu bench -name '*.cu' | sort); do
    name=$(basename "$src" .cu)
    if log=$("$NVCC" -O2 -arch=sm_90 -Iinclude -Itests/lib -Itests/gpu -Itests/gpu/bridge \
            -o "$out/$name" "$src" tests/lib/t.c -L"$BUILD/lib" -lgdrapi \
            -L"$CUDA/lib64/stubs" -lcuda -lpthread -ldl 2>&1); then
        t_ok "nvcc/$src"
    else
        t_fail "nvcc/$src" "$(printf '%s\n' "$log" | grep -m1 -E 'error' || printf '%s\n' "$log" | tail -n 1)"
        printf '%s\n' "$log" | tail -n 15 | sed 's/^/    /'
    fi
done

if t_make gpu-tests gpu-tests; then t_ok make/gpu-tests; fi
if t_make dmabuf_r610_checks "$BUILD/gpu/dmabuf_r610_checks"; then t_ok make/dmabuf_r610_checks; fi

# The C probes of run_bridge_on_gpu.sh, built as it builds them (the C compiler, the
# toolkit's cuda.h and stub libcuda).
for src in tests/gpu/bridge/*.c; do
    name=$(basename "$src" .c)
    if log=$("${CC:-cc}" -O1 -Wall -I"$CUDA/include" -Itests/lib -Iinclude -o "$out/$name" \
            "$src" tests/lib/t.c -L"$CUDA/lib64/stubs" -lcuda 2>&1); then
        t_ok "cc/$src"
    else
        t_fail "cc/$src" "$(printf '%s\n' "$log" | grep -m1 -E 'error' || printf '%s\n' "$log" | tail -n 1)"
        printf '%s\n' "$log" | tail -n 15 | sed 's/^/    /'
    fi
done

# pplat with its kernel: the generated source holds the fatbin, not the reason it is missing.
if t_make pplat "$BUILD/bin/gdrcopy_pplat"; then
    gen=$BUILD/gen/pplat_kernel.c
    if grep -q 'pplat_kernel_missing\[\] = "";' "$gen" && grep -q 'pplat_fatbin_len = sizeof' "$gen"; then
        t_ok pplat/kernel_built
    else
        t_fail pplat/kernel_built "$(grep -m1 pplat_kernel_missing "$gen")"
    fi
fi
t_done

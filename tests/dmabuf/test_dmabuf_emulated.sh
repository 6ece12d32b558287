#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/dmabuf/test_dmabuf_emulated.sh - the dma-buf backend end to end on any machine: builds
# a stand-in libcuda.so.1 (fake_cuda.c) and a client (dmabuf_client.c), then runs the client
# against the library in each mode with the stand-in found through LD_LIBRARY_PATH; again
# against the ASan+UBSan library when 'make check' has built it. One result line per case.
set -u
. "$(dirname "$0")/../lib/t.sh"
B=${BUILD:-build}
CC=${CC:-cc}
CUDA_INC=${CUDA_HOME:-/usr/local/cuda}/include
CUDA_CFLAGS=$(t_cuda_cflags "$CUDA_INC")
dir=$B/tests/dmabuf
mkdir -p "$dir/fake"
warn="-Wall -Wextra -Werror"

if ! $CC -shared -fPIC -O1 $warn $CUDA_CFLAGS -Wl,-soname,libcuda.so.1 \
        -o "$dir/fake/libcuda.so.1" tests/dmabuf/fake_cuda.c; then
    t_fail "dmabuf_emu/build_fake_cuda" "compiler failed"; exit 1
fi

build_client() { # prog source libdir cflags...: 0 when built
    local prog=$1 src=$2 lib=$3
    shift 3
    $CC -O1 -g $warn "$@" -Iinclude -Itests/lib $CUDA_CFLAGS -o "$prog" "$src" \
        tests/lib/t.c tests/lib/t_proc.c -L"$lib" -lgdrapi -Wl,-rpath,"$(cd "$lib" && pwd)" -ldl
}

run_client() { # name prog mode env...: run with the stand-in, one result line per case
    local name=$1 prog=$2 mode=$3 out rc
    shift 3
    out=$(env -u GDRCOPY_BACKEND -u GDRCOPY_USE_DMABUF_MMAP -u GDRCOPY_ENABLE_LOGGING \
          -u VRAMIO_DMA_CROSSOVER_READ -u VRAMIO_DMA_CROSSOVER_WRITE \
          LD_LIBRARY_PATH="$dir/fake" "$@" "$prog" "$mode" 2>&1)
    rc=$?
    printf '%s\n' "$out" | sed -n "s#^\(ok\|not ok\|skip\) #\1 dmabuf_emu/$name/#p"
    if [ $rc -ne 0 ] && ! printf '%s\n' "$out" | grep -q '^not ok '; then
        t_fail "dmabuf_emu/$name/exit" "status $rc"
        printf '%s\n' "$out" | tail -n 5 | sed 's/^/    /'
    fi
}

run_modes() { # label libdir [cflags]
    local label=$1 lib=$2 prog=$dir/client_$1 auto=$dir/auto_$1 mode
    shift 2
    if ! build_client "$prog" tests/dmabuf/dmabuf_client.c "$lib" "$@"; then
        t_fail "dmabuf_emu/$label/build_client" "compiler failed"; return
    fi
    run_client "$label/main" "$prog" main FAKE_CUDA_VERSION=13030
    run_client "$label/old" "$prog" old FAKE_CUDA_VERSION=13000
    run_client "$label/refuse" "$prog" refuse FAKE_CUDA_VERSION=13030 FAKE_CUDA_MMAP=refuse
    run_client "$label/forced_refuse" "$prog" forced_refuse FAKE_CUDA_VERSION=13000 \
        FAKE_CUDA_MMAP=refuse GDRCOPY_USE_DMABUF_MMAP=1
    run_client "$label/forced_ok" "$prog" forced_ok FAKE_CUDA_VERSION=13000 GDRCOPY_USE_DMABUF_MMAP=1
    # The _auto copies (src/copy_dma.c) against the same stand-in.
    if ! build_client "$auto" tests/dmabuf/dma_auto_client.c "$lib" "$@"; then
        t_fail "dmabuf_emu/$label/build_auto_client" "compiler failed"; return
    fi
    set -- FAKE_CUDA_VERSION=13030 VRAMIO_DMA_CROSSOVER_READ=8K VRAMIO_DMA_CROSSOVER_WRITE=8192
    run_client "$label/auto_set" "$auto" set "$@"
    run_client "$label/auto_noctx" "$auto" noctx "$@" FAKE_CUDA_NO_CTX=1
    run_client "$label/auto_measured" "$auto" measured FAKE_CUDA_VERSION=13030
    run_client "$label/auto_otherctx" "$auto" otherctx "$@" FAKE_CUDA_OTHER_CTX=1
}

run_modes plain "$B/lib"
if [ -e "$B/asan/lib/libgdrapi.so" ]; then
    run_modes asan "$B/asan/lib" -fsanitize=address,undefined -fno-sanitize-recover=all
fi
t_done

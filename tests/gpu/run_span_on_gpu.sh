#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_span_on_gpu.sh - pins across several CUDA allocations side by side (the vulkan
# backend's spanning pins, docs/large-allocations.md), on a GPU machine, from the repository
# root, in about a minute: tests/gpu/span_pin.cu with the vulkan backend opted into and forced
# (VRAMIO_ENABLE_VULKAN=1 GDRCOPY_BACKEND=vulkan), no vramio-run: three 64 MiB POSIX-fd
# allocations in one reservation (and 3 x 1 GiB where the GPU has the memory; MAX_GIB, default
# 1, the largest to try) pinned whole and 1 MiB inside the third, each pin timed, a GPU write
# read by the CPU across the seams and a CPU write checked by the GPU, the window gone after
# unpin. The backend's debug log says whether the device offers placed maps, the verdict of
# its once-per-GPU check and each span it maps ("# log:" lines).
# Logs go to $OUT (build.log, span.log); result lines and a summary to stdout and
# $OUT/summary.log. BUDGET (seconds, default 300) bounds the whole run.
set -u
. "$(dirname "$0")/gpu_script.sh"
gpu_script_start /tmp/vramio-span 300 summary.log
[ -f .gpu/env.sh ] && . .gpu/env.sh
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
B=build/gpu/span
mkdir -p "$B"

if ! timeout $(tmo 200) make -j16 lib > "$OUT/build.log" 2>&1; then
    say "not ok span/build: make failed"; tail -20 "$OUT/build.log"; exit 1
fi
if ! timeout $(tmo 150) "$NVCC" -O2 -arch=sm_90 -Iinclude -Itests/lib -Itests/gpu/bridge \
        -o "$B/span_pin" tests/gpu/span_pin.cu tests/lib/t.c -Lbuild/lib -lgdrapi -lcuda \
        -Xlinker -rpath -Xlinker "$PWD/build/lib" -lpthread -ldl >> "$OUT/build.log" 2>&1; then
    say "not ok span/build: nvcc failed (see $OUT/build.log)"; tail -20 "$OUT/build.log"; exit 1
fi
if ! timeout $(tmo 30) nvidia-smi -L >/dev/null 2>&1; then
    say "skip span/all: no NVIDIA GPU here (the program was built)"; exit 0
fi

# The backend's own lines (its check of placed maps, each span it maps) go to the log too.
env -u GDRCOPY_USE_DMABUF_MMAP VRAMIO_ENABLE_VULKAN=1 GDRCOPY_BACKEND=vulkan \
    GDRCOPY_ENABLE_LOGGING=1 GDRCOPY_LOG_LEVEL=1 \
    timeout $(tmo 240) "$B/span_pin" "${MAX_GIB:-1}" > "$OUT/span.log" 2>&1
echo "exit $?" >> "$OUT/span.log"
grep -E '^(ok|not ok|skip|exit) ' "$OUT/span.log" | tee -a "$S"
grep -E 'placed maps|span 0x|cannot span' "$OUT/span.log" | head -12 | sed 's/^/# log: /' | tee -a "$S"
say "== span: $(grep -c '^ok ' "$OUT/span.log") ok, $(grep -c '^not ok ' "$OUT/span.log") not ok, $(grep -c '^skip ' "$OUT/span.log") skip; $(($(date +%s) - start)) s"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_dmabuf_r610_checks.sh - on a GPU machine, from the repository root: what only a
# CUDA driver that maps dma-buf exports for the CPU (13.3, the 610 series, or newer) can settle
# about the dmabuf backend (docs/dmabuf.md): the PCIE flag's refusal code, cross-GPU export
# contexts, per-buffer mmap refusals, whether a mapping survives cuMemFree, WC or cached PTEs.
# Builds the library and tests/gpu/dmabuf_r610_checks.c (tests/gpu/gpu.mk: cuda.h only, libcuda
# is loaded at run time), runs each check in a fresh process with the dmabuf backend forced, and
# prints the findings (lines "# ...") and results. On an older driver it says "not R610,
# nothing settled" and exits 0. Logs go to $OUT (default /tmp/vramio-gpu).
set -u
OUT=${OUT:-/tmp/vramio-gpu}
mkdir -p "$OUT"
[ -f .gpu/env.sh ] && . .gpu/env.sh
B=${BUILD:-build}
prog=$B/gpu/dmabuf_r610_checks
if [ "${VRAMIO_SKIP_BUILD:-0}" != 1 ] && ! make -j"$(nproc)" BUILD="$B" lib > "$OUT/build_r610.log" 2>&1; then
    tail -20 "$OUT/build_r610.log"; exit 1
fi
if ! make BUILD="$B" "$prog" >> "$OUT/build_r610.log" 2>&1; then
    tail -20 "$OUT/build_r610.log"; exit 1
fi
fail=0
for check in pcie contexts refusals free pte; do
    log=$OUT/dmabuf_r610_$check.log
    GDRCOPY_BACKEND=dmabuf timeout --kill-after=10 300 "$prog" "$check" > "$log" 2>&1
    st=$?
    echo "== $check (exit $st)"
    grep -vE '^(gdrapi|vramio): ' "$log" | cut -c1-300
    case $st in
        0) ;;
        77) grep -q '^not R610' "$log" && { echo "not R610, nothing settled"; exit 0; }
            exit 0 ;;
        *) fail=1 ;;
    esac
done
exit $fail

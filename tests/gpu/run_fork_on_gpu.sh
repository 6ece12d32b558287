#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_fork_on_gpu.sh - on a GPU machine, from the repository root: what a program
# loading us must be able to rely on (issue 10): the fork and exit sequences of
# tests/gpu/fork_test.c (every scenario in a fresh process, every wait bounded), a default
# gdr_open without the module getting NULL, the NCCL-style VMM path with VRAMIO_ENABLE_VULKAN=1,
# and gdrcopy_sanity on every allocation kind with the extended tests (-e), once more selected
# by upstream's test names. Logs go to $OUT (default /tmp/vramio-gpu); a summary to stdout.
# Usage: run_fork_on_gpu.sh [fork|sanity|all] (default all; each part fits a 10-minute run).
set -u
part=${1:-all}
OUT=${OUT:-/tmp/vramio-gpu}
mkdir -p "$OUT"
[ -f .gpu/env.sh ] && . .gpu/env.sh
if [ "${VRAMIO_SKIP_BUILD:-0}" != 1 ] && ! make -j16 all gpu-tests > "$OUT/build_fork.log" 2>&1; then
    tail -40 "$OUT/build_fork.log"
    exit 1
fi

summary() { # log label
    echo "== $2: $(grep -c '^ok ' "$1") ok, $(grep -c '^not ok ' "$1") not ok, $(grep -c '^skip ' "$1") skip; $(tail -n1 "$1")"
    grep -E '^(not ok|skip) ' "$1"
}

if [ "$part" = all ] || [ "$part" = fork ]; then
# The fork sequences; the program bounds each scenario itself, timeout bounds the whole.
env -u VRAMIO_ENABLE_VULKAN timeout 300 build/gpu/fork_test > "$OUT/fork_test.log" 2>&1
echo "exit $?" >> "$OUT/fork_test.log"
grep -E '^#' "$OUT/fork_test.log" | cut -c1-300
summary "$OUT/fork_test.log" "fork_test"

# What a program written for upstream sees by default, and what the tools report.
env -u VRAMIO_ENABLE_VULKAN timeout 60 build/bin/gdrcopy_info > "$OUT/info_default.log" 2>&1
echo "== gdrcopy_info (default settings): backends"
sed -n '/^Backends/,/^$/p' "$OUT/info_default.log" | cut -c1-200
fi
[ "$part" = all ] || [ "$part" = sanity ] || exit 0

# The sanity suite on every kind, extended tests included (the tool opts into vulkan itself).
timeout 400 build/bin/gdrcopy_sanity -e > "$OUT/sanity_all.log" 2>&1
echo "exit $?" >> "$OUT/sanity_all.log"
summary "$OUT/sanity_all.log" "gdrcopy_sanity -e (every kind)"

# Upstream's names select the same runs (scripts written for GDRCopy 2.6 run unchanged).
timeout 120 build/bin/gdrcopy_sanity -t invalidation_fork_after_gdr_map_vmmalloc \
    -t invalidation_fork_child_gdr_map_parent_vmmalloc -t invalidation_fork_map_and_free_vmmalloc \
    -t invalidation_fork_map_and_free_cumemalloc -t basic_cumemalloc \
    -t invalidation_fork_child_gdr_pin_parent_with_tokens > "$OUT/sanity_upstream.log" 2>&1
echo "exit $?" >> "$OUT/sanity_upstream.log"
summary "$OUT/sanity_upstream.log" "gdrcopy_sanity with upstream names"

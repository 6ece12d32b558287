#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run.sh - the benchmark suite behind 'make bench' (a GPU machine with a usable
# backend): runs copylat (with cuMemcpy), copybw (size sweep), apiperf and pplat with --json,
# keeps their logs, then writes docs/benchmarks.md and docs/benchmarks.svg with report.py.
#
# Environment: BUILD (default build), BENCH_OUT (logs and JSON, default $BUILD/bench),
# BENCH_KIND (allocation kind, default vramio), BENCH_GPU (default 0), BENCH_CPU (CPU to bind
# the measuring thread to; default: the tools pick the first CPU local to the GPU and print it),
# BENCH_DOCS (where the report goes, default docs).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BIN=$BUILD/bin
OUT=${BENCH_OUT:-$BUILD/bench}
KIND=${BENCH_KIND:-vramio}
GPU=${BENCH_GPU:-0}
CPU=${BENCH_CPU:-}
CPUOPT=()
[ -n "$CPU" ] && CPUOPT=(-C "$CPU")
DOCS=${BENCH_DOCS:-docs}
mkdir -p "$OUT" "$DOCS"
# The benchmarks measure vramio_alloc memory, which the vulkan backend serves: opt in, so that
# gdrcopy_info counts that backend as usable where it is the only one (no module).
export VRAMIO_ENABLE_VULKAN=${VRAMIO_ENABLE_VULKAN:-1}

run() {  # name command...: log to $OUT/name.log, stop the suite if it fails
    local name=$1; shift
    echo "== $name: $*"
    if ! "$@" >"$OUT/$name.log" 2>&1; then
        echo "bench: $name failed; its log:" >&2
        tail -n 30 "$OUT/$name.log" >&2
        exit 1
    fi
}

run info "$BIN/gdrcopy_info" --json "$OUT/info.json"
if ! grep -qE '"usable":1' "$OUT/info.json"; then
    echo "bench: no backend can map GPU memory here; see $OUT/info.log" >&2
    exit 1
fi
run copylat "$BIN/gdrcopy_copylat" -s 64M -c -A -w 100000 -r 200 "${CPUOPT[@]}" -d "$GPU" -a "$KIND" --json "$OUT/copylat.json"
run copybw  "$BIN/gdrcopy_copybw" -s 16M -l -w 10000 -r 100 "${CPUOPT[@]}" -d "$GPU" -a "$KIND" --json "$OUT/copybw.json"
run apiperf "$BIN/gdrcopy_apiperf" -s 16M -n 50 -w 5 -d "$GPU" -a "$KIND" --json "$OUT/apiperf.json"
if "$BIN/gdrcopy_pplat" -t 10000 "${CPUOPT[@]}" -d "$GPU" -G "$KIND" --json "$OUT/pplat.json" >"$OUT/pplat.log" 2>&1; then
    echo "== pplat: done"
else
    echo "== pplat: did not run (exit $?): $(tail -n 1 "$OUT/pplat.log")"
    rm -f "$OUT/pplat.json"
fi
python3 bench/report.py --dir "$OUT" --md "$DOCS/benchmarks.md" --svg "$DOCS/benchmarks.svg" \
    --command "make bench BENCH_KIND=$KIND BENCH_GPU=$GPU${CPU:+ BENCH_CPU=$CPU}"
echo "bench: wrote $DOCS/benchmarks.md and $DOCS/benchmarks.svg (logs and JSON in $OUT)"

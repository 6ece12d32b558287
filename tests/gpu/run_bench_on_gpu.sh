#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_bench_on_gpu.sh - on a GPU machine, from the repository root: build, run the
# _auto copies' GPU test (tests/gpu/gpu_auto_test.c), then 'make bench' with its report
# written to $OUT instead of docs/, and print the report's target lines (met / missed) and
# tables. Every step is bounded by timeout; a hang is a failure. Results in $OUT (default
# /tmp/vramio-bench): auto.log, bench.log, benchmarks.md, benchmarks.svg, copylat.json,
# copybw.json, gpu_bench.log.
set -u
OUT=${OUT:-/tmp/vramio-bench}
mkdir -p "$OUT"
[ -f .gpu/env.sh ] && . .gpu/env.sh
if ! make -j16 lib tools gpu-tests > "$OUT/build.log" 2>&1; then
    echo "not ok build"; tail -30 "$OUT/build.log"; exit 1
fi
timeout 120 build/gpu/gpu_auto_test > "$OUT/auto.log" 2>&1
echo "exit $?" >> "$OUT/auto.log"
grep -E '^(#|not ok|skip)' "$OUT/auto.log"
echo "== gpu_auto_test: $(grep -c '^ok ' "$OUT/auto.log") ok, $(grep -c '^not ok ' "$OUT/auto.log") not ok; $(tail -n1 "$OUT/auto.log")"

timeout 420 make bench BENCH_OUT="$OUT/raw" BENCH_DOCS="$OUT" > "$OUT/bench.log" 2>&1
rc=$?
echo "== make bench: exit $rc"
[ $rc -eq 0 ] || tail -20 "$OUT/bench.log"
cp "$OUT"/raw/copylat.json "$OUT"/raw/copybw.json "$OUT/" 2>/dev/null
grep -E '^- (met|\*\*missed)' "$OUT/benchmarks.md" 2>/dev/null
grep -E 'CPU binding|copy engine from|Crossover' "$OUT/benchmarks.md" 2>/dev/null

# The same targets seen by the paired small-copy benchmark (optional, if time is left).
timeout 150 build/gpu/gpu_bench > "$OUT/gpu_bench.log" 2>&1
echo "exit $?" >> "$OUT/gpu_bench.log"
grep '^TARGET' "$OUT/gpu_bench.log"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run_bench_on_gpu.sh - on a GPU machine, from the repository root: build, run the
# _auto copies' GPU test (tests/gpu/gpu_auto_test.c), then 'make bench' with its report
# written to $OUT instead of docs/, and print the report's target lines (met / missed) and
# tables. Every step is bounded by timeout; a hang is a failure. At most 8 files land in $OUT
# (default /tmp/vramio-bench): auto.log, bench.log, benchmarks.md, copylat.json, copylat.log,
# copybw.log, info.log and, with GPU_BENCH=1 (2-3 more minutes), gpu_bench.log; the rest of
# the run stays in /tmp/vramio-bench-work. AUTO_ONLY=1 stops after the _auto test; AUTO_TEST=0
# leaves it out (the benchmark's own _auto figures are copylat's); BENCH_S (default 400) bounds
# make bench.
#
# SMALL_WRITES=N (under a minute a run): instead of all that, only copylat's sizes 1 B-4 KiB, N
# times (1000 alternating rounds of 200 calls each), to see the small-write targets and how
# far they move from run to run: small1.json .. smallN.json (N <= 8) and one line per run
# and size (bench/small_writes.py).
set -u
OUT=${OUT:-/tmp/vramio-bench}
mkdir -p "$OUT"
[ -f .gpu/env.sh ] && . .gpu/env.sh
W=/tmp/vramio-bench-work
mkdir -p "$W"
targets="lib tools"
[ "${AUTO_TEST:-1}" = 1 ] && targets="$targets gpu-tests"
[ "${GPU_BENCH:-0}" = 1 ] && targets="$targets bench-gpu"
if ! make -j16 $targets > "$W/build.log" 2>&1; then
    echo "not ok build"; tail -30 "$W/build.log"; exit 1
fi
if [ "${SMALL_WRITES:-0}" -gt 0 ]; then
    export VRAMIO_ENABLE_VULKAN=${VRAMIO_ENABLE_VULKAN:-1}
    runs=$(( SMALL_WRITES > 8 ? 8 : SMALL_WRITES ))
    rm -f "$OUT"/small*.json
    for i in $(seq 1 "$runs"); do
        if ! timeout 120 build/bin/gdrcopy_copylat -s 4K -c -w 200000 -r 100 --budget 2 \
                --json "$OUT/small$i.json" > "$W/small$i.log" 2>&1; then
            echo "not ok small_writes_run_$i: copylat failed or hung"; tail -5 "$W/small$i.log"
        fi
    done
    grep -E 'CPU binding|copy kernel' "$W/small1.log"
    set -- "$OUT"/small*.json
    [ -f "$1" ] || { echo "not ok small_writes: no run gave results"; exit 1; }
    python3 bench/small_writes.py "$@"
    exit $?
fi
if [ "${AUTO_TEST:-1}" = 1 ]; then
    GDRCOPY_ENABLE_LOGGING=1 timeout 120 build/gpu/gpu_auto_test > "$OUT/auto.log" 2>&1
    echo "exit $?" >> "$OUT/auto.log"
    # The calibration's own timings (the library's info line) and the test's direct ones.
    grep -E '^(#|not ok|skip)|copy engine .* crossover' "$OUT/auto.log" | cut -c1-400
    echo "== gpu_auto_test: $(grep -c '^ok ' "$OUT/auto.log") ok, $(grep -c '^not ok ' "$OUT/auto.log") not ok; $(tail -n1 "$OUT/auto.log")"
fi
[ "${AUTO_ONLY:-0}" = 1 ] && exit 0     # the _auto test alone (half a minute), no benchmark

timeout "${BENCH_S:-400}" make bench BENCH_OUT="$W/raw" BENCH_DOCS="$W" > "$OUT/bench.log" 2>&1
rc=$?
echo "== make bench: exit $rc"
[ $rc -eq 0 ] || tail -20 "$OUT/bench.log"
cp "$W/benchmarks.md" "$OUT/" 2>/dev/null
for f in copylat.json copylat.log copybw.log info.log; do cp "$W/raw/$f" "$OUT/" 2>/dev/null; done
grep -E '^- (met|\*\*missed)' "$OUT/benchmarks.md" 2>/dev/null
grep -E 'CPU binding|copy engine from|Crossover' "$OUT/benchmarks.md" 2>/dev/null

# The same targets seen by the paired small-copy benchmark (optional: 2-3 minutes more).
if [ "${GPU_BENCH:-0}" = 1 ]; then
    timeout 200 build/bench/gpu_bench > "$OUT/gpu_bench.log" 2>&1
    echo "exit $?" >> "$OUT/gpu_bench.log"
    grep '^TARGET' "$OUT/gpu_bench.log"
fi

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_soak_on_gpu.sh - the GPU soak (tests/gpu/soak/soak.c) on a GPU machine, from the
# repository root: builds the library, the bridge and the soak, then runs it under vramio-run
# for SOAK_SECONDS (default 300) with SOAK_PROCS worker processes (4) of SOAK_THREADS threads
# (4) each, and its limits part (descriptors, GPU memory, BAR1 where it is smaller than GPU
# memory); nvidia-smi's memory report before and after. About 8 minutes with the default load:
# BUDGET (seconds, default 560) bounds the whole run, every step has a timeout. Logs go to
# $OUT (default /tmp/vramio-soak); result lines, the operations per second, the counters and a
# summary to stdout.
set -u
. "$(dirname "$0")/gpu_script.sh"
gpu_script_start /tmp/vramio-soak 560 summary.log
[ -f .gpu/env.sh ] && . .gpu/env.sh
SECS=${SOAK_SECONDS:-300}

if ! timeout $(tmo 200) make -j16 lib tools bridge build/gpu/soak > "$OUT/build.log" 2>&1; then
    say "not ok soak_gpu/build: make failed"; tail -20 "$OUT/build.log"; exit 1
fi
if ! timeout $(tmo 30) nvidia-smi -L > "$OUT/gpus.txt" 2>&1; then
    say "skip soak_gpu/all: no NVIDIA GPU here (the soak was built)"; exit 0
fi
say "# $(head -n 1 "$OUT/gpus.txt"); $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
timeout $(tmo 30) nvidia-smi -q -d MEMORY > "$OUT/memory_before.txt" 2>&1
timeout $(tmo $((SECS + 240))) build/bin/vramio-run build/gpu/soak --seconds "$SECS" \
    --procs "${SOAK_PROCS:-4}" --threads "${SOAK_THREADS:-4}" > "$OUT/soak.log" 2>&1
rc=$?
echo "exit $rc" >> "$OUT/soak.log"
timeout $(tmo 30) nvidia-smi -q -d MEMORY > "$OUT/memory_after.txt" 2>&1
grep -E '^(ok|not ok|skip) |^# ' "$OUT/soak.log" | tee -a "$S"
[ "$rc" -eq 0 ] || grep -q '^not ok ' "$OUT/soak.log" ||
    say "not ok soak_gpu/exit: the soak ended with status $rc (its log: $OUT/soak.log)"
say "== soak on GPU: $(grep -c '^ok ' "$S") ok, $(grep -c '^not ok ' "$S") not ok, $(grep -c '^skip ' "$S") skip, $(( $(date +%s) - start )) s"

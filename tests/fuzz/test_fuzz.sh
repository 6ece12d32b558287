#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/fuzz/test_fuzz.sh - the fuzz targets of tests/fuzz/ (README.md there), in two steps:
#  1. replay: each target of this build (fuzz_replay.c as its main) runs its corpus,
#     tests/fuzz/corpus/TARGET/ (the seeds and every regression input), once;
#  2. fuzz: where clang and its libFuzzer are installed, the fuzz build (BUILD/fuzz: CC=clang
#     SANITIZE=fuzz, the library under ASan, UBSan and libFuzzer's coverage) fuzzes each target
#     for FUZZ_SECONDS (default 30) from its corpus, in a copy (the repository's stays as it
#     is). A crash, a leak, an input slower than 10 s (-timeout), a sanitizer report or a
#     finding of the target fails; the input is kept in BUILD/fuzz/artifacts/ and the line says
#     how to run it again. Each target's line gives its executions, its coverage (edges) and
#     its time.
# FUZZ_TARGETS (the four by default) and FUZZ_SECONDS choose what runs and for how long.
# run.sh timeout: 600
set -u
. "$(dirname "$0")/../lib/t.sh"
cd "$(dirname "$0")/../.."
B=${BUILD:-build}
TARGETS=${FUZZ_TARGETS:-api_dmabuf api_vulkan env vramio_run}
SECS=${FUZZ_SECONDS:-30}

# ---- 1. replay -------------------------------------------------------------------------------
t_make fuzz/replay/build fuzz-progs || exit 1
for t in $TARGETS; do
    out=$(timeout --kill-after=10 300 "$B/tests/fuzz/fuzz_$t" "tests/fuzz/corpus/$t" 2>&1)
    rc=$?
    n=$(printf '%s\n' "$out" | sed -n 's/^fuzz_replay: \([0-9]*\) inputs ran$/\1/p')
    if [ "$rc" -eq 0 ] && [ -n "$n" ]; then
        t_ok "fuzz/replay/$t ($n inputs)"
    else
        t_fail "fuzz/replay/$t" "status $rc"
        printf '%s\n' "$out" | grep -v '^gdrapi: ' | tail -n 15 | sed 's/^/    /'
    fi
done

# ---- 2. fuzz ---------------------------------------------------------------------------------
if ! command -v clang >/dev/null; then
    t_skip fuzz/libfuzzer "clang is not installed (.ci/packages.d/fuzz.txt)"
    t_done
fi
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return 0; }' |
     clang -x c -fsanitize=fuzzer,address -o /dev/null - >/dev/null 2>&1; then
    t_skip fuzz/libfuzzer "clang cannot link libFuzzer (libclang-rt-14-dev: .ci/packages.d/fuzz.txt)"
    t_done
fi
FB=$B/fuzz
t_make fuzz/libfuzzer/build BUILD="$FB" CC=clang SANITIZE=fuzz fuzz-progs || t_done
art=$FB/artifacts
mkdir -p "$art"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for t in $TARGETS; do
    mkdir -p "$work/$t"
    t0=$SECONDS
    # -close_fd_mask=3: the library's error log of every refused call stays out of the
    # output; findings, sanitizer reports and libFuzzer's own lines still come.
    timeout --kill-after=10 $((SECS + 120)) "$FB/tests/fuzz/fuzz_$t" -max_total_time="$SECS" \
        -timeout=10 -rss_limit_mb=2048 -max_len=1024 -close_fd_mask=3 -print_final_stats=1 \
        -artifact_prefix="$art/$t-" "$work/$t" "tests/fuzz/corpus/$t" >"$work/$t.log" 2>&1
    rc=$?
    took=$((SECONDS - t0))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log")
    cov=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$work/$t.log" | tail -n 1 |
          sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\).*/\1 edges, \2 features/p')
    if [ "$rc" -eq 0 ]; then
        t_ok "fuzz/$t ($execs executions, ${cov:-? edges}, $took s)"
    else
        crash=$(sed -n "s|.*Test unit written to \(.*\)$|\1|p" "$work/$t.log" | tail -n 1)
        t_fail "fuzz/$t" "status $rc after $took s; input ${crash:-(none saved)}; again: $FB/tests/fuzz/fuzz_$t ${crash:-INPUT}"
        grep -E 'FUZZ FINDING|ERROR|SUMMARY|^ +#[0-9]+ .* in |Base64' "$work/$t.log" | head -n 30 |
            sed 's/^/    /'
    fi
done
t_done

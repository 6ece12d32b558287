#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bridge/test_fuzz_ipc_handle.sh - the bridge's IPC handle fuzzer (fuzz_ipc_handle.c,
# libFuzzer under ASan and UBSan, built by 'make fuzz-ipc'): first every input of the seed
# corpus kept in the repository (tests/bridge/fuzz_ipc_handle.corpus/: seeds and the inputs of
# defects found, regress-*), then FUZZ_SECONDS (default 60) of fuzzing from it, in a copy.
# Any crash, failed check, sanitizer report, leak or hang (an input over 10 s) is a failure,
# with the input that caused it kept in $BUILD/tests/bridge/fuzz-artifacts/. Skips where clang
# cannot build a libFuzzer program (Debian: clang, libclang-rt-14-dev).
# The corpus: seed-* (made by hand, one path each: open and close, two blocks of a slab, issue
# 38's forged slab size, a freed block, a slab made anew, a raw handle, odd answers, requests,
# closes; for a block of chunks: open and close, another's memory as its chunks, answers of odd
# counts and sizes, requests, the block freed and made anew), and the inputs that found a fix reverted (regress-*: a mapping found by the slab's
# id alone, a freed block served, a request longer than its struct served).
# run.sh timeout: 300
set -u
. "$(dirname "$0")/../lib/t.sh"
B=${BUILD:-build}
FUZZ_CC=${FUZZ_CC:-clang}
secs=${FUZZ_SECONDS:-60}
corpus=tests/bridge/fuzz_ipc_handle.corpus

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n' \
    >"$probe/p.c"
if ! "$FUZZ_CC" -fsanitize=fuzzer,address,undefined -o "$probe/p" "$probe/p.c" >/dev/null 2>&1; then
    t_skip_all "$FUZZ_CC cannot build a libFuzzer program (Debian: clang libclang-rt-14-dev)"
fi
t_make fuzz_ipc/build fuzz-ipc || exit 1

fuzz=$B/tests/bridge/fuzz_ipc_handle
art=$B/tests/bridge/fuzz-artifacts
rm -rf "$art" && mkdir -p "$art"
export LD_LIBRARY_PATH=$B/tests/fake/cuda-vmm
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
flags=(-timeout=10 -rss_limit_mb=2048 -print_funcs=0 -artifact_prefix="$art/")

# What a failed run printed that says why: the check, the sanitizer's or libFuzzer's summary.
why() {
    grep -E '^fuzz_ipc_handle: |^SUMMARY: |ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error' \
        "$1" | head -n 3 | tr '\n' ' '
}

n=$(find "$corpus" -type f | wc -l)
if timeout 120 "$fuzz" "${flags[@]}" -runs=0 "$corpus" >"$art/replay.log" 2>&1; then
    echo "# fuzz_ipc: the corpus, $n inputs, replayed"
    t_ok fuzz_ipc/corpus_replays_clean
else
    t_fail fuzz_ipc/corpus_replays_clean "$(why "$art/replay.log")"
fi

work=$(mktemp -d)
trap 'rm -rf "$probe" "$work"' EXIT
cp "$corpus"/* "$work/"
timeout $((secs + 60)) "$fuzz" "${flags[@]}" -max_total_time="$secs" -print_final_stats=1 \
    "$work" >"$art/fuzz.log" 2>&1
rc=$?
stats=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1 runs/p' "$art/fuzz.log")
cov=$(grep -oE 'cov: [0-9]+' "$art/fuzz.log" | tail -n 1)
if [ "$rc" -eq 0 ] && ! grep -qE 'ERROR: |runtime error|^fuzz_ipc_handle: ' "$art/fuzz.log"; then
    echo "# fuzz_ipc: $stats in ${secs} s, $cov edges"
    t_ok "fuzz_ipc/no_defect_in_${secs}s"
else
    t_fail "fuzz_ipc/no_defect_in_${secs}s" "exit $rc: $(why "$art/fuzz.log") (input kept in $art/)"
fi
t_done

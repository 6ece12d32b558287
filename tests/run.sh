#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/run.sh - the test runner: runs each program given, counts, and ends with the line
#   N passed, N failed, N skipped
#
# A program counts as one test by its exit status (0 pass, 77 skip with its last output line
# as the reason, anything else fail), unless it prints result lines of its own, one per test:
#   ok NAME            not ok NAME [: why]            skip NAME: why
# in which case those lines are counted (and a non-zero exit with no "not ok" line counts as
# one more failure: the program crashed or lied). Environment: TEST_TIMEOUT (seconds, 600),
# RUNNER_LABEL (prefix of names, e.g. "asan"). A script that needs longer says so in a line
# "# run.sh timeout: SECONDS" (the QEMU runs on the debug kernel). A program that ran 10 s or
# more gets a "# NAME took N s" line.
set -u
pass=0 fail=0 skip=0
timeout_s=${TEST_TIMEOUT:-600}
label=${RUNNER_LABEL:+$RUNNER_LABEL/}
logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT

for prog in "$@"; do
    name=$label${prog#"${BUILD:-build}/"}
    log=$logdir/$(echo "$name" | tr '/' '_').log
    limit=$timeout_s
    case $prog in
    *.sh) own=$(sed -n 's/^# run.sh timeout: \([0-9]*\)$/\1/p' "$prog" | head -n 1)
          limit=${own:-$timeout_s} ;;
    esac
    t0=$SECONDS
    timeout --kill-after=10 "$limit" "$prog" >"$log" 2>&1 </dev/null
    rc=$?
    [ $((SECONDS - t0)) -lt 10 ] || echo "# $name took $((SECONDS - t0)) s"
    p=$(grep -cE '^ok ' "$log"); f=$(grep -cE '^not ok ' "$log"); s=$(grep -cE '^skip ' "$log")
    if [ $((p + f + s)) -gt 0 ]; then
        grep -E '^(not ok|skip) ' "$log" | sed "s|^|  $name: |"
        if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ "$f" -eq 0 ]; then
            f=1; echo "FAIL $name: exited $rc after $p passing results"; tail -n 20 "$log" | sed 's/^/    /'
        elif [ "$f" -gt 0 ]; then
            echo "FAIL $name ($f failed)"; tail -n 30 "$log" | sed 's/^/    /'
        else
            echo "PASS $name ($p passed${s:+, $s skipped})"
        fi
        pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
    elif [ "$rc" -eq 0 ]; then
        echo "PASS $name"; pass=$((pass + 1))
    elif [ "$rc" -eq 77 ]; then
        echo "SKIP $name: $(grep -v '^$' "$log" | tail -n 1)"; skip=$((skip + 1))
    else
        [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && why="timed out after ${limit}s" || why="exit $rc"
        echo "FAIL $name ($why)"; tail -n 30 "$log" | sed 's/^/    /'; fail=$((fail + 1))
    fi
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]

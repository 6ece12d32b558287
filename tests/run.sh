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
# RUNNER_LABEL (prefix of names, e.g. "asan").
#
# Bounds. Every program gets a ceiling on its whole time: TEST_TIMEOUT, or what a script says
# in a line "# run.sh timeout: SECONDS". A script whose time depends on the machine's speed
# and load (the QEMU guests: minutes under TCG, twice that on a loaded machine) is bounded by
# its progress instead: a line "# run.sh stall: SECONDS" stops it when its output has not
# grown for that long (such a script prints a line at least every minute while it works), and
# its ceiling is only the backstop of a run that prints forever. A program that ran 10 s or
# more gets a line "# NAME took N s of its S s ceiling" (and "; longest silence G s of its
# stall bound B s"), so a bound that comes near its time shows in every run's log.
set -u
pass=0 fail=0 skip=0
timeout_s=${TEST_TIMEOUT:-600}
label=${RUNNER_LABEL:+$RUNNER_LABEL/}
logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT

# run_bounded CEILING STALL PROG LOG: runs PROG (output to LOG) under its ceiling; with a STALL
# bound, also stops it once LOG has not grown for STALL s (exit 125, and a "not ok" line for
# the runner to count). Sets quiet_max, the longest time LOG stood still.
run_bounded() {
    local ceiling=$1 stall=$2 prog=$3 log=$4 pid size last_size=-1 last_change=$SECONDS
    quiet_max=0
    if [ -z "$stall" ]; then
        timeout --kill-after=10 "$ceiling" "$prog" >"$log" 2>&1 </dev/null
        return
    fi
    timeout --kill-after=10 "$ceiling" "$prog" >"$log" 2>&1 </dev/null &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 2
        size=$(stat -c %s "$log" 2>/dev/null || echo 0)
        if [ "$size" != "$last_size" ]; then last_size=$size last_change=$SECONDS; fi
        [ $((SECONDS - last_change)) -le "$quiet_max" ] || quiet_max=$((SECONDS - last_change))
        if [ "$quiet_max" -ge "$stall" ]; then
            # timeout passes the signal to its process group, which it leads: the script
            # and everything it started (QEMU). What ignores it gets SIGKILL 10 s later.
            kill -TERM "$pid" 2>/dev/null
            for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null && sleep 1; done
            kill -KILL -- "-$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
            echo "not ok $(basename "$prog")/progress: no output for ${stall}s, stopped" >>"$log"
            return 125
        fi
    done
    wait "$pid"
}

for prog in "$@"; do
    name=$label${prog#"${BUILD:-build}/"}
    log=$logdir/$(echo "$name" | tr '/' '_').log
    limit=$timeout_s stall=
    case $prog in
    *.sh) own=$(sed -n 's/^# run.sh timeout: \([0-9]*\)$/\1/p' "$prog" | head -n 1)
          limit=${own:-$timeout_s}
          stall=$(sed -n 's/^# run.sh stall: \([0-9]*\)$/\1/p' "$prog" | head -n 1) ;;
    esac
    t0=$SECONDS
    run_bounded "$limit" "$stall" "$prog" "$log"
    rc=$?
    took=$((SECONDS - t0))
    if [ "$took" -ge 10 ]; then
        echo "# $name took $took s of its $limit s ceiling${stall:+; longest silence $quiet_max s of its stall bound $stall s}"
    fi
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

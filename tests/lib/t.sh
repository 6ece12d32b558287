# SPDX-License-Identifier: MIT
# tests/lib/t.sh - the test kit of the shell tests (sourced), the same protocol as the C kit
# (tests/lib/t.h) and tests/run.sh: one line per result,
#   t_ok NAME            "ok NAME"
#   t_fail NAME WHY      "not ok NAME: WHY", and the script's status becomes a failure
#   t_skip NAME WHY      "skip NAME: WHY"
# and the exit codes: t_skip_all WHY says why nothing can be tested here and exits T_SKIP (77);
# "exit $(t_status)" (or t_done) ends a script that printed its own result lines: 1 when any
# t_fail ran, else 0.
T_SKIP=77
T_FAILED=0

t_ok()   { echo "ok $1"; }
t_fail() { echo "not ok $1: $2"; T_FAILED=1; }
t_skip() { echo "skip $1: $2"; }
t_status() { echo "$T_FAILED"; }
t_done() { exit "$T_FAILED"; }
t_skip_all() { echo "$1"; exit "$T_SKIP"; }

# t_relay NAME STATUS OUTPUT [PREFIX]: a program's result lines passed on (PREFIX put after
# "ok ", "not ok " or "skip "); a "not ok" among them fails this script too, and a status
# other than 0 with no "not ok" to explain it is the failure NAME, with the output's end.
t_relay() {
    local name=$1 rc=$2 out=$3 pfx=${4:-}
    printf '%s\n' "$out" | sed -nE "s#^(ok|not ok|skip) #\\1 $pfx#p"
    if printf '%s\n' "$out" | grep -q '^not ok '; then
        T_FAILED=1
    elif [ "$rc" -ne 0 ]; then
        t_fail "$name" "status $rc"
        printf '%s\n' "$out" | grep -vE '^(ok|skip) ' | tail -n 5 | sed 's/^/    /'
    fi
}

# t_make NAME [VAR=value...] TARGET...: the programs a script runs, from make (the rules of
# tests/tests.mk and its fragments; the flags are the top Makefile's), run from the top with
# BUILD (default build) and CC when they are set; a VAR=value given here wins over those.
# Silent when it works; else the failure line NAME with the end of make's output, and 1.
t_make() {
    local name=$1 out
    shift
    if out=$(unset MAKEFLAGS MFLAGS MAKELEVEL
             make -s --no-print-directory ${CC:+"CC=$CC"} BUILD="${BUILD:-build}" "$@" 2>&1); then
        return 0
    fi
    t_fail "$name" "make $* failed"
    printf '%s\n' "$out" | tail -n 20 | sed 's/^/    /'
    return 1
}

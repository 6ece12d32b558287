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

# t_at_exit COMMAND: COMMAND (a line of shell) run when the script exits, the last given
# first. The kit owns the EXIT trap: a script that needs one of its own uses this instead of
# "trap ... EXIT", which would drop what the kit had to remove.
T_AT_EXIT=()
t_at_exit() {
    T_AT_EXIT=("$1" "${T_AT_EXIT[@]}")
    trap 't_run_at_exit' EXIT
}
t_run_at_exit() {
    local c
    for c in "${T_AT_EXIT[@]}"; do eval "$c"; done
}

# t_dir_private DIR: 0 when vramio-run would take DIR as its directory's base (VRAMIO_RUN_DIR):
# DIR is this user's, and it and every directory above it (symlinks resolved, as vramio-run
# resolves them) are this user's or root's and writable by no group or others, sticky or not
# (bridge/run_dir.c's rule); else 1, with the reason on stdout. tests/lib/test_kit_run_dir.sh
# holds this to vramio-run's own answer.
t_dir_private() {
    local p me=$(id -u) u m last=1
    p=$(realpath -e -- "$1" 2>/dev/null) && [ -d "$p" ] || { echo "$1: not a directory"; return 1; }
    case $p in *[:\;\$]*) echo "$p: LD_LIBRARY_PATH cannot hold it"; return 1 ;; esac
    while :; do
        read -r u m < <(stat -c '%u %a' -- "$p" 2>/dev/null) && [ -n "$m" ] ||
            { echo "$p: cannot stat it"; return 1; }
        if [ "$u" != "$me" ] && { [ "$last" = 1 ] || [ "$u" != 0 ]; }; then
            echo "$p: owned by uid $u"; return 1
        fi
        if (( 8#$m & 8#022 )); then echo "$p: other users can write to it (mode $m)"; return 1; fi
        [ "$p" = / ] && return 0
        p=$(dirname -- "$p") last=0
    done
}

# t_run_dir NAME: a new private directory for vramio-run's shim directories (VRAMIO_RUN_DIR
# or below it) in T_RUN_DIR, canonical (as vramio-run prints its paths), removed when the
# script exits (t_at_exit). vramio-run refuses a base below a directory that another user can
# write to, such as /tmp, where CI and the pre-submit check clone the tree: so not in the
# build tree but in this user's own place, as vramio-run's defaults are: $XDG_RUNTIME_DIR,
# ${XDG_CACHE_HOME:-$HOME/.cache}, the password database's home's .cache, /run for root.
# Where none is private there is nothing to test: "skip NAME: why", and 1 (the script then
# ends: "t_run_dir NAME || t_done"). Call it in the script itself, never in $(...): the
# subshell's exit would remove the directory.
T_RUN_DIR=
t_run_dir() {
    local name=$1 c d why= pwhome
    pwhome=$(getent passwd "$(id -u)" 2>/dev/null | cut -d: -f6)
    for c in ${XDG_RUNTIME_DIR:+"$XDG_RUNTIME_DIR"} \
             ${XDG_CACHE_HOME:+"$XDG_CACHE_HOME"} ${HOME:+"$HOME/.cache"} \
             ${pwhome:+"$pwhome/.cache"} $([ "$(id -u)" = 0 ] && echo /run); do
        # A missing .cache is made as vramio-run would make it: this user's alone, and only
        # in a private home (never, say, /tmp/.cache for HOME=/tmp).
        case $c in */.cache) [ -e "$c" ] || ! t_dir_private "${c%/.cache}" >/dev/null ||
                             (umask 077 && mkdir -- "$c") 2>/dev/null ;; esac
        t_dir_private "$c" >/dev/null || { why="$why; $(t_dir_private "$c")"; continue; }
        d=$(umask 077 && mktemp -d -- "$c/vramio-test.XXXXXX" 2>/dev/null) &&
            d=$(realpath -e -- "$d") || { why="$why; $c: cannot make a directory in it"; continue; }
        t_at_exit "rm -rf -- $(printf '%q' "$d")"
        T_RUN_DIR=$d
        return 0
    done
    t_skip "$name" "no private directory for vramio-run here (${why#; }); set XDG_RUNTIME_DIR or HOME to a directory of this user's that no one else can write to"
    return 1
}

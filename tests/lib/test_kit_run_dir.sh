#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/lib/test_kit_run_dir.sh - the shell kit's private directory for vramio-run
# (tests/lib/t.sh: t_run_dir, t_dir_private), which every test that runs vramio-run uses:
#   - t_dir_private agrees with vramio-run itself (VRAMIO_RUN_DIR=DIR, against the stand-in
#     driver) on directories it must take (the kit's own, through a symlink) and refuse
#     (below a sticky or a group-writable directory, another user's, a ':' in the path, /tmp,
#     a sticky one reached through a symlink), and on the build tree, wherever it is;
#   - t_run_dir gives a directory vramio-run takes even where HOME and TMPDIR are in /tmp and
#     the tree is, and removes it when the script exits.
set -u
. "$(dirname "$0")/t.sh"
B=${BUILD:-build}
run=$B/bin/vramio-run
[ -x "$run" ] || { t_fail kit/built "$run is not built"; exit 1; }
t_make kit/build_fake_cuda "$B/tests/fake/cuda-vmm/libcuda.so.1" || exit 1
fake=$(cd "$B/tests/fake/cuda-vmm" && pwd)
t_run_dir kit/run_dir || t_done
R=$T_RUN_DIR

# vramio-run's answer for DIR: "takes" or "refuses".
verdict_run() {
    env -u VRAMIO_BRIDGE_LOG LD_LIBRARY_PATH="$fake" VRAMIO_RUN_DIR="$1" timeout 60 "$run" true \
        >/dev/null 2>&1 && echo takes || echo refuses
}
verdict_kit() { t_dir_private "$1" >/dev/null && echo takes || echo refuses; }
agree() { # NAME DIR WANT: both say WANT ("takes" or "refuses"; "either" for a place as found)
    local run_says kit_says
    run_says=$(verdict_run "$2") kit_says=$(verdict_kit "$2")
    if [ "$run_says" = "$kit_says" ] && { [ "$3" = either ] || [ "$3" = "$run_says" ]; }; then
        t_ok "kit/$1"
    else
        t_fail "kit/$1" "$2: vramio-run $run_says it, t_dir_private $kit_says it (want $3)$(
            [ "$kit_says" = refuses ] && echo ": $(t_dir_private "$2")")"
    fi
}

mkdir -p "$R/mine" "$R/sticky/mine" "$R/group/mine" "$R/a:b" &&
    chmod 700 "$R/mine" "$R/sticky/mine" "$R/group/mine" "$R/a:b" &&
    chmod 1777 "$R/sticky" && chmod 770 "$R/group" &&
    ln -s mine "$R/link" && ln -s sticky/mine "$R/link-sticky" ||
    { t_fail kit/setup "cannot make the directories in $R"; t_done; }
agree kit_dir_taken "$R" takes
agree subdir_taken "$R/mine" takes
agree symlink_to_private_taken "$R/link" takes
agree below_sticky_refused "$R/sticky/mine" refuses
agree symlink_below_sticky_refused "$R/link-sticky" refuses
agree below_group_writable_refused "$R/group/mine" refuses
agree colon_refused "$R/a:b" refuses
agree shared_tmp_refused /tmp refuses
agree build_tree_as_found "$(realpath "$B")" either
if [ "$(id -u)" = 0 ]; then
    mkdir -p "$R/other/mine" && chmod 755 "$R/other" && chown 65534 "$R/other"
    agree below_another_users_refused "$R/other/mine" refuses
    mkdir -p "$R/theirs" && chown 65534 "$R/theirs"
    agree another_users_refused "$R/theirs" refuses
else
    t_skip kit/below_another_users_refused "needs root (chown)"
    t_skip kit/another_users_refused "needs root (chown)"
fi

# t_run_dir where HOME, XDG_CACHE_HOME and TMPDIR name /tmp (and no XDG_RUNTIME_DIR): the
# password database's home, or /run for root; the directory goes when its script exits.
out=$(env -u XDG_RUNTIME_DIR HOME=/tmp XDG_CACHE_HOME=/tmp TMPDIR=/tmp bash -c '
    . "$1"; t_run_dir kit/child || exit 3; echo "$T_RUN_DIR"
    LD_LIBRARY_PATH="$2" VRAMIO_RUN_DIR="$T_RUN_DIR" timeout 60 "$3" true 2>&1 && echo ran' \
    sh "$(dirname "$0")/t.sh" "$fake" "$run")
d=$(printf '%s\n' "$out" | head -n 1)
case $out in
    skip\ kit/child:*) t_skip kit/run_dir_outside_tmp "${out#skip kit/child: }" ;;
    /tmp/*) t_fail kit/run_dir_outside_tmp "in /tmp: $out" ;;
    /*$'\n'ran)
        t_ok kit/run_dir_outside_tmp
        [ ! -e "$d" ] && t_ok kit/run_dir_removed_at_exit ||
            t_fail kit/run_dir_removed_at_exit "$d is still there" ;;
    *) t_fail kit/run_dir_outside_tmp "$(printf '%s' "$out" | tr '\n' '|' | head -c 300)" ;;
esac
t_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bridge/test_bridge_users.sh - vramio-run against another local user, the attacks done
# as that user: a second user (made with useradd, removed at the end) owns the HOME or the
# XDG_RUNTIME_DIR that root runs vramio-run with, and swaps the directory for one holding a
# libcuda.so.1 of theirs while root's program starts (bridge/run_dir.c must have refused
# those bases); once a tmp cleaner has removed root's directory, makes its path again under
# the shared sticky TMPDIR and plants a libcuda.so.1 there (no directory of vramio-run's may
# be under a directory where another user can make names); plants a bridge in their own
# directory for a root job that changes into it with a relative VRAMIO_BRIDGE_LIB; runs a
# set-user-ID copy of vramio-run and one with file capabilities (refused); squats the IPC
# socket name of an exporter that has exited and answers with memory of their own
# (bridge_ipc_server.c must refuse the answer). Needs root (to make the user and to be the
# victim): skips otherwise. Programs: users_client.c and evil_cuda.c (tests/bridge/bridge.mk),
# copied where the user can read. Root's own directory (its passwd home's .cache/vramio, or
# /run/vramio) is used where the test takes HOME away, as a service's job would.
set -u
. "$(dirname "$0")/../lib/t.sh"
B=${BUILD:-build}
[ "$(id -u)" = 0 ] ||
    t_skip_all "needs root: it makes a second user (useradd) to attack vramio-run as"
for c in useradd userdel setpriv; do
    command -v "$c" >/dev/null || t_skip_all "no $c (Debian: passwd, util-linux)"
done
run=$(realpath "$B/bin/vramio-run" 2>/dev/null) ||
    { t_fail users/built "no $B/bin/vramio-run"; exit 1; }
t_make users/build users-progs || exit 1

# A name of this run's own: two runs at once on one machine must not remove each other's user.
user=vramio-t-$$
made_user=
if ! id -u "$user" >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$user" ||
        { t_fail users/useradd "useradd $user failed"; exit 1; }
    made_user=1
fi
ouid=$(id -u "$user") ogid=$(id -g "$user")
# The test's directory: vramio-run refuses a place below a directory that another user can
# write to (as /tmp), so not there; the other user must reach the programs in it. The build
# tree when every directory above it is root's, not writable by others and searchable; else
# /run (root's).
closed() { # DIR: 0 when every directory from / down to DIR is as said above
    local p=$1 a
    while :; do
        a=$(stat -c '%u %A' "$p" 2>/dev/null) || return 1
        case $a in "0 d"????[!w]??[!w][xt]) ;; *) return 1 ;; esac
        [ "$p" = / ] && return 0
        p=$(dirname "$p")
    done
}
place=$(realpath "$B/tests/bridge")
closed "$place" || place=/run
closed "$place" || t_skip_all "no directory for the test whose every parent only root can write"
T=$(mktemp -d "$place/vramio-users.XXXXXX") || { t_fail users/tmpdir "mktemp in $place"; exit 1; }
cleanup() {
    local d
    # Root's own directories for this run's stand-in driver (where HOME was taken away).
    for d in "$(getent passwd 0 | cut -d: -f6)"/.cache/vramio/cuda-* /run/vramio/cuda-*; do
        case $(readlink "$d/libcuda.so.1.real" 2>/dev/null) in "$T"/*) rm -rf "$d" ;; esac
    done
    rm -rf "$T"
    [ -n "$made_user" ] && userdel "$user" 2>/dev/null
}
trap cleanup EXIT
chmod 755 "$T"
mkdir -p "$T/bin" "$T/fake" "$T/tmp" "$T/inst/bin" "$T/inst/lib"
chmod 1777 "$T/tmp"
cp "$B/tests/bridge/users_client" "$B/tests/bridge/evil/libcuda.so.1" "$T/bin/"
cp "$B/tests/fake/cuda-vmm/libcuda.so.1" "$B/tests/fake/vulkan/libvulkan.so.1" "$T/fake/" \
    2>/dev/null
# vramio-run with its bridge and shim, where the other user can run it.
cp "$run" "$T/inst/bin/" &&
    cp -P "$B"/lib/libvramio_bridge.so "$B"/lib/libvramio_cuda.so "$B"/lib/libgdrapi.so* \
        "$T/inst/lib/" || { t_fail users/copy "cannot copy vramio-run and its libraries"; exit 1; }
chmod -R a+rX "$T/bin" "$T/fake" "$T/inst"
other() { setpriv --reuid="$ouid" --regid="$ogid" --clear-groups -- timeout 60 "$@"; }
# Root with nothing but what each case gives it: a private TMPDIR, the stand-in driver.
victim() {
    env -u VRAMIO_RUN_DIR -u XDG_RUNTIME_DIR -u XDG_CACHE_HOME -u HOME -u VRAMIO_BRIDGE_LOG \
        -u VRAMIO_ENABLE_VULKAN TMPDIR="$T/tmp" LD_LIBRARY_PATH="$T/fake" "$@"
}
export T ouid ogid

# ---- a base in another user's directory: swapped while root's program starts -----------
# What the other user does the moment root's program runs (the race, made certain): rename
# away the directory that vramio-run would have used in a place they own, and plant
# BASE/cuda-HASH/libcuda.so.1 in a new one (swap.sh PLACE BASE-IN-PLACE cuda-HASH).
cat >"$T/bin/swap.sh" <<'EOS'
top=${2%%/*}
mv "$1/$top" "$1/$top.old" 2>/dev/null
mkdir -p "$1/$2/$3" && cp "$T/bin/libcuda.so.1" "$1/$2/$3/libcuda.so.1"
EOS
chmod 755 "$T/bin/swap.sh"
attacked() { # name place base-in-place VAR=VALUE: root's program, the swap at its start
    local name=$1 place=$2 base=$3 out
    shift 3
    out=$(victim "$@" timeout 60 "$run" sh -c 'd=${LD_LIBRARY_PATH%%:*}
        setpriv --reuid="$ouid" --regid="$ogid" --clear-groups -- \
            sh "$T/bin/swap.sh" "$1" "$2" "${d##*/}"
        exec "$T/bin/users_client" load' sh "$place" "$base" 2>&1)
    if printf '%s\n' "$out" | grep -q EVIL || ! printf '%s\n' "$out" | grep -qx shim; then
        t_fail "users/$name" "$(printf '%s' "$out" | tr '\n' ' ' | head -c 300)"
    else
        t_ok "users/$name"
    fi
}
home=$T/home
mkdir -p "$home" && chown "$ouid:$ogid" "$home"
attacked home_of_another_user_passed_over "$home" .cache/vramio HOME="$home"
xdg=$T/run-other
mkdir -p "$xdg" && chown "$ouid:$ogid" "$xdg" && chmod 700 "$xdg"
attacked runtime_dir_of_another_user_passed_over "$xdg" vramio XDG_RUNTIME_DIR="$xdg"

expect() { # name want_rc want_regex cmd...
    local name=$1 want=$2 re=$3 out rc
    shift 3
    out=$("$@" 2>&1); rc=$?
    if [ "$rc" -eq "$want" ] && printf '%s\n' "$out" | grep -qE -- "$re"; then
        t_ok "users/$name"
    else
        t_fail "users/$name" "exit $rc (want $want): $(printf '%s' "$out" | head -c 300)"
    fi
}
expect run_dir_in_another_users_directory_refused 127 "$home: owned by uid $ouid" \
    victim VRAMIO_RUN_DIR="$home/mine" timeout 60 "$run" "$T/bin/users_client" load
mkdir -p "$T/open" && chmod 777 "$T/open"
expect run_dir_under_a_world_writable_parent_refused 127 "$T/open: other users can write" \
    victim VRAMIO_RUN_DIR="$T/open/mine" timeout 60 "$run" "$T/bin/users_client" load
# A symlink that the other user controls is resolved first: the target is what is checked.
other ln -s "$home" "$T/tmp/link-to-home"
expect run_dir_through_a_symlink_checked_at_its_target 127 "$home: owned by uid $ouid" \
    victim VRAMIO_RUN_DIR="$T/tmp/link-to-home/mine" timeout 60 "$run" "$T/bin/users_client" load
# Sticky (as /tmp): another user cannot remove the directory, but once anything else has
# (a tmp cleaner), they can make its name again.
expect run_dir_in_a_sticky_directory_refused 127 "$T/tmp: other users can write" \
    victim VRAMIO_RUN_DIR="$T/tmp/mine" timeout 60 "$run" "$T/bin/users_client" load

# ---- root's directory removed by a tmp cleaner, its path made again by the other user ------
# Root's long job with no XDG_RUNTIME_DIR and no HOME (a service, cron), TMPDIR the shared
# sticky one. While it runs, a cleaner empties TMPDIR of vramio's directories and removes the
# job's own directory wherever it is; the other user then makes that path again (and the old
# place under TMPDIR, ${TMPDIR}/vramio-0/cuda-HASH) and plants their libcuda.so.1 in it. The
# job's next dlopen must not load it.
cat >"$T/bin/replant.sh" <<'EOS'
for d in "$@"; do mkdir -p "$d" 2>/dev/null && cp "$T/bin/libcuda.so.1" "$d/" 2>/dev/null; done
exit 0
EOS
chmod 755 "$T/bin/replant.sh"
out=$(victim timeout 60 "$run" sh -c 'd=${LD_LIBRARY_PATH%%:*}
    echo "dir $d"
    "$T/bin/users_client" load
    rm -rf "$TMPDIR"/vramio-* "$d"
    setpriv --reuid="$ouid" --regid="$ogid" --clear-groups -- \
        sh "$T/bin/replant.sh" "$d" "$TMPDIR/vramio-0/${d##*/}"
    exec "$T/bin/users_client" load' 2>&1)
rc=$?
rootdir=$(printf '%s\n' "$out" | sed -n 's/^dir //p')
if printf '%s\n' "$out" | grep -q EVIL; then
    t_fail users/dir_removed_and_made_again_by_another_user \
        "$(printf '%s' "$out" | tr '\n' ' ' | head -c 300)"
elif [ "$rc" = 127 ] && printf '%s\n' "$out" | grep -q 'no directory for the shim'; then
    t_ok users/dir_removed_and_made_again_by_another_user # no safe base on this machine
    printf '    no base for root: %s\n' "$(printf '%s' "$out" | head -c 300)"
elif [ "$rc" = 0 ] && [ "$(printf '%s\n' "$out" | sed -n 2p)" = shim ]; then
    t_ok users/dir_removed_and_made_again_by_another_user
    printf '    root without HOME used %s\n' "$rootdir"
else
    t_fail users/dir_removed_and_made_again_by_another_user \
        "exit $rc: $(printf '%s' "$out" | tr '\n' ' ' | head -c 300)"
fi
# Where it was: no directory above it in which the other user can make a name.
open_ones=
p=${rootdir%/*}
while [ -n "$rootdir" ]; do
    other test -w "$p" && open_ones="$open_ones $p"
    [ "$p" = / ] || [ -z "$p" ] && break
    p=$(dirname "$p")
done
if [ -z "$rootdir" ]; then
    t_skip users/no_parent_open_to_another_user "root got no directory here"
elif [ -z "$open_ones" ]; then
    t_ok users/no_parent_open_to_another_user
else
    t_fail users/no_parent_open_to_another_user "uid $ouid can make names in:$open_ones"
fi

# ---- the bases when the environment names none that is safe ------------------------------
# A private TMPDIR (root's, not writable by others) is used.
mkdir -p "$T/ptmp" && chmod 755 "$T/ptmp"
out=$(victim TMPDIR="$T/ptmp" timeout 60 "$run" sh -c 'echo "${LD_LIBRARY_PATH%%:*}"' 2>&1)
case $out in
    "$T/ptmp/vramio-0/cuda-"*) t_ok users/private_tmpdir_used ;;
    *) t_fail users/private_tmpdir_used "$(printf '%s' "$out" | head -c 300)" ;;
esac
# The other user with no HOME, no XDG_RUNTIME_DIR, TMPDIR the shared one and a passwd home
# that does not exist: no safe base, so vramio-run refuses (and says why) instead of running.
expect no_safe_base_refused 127 "no directory for the shim.*$T/tmp: other users can write" \
    other env -u HOME -u XDG_RUNTIME_DIR -u XDG_CACHE_HOME -u VRAMIO_RUN_DIR -u VRAMIO_BRIDGE_LIB \
        TMPDIR="$T/tmp" LD_LIBRARY_PATH="$T/fake" "$T/inst/bin/vramio-run" \
        "$T/bin/users_client" load

# ---- a relative VRAMIO_BRIDGE_LIB, and a child in the other user's directory -------------
# Root's job starts in $T/inst with VRAMIO_BRIDGE_LIB=lib/libvramio_bridge.so (right there);
# a child changes into the other user's directory, which holds lib/libvramio_bridge.so.
mkdir -p "$T/evilcwd" && chown "$ouid:$ogid" "$T/evilcwd"
other sh -c 'mkdir -p "$T/evilcwd/lib" && cp "$T/bin/libcuda.so.1" "$T/evilcwd/lib/libvramio_bridge.so"'
mkdir -p "$T/rootrun"
rel_ok() { # name out: the shim with the real bridge, nothing of the other user's
    if printf '%s\n' "$2" | grep -q EVIL || ! printf '%s\n' "$2" | grep -qx shim ||
       printf '%s\n' "$2" | grep -q 'bridge .* cannot be loaded'; then
        t_fail "users/$1" "$(printf '%s' "$2" | tr '\n' ' ' | head -c 300)"
    else
        t_ok "users/$1"
    fi
}
out=$(cd "$T/inst" && victim VRAMIO_RUN_DIR="$T/rootrun" VRAMIO_BRIDGE_LIB=lib/libvramio_bridge.so \
      timeout 60 "$run" sh -c 'cd "$T/evilcwd" && exec "$T/bin/users_client" load' 2>&1)
rel_ok relative_bridge_lib_passed_on_absolute "$out"
# The shim itself (a directory on LD_LIBRARY_PATH without vramio-run) ignores a relative one.
shimdir=$(victim VRAMIO_RUN_DIR="$T/rootrun" VRAMIO_BRIDGE_LIB="$T/inst/lib/libvramio_bridge.so" \
          timeout 60 "$run" sh -c 'echo "${LD_LIBRARY_PATH%%:*}"' 2>&1)
out=$(cd "$T/evilcwd" && victim LD_LIBRARY_PATH="$shimdir:$T/fake" \
      VRAMIO_BRIDGE_LIB=lib/libvramio_bridge.so timeout 60 "$T/bin/users_client" load 2>&1)
rel_ok relative_bridge_lib_ignored_by_the_shim "$out"

# ---- set-user-ID ----------------------------------------------------------------------
mkdir -p "$T/suid"
cp "$run" "$T/suid/vramio-run" && chmod 4755 "$T/suid/vramio-run"
if findmnt -no OPTIONS -T "$T" | grep -qw nosuid; then
    t_skip users/set_user_id_refused "$T is on a nosuid mount"
else
    expect set_user_id_refused 127 'refusing to run set-user-ID' \
        other "$T/suid/vramio-run" true
fi

# ---- file capabilities: cap_dac_override on a copy, run by the other user ----------------
# With it, VRAMIO_RUN_DIR inside root's 0700 directory would be made (theirs). A program with
# file capabilities gets no LD_LIBRARY_PATH from the loader: where no driver is installed the
# copy runs in a mount namespace whose loader cache names the stand-in (ldconfig -C).
mkdir -p "$T/caps" "$T/rootonly" && chmod 700 "$T/rootonly"
cp "$run" "$T/caps/vramio-run" && cp "$T/bin/users_client" "$T/caps/probe"
ns=
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' && [ -f /etc/ld.so.cache ] &&
   printf '%s\n' "$T/fake" >"$T/ld.so.conf" &&
   ldconfig -X -C "$T/ld.so.cache" -f "$T/ld.so.conf" 2>/dev/null &&
   unshare -m true 2>/dev/null; then
    ns=1
fi
capped() { # ARGS...: as the other user, in that namespace when there is one
    if [ -n "$ns" ]; then
        unshare -m -- sh -c 'mount --bind "$0" /etc/ld.so.cache && exec "$@"' "$T/ld.so.cache" \
            setpriv --reuid="$ouid" --regid="$ogid" --clear-groups -- timeout 60 "$@"
    else
        other "$@"
    fi
}
if ! command -v setcap >/dev/null; then
    t_skip users/file_capabilities_refused "no setcap (Debian: libcap2-bin)"
elif ! setcap cap_dac_override+ep "$T/caps/vramio-run" 2>/dev/null ||
     ! setcap cap_dac_override+ep "$T/caps/probe" 2>/dev/null; then
    t_skip users/file_capabilities_refused "setcap failed here (no CAP_SETFCAP, or no xattrs)"
elif [ "$(other "$T/caps/probe" secure 2>&1)" != 1 ]; then
    t_skip users/file_capabilities_refused "file capabilities are not granted here (nosuid, no_new_privs)"
else
    expect file_capabilities_refused 127 'refusing to run with privileges' \
        capped env VRAMIO_BRIDGE_LIB="$T/inst/lib/libvramio_bridge.so" \
            VRAMIO_RUN_DIR="$T/rootonly/mine" "$T/caps/vramio-run" true
    if [ -e "$T/rootonly/mine" ]; then
        t_fail users/file_capabilities_made_nothing "$(ls -ld "$T/rootonly/mine")"
    else
        t_ok users/file_capabilities_made_nothing
    fi
fi

# ---- IPC: the exporter gone, the other user answers on its socket name ---------------
# squat NAME HANDLE: the other user answers the open of HANDLE; root's open must refuse it.
squat() {
    local name=$1 h=$2 out squat
    : >"$T/squat.out"
    other "$T/bin/users_client" serve "$h" >"$T/squat.out" 2>&1 &
    squat=$!
    for _ in $(seq 100); do grep -q ready "$T/squat.out" && break; sleep 0.1; done
    out=$(victim VRAMIO_BRIDGE_LOG=1 timeout 60 "$run" "$T/bin/users_client" open "$h" 2>&1)
    kill "$squat" 2>/dev/null; wait "$squat" 2>/dev/null
    if ! grep -q ready "$T/squat.out"; then
        t_fail "users/$name" "the squatter did not start: $(head -c 200 "$T/squat.out")"
    elif printf '%s\n' "$out" | grep -q '^refused ' &&
         printf '%s\n' "$out" | grep -q "answered by uid $ouid"; then
        t_ok "users/$name"
    else
        t_fail "users/$name" \
            "$(printf '%s' "$out" | grep -v '^vramio-bridge: cu' | tr '\n' ' ' | head -c 300)"
    fi
}
h=$(victim timeout 60 "$run" "$T/bin/users_client" export 2>/dev/null | tail -n 1)
if ! printf '%s' "$h" | grep -qE '^[0-9a-f]{128}$'; then
    t_fail users/ipc_answer_of_another_user_refused "no handle from the exporter: $h"
else
    squat ipc_answer_of_another_user_refused "$h"
    # The same handle as one of a block of chunks ("VRC2", bridge_ipc.h): the other user's
    # answer about chunks (three fds of its memory) is refused the same way.
    squat ipc_chunks_answer_of_another_user_refused "32435256${h#????????}"
fi
t_done

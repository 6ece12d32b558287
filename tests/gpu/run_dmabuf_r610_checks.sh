#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_dmabuf_r610_checks.sh - on a GPU machine, from the repository root, as root or as
# an ordinary user: what only a real CUDA driver can settle about the dmabuf backend
# (docs/dmabuf.md). Builds the library and tests/gpu/dmabuf_r610_checks.c (tests/gpu/gpu.mk:
# cuda.h only, libcuda is loaded at run time) and runs each question in a fresh process:
#   nocuda     (any driver, gdrdrv loaded) gdr_open leaves CUDA alone
#   refused    (driver older than 13.3) a forced gdr_open is refused cleanly, nothing left
#   pcie offset export contexts vmm free stale refusals pte   (13.3, R610, or newer)
# The program's comment says what each asks. Every step is bounded (timeout); each check prints
# "# verdict CHECK: ..." lines, and the end lists them all. As root it also runs the checks
# that need no privilege as an ordinary user (VRAMIO_R610_USER, default vramiotest; 0: don't),
# and mounts debugfs if it is not (the PTE check reads the kernel's PAT list there;
# VRAMIO_R610_DEBUGFS=0: don't); a user it added and a mount it made are undone at its exit.
# On a driver older than 13.3 only nocuda and refused settle anything; the rest say "not R610".
# Exit: 0 when no check failed. Logs go to $OUT (default /tmp/vramio-gpu). A run takes a minute or
# two after the build; the bounds add up to under 20 minutes.
set -u
OUT=${OUT:-/tmp/vramio-gpu}
mkdir -p "$OUT"
rm -f "$OUT"/dmabuf_r610_*.log
root=0
[ "$(id -u)" = 0 ] && root=1
# .gpu/env.sh installs packages (dpkg, ldconfig): root only. The driver's libraries are what
# the checks need from it; an ordinary user finds them by LD_LIBRARY_PATH.
if [ $root = 1 ] && [ -f .gpu/env.sh ]; then
    . .gpu/env.sh
elif [ -d /usr/local/nvidia/lib ]; then
    export LD_LIBRARY_PATH=/usr/local/nvidia/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
B=${BUILD:-build}
prog=$B/gpu/dmabuf_r610_checks
log_build=$OUT/build_r610.log
{ timeout 30 nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv
  timeout 30 nvidia-smi -q -d MEMORY | grep -A3 -i bar1; uname -rm; id
} > "$OUT/r610_machine.log" 2>&1
head -4 "$OUT/r610_machine.log"
: > "$log_build"
if [ "${VRAMIO_SKIP_BUILD:-0}" != 1 ] &&
   ! timeout 300 make -j"$(nproc)" BUILD="$B" lib >> "$log_build" 2>&1; then
    echo "build of the library failed or timed out"; tail -20 "$log_build"; exit 1
fi
if ! timeout 120 make BUILD="$B" "$prog" >> "$log_build" 2>&1; then
    echo "build of $prog failed or timed out"; tail -20 "$log_build"; exit 1
fi
mounted= added=
cleanup() {
    [ -n "$mounted" ] && timeout 10 umount /sys/kernel/debug
    [ -n "$added" ] && timeout 30 userdel "$added"
}
trap cleanup EXIT
if [ $root = 1 ] && [ "${VRAMIO_R610_DEBUGFS:-1}" != 0 ] &&
   ! mountpoint -q /sys/kernel/debug 2>/dev/null; then
    if timeout 10 mount -t debugfs none /sys/kernel/debug >> "$OUT/r610_machine.log" 2>&1; then
        mounted=1
    else
        echo "# debugfs could not be mounted: the PTE check falls back to timing"
    fi
fi

fail=0
run_check() { # label check seconds [runner...]: one check in a fresh process, its log kept
    local label=$1 check=$2 limit=$3 log st
    shift 3
    log=$OUT/dmabuf_r610_$label.log
    # nocuda is about gdr_open's own choice: no backend forced there.
    if [ "$check" = nocuda ]; then
        timeout --kill-after=10 "$limit" "$@" env -u GDRCOPY_BACKEND -u GDRCOPY_USE_DMABUF_MMAP \
            "$prog" "$check" > "$log" 2>&1
    else
        timeout --kill-after=10 "$limit" "$@" env -u GDRCOPY_USE_DMABUF_MMAP \
            GDRCOPY_BACKEND=dmabuf "$prog" "$check" > "$log" 2>&1
    fi
    st=$?
    echo "== $label (exit $st)"
    grep -vE '^(gdrapi|vramio): ' "$log" | cut -c1-300
    case $st in
        0|77) ;;
        124|137) echo "not ok $label: timed out after ${limit}s"; fail=1 ;;
        *) fail=1 ;;
    esac
}

for check in nocuda refused pcie offset export contexts vmm free stale pte; do
    run_check "$check" "$check" 60
done
run_check refusals refusals 240

# The same questions that need no privilege, as an ordinary user, from a directory that user
# can read (root's build tree may not be).
user=${VRAMIO_R610_USER:-vramiotest}
if [ $root = 1 ] && [ "$user" != 0 ]; then
    if ! id "$user" > /dev/null 2>&1 && timeout 30 useradd -M -s /bin/sh "$user" > /dev/null 2>&1
    then
        added=$user
    fi
    d=/tmp/vramio-r610-user
    rm -rf "$d" && mkdir -p "$d"
    cp -a "$B"/lib/libgdrapi.so* "$d/" && cp "$prog" "$d/"
    chmod -R a+rX "$d"
    prog_root=$prog
    prog=$d/dmabuf_r610_checks
    if id "$user" > /dev/null 2>&1 && command -v setpriv > /dev/null; then
        for check in offset free stale pte; do
            run_check "user_$check" "$check" 60 setpriv --reuid="$user" --regid="$user" \
                --clear-groups env LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}" HOME="$d"
        done
    else
        echo "== user: no user $user or no setpriv here: the checks ran as root only"
    fi
    prog=$prog_root
fi

echo "== verdicts"
grep -h '^# verdict' "$OUT"/dmabuf_r610_*.log | cut -c1-300
grep -hE '^not ok' "$OUT"/dmabuf_r610_*.log | cut -c1-300
echo "== $(cat "$OUT"/dmabuf_r610_*.log | grep -c '^ok ') ok, $(cat "$OUT"/dmabuf_r610_*.log |
    grep -c '^not ok ') not ok, $(cat "$OUT"/dmabuf_r610_*.log | grep -c '^skip ') skip"
exit $fail

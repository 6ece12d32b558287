#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/kernel/debug-kernel.sh - builds (once per machine) the debug kernel of the QEMU rig:
# Debian's linux-source-6.1 with tinyconfig plus tests/kernel/debug-kernel.config (KASAN,
# KFENCE, lockdep, UBSAN bounds, DEBUG_VM), and prints the folder that holds it:
#   DIR/bzImage   the image QEMU boots
#   DIR/build     a kernel tree after 'bzImage modules_prepare', with Module.symvers: the KDIR
#                 modules are built against
#   DIR/VERSION   "<source package version> <kernel release>"
# The cache is $VRAMIO_KERNEL_CACHE (default /var/cache/vramio-kernels, else
# ${XDG_CACHE_HOME:-~/.cache}/vramio-kernels), outside the clone, in a folder named after the
# source package's version and the fragment's hash: a new Debian source or an edited fragment
# builds anew, and old folders can be deleted by hand. Concurrent callers wait on a lock.
#
#   tests/kernel/debug-kernel.sh          build if needed, print DIR (progress on stderr)
#   tests/kernel/debug-kernel.sh --path   print DIR if it is built; exit 1 otherwise
# VRAMIO_DEBUG_KERNEL=DIR makes both print DIR (a kernel built before, e.g. from an older
# fragment) without looking at the cache.
#
# Why 6.1: its build under tinyconfig is the quickest of Debian 12's two series (11 min on a
# 2-core machine), and the stock 6.12 runs already carry KFENCE and slub_debug; see
# driver/README.md "The debug kernel".
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
SRC_PKG=linux-source-6.1
FRAGMENT=$REPO/tests/kernel/debug-kernel.config

if [ -n "${VRAMIO_DEBUG_KERNEL:-}" ]; then
    [ -f "$VRAMIO_DEBUG_KERNEL/.done" ] || { echo "debug-kernel.sh: $VRAMIO_DEBUG_KERNEL is not a built one" >&2; exit 1; }
    echo "$VRAMIO_DEBUG_KERNEL"
    exit 0
fi

cache_root() {
    local c=${VRAMIO_KERNEL_CACHE:-/var/cache/vramio-kernels}
    if mkdir -p "$c" 2>/dev/null && [ -w "$c" ]; then echo "$c"; return; fi
    c=${XDG_CACHE_HOME:-$HOME/.cache}/vramio-kernels
    mkdir -p "$c" && echo "$c"
}

ver=$(dpkg-query -W -f='${Version} ${Status}' "$SRC_PKG" 2>/dev/null | awk '/ok installed/ {print $1}')
if [ -z "$ver" ]; then
    echo "debug-kernel.sh: $SRC_PKG is not installed (.ci/packages.d/kernel.txt lists it)" >&2
    exit 2
fi
# The fragment decides what is built; RECIPE counts changes of how (bump it with them).
RECIPE=1
key=$( (cat "$FRAGMENT"; echo "recipe $RECIPE") | sha256sum | cut -c1-12)
CACHE=$(cache_root)
DIR=$CACHE/debug-$ver-$key

if [ -f "$DIR/.done" ]; then echo "$DIR"; exit 0; fi
[ "${1:-}" = --path ] && exit 1

exec 8>"$CACHE/.debug-kernel.lock"
flock -n 8 || { echo "debug-kernel.sh: waiting for another build of it" >&2; flock 8; }
if [ -f "$DIR/.done" ]; then echo "$DIR"; exit 0; fi

t0=$SECONDS
rm -rf "$DIR" && mkdir -p "$DIR"
tarball=$(ls /usr/src/linux-source-6.1.tar.* | head -n 1)
echo "debug-kernel.sh: unpacking $tarball ($SRC_PKG $ver) into $DIR" >&2
tar -xf "$tarball" -C "$DIR"
mv "$DIR"/linux-source-6.1 "$DIR/build"
B=$DIR/build
unset MAKEFLAGS MFLAGS MAKELEVEL
make -C "$B" -s tinyconfig >"$DIR/config.log" 2>&1
(cd "$B" && scripts/kconfig/merge_config.sh -m .config "$FRAGMENT") >>"$DIR/config.log" 2>&1
make -C "$B" -s olddefconfig >>"$DIR/config.log" 2>&1
# Every line of the fragment must have survived: a dropped option means a missing dependency.
missing=$(sed -nE 's/^(CONFIG_[A-Z0-9_]+=.*)$/\1/p' "$FRAGMENT" | while read -r l; do
    grep -qxF "$l" "$B/.config" || echo "$l"; done)
if [ -n "$missing" ]; then
    echo "debug-kernel.sh: options dropped by olddefconfig (add their dependencies):" $missing >&2
    exit 1
fi
echo "debug-kernel.sh: configured in $((SECONDS - t0)) s; building bzImage (about 11 min on 2 cores)" >&2
t1=$SECONDS
if ! make -C "$B" -j"$(nproc)" bzImage modules_prepare >"$DIR/build.log" 2>&1; then
    echo "debug-kernel.sh: kernel build failed; the end of $DIR/build.log:" >&2
    tail -n 30 "$DIR/build.log" >&2
    exit 1
fi
# vmlinux's exports, so modpost checks what modules import (no 'make modules' ran).
if [ -s "$B/vmlinux.symvers" ]; then cp "$B/vmlinux.symvers" "$B/Module.symvers"; fi
cp "$B/arch/x86/boot/bzImage" "$DIR/bzImage"
echo "$ver $(make -s -C "$B" kernelrelease)" >"$DIR/VERSION"
# Objects are not needed to build modules against the tree (the host tools are kept).
find "$B" -name '*.o' -not -path "$B/scripts/*" -delete
touch "$DIR/.done"
echo "debug-kernel.sh: built in $((SECONDS - t1)) s ($(du -sh "$DIR" | cut -f1) cached in $DIR)" >&2
echo "$DIR"

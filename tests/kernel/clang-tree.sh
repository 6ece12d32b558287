#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/kernel/clang-tree.sh - prepares (once per machine) a kernel tree configured for clang
# (LLVM=1), against which driver/tests/test_kernel_checks.sh builds gdrdrv with clang: Debian's
# kernel headers are configured for gcc, and clang refuses their flags. Debian's
# linux-source-6.1 (the debug kernel's source), tinyconfig with modules, PCI and SMP, then
# 'modules_prepare' only: no kernel is built (about 2 min on 2 cores, 330 MB; drivers/, fs/,
# net/ and sound/ sources are not unpacked). Prints the tree's path. Cached like the debug
# kernel (tests/kernel/debug-kernel.sh), in $VRAMIO_KERNEL_CACHE (default
# /var/cache/vramio-kernels) under a folder named after the source's version and RECIPE.
#   tests/kernel/clang-tree.sh          prepare if needed, print the tree
#   tests/kernel/clang-tree.sh --path   print it if prepared; exit 1 otherwise
set -euo pipefail
SRC_PKG=linux-source-6.1
RECIPE=1

cache_root() {
    local c=${VRAMIO_KERNEL_CACHE:-/var/cache/vramio-kernels}
    if mkdir -p "$c" 2>/dev/null && [ -w "$c" ]; then echo "$c"; return; fi
    c=${XDG_CACHE_HOME:-$HOME/.cache}/vramio-kernels
    mkdir -p "$c" && echo "$c"
}

ver=$(dpkg-query -W -f='${Version} ${Status}' "$SRC_PKG" 2>/dev/null | awk '/ok installed/ {print $1}')
if [ -z "$ver" ]; then
    echo "clang-tree.sh: $SRC_PKG is not installed (.ci/packages.d/kernel.txt lists it)" >&2
    exit 2
fi
command -v clang >/dev/null && command -v ld.lld >/dev/null ||
    { echo "clang-tree.sh: clang and lld are needed (.ci/packages.d/driver.txt)" >&2; exit 2; }
CACHE=$(cache_root)
DIR=$CACHE/clang-$ver-r$RECIPE
if [ -f "$DIR/.done" ]; then echo "$DIR/tree"; exit 0; fi
[ "${1:-}" = --path ] && exit 1

exec 8>"$CACHE/.clang-tree.lock"
flock -n 8 || { echo "clang-tree.sh: waiting for another preparation of it" >&2; flock 8; }
if [ -f "$DIR/.done" ]; then echo "$DIR/tree"; exit 0; fi
t0=$SECONDS
rm -rf "$DIR" && mkdir -p "$DIR"
tarball=$(ls /usr/src/linux-source-6.1.tar.* | head -n 1)
top=linux-source-6.1
# The C sources of drivers, filesystems, networking and sound play no part in modules_prepare.
tar -xf "$tarball" -C "$DIR" --wildcards --exclude="$top/tools/testing" \
    --exclude="$top/drivers/*.c" --exclude="$top/drivers/*.h" --exclude="$top/fs/*.c" \
    --exclude="$top/net/*.c" --exclude="$top/sound/*.c" --exclude="$top/Documentation/*.rst"
mv "$DIR/$top" "$DIR/tree"
unset MAKEFLAGS MFLAGS MAKELEVEL
(
    cd "$DIR/tree"
    make -s LLVM=1 tinyconfig
    ./scripts/config -e MODULES -e MODULE_UNLOAD -e 64BIT -e SMP -e PCI
    make -s LLVM=1 olddefconfig
    make -s LLVM=1 -j"$(nproc)" modules_prepare
) >"$DIR/prepare.log" 2>&1 || {
    echo "clang-tree.sh: preparing the tree failed; the end of $DIR/prepare.log:" >&2
    tail -n 20 "$DIR/prepare.log" >&2
    exit 1
}
touch "$DIR/.done"
echo "clang-tree.sh: prepared in $((SECONDS - t0)) s ($DIR/tree)" >&2
echo "$DIR/tree"

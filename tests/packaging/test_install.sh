#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/packaging/test_install.sh - 'make install' honours PREFIX, DESTDIR and libdir, installs
# a usable library (a client builds with its gdrapi.pc and runs), and 'make uninstall' removes
# every file it installed; the same for 'make install-dkms' / 'uninstall-dkms'. Works in
# staging directories only, as any user.
set -u
. "$(dirname "$0")/common.sh"

BUILD=${BUILD:-build}
VERSION=$(project_version)
TOOLS="$(tool_names) $(runner_names)"
work=$(mktemp -d /tmp/vramio-install.XXXXXX)
t_at_exit 'rm -rf "$work"'
# Where vramio-run makes its directories (not $work: /tmp is refused); without one the
# vramio-run checks are skipped (t_run_dir has said why).
t_run_dir install/vramio-run_dir

# Run the project's make as a user would, not as a child of the 'make check' that runs us.
pmake() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$REPO" -s BUILD="$BUILD" "$@"; }

# left_in DIR: files and links under DIR (directories do not count).
left_in() { find "$1" ! -type d | sed "s|^$1||" | tr '\n' ' '; }

# check_install NAME DESTDIR PREFIX LIBDIR [make variables]
check_install() {
    local name=$1 d=$2 prefix=$3 libdir=$4; shift 4
    if ! pmake install DESTDIR="$d" "$@" >"$work/$name.log" 2>&1; then
        t_fail "$name" "make install failed: $(tail -n 5 "$work/$name.log")"; return
    fi
    local miss="" f
    for f in "$libdir/libgdrapi.so.$VERSION" "$prefix/include/gdrapi.h" \
             "$prefix/include/gdrconfig.h" "$prefix/include/vramio.h" "$libdir/pkgconfig/gdrapi.pc" \
             $(for p in $(bridge_lib_names); do echo "$libdir/vramio/$p"; done); do
        [ -f "$d$f" ] || miss="$miss $f"
    done
    for f in $TOOLS; do
        [ -x "$d$prefix/bin/$f" ] || miss="$miss $prefix/bin/$f"
        [ -f "$d$prefix/share/man/man1/$f.1" ] || miss="$miss $prefix/share/man/man1/$f.1"
    done
    [ "$(readlink "$d$libdir/libgdrapi.so.2")" = "libgdrapi.so.$VERSION" ] || miss="$miss libgdrapi.so.2->"
    [ "$(readlink "$d$libdir/libgdrapi.so")" = "libgdrapi.so.2" ] || miss="$miss libgdrapi.so->"
    [ -z "$miss" ] || { t_fail "$name" "missing or wrong:$miss"; return; }

    # The .pc names the final paths (not DESTDIR); pkg-config's sysroot maps them to the stage.
    local pc=$d$libdir/pkgconfig/gdrapi.pc
    if ! grep -qx "prefix=$prefix" "$pc" || ! grep -qx "libdir=$libdir" "$pc" ||
       ! grep -qx "Version: $VERSION" "$pc"; then
        t_fail "$name" "gdrapi.pc: $(tr '\n' ' ' <"$pc")"; return
    fi
    local flags
    flags=$(PKG_CONFIG_PATH=$d$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$d \
            pkg-config --cflags --libs gdrapi)
    if ! ${CC:-cc} -Wall -Wextra -Werror -o "$work/client" "$HERE/use_gdrapi.c" $flags \
            >"$work/$name.cc.log" 2>&1; then
        t_fail "$name" "client does not build with '$flags': $(head -c 400 "$work/$name.cc.log")"
        return
    fi
    local out lib
    lib=$(LD_LIBRARY_PATH=$d$libdir ldd "$work/client" | awk '/libgdrapi/ {print $3}')
    out=$(LD_LIBRARY_PATH=$d$libdir "$work/client" 2>&1) ||
        { t_fail "$name" "client: $out"; return; }
    [ "$lib" = "$d$libdir/libgdrapi.so.2" ] || { t_fail "$name" "client loaded '$lib'"; return; }
    t_ok "$name"

    # vramio-run finds its shim, and the bridge beside it, where this layout put them.
    if [ -z "$T_RUN_DIR" ]; then
        t_skip "$name-vramio-run" "no private directory for vramio-run (see install/vramio-run_dir)"
    else
        out=$(shim_of_vramio_run "$d$prefix/bin/vramio-run" "$work/$name.run")
        case $out in
            */vramio/libvramio_cuda.so) [ -f "$out" ] && [ -f "${out%/*}/libvramio_bridge.so" ] &&
                                            t_ok "$name-vramio-run" ||
                                            t_fail "$name-vramio-run" "missing $out or its bridge" ;;
            *) t_fail "$name-vramio-run" "the shim is '$out'" ;;
        esac
    fi

    if ! pmake uninstall DESTDIR="$d" "$@" >"$work/$name.un.log" 2>&1; then
        t_fail "$name-uninstall" "make uninstall failed: $(tail -n 5 "$work/$name.un.log")"
    elif [ -n "$(left_in "$d")" ]; then
        t_fail "$name-uninstall" "left behind: $(left_in "$d")"
    else
        t_ok "$name-uninstall"
    fi
}

MA=$(gcc -print-multiarch 2>/dev/null); MA=${MA:-x86_64-linux-gnu}
check_install install-usr-multiarch "$work/a" /usr "/usr/lib/$MA" PREFIX=/usr libdir="/usr/lib/$MA"
check_install install-prefix "$work/b" /opt/vramio /opt/vramio/lib PREFIX=/opt/vramio

# The module files of a source install: DKMS tree, udev rule, modprobe.d.
d=$work/c
if pmake install-dkms DESTDIR="$d" >"$work/dkms.log" 2>&1; then
    src=$d/usr/src/gdrdrv-$VERSION
    conf_ver=$(sed -n 's/^PACKAGE_VERSION="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$src/dkms.conf")
    miss=""
    [ "$conf_ver" = "$VERSION" ] || miss="$miss dkms.conf version '$conf_ver'"
    [ -f "$src/uapi/gdrdrv.h" ] || miss="$miss uapi/gdrdrv.h"
    ls "$src"/*.c >/dev/null 2>&1 || miss="$miss module sources"
    [ -f "$src/Makefile" ] || [ -f "$src/Kbuild" ] || miss="$miss kbuild file"
    [ -f "$d/etc/udev/rules.d/60-gdrdrv.rules" ] || miss="$miss udev rule"
    [ -f "$d/etc/modprobe.d/gdrdrv.conf" ] || miss="$miss modprobe.d file"
    [ -z "$miss" ] && t_ok install-dkms || t_fail install-dkms "missing or wrong:$miss"
    pmake uninstall-dkms DESTDIR="$d" >>"$work/dkms.log" 2>&1
    [ -z "$(left_in "$d")" ] && t_ok uninstall-dkms || t_fail uninstall-dkms "left: $(left_in "$d")"
else
    t_fail install-dkms "make install-dkms failed: $(tail -n 5 "$work/dkms.log")"
fi
# GDRCopy's own make targets, which build scripts written for it call (e.g. 'make prefix=P
# libdir=L lib' then 'make ... lib_install', 'make exes_install'): lib_install puts the library,
# its links and the headers where 'make install' does, exes_install the gdrcopy_* tools, and
# 'make uninstall' with the same variables removes both.
d=$work/d; up_vars=(prefix=/opt/gdrcopy libdir=/opt/gdrcopy/lib64)
if ! pmake "${up_vars[@]}" lib >"$work/up.log" 2>&1 ||
   ! pmake "${up_vars[@]}" DESTDIR="$d" lib_install >>"$work/up.log" 2>&1; then
    t_fail upstream-lib_install "$(tail -n 2 "$work/up.log" | tr '\n' ' ')"
else
    miss=""
    for f in lib64/libgdrapi.so.$VERSION lib64/libgdrapi.so.2 lib64/libgdrapi.so include/gdrapi.h \
             include/gdrconfig.h; do
        [ -e "$d/opt/gdrcopy/$f" ] || miss="$miss $f"
    done
    [ -z "$miss" ] && t_ok upstream-lib_install || t_fail upstream-lib_install "missing:$miss"
fi
if ! pmake "${up_vars[@]}" DESTDIR="$d" exes_install >"$work/up-exes.log" 2>&1; then
    t_fail upstream-exes_install "$(tail -n 2 "$work/up-exes.log" | tr '\n' ' ')"
else
    miss=""
    for f in $(tool_names); do [ -x "$d/opt/gdrcopy/bin/$f" ] || miss="$miss bin/$f"; done
    [ -z "$miss" ] && t_ok upstream-exes_install || t_fail upstream-exes_install "missing:$miss"
    # Installed beside a lib64 libdir, the tools find the library with no LD_LIBRARY_PATH.
    out=$(env -u LD_LIBRARY_PATH "$d/opt/gdrcopy/bin/gdrcopy_info" --help 2>&1); rc=$?
    [ $rc -eq 0 ] && t_ok upstream-exes_find_lib64 ||
        t_fail upstream-exes_find_lib64 "gdrcopy_info --help: exit $rc: $(head -n 1 <<<"$out")"
fi
pmake "${up_vars[@]}" DESTDIR="$d" uninstall >"$work/up-un.log" 2>&1
[ -z "$(left_in "$d" 2>/dev/null)" ] && t_ok upstream-uninstall ||
    t_fail upstream-uninstall "left: $(left_in "$d")"
t_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/packaging/test_static.sh - packaging facts that need no build: one version everywhere,
# the symbols file matches the export map and vramio.h, every tool has a man page that is
# clean and documents each option of the tool's -h, and nothing in the packaging makes device
# nodes by hand.
set -u
. "$(dirname "$0")/common.sh"
cd "$REPO" || exit 1
BUILD=${BUILD:-build}
VERSION=$(project_version)
MAJOR=${VERSION%%.*}

# ---- one version: Makefile, Debian changelog, RPM spec, dkms.conf, headers ---------------
bad=""
deb=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' debian/changelog)
[ "${deb%%-*}" = "$VERSION" ] || bad="$bad debian/changelog:$deb"
rpmv=$(sed -n 's/^Version: *//p' packaging/rpm/vramio.spec)
[ "$rpmv" = "$VERSION" ] || bad="$bad vramio.spec:$rpmv"
rpmcl=$(grep -A1 '^%changelog' packaging/rpm/vramio.spec | sed -n 's/.* - \([0-9.]*\)-[0-9]*$/\1/p')
[ "$rpmcl" = "$VERSION" ] || bad="$bad vramio.spec-%changelog:$rpmcl"
dk=$(sed -n 's/^PACKAGE_VERSION="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' driver/dkms.conf 2>/dev/null)
case "$dk" in "@VERSION@"|"#MODULE_VERSION#"|"$VERSION") ;; *) bad="$bad driver/dkms.conf:$dk" ;; esac
h() { sed -n "s/^#define $2 \([0-9]*\).*/\1/p" "$1"; }
[ "$(h include/gdrapi.h GDR_API_MAJOR_VERSION).$(h include/gdrapi.h GDR_API_MINOR_VERSION)" = "$VERSION" ] ||
    bad="$bad gdrapi.h"
[ "$(h include/vramio.h VRAMIO_VERSION_MAJOR).$(h include/vramio.h VRAMIO_VERSION_MINOR)" = "$VERSION" ] ||
    bad="$bad vramio.h"
grep -q "^libgdrapi.so.$MAJOR libgdrapi$MAJOR " debian/libgdrapi2.symbols || bad="$bad symbols-soname"
grep -q "^Package: libgdrapi$MAJOR\$" debian/control || bad="$bad control-package-name"
[ -z "$bad" ] && t_ok version-sources || t_fail version-sources "not $VERSION:$bad"

# ---- symbols file = export map (gdr_*) + vramio.h's functions ----------------------------
map_gdr=$(grep -oE '^ *gdr_[a-z0-9_]+;' src/libgdrapi.map | tr -d ' ;' | sort)
sym_gdr=$(sed -n 's/^ \(gdr_[a-z0-9_]*\)@Base .*/\1/p' debian/libgdrapi2.symbols | sort)
hdr_vr=$(grep -oE '\bvramio_[a-z0-9_]+\(' include/vramio.h | tr -d '(' | sort -u)
sym_vr=$(sed -n 's/^ \(vramio_[a-z0-9_]*\)@Base .*/\1/p' debian/libgdrapi2.symbols | sort)
if [ "$map_gdr" != "$sym_gdr" ] || [ "$(wc -l <<<"$map_gdr")" -ne 17 ]; then
    t_fail symbols-file "gdr_* of the map and the symbols file differ: $(diff <(echo "$map_gdr") <(echo "$sym_gdr") | grep '^[<>]' | tr '\n' ' ')"
elif [ "$hdr_vr" != "$sym_vr" ]; then
    t_fail symbols-file "vramio_* of vramio.h and the symbols file differ: $(diff <(echo "$hdr_vr") <(echo "$sym_vr") | grep '^[<>]' | tr '\n' ' ')"
else
    t_ok symbols-file
fi

# ---- man pages: one per tool, no groff warnings, every -h option documented ---------------
# The six tools of GDRCopy 2.6, as install.mk lists them (the other tests read that list too).
n=$(tool_names | wc -l)
[ "$n" -eq 6 ] && t_ok tool-list || t_fail tool-list "install.mk's INSTALL_TOOLS names $n tools, not 6"
for t in $(tool_names); do
    page=packaging/man/$t.1
    [ -f "$page" ] || { t_fail "man-$t" "no $page"; continue; }
    warn=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
    [ -z "$warn" ] || { t_fail "man-$t" "groff: $warn"; continue; }
    bin=$BUILD/bin/$t
    if [ ! -x "$bin" ]; then
        t_skip "man-$t" "$bin is not built, its options were not compared"; continue
    fi
    text=$(groff -man -Tascii "$page" 2>/dev/null | col -b)
    missing=""
    # Options are the first words of the help's indented lines: "  -x ARG", "  -h, --help".
    for o in $("$bin" -h 2>&1 | grep -E '^ +-' | sed -E 's/^ +//; s/  .*//; s/,/ /g' |
               grep -oE '(^| )--?[A-Za-z][A-Za-z0-9-]*'); do
        grep -qE -- "(^|[^A-Za-z0-9-])$o([^A-Za-z0-9-]|\$)" <<<"$text" || missing="$missing $o"
    done
    [ -z "$missing" ] && t_ok "man-$t" || t_fail "man-$t" "options of $t -h not in $page:$missing"
done

# ---- nothing makes /dev/gdrdrv by hand: the kernel does --------------------------------
hits=$(grep -rnw mknod debian packaging 2>/dev/null | grep -vE '^[^:]+:[0-9]+: *(#|\.\\")')
[ -z "$hits" ] && t_ok no-mknod || t_fail no-mknod "$hits"

# ---- the udev rule and modprobe.d agree on 0660 ----------------------------------------
grep -qE '^KERNEL=="gdrdrv", MODE="0660", GROUP="video"' packaging/udev/60-gdrdrv.rules &&
    grep -qx 'options gdrdrv dev_mode=0660' packaging/modprobe/gdrdrv.conf &&
    t_ok device-permissions ||
    t_fail device-permissions "60-gdrdrv.rules and gdrdrv.conf do not both give mode 0660"
t_done

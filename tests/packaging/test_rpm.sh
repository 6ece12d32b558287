#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/packaging/test_rpm.sh - the RPM spec builds with rpmbuild -bb (Debian's rpm package)
# from a source tarball of a clean clone of HEAD, with the same split as the Debian packages,
# and, where Debian's kernel headers are installed, with --with kmod (the prebuilt module).
# Build dependencies are not checked (--nodeps): this is a Debian machine with no rpm database
# of them; debuginfo is off because Debian's rpm lacks find-debuginfo.
set -u
. "$(dirname "$0")/common.sh"

command -v rpmbuild >/dev/null || { echo "rpmbuild is missing (Debian package rpm)"; exit 77; }
VERSION=$(project_version)
work=$(mktemp -d /tmp/vramio-rpm.XXXXXX)
trap 'rm -rf "$work"' EXIT

if ! clean_clone "$work/vramio" >"$work/clone.log"; then
    t_fail rpm-build "git clone failed: $(tail -n 3 "$work/clone.log")"; exit 1
fi
spec=$work/vramio/packaging/rpm/vramio.spec
if ! rpmspec -P "$spec" >"$work/parsed.spec" 2>"$work/parse.log"; then
    t_fail rpm-spec-parse "$(head -n 5 "$work/parse.log")"; exit 1
fi
t_ok rpm-spec-parse

mkdir -p "$work/top/SOURCES"
git -C "$work/vramio" archive --prefix="vramio-$VERSION/" \
    -o "$work/top/SOURCES/vramio-$VERSION.tar.gz" HEAD
abi=$(debian_headers_abi)
kmod=()
if [ -n "$abi" ] && [ -d "/usr/lib/modules/$abi/build" ]; then
    kmod=(--with kmod --define "kernel_version $abi")
else
    t_skip rpm-kmod "linux-headers-$(dpkg --print-architecture 2>/dev/null) is not installed: the prebuilt-module variant was not built"
fi
# Build from outside the clone so nothing but the tarball is used.
(cd "$work" && rpmbuild -bb --nodeps --define "_topdir $work/top" \
    --define 'debug_package %{nil}' --define "_smp_mflags -j$(nproc)" "${kmod[@]}" "$spec") \
    >"$work/build.log" 2>&1
rc=$?
rpms=$work/top/RPMS
pkg() { ls "$rpms"/*/"$1-$VERSION"-*.rpm 2>/dev/null | head -n 1; }
if [ $rc -ne 0 ]; then
    t_fail rpm-build "rpmbuild exit $rc"; tail -n 30 "$work/build.log"; exit 1
fi
t_ok rpm-build

# The split and the files of each package.
check_rpm() {
    local name=$1 f list missing=""; shift
    f=$(pkg "$name")
    [ -n "$f" ] || { t_fail "rpm-$name" "not built"; return; }
    list=$(rpm -qlp "$f" 2>/dev/null)
    for want in "$@"; do
        grep -qE "$want" <<<"$list" || missing="$missing $want"
    done
    [ -z "$missing" ] && t_ok "rpm-$name" || t_fail "rpm-$name" "no file matching:$missing"
}
# The runtime package holds the unversioned name too (clients dlopen "libgdrapi.so").
check_rpm libgdrapi "/libgdrapi\.so\.$VERSION\$" '/libgdrapi\.so\.2$' '/libgdrapi\.so$'
check_rpm libgdrapi-devel '/include/gdrapi\.h$' '/include/gdrconfig\.h$' '/include/vramio\.h$' \
    '/pkgconfig/gdrapi\.pc$'
check_rpm gdrcopy-tools $(for t in $(tool_names) $(runner_names); do echo "/bin/$t\$" "/man1/$t\.1"; done) \
    $(for p in $(bridge_lib_names); do echo "/vramio/$p\$"; done)
check_rpm gdrdrv-dkms "/usr/src/gdrdrv-$VERSION/dkms\.conf\$" "/usr/src/gdrdrv-$VERSION/Makefile\$" \
    '/rules\.d/60-gdrdrv\.rules$' '/modprobe\.d/gdrdrv\.conf$'

# The library package provides the soname that dependent packages require.
prov=$(rpm -qp --provides "$(pkg libgdrapi)" 2>/dev/null)
grep -q '^libgdrapi\.so\.2()' <<<"$prov" && t_ok rpm-provides-soname ||
    t_fail rpm-provides-soname "libgdrapi provides: $(tr '\n' ' ' <<<"$prov")"

# The shim's libcuda.so.1.real is a link vramio-run makes at run time: no requirement.
req=$(rpm -qp --requires "$(pkg gdrcopy-tools)" 2>/dev/null)
[ -n "$req" ] && ! grep -q 'libcuda' <<<"$req" && t_ok rpm-tools-require-no-driver ||
    t_fail rpm-tools-require-no-driver "gdrcopy-tools requires: $(grep libcuda <<<"$req" | tr '\n' ' ')"

if [ ${#kmod[@]} -gt 0 ]; then
    f=$(pkg gdrdrv-kmod)
    if [ -z "$f" ]; then
        t_fail rpm-kmod "gdrdrv-kmod not built"
    else
        mkdir -p "$work/x" && (cd "$work/x" && rpm2cpio "$f" | cpio -idm --quiet)
        ko=$(find "$work/x" -name gdrdrv.ko | head -n 1)
        # modinfo is in /sbin, which a user's PATH may lack (Debian's does).
        magic=$( [ -n "$ko" ] && PATH=$PATH:/usr/sbin:/sbin modinfo -F vermagic "$ko" 2>/dev/null)
        [ "${magic%% *}" = "$abi" ] && t_ok "rpm-kmod ($abi)" ||
            t_fail "rpm-kmod ($abi)" "module '$ko', vermagic '$magic'"
    fi
fi
t_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/packaging/test_dkms_source.sh - the README's source install of the kernel module, live:
# 'make install-dkms', then 'dkms install gdrdrv/VERSION' (for the kernel of Debian's default
# headers), then 'make uninstall-dkms', after which DKMS knows no gdrdrv and no built module is
# left under /lib/modules. Needs root, dkms and linux-headers-<arch>; shares test_deb.sh's lock
# (both register gdrdrv with DKMS).
set -u
. "$(dirname "$0")/common.sh"

[ "$(id -u)" = 0 ] || { echo "needs root: it installs the module's source and runs dkms"; exit 77; }
command -v dkms >/dev/null || { echo "dkms is missing (see .ci/packages.d/packaging.txt)"; exit 77; }
exec 9>/tmp/vramio-test-deb.lock
flock -n 9 || { echo "test_deb.sh or another run of this test is running on this machine"; exit 77; }
VERSION=$(project_version)
[ -z "$(dkms status -m gdrdrv 2>&1)" ] && [ ! -e "/usr/src/gdrdrv-$VERSION" ] ||
    { echo "gdrdrv is already known to DKMS or in /usr/src here; not touching it"; exit 77; }
abi=$(debian_headers_abi)
[ -n "$abi" ] && [ -d "/usr/lib/modules/$abi/build" ] ||
    { echo "linux-headers-$(dpkg --print-architecture) is not installed"; exit 77; }

pmake() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$REPO" -s BUILD="${BUILD:-build}" "$@"; }
work=$(mktemp -d /tmp/vramio-dkms-src.XXXXXX)
# Whatever the test left: the source back in place so that DKMS can remove its build, then
# both gone.
cleanup() {
    if [ -n "$(dkms status -m gdrdrv 2>&1)" ]; then
        pmake install-dkms >/dev/null 2>&1
        dkms remove "gdrdrv/$VERSION" --all >/dev/null 2>&1
        pmake uninstall-dkms >/dev/null 2>&1
    fi
    rm -rf "$work"
}
t_at_exit cleanup

if ! pmake install-dkms >"$work/install.log" 2>&1; then
    t_fail dkms-source-install "make install-dkms: $(tail -n 3 "$work/install.log")"; t_done
fi
if ! dkms install "gdrdrv/$VERSION" -k "$abi" >"$work/dkms.log" 2>&1; then
    t_fail dkms-source-install "dkms install: $(grep -v '^$' "$work/dkms.log" | tail -n 3)"; t_done
fi
t_ok dkms-source-install

pmake uninstall-dkms >"$work/uninstall.log" 2>&1
left=$(dkms status -m gdrdrv 2>&1 | head -n 2 | tr '\n' ' ')
ko=$(find "/lib/modules/$abi" -name 'gdrdrv.ko*' 2>/dev/null | tr '\n' ' ')
[ -e "/usr/src/gdrdrv-$VERSION" ] && left="$left /usr/src/gdrdrv-$VERSION"
if [ -z "$left$ko" ]; then
    t_ok dkms-source-uninstall
else
    t_fail dkms-source-uninstall "after make uninstall-dkms: dkms status '$left', modules '$ko'"
fi
t_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/packaging/test_deb.sh - the Debian packages, as a user gets them: built with
# dpkg-buildpackage from a clean clone of HEAD, checked by lintian, installed with dpkg, used
# (pkg-config, a compiled client, dlopen by both names, the tools, a DKMS build of gdrdrv against
# Debian's kernel headers), then purged, after which nothing they installed may remain.
# Needs root and the packages of .ci/packages.d/packaging.txt; installs and purges packages.
set -u
. "$(dirname "$0")/common.sh"

PKGS="libgdrapi2 libgdrapi-dev gdrcopy-tools gdrdrv-dkms"
[ "$(id -u)" = 0 ] || { echo "needs root: it installs and purges the packages it builds"; exit 77; }
for t in dpkg-buildpackage dh dh_dkms dkms lintian git pkg-config; do
    command -v "$t" >/dev/null || { echo "$t is missing (see .ci/packages.d/packaging.txt)"; exit 77; }
done
# Several people may run 'make check' on one machine: one run of this test at a time.
exec 9>/tmp/vramio-test-deb.lock
flock -n 9 || { echo "another test_deb.sh is running on this machine"; exit 77; }
for p in $PKGS; do
    st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)
    if [ -n "$st" ] && [ "$st" != not-installed ]; then
        echo "$p is already installed here; this test installs and purges its own build"; exit 77
    fi
done
[ -z "$(dkms status -m gdrdrv 2>/dev/null)" ] ||
    { echo "gdrdrv is already known to DKMS here (dkms status); not touching it"; exit 77; }

# dpkg with the same arguments until no other dpkg or apt holds its lock (5 minutes at most).
dpkg_locked() {
    local i out rc
    for i in $(seq 60); do
        out=$(dpkg "$@" 2>&1); rc=$?
        grep -q 'dpkg frontend lock\|dpkg status database is locked' <<<"$out" || break
        sleep 5
    done
    echo "$out"; return $rc
}

VERSION=$(project_version)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
work=$(mktemp -d /tmp/vramio-deb.XXXXXX)
installed=0

cleanup() {
    if [ "$installed" = 1 ]; then
        dpkg_locked --purge $PKGS $(cat "$work/pulled" 2>/dev/null) >"$work/purge.log" 2>&1 ||
            { echo "purge at exit failed:"; tail -n 20 "$work/purge.log"; }
    fi
    [ -n "${FAKE_NV:-}" ] && rm -rf "$FAKE_NV"
    rm -rf "$work"
}
t_at_exit cleanup
# Where vramio-run makes its directories (not $work: /tmp is refused).
t_run_dir deb/vramio-run_dir

# ---- build -------------------------------------------------------------------------------
if ! clean_clone "$work/vramio" >"$work/clone.log"; then
    t_fail deb-build "git clone failed: $(tail -n 3 "$work/clone.log")"; exit 1
fi
(cd "$work/vramio" && DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -us -uc) \
    >"$work/build.log" 2>&1
rc=$?
debs=()
for p in $PKGS; do
    f=$(ls "$work"/${p}_"$VERSION"_*.deb 2>/dev/null | head -n 1)
    [ -n "$f" ] && debs+=("$f")
done
if [ $rc -ne 0 ] || [ ${#debs[@]} -ne 4 ]; then
    t_fail deb-build "dpkg-buildpackage exit $rc, ${#debs[@]} of 4 packages"
    tail -n 40 "$work/build.log"; exit 1
fi
t_ok deb-build
# dpkg-gensymbols prints a diff when the exported symbols and debian/libgdrapi2.symbols differ.
if grep -q 'dpkg-gensymbols: warning' "$work/build.log"; then
    t_fail deb-symbols "the library's symbols differ from debian/libgdrapi2.symbols"
    grep -A 30 'dpkg-gensymbols: warning' "$work/build.log" | head -n 40
else
    t_ok deb-symbols
fi

# ---- lintian -----------------------------------------------------------------------------
lintian --tag-display-limit 0 "$work"/vramio_"$VERSION"_*.changes >"$work/lintian.log" 2>&1
if grep -q '^E: ' "$work/lintian.log"; then
    t_fail lintian "$(grep -c '^E: ' "$work/lintian.log") errors"; grep '^E: ' "$work/lintian.log"
else
    t_ok lintian
    grep '^W: ' "$work/lintian.log" | sed 's/^/  lintian /'
fi

# ---- no mknod in what is shipped (the kernel creates /dev/gdrdrv) ------------------------
# Maintainer scripts, scripts, udev rules and config files; prose (README.md) may name it.
mkdir -p "$work/unpacked"
for d in "${debs[@]}"; do
    dpkg-deb -R "$d" "$work/unpacked/$(basename "$d" .deb)"
done
hits=$(find "$work/unpacked" -type f | while read -r f; do
    case "$f" in */DEBIAN/*|*.rules|*.conf|*.sh) ;; *) head -c 2 "$f" | grep -q '#!' || continue ;; esac
    grep -Hnw mknod "$f" | grep -vE '^[^:]+:[0-9]+: *#'
done)
[ -z "$hits" ] && t_ok no-mknod || t_fail no-mknod "$hits"

# ---- install -----------------------------------------------------------------------------
installed_pkgs() {
    dpkg-query -W -f='${db:Status-Status} ${Package}\n' | awk '$1 == "installed" {print $2}' | sort
}
installed_pkgs >"$work/before"
# The packages' directories, and which of them exist already (those stay after the purge).
for u in "$work"/unpacked/*; do (cd "$u" && find . -mindepth 1 -type d ! -path './DEBIAN*'); done |
    sed 's|^\.||' | sort -u >"$work/pkg-dirs"
while read -r d; do [ -d "$d" ] && echo "$d"; done <"$work/pkg-dirs" >"$work/dirs-before"
installed=1
if ! dpkg_locked -i "${debs[@]}" >"$work/install.log" 2>&1; then
    # Missing dependencies: let apt bring them, as a user would.
    DEBIAN_FRONTEND=noninteractive apt-get -f install -y -qq -o DPkg::Lock::Timeout=300 \
        >>"$work/install.log" 2>&1
fi
installed_pkgs >"$work/after"
comm -13 "$work/before" "$work/after" | grep -vxF -f <(tr ' ' '\n' <<<"$PKGS") >"$work/pulled"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
        missing="$missing $p"
done
if [ -n "$missing" ]; then
    t_fail deb-install "not installed:$missing"; tail -n 30 "$work/install.log"; exit 1
fi
t_ok deb-install
for p in $PKGS; do dpkg -L "$p"; done | sort -u >"$work/files"
# The runtime package alone holds the unversioned name that NCCL, aws-ofi-nccl, TensorRT-LLM
# and DPDK dlopen.
dpkg -L libgdrapi2 | grep -qE "^/usr/lib/$MA/libgdrapi\.so\$" && t_ok deb-runtime-unversioned ||
    t_fail deb-runtime-unversioned "libgdrapi2 lacks /usr/lib/$MA/libgdrapi.so"

# ---- pkg-config, a client built against the installed header, dlopen by both names -------
pc=$(pkg-config --cflags --libs gdrapi 2>&1)
pcver=$(pkg-config --modversion gdrapi 2>&1)
if [ "$pcver" = "$VERSION" ] && grep -qw -- -lgdrapi <<<"$pc"; then
    t_ok pkg-config
else
    t_fail pkg-config "cflags/libs '$pc', version '$pcver' (expected $VERSION)"
fi

cc=${CC:-cc}
if $cc -Wall -Wextra -Werror -o "$work/use_gdrapi" "$HERE/use_gdrapi.c" \
        $(pkg-config --cflags --libs gdrapi) >"$work/cc.log" 2>&1; then
    lib=$(readlink -f "$(ldd "$work/use_gdrapi" | awk '/libgdrapi/ {print $3}')")
    out=$(env -u LD_LIBRARY_PATH "$work/use_gdrapi" 2>&1); rc=$?
    if [ $rc -eq 0 ] && [ "$lib" = "$(readlink -f "/usr/lib/$MA/libgdrapi.so.2")" ]; then
        t_ok installed-client; echo "  $(tail -n 1 <<<"$out")"
    else
        t_fail installed-client "exit $rc, library '$lib': $out"
    fi
else
    t_fail installed-client "does not compile against the installed header: $(head -c 600 "$work/cc.log")"
fi

if $cc -Wall -Wextra -Werror -o "$work/dlopen_gdrapi" "$HERE/dlopen_gdrapi.c" -ldl \
        >"$work/cc2.log" 2>&1; then
    out=$(env -u LD_LIBRARY_PATH "$work/dlopen_gdrapi" libgdrapi.so libgdrapi.so.2 2>&1) &&
        t_ok dlopen-both-names || t_fail dlopen-both-names "$out"
else
    t_fail dlopen-both-names "$(head -c 600 "$work/cc2.log")"
fi

# ---- the tools: on PATH, each with its man page, runnable --------------------------------
bad=""
for t in $(tool_names) $(runner_names); do
    [ -x "/usr/bin/$t" ] || bad="$bad $t(binary)"
    man -w "$t" >/dev/null 2>&1 || bad="$bad $t(man page)"
done
for p in $(bridge_lib_names); do
    ls /usr/lib/*/vramio/"$p" >/dev/null 2>&1 || bad="$bad $p(library)"
done
out=$(shim_of_vramio_run vramio-run "$work/vramio-run")
[ -f "$out" ] || bad="$bad vramio-run(shim '$out')"
[ -z "$bad" ] && t_ok tools-installed || t_fail tools-installed "missing:$bad"
out=$(env -u LD_LIBRARY_PATH timeout 60 gdrcopy_info 2>&1); rc=$?
# Without a GPU it reports why nothing is usable; it must not crash or hang.
if [ $rc -lt 124 ] && [ -n "$out" ]; then
    t_ok tools-run
else
    t_fail tools-run "gdrcopy_info exit $rc: $out"
fi

# ---- the module: DKMS build for Debian's kernel headers, udev rule, modprobe.d ------------
abi=$(debian_headers_abi)
if [ -z "$abi" ] || [ ! -d "/usr/lib/modules/$abi/build" ]; then
    t_skip dkms-build "linux-headers-$(dpkg --print-architecture) is not installed"
else
    # DKMS keeps the build's log in build/ after a failure, beside the module after a success.
    dkms_make_log() {
        ls -t /var/lib/dkms/gdrdrv/"$VERSION"/"$abi"/*/log/make.log \
            /var/lib/dkms/gdrdrv/"$VERSION"/build/make.log 2>/dev/null | head -n 1
    }
    dkms build -m gdrdrv -v "$VERSION" -k "$abi" --force >"$work/dkms.log" 2>&1; rc=$?
    ko=$(find "/var/lib/dkms/gdrdrv/$VERSION/$abi" -name 'gdrdrv.ko*' 2>/dev/null | head -n 1)
    magic=$( [ -n "$ko" ] && modinfo -F vermagic "$ko" 2>/dev/null)
    # No NVIDIA source here: the build must have used the module's own declarations.
    nvh=$(grep -m1 -o 'GDRDRV_NV_P2P_H=[^ ]*' "$(dkms_make_log)" 2>/dev/null)
    if [ $rc -eq 0 ] && [ "${magic%% *}" = "$abi" ] &&
       { [ "$nvh" = "GDRDRV_NV_P2P_H=" ] || ls /usr/src/nvidia-*/nvidia/nv-p2p.h >/dev/null 2>&1; }; then
        t_ok "dkms-build ($abi)"
    else
        t_fail "dkms-build ($abi)" "dkms exit $rc, module '$ko', vermagic '$magic', $nvh"
        grep -v '^$' "$work/dkms.log" | tail -n 15
        tail -n 25 "$(dkms_make_log)" 2>/dev/null
    fi
    # With an NVIDIA driver source in /usr/src, DKMS's build must use its nv-p2p.h. A stand-in
    # source (our own declarations under NVIDIA's file name) is put there only on CI or when
    # asked: on a shared machine it would change other people's module builds meanwhile.
    fake=/usr/src/nvidia-999.99.99-vramio-test
    if [ "${CI:-}" != true ] && [ "${VRAMIO_TEST_FAKE_NVIDIA:-}" != 1 ]; then
        t_skip dkms-build-nvidia-src "needs CI=true or VRAMIO_TEST_FAKE_NVIDIA=1 (it writes $fake)"
    elif [ -e "$fake" ]; then
        t_skip dkms-build-nvidia-src "$fake exists already"
    else
        FAKE_NV=$fake
        mkdir -p "$fake/nvidia"
        cp "/usr/src/gdrdrv-$VERSION/nv_p2p.h" "$fake/nvidia/nv-p2p.h"
        echo 'MODULE_LICENSE("Dual MIT/GPL");' >"$fake/nvidia/nv-frontend.c"
        dkms build -m gdrdrv -v "$VERSION" -k "$abi" --force >"$work/dkms-nv.log" 2>&1; rc=$?
        log=$(dkms_make_log)
        if [ $rc -eq 0 ] && grep -q "GDRDRV_NV_P2P_H=$fake/nvidia/nv-p2p.h" "$log"; then
            t_ok dkms-build-nvidia-src
        else
            t_fail dkms-build-nvidia-src "dkms exit $rc; $(grep -m1 -o 'GDRDRV_NV_P2P_H=[^ ]*' "$log" 2>/dev/null)"
            tail -n 15 "$log" 2>/dev/null
        fi
        rm -rf "$fake"; FAKE_NV=
    fi
    # The package's postinst installed it for this kernel: modprobe must find it there.
    dep=$(modprobe -S "$abi" --show-depends gdrdrv 2>&1)
    grep -q "/updates/dkms/gdrdrv.ko" <<<"$dep" && t_ok modprobe-finds-module ||
        t_fail modprobe-finds-module "$dep"
fi
rule=/lib/udev/rules.d/60-gdrdrv.rules
if grep -E '^KERNEL=="gdrdrv"' "$rule" 2>/dev/null | grep 'MODE="0660"' | grep -q 'GROUP="video"'; then
    t_ok udev-rule
else
    t_fail udev-rule "$rule does not give /dev/gdrdrv mode 0660 group video"
fi
conf=$(modprobe -c 2>/dev/null)
grep -qx 'softdep gdrdrv pre: nvidia' <<<"$conf" && grep -qx 'options gdrdrv dev_mode=0660' <<<"$conf" &&
    t_ok modprobe-conf || t_fail modprobe-conf "modprobe does not read /etc/modprobe.d/gdrdrv.conf"

# ---- purge: everything the packages installed is gone -----------------------------------
dpkg_locked --purge $PKGS >"$work/purge.log" 2>&1; rc=$?
installed=0
left=""
while read -r f; do
    [ "$f" = "/." ] && continue
    if grep -qxF "$f" "$work/pkg-dirs"; then
        # A directory must go when the packages created it.
        [ -d "$f" ] && ! grep -qxF "$f" "$work/dirs-before" && left="$left $f/"
    elif [ -e "$f" ] || [ -L "$f" ]; then
        left="$left $f"
    fi
done <"$work/files"
for d in /var/lib/dkms/gdrdrv /usr/src/gdrdrv-"$VERSION"; do [ -e "$d" ] && left="$left $d"; done
left="$left $(find /lib/modules/ -name 'gdrdrv.ko*' 2>/dev/null | tr '\n' ' ')"
left=$(echo $left)
if [ $rc -ne 0 ]; then
    t_fail deb-purge "dpkg --purge exit $rc: $(tail -n 5 "$work/purge.log")"
elif [ -n "$left" ]; then
    t_fail deb-purge "left behind: $left"
else
    t_ok deb-purge
fi
if [ -s "$work/pulled" ]; then
    dpkg_locked --purge $(cat "$work/pulled") >/dev/null 2>&1
fi

# ---- from upstream's packages: what depended on them stays installed --------------------
# A machine with GDRCopy's own packages (libgdrapi 2.6-1: the library and the headers;
# gdrcopy-tests: the tools) and a package that depends on them (here a stand-in, gdrapi-user):
# installing vramio's library, headers and tools with apt replaces upstream's packages and keeps
# the user installed, its dependencies met by vramio's (a drop-in replacement must not take
# programs with it).
fake_deb() { # name version arch depends file...: a package holding empty files, built in $work
    local name=$1 ver=$2 arch=$3 dep=$4 root=$work/fake-$1 f
    shift 4
    mkdir -p "$root/DEBIAN"
    for f in "$@"; do mkdir -p "$root$(dirname "$f")"; : >"$root$f"; done
    { echo "Package: $name"; echo "Version: $ver"; echo "Architecture: $arch"
      echo "Maintainer: test <test@example.org>"; [ -n "$dep" ] && echo "Depends: $dep"
      echo "Description: stand-in for the migration test"; } >"$root/DEBIAN/control"
    dpkg-deb -b --root-owner-group "$root" "$work/$name.deb" >/dev/null
}
up_files="/usr/lib/$MA/libgdrapi.so.2.6 /usr/include/gdrapi.h /usr/include/gdrconfig.h"
fake_deb libgdrapi 2.6-1 "$(dpkg --print-architecture)" "" $up_files
fake_deb gdrcopy-tests 2.6-1 "$(dpkg --print-architecture)" "libgdrapi" /usr/bin/gdrcopy_sanity \
    /usr/bin/gdrcopy_copybw
fake_deb gdrapi-user 1.0 all "libgdrapi (>= 2.4), gdrcopy-tests" /usr/share/doc/gdrapi-user/README
if ! dpkg_locked -i "$work/libgdrapi.deb" "$work/gdrcopy-tests.deb" "$work/gdrapi-user.deb" \
        >"$work/up.log" 2>&1; then
    t_fail deb-from-upstream "the stand-ins of upstream's packages did not install: $(tail -n 3 "$work/up.log")"
else
    installed=1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 \
        "${debs[0]}" "${debs[1]}" "${debs[2]}" >>"$work/up.log" 2>&1
    state() { dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || echo not-installed; }
    got="libgdrapi2 $(state libgdrapi2), libgdrapi-dev $(state libgdrapi-dev), gdrcopy-tools $(state gdrcopy-tools), gdrapi-user $(state gdrapi-user), upstream libgdrapi $(state libgdrapi), upstream gdrcopy-tests $(state gdrcopy-tests)"
    if [ "$got" = "libgdrapi2 installed, libgdrapi-dev installed, gdrcopy-tools installed, gdrapi-user installed, upstream libgdrapi not-installed, upstream gdrcopy-tests not-installed" ]; then
        t_ok deb-from-upstream
    else
        t_fail deb-from-upstream "after apt-get install of libgdrapi2, libgdrapi-dev and gdrcopy-tools: $got; $(grep -m2 -E '^E:|REMOVED|remov' "$work/up.log" | tr '\n' ' ')"
    fi
    dpkg_locked --purge gdrapi-user gdrcopy-tools libgdrapi-dev libgdrapi2 gdrcopy-tests libgdrapi \
        >/dev/null 2>&1
    installed=0
fi
t_done

# SPDX-License-Identifier: MIT
# tests/kernel/foreign.sh - sourced by tests/kernel/run-qemu.sh (ARCH=arm64) and
# driver/tests/test_driver_builds.sh: Debian's kernel headers, kernel images and static busybox
# of another architecture (arm64, ppc64el), for cross builds and guests on an amd64 machine.
# Names and versions come from apt's metadata at run time (the architecture must be a dpkg
# architecture with its lists fetched: .ci/setup.d/foreign-arches.sh); the packages are
# downloaded once, never installed, and kept in the kernel cache (CACHE, the first argument).
#
# The headers package's scripts/ and tools/ are links to linux-kbuild-<series>, whose programs
# (fixdep, modpost, ...) must run on the build machine: they point at the amd64 linux-kbuild
# package of the same version, which the amd64 headers brought (the programs are the same for
# every target), so kbuild runs them as it does for an amd64 build.

# foreign_arch DPKG_ARCH: sets FA_DPKG, FA_FLAVOUR (kernel ABI suffix), FA_KMAKE (kbuild's
# ARCH and CROSS_COMPILE) and FA_CROSS (the cross compiler's prefix). 1 for an unknown one.
foreign_arch() {
    case $1 in
    arm64)   FA_DPKG=arm64 FA_FLAVOUR=arm64 FA_CROSS=aarch64-linux-gnu- FA_KARCH=arm64 ;;
    ppc64el) FA_DPKG=ppc64el FA_FLAVOUR=powerpc64le FA_CROSS=powerpc64le-linux-gnu- FA_KARCH=powerpc ;;
    *) return 1 ;;
    esac
    FA_KMAKE=(ARCH=$FA_KARCH CROSS_COMPILE=$FA_CROSS)
}

# foreign_ready: "" when apt lists FA_DPKG packages and the cross compiler is there, else why not.
foreign_ready() {
    if ! dpkg --print-foreign-architectures 2>/dev/null | grep -qx "$FA_DPKG"; then
        echo "$FA_DPKG is not a dpkg architecture (.ci/setup.d/foreign-arches.sh)"
    elif ! command -v "${FA_CROSS}gcc" >/dev/null; then
        echo "no ${FA_CROSS}gcc (.ci/packages.d/cross.txt)"
    fi
}

# foreign_abi AMD64_ABI VERSION -> the FA_DPKG ABI of the same kernel build ("" when apt does
# not know its headers at that version).
foreign_abi() {
    local abi=${1%-amd64}-$FA_FLAVOUR
    apt-cache show "linux-headers-$abi:$FA_DPKG=$2" >/dev/null 2>&1 && echo "$abi"
}

# foreign_fetch CACHE PACKAGE VERSION -> path of the cached .deb (downloaded if missing).
foreign_fetch() {
    local dl=$1/deb deb
    mkdir -p "$dl"
    deb=$(ls "$dl/${2}_${3//:/%3a}_$FA_DPKG.deb" 2>/dev/null | head -n 1)
    if [ -z "$deb" ]; then
        (cd "$dl" && apt-get download -q "$2:$FA_DPKG=$3" >/dev/null 2>&1) || return 1
        deb=$(ls "$dl/${2}_"*"_$FA_DPKG.deb" 2>/dev/null | head -n 1)
    fi
    [ -n "$deb" ] && echo "$deb"
}

# foreign_headers CACHE ABI VERSION -> a kbuild tree for ABI (make -C it "${FA_KMAKE[@]}").
# Extracted once per version under CACHE/<arch>-headers.
foreign_headers() {
    local cache=$1 abi=$2 ver=$3 top deb tree kb
    top=$cache/$FA_DPKG-headers/${abi}_$ver
    tree=$top/usr/src/linux-headers-$abi
    [ -f "$tree/.config" ] && [ -e "$tree/scripts/basic/fixdep" ] && { echo "$tree"; return 0; }
    deb=$(foreign_fetch "$cache" "linux-headers-$abi" "$ver") || return 1
    # The common headers and the kbuild programs are the amd64 packages of the same version.
    kb=$(dpkg-deb -f "$deb" Depends | grep -oE 'linux-kbuild-[^ ,]+' | head -n 1)
    [ -x "/usr/lib/$kb/scripts/basic/fixdep" ] || { echo "no /usr/lib/$kb (install $kb)" >&2; return 1; }
    rm -rf "$top.tmp.$$" && mkdir -p "$top.tmp.$$" && dpkg-deb -x "$deb" "$top.tmp.$$" || return 1
    ln -sfn "/usr/lib/$kb/scripts" "$top.tmp.$$/usr/src/linux-headers-$abi/scripts"
    ln -sfn "/usr/lib/$kb/tools" "$top.tmp.$$/usr/src/linux-headers-$abi/tools"
    rm -rf "$top" && mv "$top.tmp.$$" "$top" && echo "$tree"
}

# foreign_busybox CACHE -> a static busybox for FA_DPKG (from busybox-static:<arch>).
foreign_busybox() {
    local cache=$1 ver deb bb=$1/busybox-$FA_DPKG
    [ -x "$bb" ] && { echo "$bb"; return 0; }
    ver=$(apt-cache policy "busybox-static:$FA_DPKG" 2>/dev/null | sed -n 's/^ *Candidate: //p')
    [ -n "$ver" ] && [ "$ver" != "(none)" ] || return 1
    deb=$(foreign_fetch "$cache" busybox-static "$ver") || return 1
    dpkg-deb --fsys-tarfile "$deb" | tar -xO ./bin/busybox >"$bb.tmp.$$" && chmod 755 "$bb.tmp.$$" &&
        mv "$bb.tmp.$$" "$bb" && echo "$bb"
}

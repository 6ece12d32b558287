# SPDX-License-Identifier: MIT
# tests/kernel/arm64.sh - sourced by tests/kernel/run-qemu.sh (ARCH=arm64) and
# driver/tests/test_driver_builds.sh: Debian's arm64 kernel headers, kernel image and static
# busybox, for cross builds and an aarch64 guest on an amd64 machine. Names and versions come
# from apt's metadata at run time (arm64 must be a dpkg architecture with its lists fetched:
# .ci/setup.d/arm64.sh); the packages are downloaded once, never installed, and kept in the
# kernel cache ($1 of each function).
#
# The headers package's scripts/ and tools/ are links to linux-kbuild-<series>, whose
# programs (fixdep, modpost, ...) must run on the build machine: they point at the amd64
# linux-kbuild package of the same version that the amd64 headers brought (its programs are
# the same for every target), so kbuild runs them as it does for an amd64 build.

ARM64_CROSS=aarch64-linux-gnu-

# arm64_abi AMD64_ABI VERSION -> the arm64 ABI of the same kernel build ("" when apt does not
# know its headers at that version).
arm64_abi() {
    local abi=${1%-amd64}-arm64
    apt-cache show "linux-headers-$abi:arm64=$2" >/dev/null 2>&1 && echo "$abi"
}

# arm64_fetch CACHE PACKAGE VERSION -> path of the cached .deb (downloaded if missing).
arm64_fetch() {
    local dl=$1/deb deb
    mkdir -p "$dl"
    deb=$(ls "$dl/${2}_${3//:/%3a}_arm64.deb" 2>/dev/null | head -n 1)
    if [ -z "$deb" ]; then
        (cd "$dl" && apt-get download -q "$2:arm64=$3" >/dev/null 2>&1) || return 1
        deb=$(ls "$dl/${2}_"*"_arm64.deb" 2>/dev/null | head -n 1)
    fi
    [ -n "$deb" ] && echo "$deb"
}

# arm64_headers CACHE ABI VERSION -> a kbuild tree for ABI (make -C it ARCH=arm64
# CROSS_COMPILE=$ARM64_CROSS). Extracted once per version under CACHE/arm64-headers.
arm64_headers() {
    local cache=$1 abi=$2 ver=$3 top deb tree kb
    top=$cache/arm64-headers/$abi\_$ver
    tree=$top/usr/src/linux-headers-$abi
    [ -f "$tree/.config" ] && [ -e "$tree/scripts/basic/fixdep" ] && { echo "$tree"; return 0; }
    deb=$(arm64_fetch "$cache" "linux-headers-$abi" "$ver") || return 1
    # The common headers and the kbuild programs are the amd64 packages of the same version.
    kb=$(dpkg-deb -f "$deb" Depends | grep -oE 'linux-kbuild-[^ ,]+' | head -n 1)
    [ -x "/usr/lib/$kb/scripts/basic/fixdep" ] || { echo "no /usr/lib/$kb (install $kb)" >&2; return 1; }
    rm -rf "$top.tmp.$$" && mkdir -p "$top.tmp.$$" && dpkg-deb -x "$deb" "$top.tmp.$$" || return 1
    ln -sfn "/usr/lib/$kb/scripts" "$top.tmp.$$/usr/src/linux-headers-$abi/scripts"
    ln -sfn "/usr/lib/$kb/tools" "$top.tmp.$$/usr/src/linux-headers-$abi/tools"
    rm -rf "$top" && mv "$top.tmp.$$" "$top" && echo "$tree"
}

# arm64_busybox CACHE -> a static arm64 busybox (from busybox-static:arm64).
arm64_busybox() {
    local cache=$1 ver deb bb=$1/busybox-arm64
    [ -x "$bb" ] && { echo "$bb"; return 0; }
    ver=$(apt-cache policy busybox-static:arm64 2>/dev/null | sed -n 's/^ *Candidate: //p')
    [ -n "$ver" ] && [ "$ver" != "(none)" ] || return 1
    deb=$(arm64_fetch "$cache" busybox-static "$ver") || return 1
    dpkg-deb --fsys-tarfile "$deb" | tar -xO ./bin/busybox >"$bb.tmp.$$" && chmod 755 "$bb.tmp.$$" &&
        mv "$bb.tmp.$$" "$bb" && echo "$bb"
}

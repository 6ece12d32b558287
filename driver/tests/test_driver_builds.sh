#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# test_driver_builds.sh - gdrdrv.ko builds for every installed kernel's headers in both
# flavours with no compiler warning at W=1, and the proprietary flavour imports no GPL-only
# kernel export (the kernel refuses such a module next to the proprietary nvidia.ko); the
# open flavour's import of GPL-only exports shows that the check can see them. Also checks
# driver/Makefile's choice of header and flavour from an NVIDIA source tree, and builds against
# each shape of NVIDIA's nv-p2p.h (driver/tests/nv-p2p-shapes.h: no page-table flags word, no
# persistent API), which conftest.sh probes.
# The same for Debian's arm64 and ppc64el builds of each installed amd64 kernel, cross-compiled
# (tests/kernel/foreign.sh fetches their headers; skipped with a reason when the architecture
# is not a dpkg architecture here or its cross compiler is missing, a failure under CI).
# Prints one ok/not ok line per case; exits 77 when no kernel headers are installed.
# Its time grows with the kernels installed and the machine's load (403 s on a loaded 2-core
# machine with 3 trees), so tests/run.sh bounds it by progress: a result line per build.
# run.sh timeout: 2400
# run.sh stall: 400
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
# Run from `make -j check`: the kbuild runs below get their own job count, not the parent's
# jobserver.
unset MAKEFLAGS MFLAGS MAKELEVEL
trees=$(ls -d /usr/lib/modules/*/build 2>/dev/null)
if [ -z "$trees" ]; then
    echo "no kernel headers under /usr/lib/modules/*/build (linux-headers-amd64)"
    exit 77
fi
. tests/lib/t.sh

# Trees of other architectures: "<dpkg arch>:<path>" entries, built with that kbuild ARCH and
# the cross compiler (Debian's arm64 and ppc64el builds of each installed amd64 kernel).
. tests/kernel/foreign.sh
CACHE=${VRAMIO_KERNEL_CACHE:-/var/cache/vramio-kernels}
mkdir -p "$CACHE" 2>/dev/null && [ -w "$CACHE" ] || { CACHE=$BUILD/kernel/cache; mkdir -p "$CACHE"; }
host_trees=$trees
for fa in arm64 ppc64el; do
    foreign_arch "$fa"
    why=$(foreign_ready)
    if [ -n "$why" ]; then
        [ -n "${CI:-}" ] && t_fail "$fa/prerequisites" "$why" || t_skip "$fa/build" "$why"
        continue
    fi
    for kdir in $host_trees; do
        rel=$(basename "$(dirname "$kdir")")
        ver=$(dpkg-query -W -f='${Version}' "linux-headers-$rel" 2>/dev/null)
        abi=$(foreign_abi "$rel" "$ver")
        if [ -z "$abi" ]; then t_fail "$fa/$rel/headers" "apt knows no $fa build of $rel=$ver"; continue; fi
        t=$(foreign_headers "$CACHE" "$abi" "$ver" 2>&1) && trees="$trees $fa:$t" ||
            t_fail "$fa/$abi/headers" "$t"
    done
done

# GPL-only exports among a module's undefined symbols, per the tree's Module.symvers.
gpl_imports() {
    nm -u "$1" | awk '{print $2}' | sort -u >"$OUT/imports"
    awk -F'\t' '$4 == "EXPORT_SYMBOL_GPL" {print $2}' "$2/Module.symvers" | sort -u |
        comm -12 - "$OUT/imports" | tr '\n' ' '
}

# A folder of this run's own: several checks may run in one tree at once.
mkdir -p "$BUILD"
OUT=$(mktemp -d "$BUILD/driver-builds.XXXXXX")
for kdir in $trees; do
    rel=$(basename "$(dirname "$kdir")") cross=()
    case $kdir in *:*)
        foreign_arch "${kdir%%:*}"
        kdir=${kdir#*:} rel=$FA_DPKG/$(basename "$kdir" | sed 's/^linux-headers-//')
        cross=("${FA_KMAKE[@]}") ;;
    esac
    [ -f "$kdir/Module.symvers" ] || { t_fail "$rel/symvers" "$kdir/Module.symvers missing"; continue; }
    for flavour in open proprietary; do
        dir=$OUT/${rel//\//-}-$flavour
        rm -rf "$dir" && mkdir -p "$dir" && cp -r driver/. "$dir"/ && rm -rf "$dir/tests"
        if ! make -C "$dir" KDIR="$kdir" NVIDIA_SRC= GDRDRV_FLAVOUR="$flavour" W=1 "${cross[@]}" \
            -j"$(nproc)" >"$dir.log" 2>&1; then
            t_fail "$rel/$flavour/build" "$(grep -m1 -E 'error' "$dir.log")"
            continue
        fi
        # Compiler warnings (file:line:col: warning:); modpost's about the nvidia_p2p_*
        # imports are expected without an exporter's Module.symvers (driver/README.md).
        if grep -qE ':[0-9]+:[0-9]+: warning:' "$dir.log"; then
            t_fail "$rel/$flavour/build" "$(grep -m1 -E ':[0-9]+:[0-9]+: warning:' "$dir.log")"
        else
            t_ok "$rel/$flavour/build"
        fi
        gpl=$(gpl_imports "$dir/gdrdrv.ko" "$kdir")
        if [ "$flavour" = proprietary ]; then
            [ -z "$gpl" ] && t_ok "$rel/proprietary/no_gpl_only_imports" ||
                t_fail "$rel/proprietary/no_gpl_only_imports" "imports $gpl"
        else
            [ -n "$gpl" ] && t_ok "$rel/open/gpl_imports_visible" ||
                t_fail "$rel/open/gpl_imports_visible" "the check found no GPL-only import"
        fi
    done
done

# Every shape of NVIDIA's nv-p2p.h the module claims to build against, on each host kernel:
# the stand-ins cut out of driver/tests/nv-p2p-shapes.h (page table 2.x with its flags word; 1.x
# without it, with and without the persistent API), each as an installed driver's header
# (NVIDIA_SRC), with no warning at W=1, conftest.sh finding the flags word exactly where it
# is, and the persistent API imported exactly where the header has it.
#   SHAPE TAGS_KEPT TABLE_FLAGS PERSISTENT
shapes="pt2-flags:pt2,persistent:1:1 pt1-persistent:pt1,persistent:0:1 pt1-legacy:pt1:0:0"
for kdir in $host_trees; do
    rel=$(basename "$(dirname "$kdir")")
    for s in $shapes; do
        IFS=: read -r shape keep want_flags want_pers <<<"$s"
        src=$OUT/nvsrc-$shape dir=$OUT/$rel-shape-$shape
        rm -rf "$src" "$dir" && mkdir -p "$src/nvidia" "$dir"
        # Keep untagged lines and those of the tags kept; drop the other tagged ones.
        awk -v keep=",$keep," 'match($0, /\/\* \[[a-z0-9]+\] \*\/$/) {
            tag = substr($0, RSTART + 4, RLENGTH - 8); if (index(keep, "," tag ",") == 0) next }
            { print }' driver/tests/nv-p2p-shapes.h >"$src/nvidia/nv-p2p.h"
        cp -r driver/. "$dir"/ && rm -rf "$dir/tests"
        if ! make -C "$dir" KDIR="$kdir" NVIDIA_SRC="$(cd "$src" && pwd)" GDRDRV_FLAVOUR=open W=1 \
            -j"$(nproc)" >"$dir.log" 2>&1; then
            t_fail "$rel/nv-p2p-$shape/build" "$(grep -m1 -E 'error' "$dir.log")"
        elif grep -qE ':[0-9]+:[0-9]+: warning:' "$dir.log"; then
            t_fail "$rel/nv-p2p-$shape/build" "$(grep -m1 -E ':[0-9]+:[0-9]+: warning:' "$dir.log")"
        else
            flags=$(grep -c '^#define GDRDRV_HAVE_P2P_TABLE_FLAGS 1$' "$dir/gdrdrv_conftest.h")
            pers=$(nm -u "$dir/gdrdrv.ko" | grep -c ' nvidia_p2p_get_pages_persistent$')
            [ "$flags:$pers" = "$want_flags:$want_pers" ] && t_ok "$rel/nv-p2p-$shape/build" ||
                t_fail "$rel/nv-p2p-$shape/build" "table flags probed $flags, persistent imported $pers; want $want_flags, $want_pers"
        fi
    done
done

# A fake NVIDIA source: its nv-p2p.h is used and its MODULE_LICENSE picks the flavour.
fake=$OUT/nvidia-fake
for lic in NVIDIA "Dual MIT/GPL"; do
    rm -rf "$fake" && mkdir -p "$fake/nvidia"
    cp driver/nv_p2p.h "$fake/nvidia/nv-p2p.h"
    echo "MODULE_LICENSE(\"$lic\");" >"$fake/nvidia/nv-frontend.c"
    want=$([ "$lic" = NVIDIA ] && echo proprietary || echo open)
    cfg=$(make -s -C driver KDIR=/nonexistent NVIDIA_SRC="$(cd "$fake" && pwd)" config)
    if echo "$cfg" | grep -qx "GDRDRV_FLAVOUR=$want" &&
        echo "$cfg" | grep -q "^GDRDRV_NV_P2P_H=.*/nvidia-fake/nvidia/nv-p2p.h$"; then
        t_ok "nvidia_src_detect_$want"
    else
        t_fail "nvidia_src_detect_$want" "$(echo "$cfg" | tr '\n' ' ')"
    fi
done
[ "$T_FAILED" = 0 ] && rm -rf "$OUT" || echo "# logs kept in $OUT"
t_done

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# test_dkms_conftest.sh - gdrdrv_conftest.h is a build product, not a source: the DKMS source
# tree (make dkms-source) ships none, and a build of that tree as DKMS runs it (the MAKE line
# of its dkms.conf, with kernel_source_dir set to each installed kernel's tree, in a fresh copy)
# generates one that describes that kernel: vm_flags_set() from 6.3 on, the const devnode()
# argument from 6.2 on, and the page table's flags word of our own nv_p2p.h. A stale header
# shipped in the tree (as git once had: 6.12's results) would either be copied or, worse,
# used for a 6.1 build. Prints ok/not ok lines; exits 77 without kernel headers.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
BUILD=${BUILD:-build}
unset MAKEFLAGS MFLAGS MAKELEVEL
trees=$(ls -d /usr/lib/modules/*/build 2>/dev/null)
[ -n "$trees" ] || { echo "no kernel headers under /usr/lib/modules/*/build"; exit 77; }
mkdir -p "$BUILD"
OUT=$(mktemp -d "$BUILD/dkms-conftest.XXXXXX")
OUT=$(cd "$OUT" && pwd)

if ! make -s BUILD="$OUT" dkms-source >"$OUT/source.log" 2>&1; then
    t_fail dkms_source "$(tail -n 1 "$OUT/source.log")"
    t_done
fi
src=$(ls -d "$OUT"/dkms/gdrdrv-*)
if [ -e "$src/gdrdrv_conftest.h" ]; then
    t_fail dkms_source/no_generated_header "$src/gdrdrv_conftest.h is shipped"
else
    t_ok dkms_source/no_generated_header
fi
git ls-files --error-unmatch driver/gdrdrv_conftest.h >/dev/null 2>&1 &&
    t_fail git/no_generated_header "driver/gdrdrv_conftest.h is tracked" ||
    t_ok git/no_generated_header

# The build line DKMS runs, from the dkms.conf that ships (kernel_source_dir is DKMS's name).
make_line=$(sed -n 's/^MAKE\[0\]="\(.*\)"$/\1/p' "$src/dkms.conf")
[ -n "$make_line" ] || { t_fail dkms_conf/make "no MAKE[0] line"; t_done; }

for kdir in $trees; do
    rel=$(basename "$(dirname "$kdir")")
    dir=$OUT/$rel
    cp -r "$src" "$dir"
    # shellcheck disable=SC2034  # used by the eval of DKMS's line
    kernel_source_dir=$kdir
    if ! (cd "$dir" && eval "$make_line NVIDIA_SRC= -j$(nproc)") >"$dir.log" 2>&1; then
        t_fail "$rel/build" "$(grep -m1 error "$dir.log")"
        continue
    fi
    h=$dir/gdrdrv_conftest.h
    [ -f "$h" ] || { t_fail "$rel/generated" "no gdrdrv_conftest.h after the build"; continue; }
    # What the header must say, from the kernel's version alone (not from conftest.sh).
    v=$(sed -n 's/^VERSION = //p;s/^PATCHLEVEL = //p' "$kdir/Makefile" | tr '\n' . | sed 's/\.$//')
    [ -n "$v" ] || v=$(echo "$rel" | cut -d- -f1)
    maj=${v%%.*} min=${v#*.}; min=${min%%.*}
    num=$((maj * 100 + min))
    want_flags_set=$([ "$num" -ge 603 ] && echo 1 || echo 0)
    want_const=$([ "$num" -ge 602 ] && echo const || echo)
    got_flags_set=$(grep -c '^#define GDRDRV_HAVE_VM_FLAGS_SET 1$' "$h")
    got_const=$(sed -n 's/^#define GDRDRV_DEVNODE_CONST *//p' "$h")
    got_table=$(grep -c '^#define GDRDRV_HAVE_P2P_TABLE_FLAGS 1$' "$h")
    if [ "$got_flags_set:$got_const:$got_table" = "$want_flags_set:$want_const:1" ] &&
        grep -q "from .*${rel%-*}" "$h"; then     # this kernel's tree, not another's
        t_ok "$rel/generated"
    else
        t_fail "$rel/generated" "kernel $v: $(tr '\n' ' ' <"$h")"
    fi
done
[ "$T_FAILED" = 0 ] && rm -rf "$OUT" || echo "# logs kept in $OUT"
t_done

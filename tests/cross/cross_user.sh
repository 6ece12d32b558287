#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/cross/cross_user.sh ARCH - builds the library, the tools and the unit tests (black-box,
# white-box and the copy engine's) with Debian's cross compiler for ARCH (aarch64 or ppc64le)
# and runs them under qemu-user, so each architecture's copy kernels, fences and
# per-architecture build gating run on x86 CI (tests/unit/wb_copy_insns.c runs itself again
# under qemu's instruction log and checks the fence each copy runs, the way
# tests/unit/wb_copy_fences.c does on x86 with ptrace), and so does the allocation bridge
# (tests/cross/bridge_user.sh). Result names get an "ARCH/" prefix. Called by
# tests/cross/test_cross_<arch>.sh; skips (77) without the cross compiler or the emulator,
# except under CI (CI set), which installs them (.ci/packages.d/cross.txt).
#
# The tests that re-run themselves in a child (t_run_self, tests/lib/t_proc.c) get the
# emulator as VRAMIO_TEST_LAUNCHER: without binfmt_misc the kernel cannot run a foreign
# program itself.
# tools_selftest is not run: its checks are timings, which emulation does not preserve.
# The dma-buf backend's emulated tests (tests/dmabuf) run too, in the modes an emulator can.
set -u
. "$(dirname "$0")/../lib/t.sh"
arch=$1
case $arch in
    aarch64) triplet=aarch64-linux-gnu; qemu=qemu-aarch64; pkg=gcc-aarch64-linux-gnu
             fence='dmb[[:space:]]+oshst' ;;
    ppc64le) triplet=powerpc64le-linux-gnu; qemu=qemu-ppc64le; pkg=gcc-powerpc64le-linux-gnu
             fence='(hw)?sync' ;;
    *) echo "cross_user.sh: unknown architecture '$arch'" >&2; exit 2 ;;
esac
cc=$triplet-gcc
missing() {
    if [ -n "${CI:-}" ]; then t_fail "$arch/prerequisites" "$1"; exit 1; fi
    echo "$1"; exit 77
}
command -v "$cc" >/dev/null || missing "no $cc (Debian: $pkg)"
command -v "$qemu" >/dev/null || missing "no $qemu (Debian: qemu-user)"
[ -d "/usr/$triplet/lib" ] || missing "no /usr/$triplet/lib (Debian: the libc6-dev-*-cross package)"

cd "$(dirname "$0")/../.." || exit 1
out=${BUILD:-build}/$arch
mkdir -p "$out"
unset MAKEFLAGS MFLAGS MAKELEVEL
if ! make -s --no-print-directory -j2 CC="$cc" BUILD="$out" lib tools tests >"$out.log" 2>&1; then
    t_fail "$arch/build" "cross build of lib, tools and tests failed"
    tail -n 20 "$out.log" | sed 's/^/    /'
    exit 1
fi
t_ok "$arch/build"
export QEMU_LD_PREFIX=/usr/$triplet VRAMIO_TEST_LAUNCHER=$qemu

# The store fence that ends a copy to a mapping is this architecture's: a full sync on
# POWER (orders cache-inhibited stores before later ones), dmb oshst on AArch64 (which copies
# run it: wb_copy_insns, below).
if $triplet-objdump -d "$out/obj/src/core/gdrapi.o" | grep -qE "[[:space:]]$fence\b"; then
    t_ok "$arch/store-fence"
else
    t_fail "$arch/store-fence" "no '$fence' in $out/obj/src/core/gdrapi.o (the copies)"
fi

# Cases that need what qemu-user does not emulate: it ignores madvise(), so a MADV_DONTFORK
# mapping stays readable in a forked child. They become skips here (they run natively).
emulation_gaps="dontfork_child_faults fork_child_refused_exit fork_child_refused__exit"
gap_why="qemu-user ignores madvise(MADV_DONTFORK): the child keeps the mapping"

# The unit tests of tests/tests.mk (not the guest programs that the arm64 QEMU run builds here).
for t in "$out"/tests/test_* "$out"/tests/stress_* "$out"/tests/copy_* "$out"/tests/wb_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    timeout --kill-after=10 300 "$qemu" "$t" </dev/null >"$out/$name.out" 2>&1
    st=$?
    gaps=0
    for g in $emulation_gaps; do
        grep -q "^not ok $g:" "$out/$name.out" || continue
        sed -i "s#^not ok $g:.*#skip $g: $gap_why#" "$out/$name.out"
        gaps=1
    done
    # A program whose only failures were such cases exits 1 for them alone.
    [ "$gaps" = 1 ] && [ "$st" = 1 ] && ! grep -q '^not ok ' "$out/$name.out" && st=0
    sed -nE "s#^(ok|not ok|skip) #\\1 $arch/#p" "$out/$name.out"
    if [ "$st" -eq 77 ]; then
        t_skip "$arch/$name" "$(grep -v '^$' "$out/$name.out" | tail -n 1)"
    elif [ "$st" -ne 0 ]; then
        t_fail "$arch/$name" "exited $st"
        grep -vE '^(ok|skip) ' "$out/$name.out" | tail -n 10 | sed 's/^/    /'
    fi
done

# The dma-buf backend against the stand-in driver, this architecture's build under the
# emulator: above all the coherent-platform case (Grace is AArch64).
BUILD=$out CC=$cc DMABUF_EMU_QEMU=$qemu DMABUF_EMU_PREFIX=$arch/ \
    tests/dmabuf/test_dmabuf_emulated.sh || T_FAILED=1

# vramio-run, its shim and the bridge for this architecture, under the emulator: the client
# in each mode, CUDA IPC, and UCX's hooks (on AArch64 with UCX's relocation rules).
tests/cross/bridge_user.sh "$arch" "$triplet" "$qemu" "$out" || T_FAILED=1

# The tools start, and without a GPU say why they cannot run (exit 0, 1 or 2, never a signal;
# pplat built without nvcc exits 77 saying so, as tests/tools/test_tools_nogpu.sh accepts).
for t in "$out"/bin/gdrcopy_*; do
    name=$(basename "$t")
    timeout --kill-after=10 60 "$qemu" "$t" </dev/null >"$out/$name.out" 2>&1
    st=$?
    if [ "$name" = gdrcopy_pplat ] && [ "$st" = 77 ] && grep -q 'nvcc' "$out/$name.out"; then
        t_ok "$arch/tools/$name"
    elif [ "$st" -le 2 ] && grep -qE 'libcuda|gdrdrv|GPU' "$out/$name.out"; then
        t_ok "$arch/tools/$name"
    else
        t_fail "$arch/tools/$name" "exited $st: $(tail -n 1 "$out/$name.out")"
    fi
done
t_done

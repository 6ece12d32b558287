#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# test_kernel_checks.sh - what a kernel maintainer runs on a driver first, and must find clean:
#   checkpatch    scripts/checkpatch.pl --strict of Debian's linux-source-6.1 on every file of
#                 driver/ (C sources, private headers, the uapi header): no ERROR, WARNING or
#                 CHECK
#   sparse        the module built with C=2 (sparse on every file) against each installed
#                 kernel's headers: no sparse report on a file of ours
#   clang         the module built with LLVM=1 W=1 against a clang-configured 6.1 tree
#                 (tests/kernel/clang-tree.sh; Debian's headers are configured for gcc): no
#                 warning
# (The W=1 gcc builds of both flavours are driver/tests/test_driver_builds.sh's.)
# Prints ok/not ok/skip lines; a missing tool is a skip, except under CI (CI set), where
# deps.sh installs them (.ci/packages.d/driver.txt, .ci/setup.d/clang-tree.sh).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
BUILD=${BUILD:-build}
unset MAKEFLAGS MFLAGS MAKELEVEL
mkdir -p "$BUILD"
OUT=$(mktemp -d "$BUILD/kernel-checks.XXXXXX")
OUT=$(cd "$OUT" && pwd)
missing() {     # missing NAME WHY: a skip, or a failure under CI
    if [ -n "${CI:-}" ]; then t_fail "$1" "$2"; else t_skip "$1" "$2"; fi
}

# A copy of driver/ to build in, without the tests.
copy() {
    rm -rf "$1" && mkdir -p "$1" && cp -r driver/. "$1"/ && rm -rf "$1/tests" "$1/syzkaller"
}

# --- checkpatch: from a tree of linux-source-6.1 already unpacked here, else the tarball.
cp_pl=
for t in "$(tests/kernel/clang-tree.sh --path 2>/dev/null)" \
         "$(tests/kernel/debug-kernel.sh --path 2>/dev/null)/build"; do
    [ -f "$t/scripts/checkpatch.pl" ] && { cp_pl=$t/scripts/checkpatch.pl; break; }
done
if [ -z "$cp_pl" ] && tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n 1) &&
    [ -n "$tarball" ]; then
    tar -xf "$tarball" -C "$OUT" linux-source-6.1/scripts/checkpatch.pl \
        linux-source-6.1/scripts/spelling.txt linux-source-6.1/scripts/const_structs.checkpatch &&
        cp_pl=$OUT/linux-source-6.1/scripts/checkpatch.pl
fi
if [ -z "$cp_pl" ]; then
    missing checkpatch "no linux-source-6.1 (.ci/packages.d/kernel.txt) for scripts/checkpatch.pl"
else
    perl "$cp_pl" --strict --no-tree --terse --show-types --file driver/*.c driver/*.h \
        driver/uapi/*.h >"$OUT/checkpatch.log" 2>&1
    if grep -qE ': (ERROR|WARNING|CHECK):' "$OUT/checkpatch.log"; then
        t_fail checkpatch "$(grep -cE ': (ERROR|WARNING|CHECK):' "$OUT/checkpatch.log") reports, first: $(grep -m1 -E ': (ERROR|WARNING|CHECK):' "$OUT/checkpatch.log")"
        grep -E ': (ERROR|WARNING|CHECK):' "$OUT/checkpatch.log" | head -n 20 | sed 's/^/# /'
    else
        t_ok checkpatch
    fi
fi

# Reports of the compiler or checker on a file of ours in a build log.
# (The folder is matched as a fixed string: kernel releases hold regex characters, e.g. "+".)
ours() { grep -E '^[^ ]+\.[ch]:[0-9]+:([0-9]+:)? (warning|error):' "$2" | grep -F "$1/"; }

# --- sparse, against every installed kernel's headers.
if ! command -v sparse >/dev/null; then
    missing sparse "sparse is not installed (.ci/packages.d/driver.txt)"
else
    for kdir in $(ls -d /usr/lib/modules/*/build 2>/dev/null); do
        rel=$(basename "$(dirname "$kdir")") dir=$OUT/sparse-$rel
        copy "$dir"
        if ! make -C "$dir" KDIR="$kdir" NVIDIA_SRC= C=2 CHECK="sparse" -j"$(nproc)" \
            >"$dir.log" 2>&1; then
            t_fail "$rel/sparse" "build failed: $(grep -m1 error "$dir.log")"
        elif ours "$dir" "$dir.log" >/dev/null; then
            t_fail "$rel/sparse" "$(ours "$dir" "$dir.log" | head -n 1)"
        elif ! grep -q '  CHECK   .*gdrdrv_pin.c' "$dir.log"; then
            t_fail "$rel/sparse" "sparse did not run (no CHECK line in $dir.log)"
        else
            t_ok "$rel/sparse"
        fi
    done
fi

# --- clang (LLVM=1, W=1) against the clang-configured tree.
ctree=$(tests/kernel/clang-tree.sh --path 2>/dev/null)
if [ -z "$ctree" ] && [ -n "${CI:-}" ]; then
    ctree=$(tests/kernel/clang-tree.sh 2>"$OUT/clang-tree.log")
fi
if [ -z "$ctree" ]; then
    missing clang "no clang-configured tree (tests/kernel/clang-tree.sh prepares it)"
else
    dir=$OUT/clang
    copy "$dir"
    if ! make -C "$dir" KDIR="$ctree" NVIDIA_SRC= LLVM=1 W=1 -j"$(nproc)" >"$dir.log" 2>&1; then
        t_fail clang/build "$(grep -m1 error "$dir.log")"
    elif ours "$dir" "$dir.log" >/dev/null; then
        t_fail clang/build "$(ours "$dir" "$dir.log" | head -n 1)"
    else
        t_ok clang/build
    fi
fi
[ "$T_FAILED" = 0 ] && rm -rf "$OUT" || echo "# logs kept in $OUT"
t_done

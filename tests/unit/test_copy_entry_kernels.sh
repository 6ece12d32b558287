#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_copy_entry_kernels.sh - the copy engine's entry points (the inline small-write path of
# src/copy/copy.h and what it leaves to the general path) with every kernel in turn: they
# differ by kernel (a single 64-byte store per whole line or the kernel's bulk loop), and
# copy_matrix alone runs them only with the kernel chosen for this CPU. A kernel this CPU
# cannot run is skipped.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
BUILD=${BUILD:-build}
prog=$BUILD/tests/copy_matrix
[ -x "$prog" ] || { echo "$prog is not built"; exit 1; }
for k in avx512 avx2 sse41 c movdir64b neon; do
    out=$(GDRCOPY_COPY_KERNEL=$k "$prog" --entry-only 2>&1)
    # Each line names the kernel in use; copy_choice proves that a usable one is honoured, so
    # another name here means this CPU cannot run $k.
    used=$(echo "$out" | sed -n 's|^\(not \)\{0,1\}ok copy_matrix/\([^/]*\)/.*|\2|p' | head -n 1)
    if [ -z "$used" ]; then
        t_fail "copy_entry/$k" "no result lines: $(echo "$out" | tail -n 3)"
        continue
    fi
    if [ "$used" != "$k" ]; then
        t_skip "copy_entry/$k" "this CPU cannot run it (the choice fell back to $used)"
        continue
    fi
    bad=$(echo "$out" | grep -c '^not ok ')
    if [ "$bad" -eq 0 ]; then
        t_ok "copy_entry/$k"
    else
        t_fail "copy_entry/$k" "$(echo "$out" | grep '^not ok ' | head -n 1)"
    fi
done
t_done

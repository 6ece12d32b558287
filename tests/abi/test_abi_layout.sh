#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_abi_layout.sh - compile and run tests/abi/layout.c (struct sizes, offsets, enum, macro
# and ioctl values of the 2.6 ABI; a violated one stops the compile) with $CC, 64-bit only.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
BUILD=${BUILD:-build}
CC=${CC:-cc}
out=$BUILD/tests/abi_layout
mkdir -p "$(dirname "$out")"
if [ "$("$CC" -dumpmachine | cut -d- -f1)" = "i686" ]; then
    echo "the ABI document gives LP64 layouts"; exit 77
fi
if ! "$CC" -std=gnu11 -Wall -Wextra -Werror -Iinclude -Idriver -Itests/lib -o "$out" tests/abi/layout.c 2>&1; then
    t_fail "abi_layout_compiles" "a size, offset or value differs from the 2.6 ABI"
    exit 1
fi
t_ok "abi_layout_compiles"
"$out"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_abi_layout.sh - compile (make, tests/abi/abi.mk) and run tests/abi/layout.c (struct
# sizes, offsets, enum, macro and ioctl values of the 2.6 ABI; a violated one stops the
# compile) with $CC, 64-bit only.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
BUILD=${BUILD:-build}
out=$BUILD/tests/abi_layout
if [ "$("${CC:-cc}" -dumpmachine | cut -d- -f1)" = "i686" ]; then
    echo "the ABI document gives LP64 layouts"; exit 77
fi
if ! t_make "abi_layout_compiles" "$out"; then
    echo "a size, offset or value differs from the 2.6 ABI (above)"
    exit 1
fi
t_ok "abi_layout_compiles"
"$out"

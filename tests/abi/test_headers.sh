#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_headers.sh - every installed header compiles on its own, as C with gcc and clang and as
# C++ with g++, with warnings as errors (clients include them first, alone, in either language).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for h in include/*.h; do
    name=$(basename "$h" .h)
    printf '#include "%s"\nint main(void) { return 0; }\n' "$name.h" >"$tmp/$name.c"
    cp "$tmp/$name.c" "$tmp/$name.cpp"
    for cc in gcc clang g++; do
        if ! command -v "$cc" >/dev/null; then
            t_skip "header_${name}_$cc" "$cc is not installed"; continue
        fi
        src=$tmp/$name.c; std=-std=c99
        [ "$cc" = g++ ] && { src=$tmp/$name.cpp; std=-std=c++11; }
        if err=$("$cc" $std -Wall -Wextra -Werror -pedantic -Iinclude -c "$src" -o "$tmp/o.o" 2>&1); then
            t_ok "header_${name}_$cc"
        else
            t_fail "header_${name}_$cc" "$(echo "$err" | head -n 3 | tr '\n' ' ')"
        fi
    done
done
t_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/cross/test_gdrconfig.sh - include/gdrconfig.h names the CPU family that gdrapi.h is
# compiled for: exactly one of GDRAPI_X86, GDRAPI_ARM64, GDRAPI_POWER per compiler (the host's
# and Debian's aarch64 and ppc64le cross compilers, each compiling a program that uses gdrapi.h),
# and an unknown architecture is a compile error, not a silent default.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/t.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <gdrapi.h>\nint main(void) { return gdr_open() != 0; }\n' >"$tmp/t.c"
ran=0
for pair in "cc GDRAPI_X86" "aarch64-linux-gnu-gcc GDRAPI_ARM64" \
            "powerpc64le-linux-gnu-gcc GDRAPI_POWER"; do
    set -- $pair
    if ! command -v "$1" >/dev/null; then
        [ -n "${CI:-}" ] && { t_fail "gdrconfig/$2" "no $1"; } ||
            t_skip "gdrconfig/$2" "no $1 (.ci/packages.d/cross.txt)"
        continue
    fi
    [ "$1" = cc ] && [ "$(cc -dumpmachine | cut -d- -f1)" != x86_64 ] && continue
    ran=1
    got=$("$1" -Iinclude -E -dM "$tmp/t.c" | grep -oE '\bGDRAPI_(X86|ARM64|POWER)\b' | sort -u | xargs)
    if [ "$got" = "$2" ] && "$1" -std=c99 -Wall -Wextra -Werror -Iinclude -c "$tmp/t.c" -o "$tmp/t.o"; then
        t_ok "gdrconfig/$2"
    else
        t_fail "gdrconfig/$2" "$1 defines '${got:-nothing}'"
    fi
done
# -undef drops every architecture macro: the header must refuse to guess.
if cc -undef -Iinclude -fsyntax-only -x c include/gdrconfig.h 2>"$tmp/err"; then
    t_fail "gdrconfig/unknown-arch" "compiled without an architecture macro"
elif grep -q 'not supported' "$tmp/err"; then
    t_ok "gdrconfig/unknown-arch"
else
    t_fail "gdrconfig/unknown-arch" "$(head -n 1 "$tmp/err")"
fi
[ "$ran" = 1 ] || exit 77
t_done

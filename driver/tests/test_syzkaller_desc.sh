#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# test_syzkaller_desc.sh - driver/syzkaller/gdrdrv.txt agrees with driver/uapi/gdrdrv.h, and
# gdrdrv_emu.txt with it and tests/kernel/emu/nvp2p_emu.h: the descriptions are turned into C
# assertions (each ioctl's code; each struct's size, and each field's offset and size, laid
# out as syzkaller lays it out; each set of values preceded by "# uapi: PREFIX" equal to the
# set of the headers' constants named PREFIX*) and compiled against the headers, and every
# code and struct of gdrdrv.h must be described. A call or struct named NAME_EMU / NAME_emu
# (gdrdrv_emu.txt's variants taking the provider's GPU addresses) is checked against NAME.
# Prints ok/not ok lines.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
BUILD=${BUILD:-build}
DESC=${SYZ_DESC:-driver/syzkaller/gdrdrv.txt}
EMU_DESC=${SYZ_EMU_DESC:-driver/syzkaller/gdrdrv_emu.txt}
HDR=driver/uapi/gdrdrv.h
EMU_HDR=tests/kernel/emu/nvp2p_emu.h
mkdir -p "$BUILD"
OUT=$(mktemp -d "$BUILD/syz-desc.XXXXXX")

# One C assertion per fact of the description; fields of unknown type are reported as such.
awk '
function fsize(t) {
    if (t ~ /^int64/ || t ~ /, int64\]$/ || t == "gdrdrv_handle" || t == "gdrdrv_gpu_va") return 8
    if (t ~ /^int32/ || t ~ /, int32\]$/) return 4
    if (t ~ /^int16/ || t ~ /, int16\]$/) return 2
    if (t ~ /^int8/ || t ~ /, int8\]$/) return 1
    return 0
}
function cstruct(s) { if (s !~ /^nvp2p_emu/) sub(/_emu$/, "", s); return s }
BEGIN {
    print "#include <stddef.h>"; print "#include \"uapi/gdrdrv.h\""; print "#include \"nvp2p_emu.h\""
}
/^ioctl\$/ {
    name = $0; sub(/^ioctl\$/, "", name); sub(/\(.*/, "", name); sub(/_EMU$/, "", name)
    code = $0; sub(/.*cmd const\[/, "", code); sub(/\].*/, "", code)
    arg = $0; sub(/.*ptr\[[a-z]+, /, "", arg); sub(/\].*/, "", arg); arg = cstruct(arg)
    printf "_Static_assert(%s == %sU, \"%s: code %s\");\n", name, code, name, code
    printf "_Static_assert(sizeof(struct %s) > 0, \"%s: struct %s\");\n", arg, name, arg
    next
}
/^[a-z_0-9]+ \{$/ { st = cstruct($1); off = 0; next }
st != "" && /^\}/ {
    printf "_Static_assert(sizeof(struct %s) == %d, \"struct %s: %d bytes\");\n", st, off, st, off
    st = ""; next
}
st != "" && NF >= 2 {
    f = $1; t = $2; for (i = 3; i <= NF && $i !~ /^\(/; i++) t = t " " $i
    s = fsize(t)
    if (!s) { printf "#error \"struct %s: field %s: type %s has no known size\"\n", st, f, t; next }
    printf "_Static_assert(offsetof(struct %s, %s) == %d, \"struct %s: %s at %d\");\n", st, f, off, st, f, off
    printf "_Static_assert(sizeof(((struct %s *)0)->%s) == %d, \"struct %s: %s is %d bytes\");\n", st, f, s, st, f, s
    off += s
}
' "$DESC" "$EMU_DESC" >"$OUT/asserts.c"

# Each "# uapi: PREFIX" set of values: every header constant PREFIX* is in it, every value in
# it is one of them.
sed -n '/^# uapi: /{s/^# uapi: //;N;s/\n[a-z_0-9]* = /|/;p}' "$DESC" "$EMU_DESC" |
while IFS='|' read -r prefix values; do
    names=$(sed -nE "s/^#define (${prefix}[A-Z0-9_]+)[[:space:]]+.*/\1/p" "$HDR" "$EMU_HDR")
    if [ -z "$names" ]; then
        echo "#error \"# uapi: $prefix: no such constant in the headers\""
        continue
    fi
    vals=$(echo "$values" | tr -d ' ' | tr ',' ' ')
    for n in $names; do
        printf '_Static_assert(0'; for v in $vals; do printf ' || %s == %s' "$n" "$v"; done
        printf ', "%s is not among the values of its set");\n' "$n"
    done
    for v in $vals; do
        printf '_Static_assert(0'; for n in $names; do printf ' || %s == %s' "$v" "$n"; done
        printf ', "value %s of the %s set is no such constant");\n' "$v" "$prefix"
    done
done >>"$OUT/asserts.c"

if ${CC:-cc} -std=c11 -fsyntax-only -I driver -I "$(dirname "$EMU_HDR")" "$OUT/asserts.c" 2>"$OUT/cc.log"; then
    t_ok "syzkaller/agrees_with_uapi"
else
    t_fail "syzkaller/agrees_with_uapi" "$(grep -m3 -oE '(error|#error): .*' "$OUT/cc.log" | tr '\n' ' ')"
fi

# Nothing of the header left out: its codes and its structs.
missing=
for code in $(sed -nE 's/^#define (GDRDRV_IOC_[A-Z0-9_]+)[[:space:]]+GDRDRV_IOC_RW.*/\1/p' "$HDR"); do
    grep -q "^ioctl\\\$$code(" "$DESC" || missing="$missing $code"
done
for st in $(sed -nE 's/^struct (gdrdrv_[a-z0-9_]+) \{.*/\1/p' "$HDR"); do
    grep -q "^$st {" "$DESC" || missing="$missing struct-$st"
done
[ -z "$missing" ] && t_ok "syzkaller/describes_every_code_and_struct" ||
    t_fail "syzkaller/describes_every_code_and_struct" "not described:$missing"
[ "$T_FAILED" = 0 ] && rm -rf "$OUT" || echo "# generated assertions kept in $OUT"
t_done

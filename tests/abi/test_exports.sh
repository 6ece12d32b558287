#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_exports.sh - the dynamic symbols of libgdrapi.so.2.6 are exactly the 17 gdr_* names of
# GDRCopy 2.6 plus vramio_* ones, every function declared in include/vramio.h is exported, and
# the allocator functions that PyTorch and python/vramio find by name; no test hook
# (tests/unit/wb/hooks.h) is in the shipped library or archive, hidden or not, and no function
# that only tests call.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
lib=${BUILD:-build}/lib/libgdrapi.so.2.6
[ -f "$lib" ] || { t_fail "exports" "$lib is not built"; exit 1; }

want_gdr="gdr_close gdr_copy_from_mapping gdr_copy_to_mapping gdr_driver_get_version
gdr_get_attribute gdr_get_callback_flag gdr_get_info gdr_get_info_v2 gdr_get_mapping_type_string
gdr_map gdr_map_v2 gdr_open gdr_pin_buffer gdr_pin_buffer_v2 gdr_runtime_get_version
gdr_unmap gdr_unpin_buffer"
syms=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u)
got_gdr=$(echo "$syms" | grep '^gdr_' | sort)
want_sorted=$(echo $want_gdr | tr ' ' '\n' | sort)

if [ "$got_gdr" = "$want_sorted" ]; then
    t_ok "exports_gdr_exactly_17"
else
    t_fail "exports_gdr_exactly_17" "differences (< missing, > extra):"
    diff <(echo "$want_sorted") <(echo "$got_gdr") | grep '^[<>]'
fi

others=$(echo "$syms" | grep -v '^gdr_' | grep -v '^vramio_' | grep -v '^$')
if [ -z "$others" ]; then
    t_ok "exports_nothing_else"
else
    t_fail "exports_nothing_else" "$(echo $others)"
fi

declared=$(sed 's|/\*.*\*/||' include/vramio.h | grep -o 'vramio_[a-z_0-9]* *(' | tr -d ' (' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$syms" | grep '^vramio_'))
if [ -n "$declared" ] && [ -z "$missing" ]; then
    t_ok "exports_every_vramio_function"
else
    t_fail "exports_every_vramio_function" "missing $(echo $missing)"
fi

# PyTorch's CUDAPluggableAllocator and python/vramio look these up by name.
miss=
for f in vramio_pluggable_alloc vramio_pluggable_free vramio_alloc vramio_free; do
    echo "$syms" | grep -qx "$f" || miss="$miss $f"
done
[ -z "$miss" ] && t_ok "exports_pluggable_allocator" ||
    t_fail "exports_pluggable_allocator" "missing$miss"

hooks=$(sed -n 's/^[a-z].* \**\(vr_[a-z_0-9]*\)(.*/\1/p' tests/unit/wb/hooks.h | sort -u)
found=
for f in "$lib" "$(dirname "$lib")/libgdrapi.a"; do
    [ -f "$f" ] || continue
    for h in $hooks; do
        nm "$f" 2>/dev/null | awk '$2 ~ /^[TtDdBb]$/ {print $3}' | grep -qx "$h" && found="$found $(basename "$f"):$h"
    done
done
if [ -n "$hooks" ] && [ -z "$found" ]; then
    t_ok "no_test_hooks_shipped ($(echo $hooks))"
else
    t_fail no_test_hooks_shipped "${found:-no hook names read from tests/unit/wb/hooks.h}"
fi

# No code that only tests use: every function of the library that it does not export (the
# hidden globals of libgdrapi.a that are in the file make install copies, unstripped) is
# called by the library's own C, not only by tests. A use is a line of src/ or util/ (.c or
# .h) naming it that is not a comment and is indented (a call in a function body, an inline
# function or a table; definitions and prototypes start at column 0) or a macro's body.
arch=$(dirname "$lib")/libgdrapi.a
globals=$(nm -g --defined-only "$arch" 2>/dev/null | awk '$2 == "T" {print $3}' | sort -u)
in_lib=$(nm --defined-only "$lib" | awk '$2 ~ /^[tT]$/ {print $3}' | sort -u)
hidden=$(comm -12 <(echo "$globals") <(echo "$in_lib") | comm -23 - <(echo "$syms"))
srcs=$(find src util -name '*.[ch]')
only_tests=
for f in $hidden; do
    grep -hw -- "$f" $srcs | grep -v '^[[:space:]]*\(\*\|/\*\|//\)' | grep -v "^#[[:space:]]*define $f\\b" |
        grep -q '^\([[:space:]]\|#[[:space:]]*define \)' || only_tests="$only_tests $f"
done
if [ -n "$hidden" ] && [ -z "$only_tests" ]; then
    t_ok "no_test_only_code_shipped ($(echo $hidden | wc -w) hidden functions, each called by the library)"
else
    t_fail no_test_only_code_shipped "${only_tests:-no hidden functions read from $lib}: called by no library code"
fi
t_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_include_areas.sh - the layers hold: with each area's include flags (from the Makefile)
# the headers of its own area and of the layers below it compile, a private header of
# another area does not; and no file outside src/ and the white-box tests names a src/
# header in an #include, whatever path it writes.
set -u
cd "$(dirname "$0")/../.."
CC=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/lib/t.sh
flags() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory "print-$1"; }

check() { # area-variable header expect(ok|fails)
    local f got
    f=$(flags "$1")
    printf '#include "%s"\nint vr_include_probe;\n' "$2" > "$tmp/t.c"
    if $CC -std=gnu11 -D_GNU_SOURCE -Iinclude $f -fsyntax-only "$tmp/t.c" >/dev/null 2>&1; then
        got=ok
    else
        got=fails
    fi
    if [ "$got" = "$3" ]; then
        t_ok "include_areas/$1/$2_$3"
    else
        t_fail "include_areas/$1/$2" "with \$($1) it $([ "$got" = ok ] && echo compiles || echo "does not compile")"
    fi
}
check UTIL_CPPFLAGS cuda_loader.h ok
check UTIL_CPPFLAGS core/core.h fails
check LIB_CPPFLAGS core/core.h ok
check LIB_CPPFLAGS process/cuda_ctx.h ok
check LIB_CPPFLAGS uapi/gdrdrv.h ok
check TOOL_CPPFLAGS cuda_loader.h ok
check TOOL_CPPFLAGS common/gpumem.h ok
check TOOL_CPPFLAGS uapi/gdrdrv.h ok
check TOOL_CPPFLAGS core/core.h fails
check TOOL_CPPFLAGS backends/backend.h fails
check TOOL_CPPFLAGS gdrdrv_internal.h fails
check TEST_CPPFLAGS t.h ok
check TEST_CPPFLAGS legacy_info.h ok
check TEST_CPPFLAGS vramio.h ok
check TEST_CPPFLAGS core/core.h fails
check TEST_CPPFLAGS cuda_loader.h fails
check WB_CPPFLAGS core/core.h ok
# The directories beside the core (src/alloc/, src/dma/) are part of the library's area, as
# backends/ and copy/ are: their files see src/ (core/pins.h, process/log.h, ...), and other
# areas do not see them.
check LIB_CPPFLAGS core/export.h ok
check LIB_CPPFLAGS core/pins.h ok
check LIB_CPPFLAGS alloc/slab_pool.h ok
check LIB_CPPFLAGS dma/dma_policy.h ok
check TOOL_CPPFLAGS core/export.h fails
check TOOL_CPPFLAGS alloc/slab_pool.h fails
check TEST_CPPFLAGS core/pins.h fails
check TEST_CPPFLAGS dma/dma_policy.h fails
check WB_CPPFLAGS alloc/slab_pool.h ok

# The files, among the paths after the first argument, whose #include matches it (an extended
# regex from the opening quote or bracket on), comma-separated.
includers() {
    local re=$1
    shift
    git grep -lE "^#[[:space:]]*include[[:space:]]*$re" -- "$@" 2>/dev/null | paste -sd, -
}
# ok when $bad is empty, else not ok with its list.
verdict() {
    if [ -z "$bad" ]; then t_ok "include_areas/$1"; else t_fail "include_areas/$1" "${bad# }"; fi
}

# Inside the library one include path (-Isrc) serves every directory, so alloc/ and dma/
# keep their headers to themselves by this check: no file of src/ outside src/alloc/ or
# src/dma/ includes one of that directory's headers (white-box tests may).
bad=
for dir in alloc dma; do
    hits=$(includers "\"$dir/" src/ ":!src/$dir/")
    [ -n "$hits" ] && bad="$bad $dir/:$hits"
done
verdict side_directories_keep_their_headers

# The wall core/pins.h draws: alloc/ and dma/ see of the core only core/pins.h and
# core/export.h (calls by handle and address, error reporting), never its objects (core.h,
# handles.h).
bad=
for dir in alloc dma; do
    hits=$(includers '"core/' "src/$dir/" | tr , '\n' | while read -r f; do
           git grep -hE '^#[[:space:]]*include[[:space:]]*"core/' -- "$f" |
           grep -vE '"core/(pins|export)\.h"' >/dev/null && echo "$f"; done | paste -sd, -)
    [ -n "$hits" ] && bad="$bad $dir/:$hits"
done
verdict side_directories_see_the_core_through_pins_h

# Every src/ header by name, included from outside src/ (white-box tests and benchmarks of
# the library's internals excepted: tests/unit/wb_*, wb/, copy_*, the stress tests built as
# white-box ones (WB_STRESS_SRCS, tests/tests.mk), the white-box fuzz targets tests/fuzz/wb_*,
# the white-box script clients tests/vulkan/wb_* (linked with the static library: the
# spanning pins' client asks what the pool asks, core/pins.h), bench/).
hdrs=$(cd src && find . -name '*.h' | sed 's|^\./||')
wb_stress=$(flags WB_STRESS_SRCS | tr ' ' '\n' | sed '/^$/d; s|^|:!|')
bad=
for h in $hdrs; do
    b=$(basename "$h")
    # shellcheck disable=SC2086 # one pathspec a word
    hits=$(includers "[\"<]([^\">]*/)?$b[\">]" \
           ':!src/' ':!tests/unit/wb_*' ':!tests/unit/wb/' ':!tests/unit/copy_*' $wb_stress \
           ':!tests/fuzz/wb_*' ':!tests/vulkan/wb_*' ':!bench/')
    [ -n "$hits" ] && bad="$bad $b:$hits"
done
verdict no_src_header_outside_src
t_done

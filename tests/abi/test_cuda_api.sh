#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_cuda_api.sh - vramio's own CUDA declarations (util/cuda_types.h, util/cuda_api.h)
# agree with the toolkit's cuda.h: every entry point's prototype and exported symbol, every
# constant's value, every type's size and member offsets (tests/abi/cuda_api_check.c).
# Skips where no cuda.h is installed (CUDA_HOME, default /usr/local/cuda).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
BUILD=${BUILD:-build}
CC=${CC:-cc}
inc=${CUDA_HOME:-/usr/local/cuda}/include
[ -f "$inc/cuda.h" ] || { echo "no cuda.h in $inc to compare with"; exit 77; }
dir=$BUILD/tests/cuda_api
mkdir -p "$dir"

# Every constant our header defines, enumerators and macros alike.
sed -n -e 's/^ *\(CU[A-Z0-9_]*\) *=.*/CONST(\1)/p' \
       -e 's/^#define \(CU_[A-Z0-9_]*\) .*/CONST(\1)/p' util/cuda_types.h > "$dir/consts.h"
[ -s "$dir/consts.h" ] || { t_fail "cuda_api/constants" "none found in util/cuda_types.h"; exit 1; }

build() { # output extra-flags...
    local out=$1
    shift
    $CC -std=gnu11 -Wall -Wextra -Werror -Iutil -DCONSTS_FILE="\"$PWD/$dir/consts.h\"" "$@" \
        -o "$out" tests/abi/cuda_api_check.c 2>&1
}
if log=$(build "$dir/ours"); then
    t_ok "cuda_api/ours_compile"
else
    t_fail cuda_api/ours_compile "our declarations do not compile:"; echo "$log" | head -n 20; exit 1
fi
if log=$(build "$dir/toolkit" -DVR_CUDA_TOOLKIT_TYPES -I"$inc"); then
    t_ok "cuda_api/prototypes_match_cuda_h"
else
    t_fail cuda_api/prototypes_match_cuda_h "they conflict with cuda.h:"; echo "$log" | grep -E 'error' | head -n 20
    exit 1
fi
if "$dir/toolkit" > "$dir/toolkit.out"; then
    t_ok "cuda_api/symbols_match_cuda_h"
else
    t_fail cuda_api/symbols_match_cuda_h "names cuda.h does not have:"; grep '^symbol' "$dir/toolkit.out"
fi
"$dir/ours" > "$dir/ours.out"
if d=$(diff <(grep -v '^symbol' "$dir/toolkit.out") "$dir/ours.out"); then
    t_ok "cuda_api/values_and_layouts_match_cuda_h ($(wc -l < "$dir/ours.out") checked)"
else
    t_fail cuda_api/values_and_layouts_match_cuda_h "(< cuda.h, > ours):"; echo "$d"
fi
t_done

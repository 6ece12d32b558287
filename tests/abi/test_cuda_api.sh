#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_cuda_api.sh - vramio's own CUDA declarations (util/cuda_types.h, util/cuda_api.h)
# agree with the toolkit's cuda.h: every entry point's prototype and exported symbol, every
# constant's value, every type's size and member offsets (tests/abi/cuda_api_check.c, built
# twice by make: tests/abi/abi.mk). Skips where no cuda.h is installed (CUDA_HOME, default
# /usr/local/cuda).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
BUILD=${BUILD:-build}
inc=${CUDA_HOME:-/usr/local/cuda}/include
[ -f "$inc/cuda.h" ] || { echo "no cuda.h in $inc to compare with"; exit 77; }
dir=$BUILD/tests/cuda_api

t_make cuda_api/constants "$dir/consts.h" || exit 1
[ -s "$dir/consts.h" ] || { t_fail "cuda_api/constants" "none found in util/cuda_types.h"; exit 1; }
# Our declarations alone, then beside cuda.h's (a conflicting prototype stops the compile).
t_make cuda_api/ours_compile "$dir/ours" || exit 1
t_ok "cuda_api/ours_compile"
t_make cuda_api/prototypes_match_cuda_h "$dir/toolkit" || exit 1
t_ok "cuda_api/prototypes_match_cuda_h"
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

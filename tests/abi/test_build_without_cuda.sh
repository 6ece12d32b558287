#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_build_without_cuda.sh - the library, the tools and the bridge build where no CUDA toolkit is
# installed (CUDA_HOME pointing at an empty directory, no nvcc): CUDA is declared by
# util/cuda_types.h and util/cuda_api.h and loaded at run time. pplat is still built and
# says that its GPU kernel is missing. Builds into a temporary directory.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
CC=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/no-cuda"
if log=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -j2 BUILD="$tmp/build" \
        CC="$CC" CUDA_HOME="$tmp/no-cuda" NVCC= all 2>&1); then
    t_ok "builds_without_cuda_toolkit"
else
    t_fail builds_without_cuda_toolkit "the build needs the CUDA toolkit:"
    echo "$log" | grep -E 'error|Error' | head -n 20
    exit 1
fi
out=$("$tmp/build/bin/gdrcopy_pplat" 2>&1)
rc=$?
if [ $rc -eq 77 ] && printf '%s\n' "$out" | grep -q 'nvcc'; then
    t_ok "pplat_without_nvcc_says_why"
else
    t_fail "pplat_without_nvcc_says_why" "exit $rc: $out"
    exit 1
fi

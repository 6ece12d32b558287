#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_dlopen.sh - a client that dlopens "libgdrapi.so" and "libgdrapi.so.2" by name (found
# through LD_LIBRARY_PATH=$BUILD/lib, as an installed library is found) and dlsyms every gdr_*.
# The client comes from make (tests/abi/abi.mk).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
BUILD=${BUILD:-build}
out=$BUILD/tests/abi_dlopen_client
t_make dlopen_client_builds "$out" || exit 1
LD_LIBRARY_PATH="$(cd "$BUILD/lib" && pwd)" "$out"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_dlopen.sh - a client that dlopens "libgdrapi.so" and "libgdrapi.so.2" by name (found
# through LD_LIBRARY_PATH=$BUILD/lib, as an installed library is found) and dlsyms every gdr_*.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
BUILD=${BUILD:-build}
CC=${CC:-cc}
out=$BUILD/tests/abi_dlopen_client
mkdir -p "$(dirname "$out")"
"$CC" -std=gnu11 -Wall -Wextra -Werror -o "$out" tests/abi/dlopen_client.c -ldl ||
    { t_fail dlopen_client_builds "the client does not compile"; exit 1; }
LD_LIBRARY_PATH="$(cd "$BUILD/lib" && pwd)" "$out"

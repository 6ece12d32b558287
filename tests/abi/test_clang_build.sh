#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_clang_build.sh - the whole library builds with clang and -Werror too (the default build
# uses $CC, usually gcc). Builds into a temporary directory.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
command -v clang >/dev/null || { echo "clang is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if log=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -j2 BUILD="$tmp" CC=clang lib 2>&1); then
    t_ok "library_builds_with_clang_werror"
else
    t_fail library_builds_with_clang_werror "clang -Werror failed:"
    echo "$log" | grep -E 'error|warning' | head -n 20
    exit 1
fi

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_cited_files.sh - the documents that code, scripts and build files name (*.md) are in
# the repository: a name is looked up as written, from the top, then in docs/. Documents
# outside the tree (specifications a reader cannot open) must not be cited. Names built from
# variables ($DOCS/x.md) are not citations and are not read.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
while IFS=: read -r file name; do
    [ -e "$name" ] || [ -e "$(dirname "$file")/$name" ] || [ -e "docs/$name" ] && continue
    t_fail "cited_files/$file" "names $name, which is not in the repository"
done < <(git grep -oE '(^|[[:space:]`"(])[A-Za-z0-9_][A-Za-z0-9_./-]*\.md\b' -- '*.c' '*.h' '*.cu' \
         '*.sh' '*.mk' '*.py' Makefile 'driver/Kbuild' '.ci/*' |
         sed -E 's/:[[:space:]`"(]/:/' | grep -v ':args\.md$' | sort -u)
[ "$T_FAILED" = 0 ] && t_ok "cited_files/all_in_repository"
t_done

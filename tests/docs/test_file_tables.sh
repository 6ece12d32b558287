#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_file_tables.sh - src/README.md's file table matches the tree: every file under src/
# (tracked by git, the README itself aside) is named in its first column, and every name
# there exists. In a cell, `.h` means the previous name's stem with that suffix and a name
# without a directory lives in the previous name's directory.
set -u
cd "$(dirname "$0")/../.."
command -v python3 >/dev/null || { echo "python3 is not installed"; exit 77; }
git ls-files src | grep -v '^src/README.md$' | python3 -c '
import os, re, sys
tree = {l.strip()[len("src/"):] for l in sys.stdin if l.strip()}
named = set()
for line in open("src/README.md"):
    if not line.startswith("| `"):
        continue
    prev = ""
    for tok in re.findall(r"`([^`]+)`", line.split("|")[1]):
        if tok.startswith("."):
            tok = os.path.splitext(prev)[0] + tok
        elif "/" not in tok and "/" in prev:
            tok = os.path.dirname(prev) + "/" + tok
        named.add(tok)
        prev = tok
fail = 0
for f in sorted(tree - named):
    print("not ok src_readme/names/%s: not in src/README.md" % f); fail = 1
for f in sorted(named - tree):
    print("not ok src_readme/exists/%s: named in src/README.md, not in the tree" % f); fail = 1
if not fail:
    print("ok src_readme/matches_tree (%d files)" % len(tree))
sys.exit(fail)
'

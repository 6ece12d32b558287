#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_src_layers.sh - dependencies between the library's files run one way: from the objects
# of src/ (and util/) as built, file A depends on file B when A uses a symbol that B defines;
# no two files, and no loop of files, may depend on each other. Prints the loop it finds.
# The rooms beside the core, src/dma/ and src/alloc/, are built and checked with the rest,
# and are leaves: no file outside a room uses a symbol defined in it (their entry points are
# reached through the exports only); prints each such use.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
B=${BUILD:-build}
command -v python3 >/dev/null || { echo "python3 is not installed"; exit 77; }
# Objects of sources that exist: a file moved or deleted leaves its old object in a build
# folder that is reused.
objs=$(find "$B/obj/src" "$B/obj/util" -name '*.o' 2>/dev/null | sort |
       while read -r o; do c=${o#"$B/obj/"}; [ -f "${c%.o}.c" ] && echo "$o"; done)
[ -n "$objs" ] || { t_fail "src_layers" "no objects under $B/obj/src (build first)"; exit 1; }
for o in $objs; do
    nm "$o" | awk -v f="${o#"$B/obj/"}" '$1 == "U" {print f, "U", $2} NF == 3 && $2 ~ /^[TDBR]$/ {print f, "D", $3}'
done | python3 -c '
import sys
defs, uses = {}, {}
for line in sys.stdin:
    f, kind, sym = line.split()
    f = f[:-2] + ".c"
    (defs.__setitem__(sym, f) if kind == "D" else uses.setdefault(f, set()).add(sym))
graph = {f: sorted({defs[s] for s in syms if s in defs and defs[s] != f}) for f, syms in uses.items()}
state, stack, loop = {}, [], None
def visit(f):
    global loop
    state[f] = 1; stack.append(f)
    for g in graph.get(f, []):
        if loop: return
        if state.get(g) == 1:
            loop = stack[stack.index(g):] + [g]; return
        if not state.get(g): visit(g)
    stack.pop(); state[f] = 2
for f in sorted(graph):
    if not state.get(f) and not loop: visit(f)
files = set(graph) | set(defs.values())
fail = 0
if loop:
    print("not ok src_layers/one_way: " + " -> ".join(loop)); fail = 1
else:
    print("ok src_layers/one_way (%d files)" % len(files))
for room in ("src/dma/", "src/alloc/"):
    mine = sorted(f for f in files if f.startswith(room))
    calls = sorted({"%s -> %s (%s)" % (f, defs[s], s) for f, syms in uses.items()
                    if not f.startswith(room) for s in syms if defs.get(s, "").startswith(room)})
    if not mine:
        print("not ok src_layers/%s: no objects of it" % room[4:-1]); fail = 1
    elif calls:
        print("not ok src_layers/%s_is_a_leaf: %s" % (room[4:-1], "; ".join(calls))); fail = 1
    else:
        print("ok src_layers/%s_is_a_leaf (%d files)" % (room[4:-1], len(mine)))
sys.exit(fail)
'

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_src_layers.sh - the library's layout (src/README.md) as built: from the objects of src/
# and util/, file A depends on file B when A uses a symbol that B defines.
#  - no .c file lies at the top of src/: every file is in the directory of its layer;
#  - dependencies run one way: no two files, and no loop of files, depend on each other
#    (prints the loop);
#  - layers call down only: a file uses symbols of its own directory or of a layer below it,
#    in the order of LAYERS below (prints each call up or sideways);
#  - dma/ and alloc/ stand beside the core: nothing calls into them (their entry points are
#    reached through the exports), and they reach the core only through what core/pins.h and
#    core/export.h declare, never its objects (prints each other use).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/t.sh
B=${BUILD:-build}
command -v python3 >/dev/null || { echo "python3 is not installed"; exit 77; }

top=$(git ls-files 'src/*.c' | grep -v '^src/.*/' | paste -sd, -)
if [ -z "$top" ]; then t_ok "src_layers/no_c_file_at_top"; else
    t_fail "src_layers/no_c_file_at_top" "$top"; fi

# Objects of sources that exist: a file moved or deleted leaves its old object in a build
# folder that is reused.
objs=$(find "$B/obj/src" "$B/obj/util" -name '*.o' 2>/dev/null | sort |
       while read -r o; do c=${o#"$B/obj/"}; [ -f "${c%.o}.c" ] && echo "$o"; done)
[ -n "$objs" ] || { t_fail "src_layers" "no objects under $B/obj/src (build first)"; exit 1; }
for o in $objs; do
    nm "$o" | awk -v f="${o#"$B/obj/"}" '$1 == "U" {print f, "U", $2} NF == 3 && $2 ~ /^[TDBR]$/ {print f, "D", $3}'
done | python3 -c '
import os, re, sys
# Top to bottom; directories of one layer do not call each other.
LAYERS = [("src/dma", "src/alloc"), ("src/core",), ("src/backends", "src/copy"),
          ("src/process", "src/arch"), ("util",)]
rank = {d: i for i, ds in enumerate(LAYERS) for d in ds}
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
def verdict(name, bad, n):
    global fail
    if bad:
        print("not ok src_layers/%s: %s" % (name, "; ".join(bad))); fail = 1
    else:
        print("ok src_layers/%s (%d)" % (name, n))
verdict("one_way", [" -> ".join(loop)] if loop else [], len(files))
calls = [(f, defs[s], s) for f, syms in uses.items() for s in syms
         if s in defs and os.path.dirname(defs[s]) != os.path.dirname(f)]
nolayer = sorted({os.path.dirname(f) for f in files if os.path.dirname(f) not in rank})
verdict("every_directory_has_a_layer", nolayer, len(rank))
up = sorted({"%s -> %s (%s)" % c for c in calls
             if rank.get(os.path.dirname(c[1]), -1) <= rank.get(os.path.dirname(c[0]), -1)})
verdict("layers_call_down", up, len(calls))
wall = open("src/core/pins.h").read() + open("src/core/export.h").read()
for side in LAYERS[0]:
    mine = sorted(f for f in files if f.startswith(side + "/"))
    into = sorted({"%s -> %s (%s)" % c for c in calls if c[1].startswith(side + "/")})
    past = sorted({"%s -> %s (%s)" % c for c in calls if c[0].startswith(side + "/")
                   and c[1].startswith("src/core/") and not re.search(r"\b%s\b" % c[2], wall)})
    name = side[4:]
    if not mine:
        verdict(name + "_is_built", ["no objects of it"], 0)
    verdict(name + "_is_a_leaf", into, len(mine))
    verdict(name + "_reaches_the_core_through_pins_h", past, len(mine))
sys.exit(fail)
' || T_FAILED=1
t_done

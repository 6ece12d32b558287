#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/copy_path_compare.sh OLD [NEW] - the copy path's own cost in two trees, side by side
# (a measurement, not a test; no GPU): bench/copy_path_bench.c built against each tree's
# static library and test hooks, then
#  1. callgrind: instructions per call of gdr_copy_to_mapping and gdr_copy_from_mapping
#     (inclusive), N bytes, each kernel valgrind runs (it has no AVX-512: avx2, sse41, c);
#     repeatable to the instruction;
#  2. wall clock: PAIRS pairs of processes, old and new alternating (the order swapped each
#     pair), each a median of rounds; per tree the median and the least of the processes'
#     medians, and their ratios.
# OLD and NEW are source trees (NEW defaults to this one); each is built with 'make lib'.
# BYTES (default 8), TYPE (wc), PAIRS (default 15), CALLS (default 2000000 per round), KERNEL
# (forced for the wall clock; default the automatic one), CPU (pin the wall clock to it). Output in $OUT (default
# /tmp/vramio-copy-path).
set -u
old=${1:?usage: $0 OLD_TREE [NEW_TREE]}
new=${2:-$(cd "$(dirname "$0")/.." && pwd)}
OUT=${OUT:-/tmp/vramio-copy-path}
BYTES=${BYTES:-8}
TYPE=${TYPE:-wc}
PAIRS=${PAIRS:-15}
CALLS=${CALLS:-2000000}
src=$(cd "$(dirname "$0")" && pwd)/copy_path_bench.c
mkdir -p "$OUT"

build() { # tree name
    local t=$1
    make -s -C "$t" -j2 lib >"$OUT/$2.build.log" 2>&1 &&
    cc -std=gnu11 -O2 -g -D_GNU_SOURCE -pthread -I"$t/include" -I"$t/tests/lib" \
        -I"$t/tests/unit" -I"$t/src" -I"$t/util" -I"$t/driver" -o "$OUT/bench_$2" "$src" \
        "$t/tests/unit/wb/hooks.c" "$t/build/lib/libgdrapi.a" -ldl >>"$OUT/$2.build.log" 2>&1 ||
        { echo "build of $t failed: $OUT/$2.build.log"; exit 1; }
}
build "$old" old
build "$new" new

# 1. Instructions per call. The round count is 1 and the warm-up calls/10 + 1: per direction
#    c + c/10 + 1 calls in all.
c=100000
per_call=$((c + c / 10 + 1))
echo "== callgrind: instructions per call, $BYTES B, $TYPE (inclusive Ir / $per_call calls)"
printf '%-8s %-22s %10s %10s %8s\n' kernel function old new new/old
for k in avx2 sse41 c; do
    for v in old new; do
        GDRCOPY_COPY_KERNEL=$k timeout 300 valgrind --tool=callgrind \
            --callgrind-out-file="$OUT/cg.$v.$k" "$OUT/bench_$v" -n "$BYTES" -t "$TYPE" -r 1 \
            -c $c >"$OUT/cg.$v.$k.log" 2>&1 || echo "callgrind of $v ($k) failed"
    done
    for f in gdr_copy_to_mapping gdr_copy_from_mapping; do
        o=$(cd "$OUT" && callgrind_annotate --inclusive=yes "cg.old.$k" 2>/dev/null |
            awk -v f="$f" 'index($0, ":" f " [") {gsub(",", "", $1); print $1; exit}')
        n=$(cd "$OUT" && callgrind_annotate --inclusive=yes "cg.new.$k" 2>/dev/null |
            awk -v f="$f" 'index($0, ":" f " [") {gsub(",", "", $1); print $1; exit}')
        awk -v k=$k -v f=$f -v o="${o:-0}" -v n="${n:-0}" -v c=$per_call 'BEGIN {
            printf "%-8s %-22s %10.2f %10.2f %8.4f\n", k, f, o / c, n / c, o ? n / o : 0 }'
    done
done

# 2. Wall clock, alternating processes.
echo "== wall clock: $PAIRS pairs of processes, $BYTES B, $TYPE, kernel ${KERNEL:-automatic}"
: >"$OUT/wall.old"; : >"$OUT/wall.new"
for i in $(seq 1 "$PAIRS"); do
    if [ $((i % 2)) = 1 ]; then order="old new"; else order="new old"; fi
    for v in $order; do
        GDRCOPY_COPY_KERNEL=${KERNEL:-} timeout 120 ${CPU:+taskset -c "$CPU"} "$OUT/bench_$v" -n "$BYTES" -t "$TYPE" \
            -r 5 -c "$CALLS" >>"$OUT/wall.$v" 2>&1
    done
done
# Per tree: the median and the least of its processes' medians (on a machine shared with other
# work the least is the steadier figure; the instruction counts above are exact).
stat() { # file direction
    awk -v d="$2" '$1 == d {print $5}' "$1" | sort -g |
        awk '{a[NR] = $1} END {printf "%s %s", a[int((NR + 1) / 2)], a[1]}'
}
for d in write read; do
    set -- $(stat "$OUT/wall.old" $d) $(stat "$OUT/wall.new" $d)
    awk -v d=$d -v om="$1" -v ol="$2" -v nm="$3" -v nl="$4" 'BEGIN {
        printf "%-5s median old %.3f ns, new %.3f ns, new/old %.4f; least old %.3f, new %.3f, new/old %.4f\n",
               d, om, nm, nm / om, ol, nl, nl / ol }'
done

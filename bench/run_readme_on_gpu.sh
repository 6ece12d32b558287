#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run_readme_on_gpu.sh - every figure of README.md's Benchmarks and Reads sections,
# measured again in one run on a GPU machine, from the repository root, within BUDGET seconds
# (default 470); every step has a timeout. In order:
#  1. bench/run_bench_on_gpu.sh without its _auto test (AUTO_TEST=0): 'make bench', whose
#     copylat times the library and the raw loops in alternating batches (each ratio the median
#     of the per-round ratios), copybw, apiperf and pplat, and the report: the Benchmarks
#     table and its targets;
#  2. tests/gpu/run_reads_on_gpu.sh without its stale-read runs (STALE=0): bench/read_bench.cu
#     (every method's reads in blocks taken in turn, medians) and, with GDRCOPY_SRC, GDRCopy
#     2.6's read code beside ours and its copylat on our library: the Reads table and the
#     sentences under it.
# The stale-read proof itself is tests/gpu/run_reads_on_gpu.sh (about 9 minutes).
# Logs under $OUT (default /tmp/vramio-readme): bench/ and reads/. Ends with which output
# replaces which figure of README.md, and those outputs.
set -u
. "$(dirname "$0")/../tests/gpu/gpu_script.sh"
gpu_script_start /tmp/vramio-readme 470 summary.log
say "== $(date -u '+%Y-%m-%d %H:%M UTC'), tree $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

# 1. The benchmark, leaving at least 150 s for the reads.
left=$((start + BUDGET - $(date +%s)))
OUT=$OUT/bench AUTO_TEST=0 BENCH_S=$((left - 150 < 330 ? left - 150 : 330)) \
    timeout $(tmo 400) bash bench/run_bench_on_gpu.sh > "$OUT/bench.out" 2>&1
rc=$?
say "== bench/run_bench_on_gpu.sh: exit $rc; $(grep -m1 '^== make bench' "$OUT/bench.out" ||
    tail -n 1 "$OUT/bench.out") ($(($(date +%s) - start)) s)"

# 2. The reads, in what is left.
OUT=$OUT/reads STALE=0 BUDGET=$(tmo 400) timeout $(tmo 400) \
    bash tests/gpu/run_reads_on_gpu.sh > "$OUT/reads.out" 2>&1
rc=$?
say "== tests/gpu/run_reads_on_gpu.sh: exit $rc; $(grep -E '^(not ok|skip) ' "$OUT/reads.out" |
    head -n 3 | tr '\n' ' ')($(($(date +%s) - start)) s)"

B=$OUT/bench/benchmarks.md
R=$OUT/reads/read_bench.log
say "
== What replaces what in README.md
Benchmarks, the line 'The latest (...)': this run's date and tree (first line above), the
  command 'bash bench/run_readme_on_gpu.sh', and the machine ($B, its first lines).
Benchmarks table, every row (vramio, raw loop, cuMemcpy, _auto; write 1-256 B, 4 KiB, 1 MiB;
  read 8-64 B, 4 KiB / 1 MiB; write bandwidth 1 MiB): $B, its latency and bandwidth tables
  (p50 columns), below.
Benchmarks paragraph 'Every target of make bench was met ...' (ratios, 40x, crossovers,
  bandwidth %, pplat): $B, its Targets and Crossover lines, below.
Reads table (bytes x vramio, _auto, GDRCopy 2.6, plain loads, MFENCE + NT loads, cudaMemcpy,
  vramio / best, vramio / 2.6): $R, the p50 (first number) of ours, auto, gdrcopy26, plain,
  mf+nt64, memcpy, and its last two columns; 'lf+nt64' and 'sf+nt64' say whether LFENCE or
  SFENCE let a streaming load be answered from a buffer ('*': under half a round trip).
Reads, the sentence on GDRCopy 2.6's copylat (1-8 B reads): $OUT/reads/copylat.log.
"
[ -f "$B" ] && { grep -E '^Made by|^- (GPU|CPU|backend|CPU binding)|^- (met|\*\*missed)' "$B"
    awk '/^## Write latency/ {p = 1} /^## Ping-pong/ {p = 0} p && NF' "$B" | head -90; } |
    tee -a "$S"
[ -f "$R" ] && cat "$R" | tee -a "$S"
[ -f "$OUT/reads/copylat.log" ] && grep -E '^gdr_copy_(to|from)_mapping' "$OUT/reads/copylat.log" | tee -a "$S"
say "== done in $(($(date +%s) - start)) s"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_bench_report.sh - bench/report.py turns benchmark JSON into the Markdown report and
# the SVG plot: crossover size, targets met/missed, tables, a well-formed SVG. Fed with
# synthetic JSON in a temporary folder (never with docs/), so it runs without a GPU.
set -u
cd "$(dirname "$0")/../.."
. "$(dirname "$0")/../lib/t.sh"
if ! command -v python3 >/dev/null; then echo "python3 is not installed"; exit 77; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

python3 - "$tmp" <<'PY'
import json, sys, os
d = sys.argv[1]
def st(v): return {"min": v * 0.9, "p50": v, "p99": v * 1.2, "max": v * 2, "avg": v, "n": 50}
sizes = [1 << i for i in range(0, 21)]
# vramio: 0.14 us + 1 us per 16 KiB; cuMemcpy 6 us + 1 us per 40 KiB: cuMemcpy wins from 256 KiB (160 KiB crossing)
w = [{"size": s, "vramio": st(0.14 + s / 16384), "raw": st(0.135 + s / 16500), "cumemcpy": st(6 + s / 40960)} for s in sizes]
# copylat's paired ratio (median of per-round ratios) wins over the ratio of the p50s: 1.036 at 64 B
for row in w:
    if row["size"] == 64: row["ratio"] = 1.07
    row["raw_seq"] = "st8" if row["size"] < 64 else "nt"
    # _auto: 1% slower than the better of the two at every size: met
    row["auto"] = st(min(row["vramio"]["p50"], row["cumemcpy"]["p50"]) * 1.01)
r = [{"size": s, "vramio": st(1 + s / 800), "raw": st(1 + s / 800), "cumemcpy": st(6.6 + s / 40960)} for s in sizes]
for row in r:
    if row["size"] == 128: row["ratio"] = 1.12       # small reads: a miss at 128 B
    row["auto"] = st(min(row["vramio"]["p50"], row["cumemcpy"]["p50"]))
    if row["size"] == 8192: row["auto"] = st(row["cumemcpy"]["p50"] * 2)   # a miss at 8 KiB
json.dump({"tool": "copylat", "backend": "vulkan", "kind": "vramio", "copy_kernel": "avx2", "raw_kernel": "avx2",
           "cpu_binding": "CPU 3 (local to GPU 0, NUMA node 0, local CPUs 0-15)",
           "dma_crossover": {"read": 8192, "write": -1}, "write": w, "read": r}, open(os.path.join(d, "copylat.json"), "w"))
b = [{"size": s, "write_vramio": 18000, "write_raw": 19500, "write_cumemcpy": 30000, "read_vramio": 700, "read_raw": 760, "read_cumemcpy": 20000} for s in [1 << i for i in range(12, 21)]]
json.dump({"tool": "copybw", "backend": "vulkan", "kind": "vramio", "results": b}, open(os.path.join(d, "copybw.json"), "w"))
json.dump({"gdr": st(2.3), "rawmap": st(2.2), "host": st(3.0), "size": 4}, open(os.path.join(d, "pplat.json"), "w"))
PY
if ! python3 bench/report.py --dir "$tmp" --md "$tmp/b.md" --svg "$tmp/b.svg" --command "make bench TEST" 2>"$tmp/err"; then
    t_fail report/runs "$(head -c 300 "$tmp/err")"; t_done
fi
t_ok report/runs
md=$(cat "$tmp/b.md")
grep -q 'Made by `make bench TEST`' <<<"$md" && t_ok report/command || t_fail report/command "the command is not in the report"
grep -q 'cuMemcpy is faster from \*\*256 KiB\*\* up' <<<"$md" && t_ok report/write-crossover || t_fail report/write-crossover "$(grep -m1 Crossover <<<"$md")"
grep -q 'missed:\*\* gdr_copy_to_mapping p50, 8-256 B, within 3% of the best raw sequence: worst ratio 1.070' <<<"$md" && t_ok report/target-small-writes || t_fail report/target-small-writes "the paired ratio 1.070 at 64 B must be judged a miss"
grep -q 'missed:\*\* gdr_copy_from_mapping p50, 64-256 B at new addresses, within 1.1x of the raw streaming-load loop: worst ratio 1.120' <<<"$md" && t_ok report/target-small-reads || t_fail report/target-small-reads "$(grep -m1 'streaming-load' <<<"$md")"
grep -qE 'missed:\*\* at least 40x faster than cuMemcpy up to 1 KiB \(writes\): least [0-9.]+x at 1 KiB \(the raw loop: [0-9.]+x\), and within 2% of the raw loop at every size: worst 1.070 at 64 B' <<<"$md" && t_ok report/target-40x || t_fail report/target-40x "$(grep -m1 40x <<<"$md")"
grep -q 'met: vramio_copy_to_mapping_auto at every size 1 B-1 MiB at least 0.95x the better of the BAR copy and cuMemcpy: least 0.990' <<<"$md" && t_ok report/target-auto-write || t_fail report/target-auto-write "$(grep -m1 'to_mapping_auto' <<<"$md")"
grep -q 'missed:\*\* vramio_copy_from_mapping_auto at every size 1 B-1 MiB at least 0.95x the better of the BAR copy and cuMemcpy: least 0.500 at 8 KiB' <<<"$md" && t_ok report/target-auto-read || t_fail report/target-auto-read "$(grep -m1 'from_mapping_auto' <<<"$md")"
grep -q 'The _auto call uses the copy engine from \*\*8 KiB\*\*' <<<"$md" && grep -q 'The _auto call uses the copy engine from \*\*never\*\*' <<<"$md" && t_ok report/dma-crossover || t_fail report/dma-crossover "the measured crossovers are not stated"
grep -q 'CPU binding: CPU 3 (local to GPU 0, NUMA node 0' <<<"$md" && t_ok report/cpu-binding || t_fail report/cpu-binding "the binding is not stated"
grep -qE '^\| 64 B \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| nt \| 1.070 \|' <<<"$md" && t_ok report/raw-sequence-column || t_fail report/raw-sequence-column "$(grep -m1 '^| 64 B' <<<"$md")"
grep -q 'missed:\*\* write bandwidth 64 KiB-1 MiB at least 95% of raw: least 92.3%' <<<"$md" && t_ok report/target-write-bw || t_fail report/target-write-bw "18000/19500 must be a miss at 92.3%"
grep -q 'met: read bandwidth 64 KiB-1 MiB at least 90% of raw: least 92.1%' <<<"$md" && t_ok report/target-read-bw || t_fail report/target-read-bw "700/760 must be met at 92.1%"
grep -q 'met: pplat p50 within 10% of the raw ping-pong through host memory: 0.767' <<<"$md" && t_ok report/target-pplat || t_fail report/target-pplat "not judged"
grep -qE '^\| 4 KiB \| 0\.390 \|' <<<"$md" && t_ok report/latency-table || t_fail report/latency-table "no 4 KiB row with p50 0.390"
if python3 -c 'import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); assert len(d.getElementsByTagName("polyline")) >= 14' "$tmp/b.svg"; then
    t_ok report/svg
else
    t_fail report/svg "not well-formed or fewer than 14 curves"
fi
# bench/small_writes.py (run_bench_on_gpu.sh SMALL_WRITES=N): one run that meets the
# small-write targets and one that misses at 64 B must be told apart, and the exit says so.
python3 - "$tmp" <<'PY'
import json, sys, os
d = sys.argv[1]
def st(v): return {"min": v, "p50": v, "p99": v, "max": v, "avg": v, "n": 1000}
for name, bad in (("s1.json", 1.0), ("s2.json", 1.05)):
    w = [{"size": 1 << i, "vramio": st(0.14), "raw": st(0.139), "cumemcpy": st(6.5),
          "ratio": bad if (1 << i) == 64 else 1.01, "ratio_p25": 0.99, "ratio_p75": 1.02,
          "raw_seq": "nt"} for i in range(0, 13)]
    json.dump({"write": w, "read": []}, open(os.path.join(d, name), "w"))
PY
out=$(python3 bench/small_writes.py "$tmp/s1.json" "$tmp/s2.json"); rc=$?
grep -q '^ok small_writes_8_256_within_3pct run 1: worst 1.010' <<<"$out" &&
grep -q '^not ok small_writes_8_256_within_3pct run 2: worst 1.050 at 64 B' <<<"$out" &&
grep -q '^ok cumemcpy_40x_upto_1k_and_within_2pct run 1' <<<"$out" &&
grep -q '^     64  1.000-1.050' <<<"$out" && [ $rc -eq 1 ] &&
    t_ok small_writes/verdicts || t_fail small_writes/verdicts "rc $rc: $(head -c 600 <<<"$out")"
t_done

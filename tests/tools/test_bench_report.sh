#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_bench_report.sh - tools/bench/report.py turns benchmark JSON into the Markdown report and
# the SVG plot: crossover size, targets met/missed, tables, a well-formed SVG. Fed with
# synthetic JSON in a temporary folder (never with docs/), so it runs without a GPU.
set -u
cd "$(dirname "$0")/../.."
ok()   { echo "ok $1"; }
fail() { echo "not ok $1: $2"; }
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
r = [{"size": s, "vramio": st(1 + s / 800), "raw": st(1 + s / 800), "cumemcpy": st(6.6 + s / 40960)} for s in sizes]
json.dump({"tool": "copylat", "backend": "vulkan", "kind": "vramio", "copy_kernel": "avx2", "raw_kernel": "avx2", "write": w, "read": r}, open(os.path.join(d, "copylat.json"), "w"))
b = [{"size": s, "write_vramio": 18000, "write_raw": 19500, "write_cumemcpy": 30000, "read_vramio": 700, "read_raw": 760, "read_cumemcpy": 20000} for s in [1 << i for i in range(12, 21)]]
json.dump({"tool": "copybw", "backend": "vulkan", "kind": "vramio", "results": b}, open(os.path.join(d, "copybw.json"), "w"))
json.dump({"gdr": st(2.3), "rawmap": st(2.2), "host": st(3.0), "size": 4}, open(os.path.join(d, "pplat.json"), "w"))
PY
if ! python3 tools/bench/report.py --dir "$tmp" --md "$tmp/b.md" --svg "$tmp/b.svg" --command "make bench TEST" 2>"$tmp/err"; then
    fail report/runs "$(head -c 300 "$tmp/err")"; exit 0
fi
ok report/runs
md=$(cat "$tmp/b.md")
grep -q 'Made by `make bench TEST`' <<<"$md" && ok report/command || fail report/command "the command is not in the report"
grep -q 'cuMemcpy is faster from \*\*256 KiB\*\* up' <<<"$md" && ok report/write-crossover || fail report/write-crossover "$(grep -m1 Crossover <<<"$md")"
grep -q 'missed:\*\* gdr_copy_to_mapping p50, 8-128 B, within 5% of raw: worst ratio 1.070' <<<"$md" && ok report/target-small-writes || fail report/target-small-writes "the paired ratio 1.070 at 64 B must be judged a miss"
grep -qE 'missed:\*\* at least 40x faster than cuMemcpy up to 4 KiB \(writes\): least [0-9.]+x at 4 KiB \(the raw loop: [0-9.]+x\)' <<<"$md" && ok report/target-40x || fail report/target-40x "$(grep -m1 40x <<<"$md")"
grep -q 'missed:\*\* write bandwidth 64 KiB-1 MiB at least 95% of raw: least 92.3%' <<<"$md" && ok report/target-write-bw || fail report/target-write-bw "18000/19500 must be a miss at 92.3%"
grep -q 'met: read bandwidth 64 KiB-1 MiB at least 90% of raw: least 92.1%' <<<"$md" && ok report/target-read-bw || fail report/target-read-bw "700/760 must be met at 92.1%"
grep -q 'met: pplat p50 within 10% of the raw ping-pong through host memory: 0.767' <<<"$md" && ok report/target-pplat || fail report/target-pplat "not judged"
grep -qE '^\| 4 KiB \| 0\.390 \|' <<<"$md" && ok report/latency-table || fail report/latency-table "no 4 KiB row with p50 0.390"
if python3 -c 'import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); assert len(d.getElementsByTagName("polyline")) >= 12' "$tmp/b.svg"; then
    ok report/svg
else
    fail report/svg "not well-formed or fewer than 12 curves"
fi
exit 0

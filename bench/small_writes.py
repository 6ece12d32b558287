#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The small-write targets of copylat JSON runs (bench/run_bench_on_gpu.sh SMALL_WRITES=N):
per run and size, vramio/raw (the median of the per-round ratios, with their p25-p75), the raw
sequence it was measured against and cuMemcpy/vramio; then, per run, ok/not ok lines for the
issue's targets (8-256 B within 3% of the best raw sequence; cuMemcpy at least 40x up to 1 KiB
and within 2% of the raw loop at every size measured) and the spread of the ratio across runs."""
import json
import sys


def main(paths):
    if not paths:
        print("usage: small_writes.py COPYLAT.json...", file=sys.stderr)
        return 2
    fails = 0
    by_size = {}
    for n, p in enumerate(paths, 1):
        with open(p) as f:
            rows = json.load(f)["write"]
        print("run %d (%s)\n  size   vramio(us)  raw(us)  vramio/raw (p25-p75)   raw seq    cuMemcpy/vramio"
              % (n, p))
        for r in rows:
            cu = r.get("cumemcpy", {}).get("p50", 0) / r["vramio"]["p50"] if r["vramio"]["p50"] else 0
            print("  %5d  %9.4f  %8.4f  %7.3f (%.3f-%.3f)   %-9s  %6.1fx" %
                  (r["size"], r["vramio"]["p50"], r["raw"]["p50"], r["ratio"], r.get("ratio_p25", 0),
                   r.get("ratio_p75", 0), r.get("raw_seq", "?"), cu))
            by_size.setdefault(r["size"], []).append(r["ratio"])
        small = [r for r in rows if 8 <= r["size"] <= 256]
        worst = max(small, key=lambda r: r["ratio"])
        ok = worst["ratio"] <= 1.03
        fails += not ok
        print("%s small_writes_8_256_within_3pct run %d: worst %.3f at %d B" %
              ("ok" if ok else "not ok", n, worst["ratio"], worst["size"]))
        upto1k = [r for r in rows if r["size"] <= 1024 and "cumemcpy" in r and r["vramio"]["p50"]]
        if upto1k:
            least = min(r["cumemcpy"]["p50"] / r["vramio"]["p50"] for r in upto1k)
            every = max(rows, key=lambda r: r["ratio"])
            ok = least >= 40 and every["ratio"] <= 1.02
            fails += not ok
            print("%s cumemcpy_40x_upto_1k_and_within_2pct run %d: least %.1fx, worst ratio %.3f at %d B"
                  % ("ok" if ok else "not ok", n, least, every["ratio"], every["size"]))
    print("spread of vramio/raw across %d runs (min-max per size):" % len(paths))
    for size in sorted(by_size):
        v = by_size[size]
        print("  %5d  %.3f-%.3f" % (size, min(v), max(v)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""report.py - turn the benchmark JSON of bench/run.sh into docs/benchmarks.md (tables,
the crossover size where cuMemcpy wins, the project's targets met or missed) and
docs/benchmarks.svg (latency and bandwidth against size, drawn by hand: no plotting package)."""
import argparse
import datetime
import json
import math
import os
import sys


def load(d, name):
    path = os.path.join(d, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def human(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d %s" % (n // div, unit)
    return "%d B" % n


def crossover(rows):
    """Smallest size from which cuMemcpy's p50 beats vramio's p50 for good, or None."""
    cross = None
    for r in rows:
        if "cumemcpy" not in r:
            return None
        if r["cumemcpy"]["p50"] < r["vramio"]["p50"]:
            if cross is None:
                cross = r["size"]
        else:
            cross = None
    return cross


def gbps(mibps):
    return mibps * (1 << 20) / 1e9


def lat_ratio(r):
    """vramio/raw of a latency row: the median of the per-round ratios when copylat measured
    the two in alternating batches, else the ratio of the medians (older JSON)."""
    if "ratio" in r:
        return r["ratio"]
    return r["vramio"]["p50"] / r["raw"]["p50"] if r["raw"]["p50"] else 0


def best_bar_or_cu(r):
    """The better (lower p50) of the BAR copy (gdr_copy_*_mapping) and cuMemcpy for a row."""
    v = r["vramio"]["p50"]
    return min(v, r["cumemcpy"]["p50"]) if "cumemcpy" in r else v


def auto_ratio(r):
    """How the _auto call fares against the better of the BAR copy and cuMemcpy: best / auto
    (1.0 is as fast as the better one; the target is at least 0.95)."""
    a = r["auto"]["p50"]
    return best_bar_or_cu(r) / a if a else 0


def latency_table(rows, direction):
    has_cu = rows and "cumemcpy" in rows[0]
    has_auto = rows and "auto" in rows[0]
    has_seq = rows and "raw_seq" in rows[0]
    cu_name = "cuMemcpy %s" % ("H2D" if direction == "write" else "D2H")
    out = ["| size | vramio p50 (us) | vramio p99 | raw p50 (us) |" + (" raw loop |" if has_seq else "") +
           " vramio / raw |" +
           (" %s p50 (us) | cuMemcpy / vramio |" % cu_name if has_cu else "") +
           (" _auto p50 (us) | best / _auto |" if has_auto else ""),
           "|---:|---:|---:|---:|" + ("---|" if has_seq else "") + "---:|" + ("---:|---:|" if has_cu else "") +
           ("---:|---:|" if has_auto else "")]
    for r in rows:
        v, raw = r["vramio"], r["raw"]
        line = "| %s | %.3f | %.3f | %.3f |" % (human(r["size"]), v["p50"], v["p99"], raw["p50"])
        if has_seq:
            line += " %s |" % r.get("raw_seq", "?")
        line += " %.3f |" % lat_ratio(r)
        if has_cu:
            line += " %.2f | %.1fx |" % (r["cumemcpy"]["p50"], r["cumemcpy"]["p50"] / v["p50"] if v["p50"] else 0)
        if has_auto:
            line += " %.3f | %.3f |" % (r["auto"]["p50"], auto_ratio(r))
        out.append(line)
    return out


def targets(lat, bw, pp):
    """The issue's targets against the raw reference of the same run: (text, met) pairs."""
    res = []
    if lat:
        small = [r for r in lat["write"] if 8 <= r["size"] <= 256]
        worst = max(small, key=lat_ratio, default=None)
        if worst is not None:
            # copylat gives the spread of the per-round ratios too (p25-p75).
            spread = (" (p25-p75 %.3f-%.3f at %s)" % (worst["ratio_p25"], worst["ratio_p75"],
                                                      human(worst["size"]))
                      if "ratio_p25" in worst else "")
            res.append(("gdr_copy_to_mapping p50, 8-256 B, within 3%% of the best raw sequence: "
                        "worst ratio %.3f%s" % (lat_ratio(worst), spread), lat_ratio(worst) <= 1.03))
        reads = [r for r in lat["read"] if 64 <= r["size"] <= 256]
        worst = max((lat_ratio(r) for r in reads), default=None)
        if worst is not None:
            res.append(("gdr_copy_from_mapping p50, 64-256 B at new addresses, within 1.1x of the raw "
                        "streaming-load loop: worst ratio %.3f" % worst, worst <= 1.10))
        upto1k = [r for r in lat["write"] if r["size"] <= 1024 and "cumemcpy" in r]
        if upto1k:
            # The raw loop's own ratio at the same size says whether a miss is ours or the
            # link's: each copy ends with a fence, so a 4 KiB copy costs the fence's round
            # trip plus 4 KiB at the link's write rate, library or not (hence 1 KiB).
            r = min(upto1k, key=lambda r: r["cumemcpy"]["p50"] / r["vramio"]["p50"])
            least = r["cumemcpy"]["p50"] / r["vramio"]["p50"]
            raw = r["cumemcpy"]["p50"] / r["raw"]["p50"] if r["raw"]["p50"] else 0
            worst = max(lat["write"], key=lat_ratio)
            ok = least >= 40 and lat_ratio(worst) <= 1.02
            res.append(("at least 40x faster than cuMemcpy up to 1 KiB (writes): least %.1fx at %s "
                        "(the raw loop: %.1fx), and within 2%% of the raw loop at every size: worst "
                        "%.3f at %s" % (least, human(r["size"]), raw, lat_ratio(worst),
                                        human(worst["size"])), ok))
        for d in ("write", "read"):
            rows = [r for r in lat[d] if "auto" in r]
            if rows:
                w = min(rows, key=auto_ratio)
                res.append(("vramio_copy_%s_mapping_auto at every size %s-%s at least 0.95x the better "
                            "of the BAR copy and cuMemcpy: least %.3f at %s" % (
                                "to" if d == "write" else "from", human(rows[0]["size"]),
                                human(rows[-1]["size"]), auto_ratio(w), human(w["size"])),
                            auto_ratio(w) >= 0.95))
    if bw:
        mid = [r for r in bw["results"] if 65536 <= r["size"] <= 1 << 20]
        if mid:
            w = min(r["write_vramio"] / r["write_raw"] for r in mid)
            rd = min(r["read_vramio"] / r["read_raw"] for r in mid)
            res.append(("write bandwidth 64 KiB-1 MiB at least 95%% of raw: least %.1f%%" % (100 * w), w >= 0.95))
            res.append(("read bandwidth 64 KiB-1 MiB at least 90%% of raw: least %.1f%%" % (100 * rd), rd >= 0.90))
    if pp and "gdr" in pp and "host" in pp:
        ratio = pp["gdr"]["p50"] / pp["host"]["p50"]
        res.append(("pplat p50 within 10%% of the raw ping-pong through host memory: %.3f" % ratio,
                    ratio <= 1.10))
    return res


def write_md(args, info, lat, bw, api, pp):
    gpu = info["gpus"][0] if info and info.get("gpus") else {}
    backend = (lat or bw or {}).get("backend", "?")
    L = ["# vramio benchmarks", "",
         "Made by `%s` on %s UTC (bench/run.sh, bench/report.py). Single runs on a shared" %
         (args.command, args.when or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")),
         "machine: treat differences of a few percent as noise.", "",
         "- GPU: %s, PCI %s, BAR1 %s" % (gpu.get("name", "?"), gpu.get("pci", "?"),
                                          "%.1f GiB" % (gpu["bar1_bytes"] / (1 << 30)) if gpu.get("bar1_bytes") else "unknown"),
         "- CPU: %s" % (info or {}).get("cpu", {}).get("model", "?"),
         "- backend: %s, memory: %s, copy kernel: %s, raw reference: %s" %
         (backend, (lat or bw or {}).get("kind", "?"), (lat or bw or {}).get("copy_kernel", "?"),
          (lat or bw or {}).get("raw_kernel", "?")),
         "- raw reference: the same copy by a plain loop on the same mapping (writes up to 4 KiB: the",
         "  fastest in the same run of 8-byte stores + sfence, one 64-byte NT store per line and",
         "  MOVDIR64B, named in the 'raw loop' column; NT stores above; streaming loads for reads, each",
         "  read at a new address), called like the library and timed in batches alternating with the",
         "  library's; vramio / raw is the median of the per-round ratios.",
         "- cuMemcpy: cuMemcpyHtoD / cuMemcpyDtoH from pinned host memory (cuMemAllocHost).",
         "- _auto: vramio_copy_*_mapping_auto (pinned host memory); best / _auto is the better p50 of",
         "  the BAR copy (vramio) and cuMemcpy over the _auto call's p50.",
         "- CPU binding: %s" % (lat or bw or {}).get("cpu_binding", "not recorded"), ""]
    t = targets(lat, bw, pp)
    if t:
        L += ["## Targets (against the raw reference of the same run)", ""]
        L += ["- %s %s" % ("met:" if ok else "**missed:**", text) for text, ok in t]
        L.append("")
    if lat:
        for d in ("write", "read"):
            cross = crossover(lat[d])
            L += ["## %s latency (gdr_copy_%s_mapping)" % (d.capitalize(), "to" if d == "write" else "from"), ""]
            if "cumemcpy" in lat[d][0]:
                L.append("Crossover: " + ("cuMemcpy is faster from **%s** up" % human(cross) if cross else
                                         "cuMemcpy is never faster up to %s" % human(lat[d][-1]["size"])))
                L.append("")
            x = lat.get("dma_crossover", {}).get(d)
            if x is not None:
                L.append("The _auto call uses the copy engine from **%s** (measured by the library in "
                         "this run, or set by VRAMIO_DMA_CROSSOVER_%s)" % (
                             "never" if x < 0 else human(int(x)), d.upper()))
                L.append("")
            L += latency_table(lat[d], d) + [""]
    if bw:
        L += ["## Bandwidth (GB/s = 1e9 B/s)", "",
              "| size | write vramio | write raw | % of raw | cuMemcpy H2D | read vramio | read raw | % of raw | cuMemcpy D2H |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in bw["results"]:
            L.append("| %s | %.2f | %.2f | %.1f%% | %.2f | %.3f | %.3f | %.1f%% | %.2f |" % (
                human(r["size"]), gbps(r["write_vramio"]), gbps(r["write_raw"]),
                100 * r["write_vramio"] / r["write_raw"], gbps(r["write_cumemcpy"]),
                gbps(r["read_vramio"]), gbps(r["read_raw"]), 100 * r["read_vramio"] / r["read_raw"],
                gbps(r["read_cumemcpy"])))
        L.append("")
    if pp:
        L += ["## Ping-pong latency (gdrcopy_pplat, %d-byte message, us)" % pp.get("size", 4), "",
              "| mode | min | p50 | p99 |", "|---|---:|---:|---:|"]
        names = {"gdr": "CPU writes GPU memory with gdr_copy_to_mapping, GPU answers in host memory",
                 "rawmap": "CPU writes GPU memory with an inline store + sfence (same mapping)",
                 "host": "raw ping-pong through mapped host memory both ways"}
        for k in ("gdr", "rawmap", "host"):
            if k in pp:
                L.append("| %s | %.3f | %.3f | %.3f |" % (names[k], pp[k]["min"], pp[k]["p50"], pp[k]["p99"]))
        L.append("")
    else:
        L += ["## Ping-pong latency", "", "gdrcopy_pplat did not run (see pplat.log).", ""]
    if api:
        calls = ["gdr_pin_buffer", "gdr_map", "gdr_get_info", "gdr_unmap", "gdr_unpin_buffer"]
        L += ["## API costs (gdrcopy_apiperf, p50 us)", "",
              "gdr_open p50 %.1f us (first open %.0f us), gdr_close p50 %.1f us." % (
                  api["gdr_open"]["p50"], api["first_gdr_open"], api["gdr_close"]["p50"]), "",
              "| size | " + " | ".join(calls) + " |", "|---:|" + "---:|" * len(calls)]
        for r in api["results"]:
            L.append("| %s | " % human(r["size"]) + " | ".join("%.2f" % r[c]["p50"] for c in calls) + " |")
        L.append("")
    L += ["![latency and bandwidth against size](%s)" % os.path.basename(args.svg), ""]
    with open(args.md, "w") as f:
        f.write("\n".join(L))


# ---- SVG --------------------------------------------------------------------------------------
COLORS = {"vramio": "#1f77b4", "raw": "#2ca02c", "cuMemcpy": "#d62728", "auto": "#9467bd"}


class Panel:
    def __init__(self, x, y, w, h, xs, ys, ylog, title, ylabel):
        self.x, self.y, self.w, self.h = x, y, w, h
        self.x0, self.x1 = math.log2(min(xs)), math.log2(max(xs))
        pos = [v for v in ys if v > 0]
        self.ylog = ylog
        if ylog:
            self.y0, self.y1 = math.floor(math.log10(min(pos))), math.ceil(math.log10(max(pos)))
        else:
            self.y0, self.y1 = 0.0, max(pos) * 1.1
        self.title, self.ylabel = title, ylabel

    def px(self, v):
        return self.x + (math.log2(v) - self.x0) / max(self.x1 - self.x0, 1e-9) * self.w

    def py(self, v):
        t = (math.log10(v) - self.y0) / max(self.y1 - self.y0, 1e-9) if self.ylog else (v - self.y0) / (self.y1 - self.y0)
        return self.y + self.h - t * self.h

    def frame(self):
        s = ['<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>' % (self.x, self.y, self.w, self.h),
             '<text x="%.1f" y="%.1f" font-size="14" text-anchor="middle" font-weight="bold">%s</text>' % (self.x + self.w / 2, self.y - 10, self.title),
             '<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle" transform="rotate(-90 %.1f %.1f)">%s</text>' % (
                 self.x - 48, self.y + self.h / 2, self.x - 48, self.y + self.h / 2, self.ylabel),
             '<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle">copy size</text>' % (self.x + self.w / 2, self.y + self.h + 36)]
        e = int(self.x0)
        while e <= self.x1:
            xx = self.px(2 ** e)
            s.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>' % (xx, self.y, xx, self.y + self.h))
            if e % 2 == 0 or self.x1 - self.x0 < 12:
                s.append('<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle">%s</text>' % (
                    xx, self.y + self.h + 16, human(2 ** e).replace(" ", "")))
            e += 1
        if self.ylog:
            ticks = [10 ** k for k in range(int(self.y0), int(self.y1) + 1)]
        else:
            step = 10 ** math.floor(math.log10(self.y1 / 4))
            step *= 2 if self.y1 / step > 10 else 1
            ticks = [k * step for k in range(0, int(self.y1 / step) + 1)]
        for v in ticks:
            yy = self.py(v) if (v > 0 or not self.ylog) else None
            if yy is None:
                continue
            s.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>' % (self.x, yy, self.x + self.w, yy))
            s.append('<text x="%.1f" y="%.1f" font-size="10" text-anchor="end">%g</text>' % (self.x - 4, yy + 3, v))
        return s

    def line(self, pts, color, dash=""):
        pts = [(a, b) for a, b in pts if b > 0]
        if not pts:
            return []
        d = " ".join("%.1f,%.1f" % (self.px(a), self.py(b)) for a, b in pts)
        return ['<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>' % (
            d, color, ' stroke-dasharray="6,4"' if dash else "")]

    def vmark(self, xv, text):
        xx = self.px(xv)
        return ['<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000" stroke-dasharray="3,3"/>' % (xx, self.y, xx, self.y + self.h),
                '<text x="%.1f" y="%.1f" font-size="10" text-anchor="%s">%s</text>' % (
                    xx - 3 if xx > self.x + self.w * 0.6 else xx + 3, self.y + 12,
                    "end" if xx > self.x + self.w * 0.6 else "start", text)]


def write_svg(path, lat, bw):
    W, H = 1100, 800
    s = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">' % (W, H),
         '<rect width="100%" height="100%" fill="white"/>']
    panels = []
    if lat:
        for i, d in enumerate(("write", "read")):
            rows = lat[d]
            ys = [r[k]["p50"] for r in rows for k in ("vramio", "raw", "cumemcpy", "auto") if k in r]
            p = Panel(80 + i * 530, 50, 440, 280, [r["size"] for r in rows], ys, True,
                      "%s latency, p50" % d, "microseconds (log)")
            s += p.frame()
            s += p.line([(r["size"], r["vramio"]["p50"]) for r in rows], COLORS["vramio"])
            s += p.line([(r["size"], r["raw"]["p50"]) for r in rows], COLORS["raw"], dash=True)
            if "cumemcpy" in rows[0]:
                s += p.line([(r["size"], r["cumemcpy"]["p50"]) for r in rows], COLORS["cuMemcpy"])
                c = crossover(rows)
                if c:
                    s += p.vmark(c, "cuMemcpy wins from %s" % human(c))
            if "auto" in rows[0]:
                s += p.line([(r["size"], r["auto"]["p50"]) for r in rows], COLORS["auto"], dash=True)
            panels.append(p)
    if bw:
        rows = bw["results"]
        for i, d in enumerate(("write", "read")):
            ys = [gbps(r["%s_%s" % (d, k)]) for r in rows for k in ("vramio", "raw", "cumemcpy")]
            p = Panel(80 + i * 530, 440, 440, 280, [r["size"] for r in rows], ys, d == "read",
                      "%s bandwidth" % d, "GB/s" + (" (log)" if d == "read" else ""))
            s += p.frame()
            s += p.line([(r["size"], gbps(r[d + "_vramio"])) for r in rows], COLORS["vramio"])
            s += p.line([(r["size"], gbps(r[d + "_raw"])) for r in rows], COLORS["raw"], dash=True)
            s += p.line([(r["size"], gbps(r[d + "_cumemcpy"])) for r in rows], COLORS["cuMemcpy"])
    lx = 80
    for name, col in (("vramio (gdr_copy_*_mapping)", COLORS["vramio"]), ("raw reference", COLORS["raw"]),
                      ("cuMemcpy, pinned host memory", COLORS["cuMemcpy"]),
                      ("vramio_copy_*_auto", COLORS["auto"])):
        s.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"%s/>' % (
            lx, H - 20, lx + 30, H - 20, col, ' stroke-dasharray="6,4"' if "raw" in name or "auto" in name else ""))
        s.append('<text x="%d" y="%d" font-size="12">%s</text>' % (lx + 36, H - 16, name))
        lx += 250
    s.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(s) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dir", required=True, help="folder with info/copylat/copybw/apiperf/pplat .json")
    ap.add_argument("--md", required=True)
    ap.add_argument("--svg", required=True)
    ap.add_argument("--command", default="make bench", help="the command that made the data")
    ap.add_argument("--when", help="UTC time of the run, when the report is made later")
    args = ap.parse_args()
    info, lat, bw, api, pp = (load(args.dir, n) for n in ("info", "copylat", "copybw", "apiperf", "pplat"))
    if not lat and not bw:
        sys.exit("report.py: no copylat.json or copybw.json in %s" % args.dir)
    write_md(args, info, lat, bw, api, pp)
    write_svg(args.svg, lat, bw)


if __name__ == "__main__":
    main()

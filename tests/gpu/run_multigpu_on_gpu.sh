#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_multigpu_on_gpu.sh - two GPUs in one host (issue 15), from the repository root:
#   tools  gdrcopy_sanity -d 1 on every kind against -d 0; copylat/copybw -d 1 against -d 0
#   pins   build/gpu/multigpu_client (tests/multigpu/multigpu_client.c) on real GPUs: one gdr_t
#          pins and maps both GPUs, cuMemcpy checks from each GPU, pins under the other GPU's
#          context or none, vramio_alloc(1) from a GPU-0 context, fork; the library's log says
#          which Vulkan device served each GPU, checked against nvidia-smi's UUIDs
#   nccl   NCCL's GDRCopy path through this library: two processes (tests/gpu/nccl_gdrcopy.py),
#          torch.distributed NCCL on its socket transport, with GDRCopy and without
# Usage: run_multigpu_on_gpu.sh [tools|pins|nccl|all] (default all; tools, and pins+nccl, each
# fit a 10-minute run). Skips, with the reason, where fewer than two GPUs are found. Every
# step has a timeout; BUDGET (seconds, default 540) bounds the whole run. Logs go to $OUT (at
# most 8 files); result lines and a summary to stdout. NVLink multicast stays off
# (NCCL_NVLS_ENABLE=0): on a shared host it can disable the GPUs.
set -u
part=${1:-all}
case $part in tools|pins|nccl|all) ;; *) echo "usage: $0 [tools|pins|nccl|all]" >&2; exit 2 ;; esac
. "$(dirname "$0")/gpu_script.sh"
gpu_script_start /tmp/vramio-multigpu 540 summary.log
[ -f .gpu/env.sh ] && . .gpu/env.sh
export NCCL_NVLS_ENABLE=0
# CUDA ordinals in PCI order, as nvidia-smi numbers the GPUs: the UUID check relies on it.
export CUDA_DEVICE_ORDER=PCI_BUS_ID
PY=${PYTHON:-python3}

{ timeout 30 nvidia-smi -L; timeout 30 nvidia-smi --query-gpu=index,uuid,pci.bus_id,driver_version --format=csv;
  timeout 30 nvidia-smi topo -m; uname -r; } > "$OUT/machine.log" 2>&1
if [ "${VRAMIO_SKIP_BUILD:-0}" != 1 ] &&
   ! timeout "$(tmo 300)" make -j16 all gpu-tests > "$OUT/build.log" 2>&1; then
    say "not ok multigpu_gpu/build: make failed"; tail -20 "$OUT/build.log"; exit 1
fi
ngpu=$(timeout 30 nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "$ngpu" -lt 2 ]; then
    say "skip multigpu_gpu/all: $ngpu GPU(s) here, 2 needed (the programs were built)"; exit 0
fi
say "# $ngpu GPUs: $(timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tr -s ' ' | tr '\n' ';')"

# ---- tools: the sanity suite and the figures, GPU 1 against GPU 0 ----------------------
if [ "$part" = all ] || [ "$part" = tools ]; then
    for d in 0 1; do
        timeout "$(tmo 150)" build/bin/gdrcopy_sanity -d $d --timeout "$(tmo 30)" > "$OUT/sanity_d$d.tmp" 2>&1
        echo "exit $?" >> "$OUT/sanity_d$d.tmp"
    done
    for d in 0 1; do echo "== gdrcopy_sanity -d $d"; cat "$OUT/sanity_d$d.tmp"; done > "$OUT/sanity.log"
    rm -f "$OUT"/sanity_d?.tmp
    # Every run (test.kind) that passes on GPU 0 passes on GPU 1, and none fails there.
    ok0=$(sed -n '/^== gdrcopy_sanity -d 0/,/^== /s/^ok \([^ ]*\).*/\1/p' "$OUT/sanity.log" | sort)
    ok1=$(sed -n '/^== gdrcopy_sanity -d 1/,$s/^ok \([^ ]*\).*/\1/p' "$OUT/sanity.log" | sort)
    bad1=$(sed -n '/^== gdrcopy_sanity -d 1/,$s/^not ok \([^ :]*\).*/\1/p' "$OUT/sanity.log")
    miss=$(comm -23 <(printf '%s\n' "$ok0") <(printf '%s\n' "$ok1") | tr '\n' ' ')
    n1=$(printf '%s\n' "$ok1" | grep -c .)
    if [ "$n1" -gt 0 ] && [ -z "$miss" ] && [ -z "$bad1" ]; then
        say "ok multigpu_gpu/sanity_d1_passes_what_d0_passes ($n1 runs on every kind)"
    else
        say "not ok multigpu_gpu/sanity_d1_passes_what_d0_passes: $n1 ok on GPU 1; missing: ${miss:-none}; failed: $(echo ${bad1:-none})"
    fi

    # copybw at 1 MiB and copylat at 8 B and 4 KiB, GPU 1 against GPU 0 (vramio_alloc memory).
    : > "$OUT/copy.log"
    for d in 0 1; do
        timeout "$(tmo 60)" build/bin/gdrcopy_copybw -d $d -s 1M -w 2000 -r 50 --json "$OUT/bw_d$d.json" \
            >> "$OUT/copy.log" 2>&1 || say "not ok multigpu_gpu/copybw_d$d: exit $?"
        timeout "$(tmo 90)" build/bin/gdrcopy_copylat -d $d -s 4K -w 2000 -r 50 --budget 0.2 \
            --json "$OUT/lat_d$d.json" >> "$OUT/copy.log" 2>&1 || say "not ok multigpu_gpu/copylat_d$d: exit $?"
    done
    # Within noise: 15% either way (single runs on a shared host), or 10 ns for latencies.
    timeout 30 "$PY" - "$OUT" <<'EOF' 2>&1 | tee -a "$S"
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except Exception as e:
        print("not ok multigpu_gpu/figures_%s: %s" % (name, e)); return None
def near(name, a, b, unit, floor=0.0):
    # floor: an absolute slack (a timer tick) for figures of a few nanoseconds
    ok = a > 0 and b > 0 and abs(b - a) <= max(0.15 * a, floor)
    print("%s multigpu_gpu/%s_d1_within_15pct_of_d0%s" % ("ok" if ok else "not ok", name,
          "" if ok else ": %.3g vs %.3g %s" % (b, a, unit)))
    print("# %s: GPU 0 %.3g, GPU 1 %.3g %s" % (name, a, b, unit))
bw = [load("bw_d%d.json" % d) for d in (0, 1)]
if all(bw):
    for key in ("write_vramio", "read_vramio"):
        near("copybw_1MiB_" + key, bw[0]["results"][-1][key], bw[1]["results"][-1][key], "MiB/s")
lat = [load("lat_d%d.json" % d) for d in (0, 1)]
if all(lat):
    for way, size in (("write", 8), ("write", 4096), ("read", 8)):
        v = [next((r["vramio"]["p50"] for r in l[way] if r["size"] == size), 0) for l in lat]
        near("copylat_%s_%dB_p50" % (way, size), v[0], v[1], "us", 0.01)
EOF
    rm -f "$OUT"/bw_d?.json "$OUT"/lat_d?.json
fi
[ "$part" = tools ] && { say "== multigpu on GPU ($part): $(grep -c '^ok ' "$S") ok, $(grep -c '^not ok ' "$S") not ok, $(grep -c '^skip ' "$S") skip"; exit 0; }

# ---- pins: one gdr_t over both GPUs, contexts, vramio_alloc(1), fork ------------------
if [ "$part" = all ] || [ "$part" = pins ]; then
    : > "$OUT/pins.log"
    for mode in both cross alloc fork; do
        echo "== multigpu_client $mode real" >> "$OUT/pins.log"
        VRAMIO_ENABLE_VULKAN=1 GDRCOPY_ENABLE_LOGGING=1 GDRCOPY_LOG_LEVEL=1 \
            timeout "$(tmo 120)" build/gpu/multigpu_client $mode real >> "$OUT/pins.log" 2>&1
        rc=$?
        [ $rc -eq 0 ] || say "not ok multigpu_gpu/client_$mode/exit: status $rc"
    done
    grep -E '^(ok|not ok|skip) ' "$OUT/pins.log" | sed 's#^\(ok\|not ok\|skip\) #\1 multigpu_gpu/#' | tee -a "$S"
    # Each GPU's imports went to the Vulkan device with that GPU's UUID (nvidia-smi's).
    for d in 0 1; do
        want=$(timeout 30 nvidia-smi -i $d --query-gpu=uuid --format=csv,noheader | sed 's/^GPU-//' | tr 'A-F' 'a-f')
        got=$(sed -n "s/.*vulkan: CUDA device $d is Vulkan physical device .*UUID \([0-9a-f-]*\).*/\1/p" "$OUT/pins.log" | sort -u)
        imports=$(grep -c "vulkan: imported .*(GPU $d)" "$OUT/pins.log")
        if [ -n "$want" ] && [ "$got" = "$want" ] && [ "$imports" -gt 0 ]; then
            say "ok multigpu_gpu/gpu${d}_served_by_its_uuids_vulkan_device ($imports imports)"
        else
            say "not ok multigpu_gpu/gpu${d}_served_by_its_uuids_vulkan_device: nvidia-smi '$want', log '$(echo $got)', $imports imports"
        fi
    done
    grep -m4 'vulkan: CUDA device' "$OUT/pins.log" | cut -c1-200 | tee -a "$S"
fi

# ---- nccl: NCCL's GDRCopy path through this library -------------------------------------
if [ "$part" = all ] || [ "$part" = nccl ]; then
    if ! timeout 60 "$PY" -c 'import torch, torch.distributed as d; assert d.is_nccl_available() and torch.cuda.device_count() >= 2' 2>/dev/null; then
        say "skip multigpu_gpu/nccl: PyTorch with NCCL and two visible GPUs not found ($PY)"
    else
        nccl_run() { # label gdrcopy(0|1): both ranks, each bounded; their output into one log
            local label=$1 gdr=$2 log=$OUT/nccl_$1.log port=$((29500 + RANDOM % 1000)) r pids=()
            : > "$log"
            for r in 0 1; do
                env RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port LABEL="nccl_$label" \
                    NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo \
                    NCCL_GDRCOPY_ENABLE=$gdr NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET \
                    VRAMIO_ENABLE_VULKAN=1 GDRCOPY_ENABLE_LOGGING=1 GDRCOPY_LOG_LEVEL=1 \
                    LD_LIBRARY_PATH="$PWD/build/lib:${LD_LIBRARY_PATH:-}" TIMEOUT_S=120 \
                    timeout -k 10 "$(tmo 240)" "$PY" tests/gpu/nccl_gdrcopy.py > "$log.$r" 2>&1 &
                pids+=($!)
            done
            for r in 0 1; do
                wait "${pids[$r]}"; echo "exit $?" >> "$log.$r"
                { echo "== rank $r"; cat "$log.$r"; } >> "$log"; rm -f "$log.$r"
            done
            grep -E '^(ok|not ok|skip) |^# nccl' "$log" | cut -c1-300 | tee -a "$S"
            grep -q '^exit 0$' "$log" && [ "$(grep -c '^exit 0$' "$log")" -eq 2 ] ||
                say "not ok multigpu_gpu/nccl_$label/exit: $(grep '^exit ' "$log" | tr '\n' ' ')"
        }
        nccl_run gdrcopy 1
        nccl_run plain 0
        # Did NCCL engage GDRCopy, and through this library (its pins are our vulkan imports)?
        l=$OUT/nccl_gdrcopy.log
        gdc=$(grep -ciE 'gdrcopy|gdr_copy|GDCopy' "$l")
        ours=$(grep -c 'vulkan: imported' "$l")
        opened=$(grep -c 'gdr_open: backend vulkan' "$l")
        if [ "$ours" -gt 0 ] && [ "$opened" -gt 0 ]; then
            say "ok multigpu_gpu/nccl_gdrcopy_through_vramio ($opened gdr_open, $ours imports, $gdc NCCL lines about GDRCopy)"
        else
            say "not ok multigpu_gpu/nccl_gdrcopy_through_vramio: $opened gdr_open, $ours imports; NCCL says:"
            grep -iE 'gdr|GDCopy' "$l" | sort | uniq -c | sort -rn | head -8 | cut -c1-200 | tee -a "$S"
        fi
        [ "$(grep -ci 'gdrcopy\|gdr_open' "$OUT/nccl_plain.log")" -eq 0 ] &&
            say "ok multigpu_gpu/nccl_plain_does_not_load_gdrcopy" ||
            say "# nccl_plain: $(grep -ci 'gdrcopy\|gdr_open' "$OUT/nccl_plain.log") GDRCopy lines with NCCL_GDRCOPY_ENABLE=0"
        grep -m3 -iE 'gdrcopy|GDCopy' "$l" | cut -c1-200 | tee -a "$S"
        echo "# small-message latency, with GDRCopy against without:" | tee -a "$S"
        grep -h '^# nccl_.* latency' "$OUT/nccl_gdrcopy.log" "$OUT/nccl_plain.log" | tee -a "$S"
    fi
fi
say "== multigpu on GPU ($part): $(grep -c '^ok ' "$S") ok, $(grep -c '^not ok ' "$S") not ok, $(grep -c '^skip ' "$S") skip"

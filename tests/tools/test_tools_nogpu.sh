#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_tools_nogpu.sh - on a machine where nothing can be mapped (CI, this developer machine),
# gdrcopy_info says plainly that no GPU is present and why each backend is unusable, and
# gdrcopy_sanity and the benchmarks exit with a clear message instead of crashing. On a machine
# where a backend works these checks do not apply and are skipped.
set -u
BIN=${BUILD:-build}/bin

. "$(dirname "$0")/../lib/t.sh"

info=$("$BIN/gdrcopy_info" 2>&1); rc=$?
[ $rc -eq 0 ] && t_ok "gdrcopy_info/exit-status" || t_fail "gdrcopy_info/exit-status" "exit $rc"

# Every backend has a line: "usable" or "unusable: <reason>" with a non-empty reason.
for b in gdrdrv dmabuf vulkan; do
    line=$(grep -E "^  $b +" <<<"$info")
    if [ -z "$line" ]; then t_fail "gdrcopy_info/backend-$b" "no line for $b"
    elif grep -qE "unusable: .{8,}" <<<"$line" || grep -qE "^  $b +usable" <<<"$line"; then t_ok "gdrcopy_info/backend-$b"
    else t_fail "gdrcopy_info/backend-$b" "no reason given: $line"; fi
done
grep -q "^  copy kernel: " <<<"$info" && t_ok "gdrcopy_info/copy-kernel" || t_fail "gdrcopy_info/copy-kernel" "no copy kernel line"
grep -q "^What to do next" <<<"$info" && t_ok "gdrcopy_info/next-steps" || t_fail "gdrcopy_info/next-steps" "no advice section"

usable=$(grep -cE "^  (gdrdrv|dmabuf|vulkan) +usable" <<<"$info")
nogpu=0
grep -q "No GPU is present" <<<"$info" && nogpu=1
if [ -e /dev/nvidia0 ] || [ -d /proc/driver/nvidia ]; then
    t_skip "gdrcopy_info/no-gpu" "this machine has an NVIDIA GPU"
elif [ $nogpu -eq 1 ]; then
    t_ok "gdrcopy_info/no-gpu"
else
    t_fail "gdrcopy_info/no-gpu" "no NVIDIA GPU here, but gdrcopy_info does not say 'No GPU is present'"
fi

# JSON output parses and carries the same verdicts.
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
if "$BIN/gdrcopy_info" --json "$tmp" >/dev/null 2>&1 && command -v python3 >/dev/null; then
    if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["backends"])==3; assert all("reason" in b for b in d["backends"]); assert d["usable_backends"]==int(sys.argv[2])' "$tmp" "$usable"; then
        t_ok "gdrcopy_info/json"
    else t_fail "gdrcopy_info/json" "invalid or inconsistent JSON"; fi
else
    t_skip "gdrcopy_info/json" "python3 missing or --json failed"
fi
# '--json -' (documented: standard output) gives a parser the JSON alone, as in
# 'gdrcopy_info --json - | jq': the report must not be mixed into it.
if command -v python3 >/dev/null; then
    out=$("$BIN/gdrcopy_info" --json - 2>/dev/null | python3 -c 'import json,sys; json.load(sys.stdin)' 2>&1 | tail -n 1)
    [ -z "$out" ] && t_ok "gdrcopy_info/json_stdout" ||
        t_fail "gdrcopy_info/json_stdout" "standard output of --json - is no JSON: $out"
fi

# Against the stand-in drivers (tests/fake/: the dma-buf one lacks cuDeviceGetName and
# cuDeviceGetPCIBusId, as a driver may lack any function): every tool ends by itself, with its
# result or a one-line error, and never dies of a signal (a NULL function called).
FAKES=${BUILD:-build}/tests/fake
for fake in cuda-dmabuf cuda-vmm; do
    [ -d "$FAKES/$fake" ] || { t_skip "tools/stand_in_$fake" "$FAKES/$fake is not built"; continue; }
    for t in gdrcopy_info gdrcopy_sanity gdrcopy_copylat gdrcopy_copybw gdrcopy_apiperf gdrcopy_pplat; do
        out=$(LD_LIBRARY_PATH="$FAKES/$fake:$FAKES/vulkan" timeout 120 "$BIN/$t" 2>&1); rc=$?
        if [ $rc -lt 124 ] || [ $rc -eq 77 ]; then
            t_ok "$t/stand_in_$fake/ends"
        else
            t_fail "$t/stand_in_$fake/ends" "exit $rc: $(tail -n 2 <<<"$out" | head -c 300)"
        fi
    done
done

if [ "$usable" -gt 0 ]; then
    t_skip "gdrcopy_sanity/no-backend" "a backend is usable here"
    t_skip "tools/no-backend-benchmarks" "a backend is usable here"
    t_done
fi
out=$("$BIN/gdrcopy_sanity" 2>&1); rc=$?
if [ $rc -eq 2 ] && grep -q "cannot run: no backend can map GPU memory here" <<<"$out" \
   && grep -qE "^  vulkan: .+" <<<"$out" && grep -qE "^  gdrdrv: .+" <<<"$out"; then
    t_ok "gdrcopy_sanity/no-backend"
else
    t_fail "gdrcopy_sanity/no-backend" "exit $rc, output: $(head -c 300 <<<"$out")"
fi
# The benchmarks need GPU memory: a one-line error, exit 1 (pplat: 77 when built without nvcc).
for t in gdrcopy_copylat gdrcopy_copybw gdrcopy_apiperf gdrcopy_pplat; do
    out=$("$BIN/$t" 2>&1); rc=$?
    if { [ $rc -eq 1 ] && grep -q "^$t: ERROR: " <<<"$out"; } || { [ $t = gdrcopy_pplat ] && [ $rc -eq 77 ]; }; then
        t_ok "$t/no-gpu-error"
    else
        t_fail "$t/no-gpu-error" "exit $rc, output: $(head -c 300 <<<"$out")"
    fi
done
t_done

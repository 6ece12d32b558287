#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_alloc_probe_on_gpu.sh - what the driver and the frameworks' allocators give, on
# a GPU machine, from the repository root, in about 4 minutes: the driver facts of
# tests/gpu/bridge/alloc_probe.cu (stream-ordered pools, VMM memory without a handle type,
# cudaMalloc memory's retain code, the largest import, placed and moved Vulkan mappings; the
# vulkan backend forced) and of chunk_probe.cu (what chunked large allocations wait for, what
# the POSIX-fd type costs), the allocators of issue 39 plainly and under vramio-run
# (alloc_bridge.cu, their facts compared; a CUDA graph's memory node among them), then each
# framework allocator of tests/gpu/bridge/alloc_frameworks.py plainly and under vramio-run in
# alternating rounds: a buffer of its own pinned and written, and its workload's result, step
# time and memory held to the plain run's.
# Logs go to $OUT; "# probe" facts and result lines to stdout and $OUT/alloc_probe.log.
# BUDGET (seconds, default 420) bounds the whole run.
set -u
. "$(dirname "$0")/gpu_script.sh"
gpu_script_start /tmp/vramio-alloc-probe 420 alloc_probe.log
[ -f .gpu/env.sh ] && . .gpu/env.sh
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
G=build/gpu/bridge
PY=${PYTHON:-python3}
export PYTHONPATH=$PWD/python VRAMIO_LIB=$PWD/build/lib/libgdrapi.so.2

if ! timeout $(tmo 200) make -j16 lib tools bridge >"$OUT/alloc_build.log" 2>&1; then
    say "not ok alloc_probe/build: make failed"; tail -20 "$OUT/alloc_build.log"; exit 1
fi
mkdir -p "$G"
for prog in alloc_probe chunk_probe alloc_bridge; do
    timeout $(tmo 120) "$NVCC" -O2 -Iinclude -Itests/lib -Itests/gpu/bridge -o "$G/$prog" \
        tests/gpu/bridge/$prog.cu tests/lib/t.c -Lbuild/lib -lgdrapi -lcuda -ldl \
        -Xlinker -rpath -Xlinker "$PWD/build/lib" >>"$OUT/alloc_build.log" 2>&1 ||
        { say "not ok alloc_probe/build: nvcc failed for $prog"; tail -20 "$OUT/alloc_build.log"; exit 1; }
done

echo "== driver facts (vulkan backend forced, no vramio-run)" | tee -a "$S"
GDRCOPY_BACKEND=vulkan timeout $(tmo 90) "$G/alloc_probe" 2>&1 | tee -a "$S"
echo "exit ${PIPESTATUS[0]}" | tee -a "$S"
echo "== chunked large allocations: the facts they wait for, and the POSIX-fd type's cost" | tee -a "$S"
timeout $(tmo 90) "$G/chunk_probe" 2>&1 | tee -a "$S"
echo "exit ${PIPESTATUS[0]}" | tee -a "$S"

# The allocators of issue 39 plainly and under vramio-run (tests/gpu/bridge/alloc_bridge.cu):
# plainly each unpinnable memory is refused with its reason, under the bridge it pins; the
# facts the bridge must keep ("# fact" lines) must be the same in both runs.
for how in plain bridged; do
    echo "== alloc_bridge $how" | tee -a "$S"
    if [ $how = plain ]; then
        GDRCOPY_BACKEND=vulkan timeout $(tmo 60) "$G/alloc_bridge" plain
    else
        timeout $(tmo 60) build/bin/vramio-run --log "$G/alloc_bridge" bridged
    fi >"$OUT/alloc_bridge_$how.log" 2>&1
    echo "exit $?" >>"$OUT/alloc_bridge_$how.log"
    grep -E '^(ok|not ok|skip|# fact|# time|exit)|stream-ordered|cuMemRetainAllocationHandle of cuMemAlloc' \
        "$OUT/alloc_bridge_$how.log" | sed -E "s/^(ok|not ok|skip) /\1 alloc_bridge-$how\//" | tee -a "$S"
done
f_plain=$(grep '^# fact' "$OUT/alloc_bridge_plain.log" | grep -v reserved_after_trim)
f_bridged=$(grep '^# fact' "$OUT/alloc_bridge_bridged.log" | grep -v reserved_after_trim)
if [ -n "$f_plain" ] && [ "$f_plain" = "$f_bridged" ]; then
    say "ok alloc_bridge/facts_equal_plain_and_bridged"
else
    say "not ok alloc_bridge/facts_equal_plain_and_bridged: $(diff <(echo "$f_plain") <(echo "$f_bridged") | tr '\n' ' ')"
fi

# Each framework allocator plainly and under vramio-run, FW_ROUNDS (default 3) rounds in turn:
# one of its buffers pinned and written by the CPU (or the refusal's reason), and its workload's
# result, median step time and GPU memory in use at its end. Held to the plain run: the same
# result, the step time's median within the plain rounds' own spread (at least 5%: see
# gpu_script.sh's spread), the memory in use within 5%
# + 64 MiB (the bridge's slabs round up), and the device's memory after each exit back where it
# was before the pair (nothing left behind by either run).
FW_ROUNDS=${FW_ROUNDS:-3}
gpu_mem_used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1; }
work() { sed -n "s|^# work $1/$2: ||p" "$3"; }
for mode in torch torch_expandable torch_async cupy cupy_async jax jax_small jax_async; do
    if [ $(( start + BUDGET - $(date +%s) )) -lt 45 ]; then
        say "skip $mode/all: the budget is spent (run with a larger BUDGET)"; continue
    fi
    declare -A st=() res=() mem=()
    before=$(gpu_mem_used)
    for round in $(seq "$FW_ROUNDS"); do
        for how in plain bridged; do
            log=$OUT/fw_${mode}_${how}_$round.log
            if [ $how = plain ]; then
                GDRCOPY_BACKEND=vulkan timeout $(tmo 90) "$PY" tests/gpu/bridge/alloc_frameworks.py "$mode"
            else
                timeout $(tmo 90) build/bin/vramio-run "$PY" tests/gpu/bridge/alloc_frameworks.py "$mode"
            fi >"$log" 2>&1
            echo "exit $?" >>"$log"
            if [ "$round" = 1 ]; then
                echo "== $mode $how" | tee -a "$S"
                grep -E '^(ok|not ok|skip|# probe|# work|exit)' "$log" |
                    sed "s/^\(ok\|not ok\|skip\) $mode/\1 $mode-$how/" | tee -a "$S"
            fi
            st[$how]+="$(work "$mode" steptime_ms "$log") "
            res[$how,$round]=$(work "$mode" result "$log")
            mem[$how]=$(work "$mode" mem_used_mib "$log")
            after=$(gpu_mem_used)
            [ -z "$before" ] || [ "$after" = "$before" ] ||
                say "not ok $mode/$how/round$round/memory_back_after_exit: ${before} MiB in use before, ${after} MiB after"
        done
    done
    if [ -z "${res[plain,1]}" ]; then
        say "skip $mode/work: the plain run gave no result (its log: fw_${mode}_plain_1.log)"; continue
    fi
    same=1
    for round in $(seq "$FW_ROUNDS"); do
        [ "${res[bridged,$round]}" = "${res[plain,1]}" ] && [ "${res[plain,$round]}" = "${res[plain,1]}" ] || same=0
    done
    [ $same = 1 ] && say "ok $mode/result_equal_plain (${res[plain,1]})" ||
        say "not ok $mode/result_equal_plain: plain ${res[plain,1]}, under vramio-run ${res[bridged,1]:-none}"
    p=$(median ${st[plain]}); b=$(median ${st[bridged]}); sp=$(spread ${st[plain]})
    say "# $mode step time: plain ${p:-?} ms, under vramio-run ${b:-?} ms (rounds: ${st[plain]}/ ${st[bridged]})"
    within "$p" "$b" "$sp" && say "ok $mode/steptime_within_plain_spread (x$sp)" ||
        say "not ok $mode/steptime_within_plain_spread: ${p:-?} vs ${b:-?} ms, beyond x$sp"
    awk -v p="${mem[plain]:-0}" -v b="${mem[bridged]:-0}" 'BEGIN { exit !(p > 0 && b > 0 && b <= p * 1.05 + 64) }' &&
        say "ok $mode/memory_in_use_as_plain (${mem[plain]} / ${mem[bridged]} MiB)" ||
        say "not ok $mode/memory_in_use_as_plain: ${mem[plain]:-?} MiB plainly, ${mem[bridged]:-?} under vramio-run"
    unset st res mem
done
echo "# alloc probe took $(( $(date +%s) - start )) s"

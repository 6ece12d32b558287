#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_alloc_probe_on_gpu.sh - what the driver and the frameworks' allocators give, on
# a GPU machine, from the repository root, in about 4 minutes: the driver facts of
# tests/gpu/bridge/alloc_probe.cu (stream-ordered pools, VMM memory without a handle type,
# cudaMalloc memory's retain code, the largest import, placed and moved Vulkan mappings; the
# vulkan backend forced) and of chunk_probe.cu (what chunked large allocations wait for, what
# the POSIX-fd type costs), the allocators of issue 39 plainly and under vramio-run
# (alloc_bridge.cu, their facts compared), then each framework allocator of
# tests/gpu/bridge/alloc_frameworks.py plainly and under vramio-run.
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

for mode in torch torch_expandable torch_async cupy cupy_async jax jax_async; do
    for how in plain bridged; do
        echo "== $mode $how" | tee -a "$S"
        if [ $how = plain ]; then
            GDRCOPY_BACKEND=vulkan timeout $(tmo 60) "$PY" tests/gpu/bridge/alloc_frameworks.py "$mode"
        else
            timeout $(tmo 60) build/bin/vramio-run "$PY" tests/gpu/bridge/alloc_frameworks.py "$mode"
        fi 2>&1 | grep -vE '^\s*$' | tail -n 12 | sed "s/^\(ok\|not ok\|skip\) $mode/\1 $mode-$how/" | tee -a "$S"
    done
done
echo "# alloc probe took $(( $(date +%s) - start )) s"

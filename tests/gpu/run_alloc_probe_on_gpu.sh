#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_alloc_probe_on_gpu.sh - what the driver and the frameworks' allocators give, on
# a GPU machine, from the repository root, in about 3 minutes: the driver facts of
# tests/gpu/bridge/alloc_probe.cu (stream-ordered pools, VMM memory without a handle type,
# the largest import, placed and moved Vulkan mappings; the vulkan backend forced), then each
# framework allocator of tests/gpu/bridge/alloc_frameworks.py plainly and under vramio-run.
# Logs go to $OUT; "# probe" facts and result lines to stdout and $OUT/alloc_probe.log.
# BUDGET (seconds, default 300) bounds the whole run.
set -u
. "$(dirname "$0")/gpu_script.sh"
gpu_script_start /tmp/vramio-alloc-probe 300 alloc_probe.log
[ -f .gpu/env.sh ] && . .gpu/env.sh
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
G=build/gpu/bridge
PY=${PYTHON:-python3}
export PYTHONPATH=$PWD/python VRAMIO_LIB=$PWD/build/lib/libgdrapi.so.2

if ! timeout $(tmo 200) make -j16 lib tools bridge >"$OUT/alloc_build.log" 2>&1; then
    say "not ok alloc_probe/build: make failed"; tail -20 "$OUT/alloc_build.log"; exit 1
fi
mkdir -p "$G"
timeout $(tmo 120) "$NVCC" -O2 -Iinclude -Itests/lib -Itests/gpu/bridge -o "$G/alloc_probe" \
    tests/gpu/bridge/alloc_probe.cu tests/lib/t.c -Lbuild/lib -lgdrapi -lcuda -ldl \
    -Xlinker -rpath -Xlinker "$PWD/build/lib" >>"$OUT/alloc_build.log" 2>&1 ||
    { say "not ok alloc_probe/build: nvcc failed"; tail -20 "$OUT/alloc_build.log"; exit 1; }

echo "== driver facts (vulkan backend forced, no vramio-run)" | tee -a "$S"
GDRCOPY_BACKEND=vulkan timeout $(tmo 90) "$G/alloc_probe" 2>&1 | tee -a "$S"
echo "exit ${PIPESTATUS[0]}" | tee -a "$S"

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

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run_large_on_gpu.sh - a pin costs what it covers under vramio-run (issue 39), on a
# GPU machine, from the repository root, in about 2 minutes: tests/gpu/bridge/large_bridge.cu
# under vramio-run with the pool's chunks (default) and without (VRAMIO_POOL_CHUNK_MB=0: one
# allocation, as before), then PyTorch's caching allocator with one tensor of most of the GPU
# under vramio-run, 4 MiB at its end pinned, written by the CPU and read by PyTorch, plainly
# and chunked (the pin's time side by side). Logs go to $OUT; result lines, "# time" and
# "# fact" lines to stdout and $OUT/large.log. BUDGET (seconds, default 300) bounds the run.
set -u
. "$(dirname "$0")/gpu_script.sh"
gpu_script_start /tmp/vramio-large 300 large.log
[ -f .gpu/env.sh ] && . .gpu/env.sh
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
G=build/gpu/bridge
PY=${PYTHON:-python3}
export PYTHONPATH=$PWD/python VRAMIO_LIB=$PWD/build/lib/libgdrapi.so.2

if ! timeout $(tmo 200) make -j16 lib bridge >"$OUT/large_build.log" 2>&1; then
    say "not ok large/build: make failed"; tail -20 "$OUT/large_build.log"; exit 1
fi
mkdir -p "$G"
timeout $(tmo 120) "$NVCC" -O2 -Iinclude -Itests/lib -Itests/gpu/bridge -o "$G/large_bridge" \
    tests/gpu/bridge/large_bridge.cu tests/lib/t.c -Lbuild/lib -lgdrapi -lcuda -ldl \
    -Xlinker -rpath -Xlinker "$PWD/build/lib" >>"$OUT/large_build.log" 2>&1 ||
    { say "not ok large/build: nvcc failed"; tail -20 "$OUT/large_build.log"; exit 1; }

for how in chunked whole; do
    echo "== large_bridge $how" | tee -a "$S"
    if [ $how = chunked ]; then env=(); else env=(VRAMIO_POOL_CHUNK_MB=0); fi
    env "${env[@]}" timeout $(tmo 100) build/bin/vramio-run "$G/large_bridge" $how \
        >"$OUT/large_$how.log" 2>&1
    echo "exit $?" >>"$OUT/large_$how.log"
    grep -E '^(ok|not ok|skip|# fact|# time|# pin|exit)' "$OUT/large_$how.log" |
        sed -E "s/^(ok|not ok|skip) large\//\1 large-$how\//" | tee -a "$S"
done

# PyTorch: one tensor of most of the GPU from its caching allocator (cudaMalloc, the bridge's
# pool under vramio-run), its last 4 MiB pinned through python/vramio.
cat >"$OUT/torch_large.py" <<'PYEOF'
import sys, time
import torch
import vramio
N = 4 << 20
free, total = torch.cuda.mem_get_info()
size = min(60 << 30, free // 2 // (1 << 30) * (1 << 30))
t = torch.zeros(size, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
print("# fact torch_large/size: %d" % size)
t0 = time.monotonic()
try:
    pin = vramio.pin(t.data_ptr() + size - N, N)
except Exception as e:  # noqa: BLE001 - the reason is the result
    print("# time torch_large/pin_us: refused")
    if sys.argv[1] == "chunked":
        print("not ok torch_large/tail_pins: %s" % e)
    else:
        print("ok torch_large/tail_refused_as_before # %s" % e)
    sys.exit(0)
print("# time torch_large/pin_us: %.0f" % ((time.monotonic() - t0) * 1e6))
with pin:
    pin.copy_to(bytes([0x5A]) * 4096)
got = int(t[size - N].item())
print("ok torch_large/cpu_write_seen" if got == 0x5A else "not ok torch_large/cpu_write_seen: 0x%x" % got)
PYEOF
for how in chunked whole; do
    if [ $how = chunked ]; then env=(); else env=(VRAMIO_POOL_CHUNK_MB=0); fi
    echo "== torch_large $how" | tee -a "$S"
    env "${env[@]}" timeout $(tmo 100) build/bin/vramio-run "$PY" "$OUT/torch_large.py" $how \
        >"$OUT/torch_large_$how.log" 2>&1
    echo "exit $?" >>"$OUT/torch_large_$how.log"
    grep -E '^(ok|not ok|skip|# fact|# time|exit)|Error' "$OUT/torch_large_$how.log" |
        sed -E "s/^(ok|not ok|skip) torch_large\//\1 torch_large-$how\//" | tee -a "$S"
done
n_ok=$(grep -c '^ok ' "$S"); n_bad=$(grep -c '^not ok ' "$S")
say "== large: $n_ok ok, $n_bad not ok ($(( $(date +%s) - start )) s)"
[ "$n_bad" -eq 0 ]

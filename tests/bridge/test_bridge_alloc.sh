#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bridge/test_bridge_alloc.sh - every allocator of a CUDA program under vramio-run,
# without a GPU: alloc_client.c against the stand-in driver (tests/fake/fake_cuda_vmm.c and
# fake_cuda_pool.c) and Vulkan loader, one mode per process: cuMemFreeAsync of bridged blocks
# in stream order and during a capture; stream-ordered memory of the default pool and of the
# program's pools, made pinnable, and left to the driver where the driver does not allow it
# (each way the bridge's own check on first use finds out); VMM memory made without a
# POSIX-fd handle type; cuMemRetainAllocationHandle of a bridged block. The programs come from
# make (tests/bridge/bridge.mk).
set -u
. "$(dirname "$0")/../lib/t.sh"
B=${BUILD:-build}
dir=$B/tests/bridge
fakes=$B/tests/fake/cuda-vmm:$B/tests/fake/vulkan
run=$B/bin/vramio-run
t_make bridge_alloc/build bridge-progs || exit 1
# vramio-run's directory: one of this user's that no other can write to (t_run_dir).
t_run_dir bridge_alloc/run_dir || t_done
export VRAMIO_RUN_DIR=$T_RUN_DIR

client() { # name mode [VAR=VALUE...]: the client's result lines under vramio-run
    local name=$1 mode=$2 out rc
    shift 2
    out=$(env -u GDRCOPY_BACKEND -u VRAMIO_BRIDGE_LOG -u VRAMIO_ENABLE_VULKAN \
          LD_LIBRARY_PATH="$fakes" "$@" timeout 60 "$run" "$dir/alloc_client" "$mode" 2>&1)
    rc=$?
    t_relay "bridge_alloc/$name/exit" $rc "$out" "bridge_alloc/$name/"
}
client free_async free_async
client free_capture free_capture
client mempool mempool
client mempool_two_gpus mempool FAKE_CUDA_DEVICES=2 FAKE_VK_GPUS=2
# A driver that does not allow what the bridge's check on first use asks: the driver's own
# pool serves, untouched, and the program's pools are made as asked.
client no_pool_fd mempool_off FAKE_CUDA_POOL_FD=0
client no_pool_retain mempool_off FAKE_CUDA_POOL_RETAIN=0
client no_pool_mapping mempool_off FAKE_CUDA_POOL_MAPPING=0
client pool_mapping_shifted mempool_off FAKE_CUDA_POOL_MAPPING=shifted
# The bridge's pool and libgdrapi's check of the layout are made, the program's pool with the
# type added is refused: it is made as the program asked.
client own_pool_refused mempool_own_refused FAKE_CUDA_POOL_FD_MAX=2
client vmm vmm
client vmm_fd_refused vmm_refused FAKE_CUDA_VMM_FD_REFUSE=1
client retain retain
# Out of GPU memory: the driver's answer, and not a line on stderr where the plain program
# prints none (the pool's failed cuMemCreate is an answer the bridge handles, not an error).
client out_of_memory out_of_memory FAKE_CUDA_VRAM_BYTES=$((64 << 20))
client size_max size_max
# The same where the pool makes the request of 16 MiB chunks (the stand-in Vulkan pins across
# them): a chunk part-way finds no room, an answer that says nothing on stderr either
# (tests/unit/wb_alloc_chunks.c checks that the chunks made before it are undone).
client out_of_memory_in_a_chunk out_of_memory FAKE_CUDA_VRAM_BYTES=$((64 << 20)) \
    VRAMIO_POOL_CHUNK_MB=16
for chunk in "" 16; do
    err=$(env -u GDRCOPY_BACKEND -u VRAMIO_BRIDGE_LOG -u VRAMIO_ENABLE_VULKAN \
          -u GDRCOPY_ENABLE_LOGGING -u GDRCOPY_LOG_LEVEL LD_LIBRARY_PATH="$fakes" \
          FAKE_CUDA_VRAM_BYTES=$((64 << 20)) VRAMIO_POOL_CHUNK_MB=$chunk \
          timeout 60 "$run" "$dir/alloc_client" out_of_memory 2>&1 >/dev/null)
    name=bridge_alloc/out_of_memory/says_nothing
    [ -z "$chunk" ] || name=bridge_alloc/out_of_memory_in_a_chunk/says_nothing
    if [ -z "$err" ]; then
        t_ok "$name"
    else
        t_fail "$name" "stderr: $(printf '%s' "$err" | head -c 400)"
    fi
done
t_done

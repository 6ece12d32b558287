#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/test_soak_standins.sh - the GPU soak (tests/gpu/soak/) without a GPU: CI builds it
# (no CUDA toolkit needed) and runs it briefly under vramio-run against the stand-in CUDA
# driver and Vulkan loader of tests/fake/ (their memory is host memory: what the soak checks
# holds there too), then its limits part with the stand-ins made small (GPU memory, BAR1).
# The soak on a GPU: tests/gpu/run_soak_on_gpu.sh.
set -u
. "$(dirname "$0")/../lib/t.sh"
B=${BUILD:-build}
run=$B/bin/vramio-run
fake=$B/tests/fake/cuda-vmm:$B/tests/fake/vulkan
t_make soak/build "$B/gpu/soak" fake-drivers bridge || exit 1
# vramio-run's directory: one of this user's that no other can write to, wherever the tree is.
t_run_dir soak_standins/run_dir || t_done
export VRAMIO_RUN_DIR=$T_RUN_DIR/run

soak() { # name VAR=value... -- args: the soak's result lines under soak_standins/
    local name=$1 out
    shift
    out=$(env -u GDRCOPY_BACKEND -u VRAMIO_ENABLE_VULKAN -u SOAK_SECONDS LD_LIBRARY_PATH="$fake" \
          "$@" timeout --kill-after=10 240 "$run" "$B/gpu/soak" "${args[@]}" 2>&1)
    t_relay "soak_standins/$name/exit" $? "$out" "soak_standins/"
    printf '%s\n' "$out" | grep '^# ' | head -n 6
}
args=(--seconds 10 --procs 2 --threads 2 --no-limits)
soak load
args=(--limits)
soak limits FAKE_CUDA_VRAM_BYTES=$((64 << 20)) SOAK_VRAM_CHUNK=$((8 << 20)) \
    FAKE_VK_BAR_BYTES=$((16 << 20)) SOAK_BAR1_BYTES=$((16 << 20))
t_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/limits/test_limits.sh - the library at the machine's limits, without a GPU: the
# process's descriptor limit (the dma-buf backend holds one fd per pin; the vulkan backend needs
# one for each export), BAR1 exhausted and GPU memory exhausted, each against the stand-in
# drivers of tests/fake/ made that small (FAKE_CUDA_BAR_BYTES, FAKE_VK_BAR_BYTES,
# FAKE_CUDA_VRAM_BYTES): a clear error, the next call served once something is given back,
# nothing left behind (limits_client.c says what each mode checks); again against the
# ASan+UBSan library when 'make check' has built it. tests/gpu/soak/ reaches the same limits
# on a GPU where it can.
set -u
. "$(dirname "$0")/../lib/t.sh"
B=${BUILD:-build}
t_make limits/build limits-progs || exit 1
dmabuf=$B/tests/fake/cuda-dmabuf
vmm=$B/tests/fake/cuda-vmm:$B/tests/fake/vulkan

run_mode() { # label build mode library-path VAR=value...
    local label=$1 prog=$2/tests/limits/limits_client mode=$3 llp=$4 out
    shift 4
    out=$(env -u GDRCOPY_BACKEND -u GDRCOPY_USE_DMABUF_MMAP -u VRAMIO_ENABLE_VULKAN \
          -u GDRCOPY_ENABLE_LOGGING -u LD_PRELOAD LD_LIBRARY_PATH="$llp" \
          ASAN_OPTIONS=verify_asan_link_order=0 "$@" timeout --kill-after=10 60 "$prog" "$mode" 2>&1)
    t_relay "limits/$label/$mode/exit" $? "$out" "limits/$label/"
}

run_all() { # label build
    local label=$1 b=$2
    run_mode "$label" "$b" fd_dmabuf "$dmabuf" LD_PRELOAD="$dmabuf/libfake_mmap.so"
    run_mode "$label" "$b" bar_dmabuf "$dmabuf" LD_PRELOAD="$dmabuf/libfake_mmap.so" \
        FAKE_CUDA_BAR_BYTES=$((3 << 20))
    run_mode "$label" "$b" fd_vulkan "$vmm" GDRCOPY_BACKEND=vulkan
    run_mode "$label" "$b" bar_vulkan "$vmm" GDRCOPY_BACKEND=vulkan FAKE_VK_BAR_BYTES=$((6 << 20))
    run_mode "$label" "$b" vram_vulkan "$vmm" GDRCOPY_BACKEND=vulkan \
        FAKE_CUDA_VRAM_BYTES=$((16 << 20))
}

run_all plain "$B"
if [ -e "$B/asan/lib/libgdrapi.so" ] &&
   t_make limits/asan/build BUILD="$B/asan" SANITIZE=asan "$B/asan/tests/limits/limits_client"; then
    run_all asan "$B/asan"
fi
t_done

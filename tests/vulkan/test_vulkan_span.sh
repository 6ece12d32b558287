#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/vulkan/test_vulkan_span.sh - pins across several CUDA allocations side by side (the
# vulkan backend's spans op and spanning pins, docs/large-allocations.md), without a GPU:
# wb_span_client.c against the stand-in CUDA driver and Vulkan loader of tests/fake/, one mode
# per process, the backend chosen by name. The stand-in Vulkan offers placed maps unless
# FAKE_VK_NO_PLACED=1; FAKE_VK_PLACED_BROKEN=1 makes them map other memory (the backend's own
# check must catch it). One result line per check.
set -u
. "$(dirname "$0")/../lib/t.sh"
B=${BUILD:-build}
t_make vulkan/span/build vulkan-span-progs || exit 1
client=$B/tests/vulkan/wb_span_client
fake=$B/tests/fake/cuda-vmm:$B/tests/fake/vulkan

# go MODE [VAR=VALUE...]: the client's result lines in a clean environment (under LABEL/ when
# LABEL is set).
go() {
    local mode=$1 out rc
    shift
    out=$(env -u GDRCOPY_BACKEND -u VRAMIO_ENABLE_VULKAN -u GDRCOPY_USE_DMABUF_MMAP \
          -u GDRCOPY_ENABLE_LOGGING -u FAKE_VK_NO_PLACED -u FAKE_VK_PLACED_BROKEN \
          -u FAKE_VK_BAR_BYTES -u FAKE_VK_PLACED_FAIL_AT -u FAKE_VK_BAR_MB \
          LD_LIBRARY_PATH="$fake" GDRCOPY_BACKEND=vulkan "$@" timeout 60 "$client" "$mode" 2>&1)
    rc=$?
    t_relay "vulkan/span/${LABEL:+$LABEL/}$mode/exit" $rc "$out" "${LABEL:+$LABEL/}"
}

run_modes() {
go spans
go spans_none FAKE_VK_NO_PLACED=1
go spans_broken FAKE_VK_PLACED_BROKEN=1
go span3
go inside
go mixed
go neighbours FAKE_CUDA_DEVICES=2 FAKE_VK_GPUS=2
go no_placed FAKE_VK_NO_PLACED=1
go free_while_pinned
go one_moved
go threads
go fork
# BAR1 holds the check's two 2 MiB imports, and two of the run's three (2, 4, 2 MiB) but
# not the third; the third placed map of the pin fails (the check's are the first two).
go oom FAKE_VK_BAR_BYTES=$((6 << 20))
go place_fail FAKE_VK_PLACED_FAIL_AT=5
go bar_precheck FAKE_VK_BAR_MB=32768
go too_many
}

LABEL= run_modes
# The same client against the ASan+UBSan library ('make check' has built it).
if [ -e "$B/asan/lib/libgdrapi.so" ] && t_make vulkan/span/asan/build BUILD="$B/asan" \
       SANITIZE=asan "$B/asan/tests/vulkan/wb_span_client"; then
    client=$B/asan/tests/vulkan/wb_span_client LABEL=asan run_modes
fi
t_done

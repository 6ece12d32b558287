#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/vulkan/test_vulkan_span.sh - pins across several CUDA allocations side by side (the
# vulkan backend's spans op and spanning pins, docs/large-allocations.md), without a GPU:
# span_client.c against the stand-in CUDA driver and Vulkan loader of tests/fake/, one mode per
# process, the backend chosen by name. The stand-in Vulkan offers placed maps unless
# FAKE_VK_NO_PLACED=1; FAKE_VK_PLACED_BROKEN=1 makes them map other memory (the backend's own
# check must catch it). One result line per check.
set -u
. "$(dirname "$0")/../lib/t.sh"
B=${BUILD:-build}
t_make vulkan/span/build vulkan-span-progs || exit 1
client=$B/tests/vulkan/span_client
fake=$B/tests/fake/cuda-vmm:$B/tests/fake/vulkan

# go MODE [VAR=VALUE...]: the client's result lines in a clean environment.
go() {
    local mode=$1 out rc
    shift
    out=$(env -u GDRCOPY_BACKEND -u VRAMIO_ENABLE_VULKAN -u GDRCOPY_USE_DMABUF_MMAP \
          -u GDRCOPY_ENABLE_LOGGING -u FAKE_VK_NO_PLACED -u FAKE_VK_PLACED_BROKEN \
          LD_LIBRARY_PATH="$fake" GDRCOPY_BACKEND=vulkan "$@" timeout 60 "$client" "$mode" 2>&1)
    rc=$?
    t_relay "vulkan/span/$mode/exit" $rc "$out"
}

go spans
go spans_none FAKE_VK_NO_PLACED=1
go spans_broken FAKE_VK_PLACED_BROKEN=1
t_done

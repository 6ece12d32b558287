#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/vulkan/test_vulkan_unpinnable.sh - where the vulkan backend cannot pin, gdr_open answers
# as upstream's does without its module (NULL, the reason given) and vramio-run's bridge leaves
# the program's memory to the driver (said once); where it can, both work. Without a GPU:
# unpinnable_client.c and the bridge's client (tests/bridge/bridge_client.c) against the
# stand-in CUDA driver and Vulkan loader of tests/fake/, whose environment says what the machine
# lacks, and against the system's Vulkan loader with no driver to find (a container started
# with NVIDIA_DRIVER_CAPABILITIES=compute,utility). Then GDR_PIN_FLAG_FORCE_PCIE, refused on a
# GPU without a coherent link as upstream refuses it. One result line per check.
set -u
. "$(dirname "$0")/../lib/t.sh"
B=${BUILD:-build}
t_make vulkan/build vulkan-progs || exit 1
client=$B/tests/vulkan/unpinnable_client
bridge_client=$B/tests/bridge/bridge_client
run=$B/bin/vramio-run
fake=$B/tests/fake/cuda-vmm:$B/tests/fake/vulkan
# vramio-run's directory: one of this user's that no other can write to (t_run_dir), wherever
# the tree is (a clone under /tmp included).
t_run_dir vulkan/run_dir || t_done
export VRAMIO_RUN_DIR=$T_RUN_DIR/run

# go NAME [VAR=VALUE...] -- PROGRAM ARGS...: PROGRAM's result lines in a clean environment
# (none of the selections a caller may have set), with the stand-ins first on the path; the
# lines of a program that does not name them after the case (the bridge's client) get
# "NAME/" before their name. Its output stays in LAST.
go() {
    local name=$1 out rc
    shift
    local vars=()
    while [ "$1" != -- ]; do vars+=("$1"); shift; done
    shift
    out=$(env -u GDRCOPY_BACKEND -u VRAMIO_ENABLE_VULKAN -u GDRCOPY_USE_DMABUF_MMAP \
          -u GDRCOPY_ENABLE_LOGGING -u VRAMIO_BRIDGE_LOG LD_LIBRARY_PATH="$fake" "${vars[@]}" \
          timeout 60 "$@" 2>&1)
    rc=$?
    case $* in *"$bridge_client"*) t_relay "$name/exit" $rc "$out" "$name/" ;;
               *) t_relay "$name/exit" $rc "$out" ;; esac
    LAST=$out
}

# The machine can pin: gdr_open works opted in and chosen by name, the pool serves under
# vramio-run (the controls that keep the cases below honest).
go vulkan/usable VRAMIO_ENABLE_VULKAN=1 -- "$client" usable vulkan/usable/optin
go vulkan/usable GDRCOPY_BACKEND=vulkan -- "$client" usable vulkan/usable/by_name
go vulkan/usable -- "$run" "$bridge_client" bridged
# Each way it cannot, and what gdr_open says then.
cases=(
    "no_icd|FAKE_VK_NO_ICD=1|vkCreateInstance failed: VK_ERROR_INCOMPATIBLE_DRIVER"
    "no_matching_uuid|FAKE_VK_UUID_OFFSET=100|no Vulkan 1.1 device has the UUID of CUDA device 0"
    "no_host_visible_device_local|FAKE_VK_NO_BAR=1|has no device-local host-visible memory type"
    "bar1_too_small|FAKE_VK_BAR_MB=256|is 256 MiB of its 65536 MiB (BAR1 too small"
    "no_vmm|FAKE_CUDA_VMM=0|CUDA device 0 has no virtual memory management"
    "one_gpu_of_two|FAKE_CUDA_DEVICES=2 FAKE_VK_GPUS=1|1 of 2 GPUs can be pinned through Vulkan"
)
for c in "${cases[@]}"; do
    IFS='|' read -r case env reason <<< "$c"
    read -ra vars <<< "$env"
    go "vulkan/$case" "${vars[@]}" VRAMIO_ENABLE_VULKAN=1 -- \
        "$client" null "vulkan/$case/optin" "$reason"
    # Chosen by name: one usable GPU is enough (the user knows which memory they pin).
    if [ "$case" = one_gpu_of_two ]; then
        go "vulkan/$case" "${vars[@]}" GDRCOPY_BACKEND=vulkan -- \
            "$client" partial "vulkan/$case/by_name"
    else
        go "vulkan/$case" "${vars[@]}" GDRCOPY_BACKEND=vulkan -- \
            "$client" null "vulkan/$case/by_name" "$reason"
    fi
    # Under vramio-run the driver serves every allocation, as without it, and says so once.
    go "vulkan/$case/run" "${vars[@]}" -- "$run" "$bridge_client" plain
    n=$(printf '%s\n' "$LAST" | grep -c "the vulkan backend cannot pin this program's memory")
    m=$(printf '%s\n' "$LAST" | grep -cF "$reason")
    [ "$n" = 1 ] && [ "$m" -ge 1 ] && t_ok "vulkan/$case/run/said_once_with_reason" ||
        t_fail "vulkan/$case/run/said_once_with_reason" \
            "said $n times, reason $m times: $(printf '%s' "$LAST" | head -c 300)"
done

# The system's own Vulkan loader with no driver to find: the machine of the report.
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1 '; then
    t_skip vulkan/system_loader_no_driver "no system libvulkan.so.1 (libvulkan1)"
else
    sys=(LD_LIBRARY_PATH="$B/tests/fake/cuda-vmm" VK_DRIVER_FILES=/nonexistent/none.json
         VK_ICD_FILENAMES=/nonexistent/none.json VK_ADD_DRIVER_FILES=)
    go vulkan/system_loader_no_driver "${sys[@]}" VRAMIO_ENABLE_VULKAN=1 -- \
        "$client" null vulkan/system_loader_no_driver/optin "vkCreateInstance failed"
    go vulkan/system_loader_no_driver/run "${sys[@]}" -- "$run" "$bridge_client" plain
fi

# When the decision is made: not at program start, at gdr_open or the first allocation.
go vulkan/lazy VRAMIO_ENABLE_VULKAN=1 -- "$client" lazy vulkan/decided
go vulkan/first_alloc -- "$run" "$client" first_alloc vulkan/decided
# gdr_open made the instance, so a forked child leaves without the driver's teardown.
go vulkan/fork VRAMIO_ENABLE_VULKAN=1 -- "$client" fork vulkan/fork

# What memory is refused says what it is (plain, stream-ordered, VMM without a POSIX-fd type,
# not CUDA's), and stream-ordered memory of a pool with that type pins its own bytes.
go vulkan/refusals GDRCOPY_BACKEND=vulkan -- "$client" refusals vulkan/refusals
go vulkan/pool_fd GDRCOPY_BACKEND=vulkan -- "$client" pool_fd vulkan/pool_fd
go vulkan/pool_fd_unmapped GDRCOPY_BACKEND=vulkan FAKE_CUDA_POOL_MAPPING=0 -- \
    "$client" pool_fd vulkan/pool_fd_unmapped unmapped
go vulkan/pool_fd_shifted GDRCOPY_BACKEND=vulkan FAKE_CUDA_POOL_MAPPING=shifted -- \
    "$client" pool_fd vulkan/pool_fd_shifted shifted

# GDR_PIN_FLAG_FORCE_PCIE: refused on a GPU without a coherent link (upstream's module and
# dma-buf path refuse it there; UCX's gdr_copy test expects it), taken on a coherent one.
go vulkan/force_pcie VRAMIO_ENABLE_VULKAN=1 -- "$client" force_pcie vulkan/force_pcie refused
go vulkan/force_pcie VRAMIO_ENABLE_VULKAN=1 FAKE_CUDA_COHERENT=1 -- \
    "$client" force_pcie vulkan/force_pcie_coherent taken
# The same decisions in the ASan build's library ('make check' has built it): gdr_open's
# checks leak nothing and read nothing they should not, confirmed or refused.
if [ -e "$B/asan/lib/libgdrapi.so" ] && t_make vulkan/asan/build BUILD="$B/asan" SANITIZE=asan \
       "$B/asan/tests/vulkan/unpinnable_client"; then
    asan=$B/asan/tests/vulkan/unpinnable_client
    go vulkan/asan/usable VRAMIO_ENABLE_VULKAN=1 FAKE_CUDA_DEVICES=2 FAKE_VK_GPUS=2 -- \
        "$asan" usable vulkan/asan/usable
    for c in "${cases[@]}"; do
        IFS='|' read -r case env reason <<< "$c"
        read -ra vars <<< "$env"
        go "vulkan/asan/$case" "${vars[@]}" VRAMIO_ENABLE_VULKAN=1 -- \
            "$asan" null "vulkan/asan/$case" "$reason"
    done
    go vulkan/asan/force_pcie VRAMIO_ENABLE_VULKAN=1 -- "$asan" force_pcie vulkan/asan/force_pcie refused
fi
t_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bridge/test_bridge_fork.sh - a program under vramio-run that forks while another of its
# threads is inside the bridge (fork_client.c, against the stand-in driver): each child must
# open, allocate, free and make handles without hanging, and leave by exit() and by _exit();
# a fork must not wait for a thread that waits for an exporter's answer; and a child forked
# while a slab's fd is on its way (held in the stand-in's import, or in the exporter's send)
# must hold no copy of it; a thread cancelled inside an open must leave no lock held.
# Twice: with the stand-in working in the children, and refusing to make or map memory there
# (FAKE_CUDA_FORK_REFUSE=1), as the real driver refuses CUDA in a forked child. A hung child
# is killed after 10 s and reported as not ok. The program comes from make (bridge.mk).
set -u
. "$(dirname "$0")/../lib/t.sh"
B=${BUILD:-build}
# The stand-in driver and Vulkan loader: the pool serves only where the vulkan backend can pin.
fakes=$B/tests/fake/cuda-vmm:$B/tests/fake/vulkan
run=$B/bin/vramio-run
for f in "$B/lib/libvramio_bridge.so" "$B/lib/libvramio_cuda.so" "$run"; do
    [ -e "$f" ] || { t_fail "bridge/fork/built" "$f is not built"; exit 1; }
done
t_make bridge/fork/build fork-progs || exit 1
# vramio-run's directories: in the kit's private one (not the build tree, which may be in /tmp).
t_run_dir bridge/fork/run_dir || t_done
export VRAMIO_RUN_DIR=$T_RUN_DIR

for mode in works refuses; do
    refuse=0
    [ "$mode" = refuses ] && refuse=1
    out=$(env -u GDRCOPY_BACKEND -u VRAMIO_BRIDGE_LOG LD_LIBRARY_PATH="$fakes" \
          FAKE_CUDA_FORK_REFUSE=$refuse timeout 300 "$run" "$B/tests/bridge/fork_client" 2>&1)
    t_relay "bridge/fork/driver_${mode}_in_child/exit" $? "$out"
done
t_done

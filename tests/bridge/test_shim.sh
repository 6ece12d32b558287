#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bridge/test_shim.sh - vramio-run's libcuda.so.1 shim seen from inside a program
# (shim_client.c), without a GPU (the stand-in driver of tests/fake/):
#   - backtrace() from inside an entry of a replaced name (bridge/shim_entry.S) sees the
#     entry's callers: single-stepped through every instruction (x86_64), and from samples of
#     a signal that lands there; the entries jump to a stand-in bridge that answers at once
#     (unwind_bridge.c), whose directory holds a link to the real shim;
#   - vramio-run's directory removed under a process that has the shim: the programs it
#     starts next get the driver alone, and that process's shim says so, once.
# tests/cross/bridge_user.sh runs the unwinding for AArch64 under qemu-user.
set -u
. "$(dirname "$0")/../lib/t.sh"
B=${BUILD:-build}
dir=$B/tests/bridge
fake=$B/tests/fake/cuda-vmm
run=$B/bin/vramio-run
[ -x "$run" ] && [ -e "$B/lib/libvramio_cuda.so" ] ||
    { t_fail shim/built "$run or $B/lib/libvramio_cuda.so is not built"; exit 1; }
t_make shim/build shim-progs || exit 1
# vramio-run takes the shim from beside the bridge it is given.
ln -sf "$(realpath "$B/lib/libvramio_cuda.so")" "$dir/unwind/libvramio_cuda.so"
# vramio-run's directories: in the kit's private one (not the build tree, which may be in /tmp).
t_run_dir shim/run_dir || t_done
base() {
    env -u GDRCOPY_BACKEND -u VRAMIO_BRIDGE_LOG -u VRAMIO_ENABLE_VULKAN -u LD_PRELOAD \
        LD_LIBRARY_PATH="$fake" VRAMIO_RUN_DIR="$T_RUN_DIR" "$@"
}

for mode in step sample; do
    out=$(base VRAMIO_BRIDGE_LIB="$(pwd)/$dir/unwind/libvramio_bridge.so" timeout 90 \
          "$run" "$dir/shim_client" "$mode" 2>&1)
    t_relay "shim/unwind_$mode/exit" $? "$out"
    printf '%s\n' "$out" | grep -q "^\(ok\|not ok\|skip\) shim/unwind_$mode" ||
        t_fail "shim/unwind_$mode" "no result: $(printf '%s' "$out" | head -c 300)"
    printf '%s\n' "$out" | grep "^shim/unwind_$mode: " | sed 's/^/    /'
done

# The directory removed while a process with the shim runs; it then forks twice and runs a
# program that loads no libgdrapi (which would say so itself): that program gets the driver.
out=$(base VRAMIO_RUN_DIR="$T_RUN_DIR/lost-shim" timeout 60 "$run" \
      "$dir/shim_client" lost "$dir/shim_client" load 2>&1)
rc=$?
n=$(printf '%s\n' "$out" | grep -c "vramio-run's directory .*/lost-shim/cuda-[0-9a-f]* is gone")
drivers=$(printf '%s\n' "$out" | grep -cx driver)
if [ "$rc" = 0 ] && [ "$n" = 1 ] && [ "$drivers" = 2 ]; then
    t_ok shim/lost_directory_said_by_the_shim_once
else
    t_fail shim/lost_directory_said_by_the_shim_once \
        "exit $rc, said $n times, $drivers children on the driver: $(printf '%s' "$out" | tr '\n' '|' | head -c 400)"
fi
t_done

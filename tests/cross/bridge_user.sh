#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/cross/bridge_user.sh ARCH TRIPLET QEMU OUT - vramio-run, its libcuda.so.1 shim and the
# bridge built for ARCH and run under qemu-user against the stand-in driver and Vulkan loader
# (tests/fake/), as tests/bridge/test_bridge.sh runs them natively: the client in each mode,
# CUDA IPC between two processes, and UCX's memory hooks done by ucm_like.c (on AArch64 with
# UCX's own relocation rules for bistro: the shim's entries must be movable as UCX moves
# them), and backtrace() from inside those entries (shim_client.c: a signal's sample there,
# as qemu-user cannot single-step). Called by cross_user.sh (which has built the library for
# ARCH into OUT). Result names get an "ARCH/" prefix.
#
# How the emulator runs it: vramio-run itself under qemu-user with the target's loader named
# (not QEMU_LD_PREFIX: qemu-user maps "/" to that prefix, so vramio-run's walk from "/" would
# make its directory inside the cross sysroot), and it runs the program through the emulator
# (without binfmt_misc the kernel cannot run a foreign program), which gets QEMU_LD_PREFIX.
set -u
. "$(dirname "$0")/../lib/t.sh"
arch=$1 triplet=$2 qemu=$3 out=$4
cd "$(dirname "$0")/../.." || exit 1
sysroot=/usr/$triplet
ldso=$(ls "$sysroot"/lib/ld-linux-*.so.* "$sysroot"/lib/ld64.so.* 2>/dev/null | head -n 1)
[ -n "$ldso" ] || { t_fail "$arch/bridge/loader" "no loader in $sysroot/lib"; exit 1; }
unset MAKEFLAGS MFLAGS MAKELEVEL
if ! make -s --no-print-directory -j2 CC="$triplet-gcc" BUILD="$out" bridge bridge-progs \
        interpose-progs shim-progs >"$out.bridge.log" 2>&1; then
    t_fail "$arch/bridge/build" "cross build of the bridge and its test programs failed"
    tail -n 20 "$out.bridge.log" | sed 's/^/    /'
    exit 1
fi
t_ok "$arch/bridge/build"
o=$(cd "$out" && pwd)
fake=$o/tests/fake/cuda-vmm:$o/tests/fake/vulkan
# vramio-run's directories: in the kit's private one (not the build tree, which may be in /tmp).
t_run_dir "$arch/bridge/run_dir" || t_done
vrun() { # vramio-run ARGS... under the emulator (the bridge: $bridge_lib when set)
    env -u QEMU_LD_PREFIX -u GDRCOPY_BACKEND -u VRAMIO_BRIDGE_LOG -u VRAMIO_ENABLE_VULKAN \
        VRAMIO_RUN_DIR="$T_RUN_DIR" VRAMIO_TEST_LAUNCHER="$qemu" \
        timeout --kill-after=10 120 "$qemu" -E QEMU_LD_PREFIX="$sysroot" \
        -E LD_LIBRARY_PATH="$fake:$o/lib:$sysroot/lib" \
        -E VRAMIO_BRIDGE_LIB="${bridge_lib:-$o/lib/libvramio_bridge.so}" "$ldso" "$o/bin/vramio-run" "$@"
}
results() { # name status output: its result lines, prefixed; a crash is a failure
    t_relay "$arch/$1" "$2" "$3" "$arch/"
}

out_v=$(vrun --version 2>&1)
[[ $out_v == "vramio-run (vramio) "* ]] && t_ok "$arch/bridge/run_version" ||
    t_fail "$arch/bridge/run_version" "$out_v"
# The directory vramio-run made names this architecture's shim and stand-in driver.
d=$(vrun sh -c 'echo "${LD_LIBRARY_PATH%%:*}"' 2>&1)
if [ "$(readlink "$d/libcuda.so.1")" = "$(realpath "$o/lib/libvramio_cuda.so")" ] &&
   [ "$(readlink "$d/libcuda.so.1.real")" = "$o/tests/fake/cuda-vmm/libcuda.so.1" ]; then
    t_ok "$arch/bridge/run_directory"
else
    t_fail "$arch/bridge/run_directory" "'$d': $(ls -l "$d" 2>&1 | tr '\n' ' ')"
fi

# Several GPUs: as many Vulkan devices (the pool serves only where every GPU can be pinned).
per_device="per_device FAKE_CUDA_DEVICES=2 FAKE_VK_GPUS=2 FAKE_CUDA_VMM_REFUSE=1"
for mode in bridged "fallback FAKE_CUDA_VMM=0" "noctx FAKE_CUDA_NO_CTX=1" \
            "peers FAKE_CUDA_DEVICES=4 FAKE_VK_GPUS=4" \
            "multigpu FAKE_CUDA_DEVICES=2 FAKE_VK_GPUS=2" \
            "$per_device FAKE_CUDA_VMM_OS_ERRORS=1" \
            "new_abi FAKE_CUDA_NEW_ABI=cuMemAlloc:14000" \
            "sync_error FAKE_CUDA_SYNC_ERROR=999 VRAMIO_LOG_LEVEL=0"; do
    set -- $mode
    name=$1
    shift
    res=$( [ $# -gt 0 ] && export "$@"; vrun "$qemu" "$o/tests/bridge/bridge_client" "$name" 2>&1)
    results "bridge/$name" $? "$res"
done
res=$(vrun "$qemu" "$o/tests/bridge/ipc_client" "$fake:$sysroot/lib" 2>&1)
results bridge/ipc $? "$res"
for mode in bistro reloc; do
    res=$(vrun "$qemu" "$o/tests/interpose/ucm_like" "$mode" 2>&1)
    results "ucm/$mode" $? "$res"
done
# The unwinding runs against a stand-in bridge, beside a link to the shim (test_shim.sh).
ln -sf "$(realpath "$o/lib/libvramio_cuda.so")" "$o/tests/bridge/unwind/libvramio_cuda.so"
res=$(bridge_lib=$o/tests/bridge/unwind/libvramio_bridge.so \
      vrun "$qemu" "$o/tests/bridge/shim_client" sample 2>&1)
results shim/unwind_sample $? "$res"
t_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bridge/test_interpose.sh - vramio-run changes where a program's device allocations
# come from and nothing else, without a GPU (the stand-in driver and Vulkan loader of
# tests/fake/): an fsync interposer that uses RTLD_NEXT (preloaded, and linked into the
# program), an RTLD_LOCAL plugin's RTLD_DEFAULT lookup and dladdr of a driver function behave
# as without vramio-run (interpose_client.c); UCX's two ways of hooking the driver's
# allocation functions install and fire, and the pool still serves (ucm_like.c); a second
# copy of libgdrapi (static, or loaded by path) pins the right block (second_copy.c). The
# programs and the libraries they load come from make (tests/bridge/bridge.mk).
set -u
. "$(dirname "$0")/../lib/t.sh"
B=${BUILD:-build}
dir=$B/tests/interpose
fake=$B/tests/fake/cuda-vmm:$B/tests/fake/vulkan
run=$B/bin/vramio-run
[ -x "$run" ] || { t_fail "interpose/built" "$run is not built"; exit 1; }
t_make interpose/build interpose-progs || exit 1
# A copy of the library at another path is another object to the loader.
cp "$B/lib/libgdrapi.so.2" "$dir/lib/libgdrapi_copy.so"

# The environment of every run: the stand-ins, the shim's directory in the kit's private one.
t_run_dir interpose/run_dir || t_done
base() {
    env -u GDRCOPY_BACKEND -u VRAMIO_BRIDGE_LOG -u VRAMIO_ENABLE_VULKAN -u LD_PRELOAD \
        LD_LIBRARY_PATH="$fake" VRAMIO_RUN_DIR="$T_RUN_DIR" "$@"
}
# Without and under vramio-run, the lines other than "pool N" must be equal; under it the
# pool must serve.
same() { # name [VAR=VALUE...] -- program args...
    local name=$1 pre=() plain bridged
    shift
    while [ "$1" != -- ]; do pre+=("$1"); shift; done
    shift
    plain=$(base "${pre[@]}" timeout 60 "$@" 2>&1)
    bridged=$(base "${pre[@]}" timeout 60 "$run" "$@" 2>&1)
    if [ "$(printf '%s\n' "$plain" | grep -v '^pool ')" = "$(printf '%s\n' "$bridged" | grep -v '^pool ')" ] &&
       printf '%s\n' "$bridged" | grep -qx 'pool 1'; then
        t_ok "interpose/$name"
    else
        t_fail "interpose/$name" "without: [$(printf '%s' "$plain" | tr '\n' '|')] under vramio-run: [$(printf '%s' "$bridged" | tr '\n' '|')]"
    fi
}
same fsync_preloaded LD_PRELOAD="$dir/lib/libfsyncwrap.so" -- "$dir/client" fsync
same fsync_in_program -- "$dir/client_wrap" fsync
same rtld_local_plugin_rtld_default -- "$dir/client" plugin "$dir/lib/plugin.so"
same dladdr_names_driver -- "$dir/client" dladdr
# ... and the driver is the real one, not a stand-in of ours.
out=$(base timeout 60 "$run" "$dir/client" dladdr 2>&1)
want="cuInit is cuInit in $(realpath "$B/tests/fake/cuda-vmm/libcuda.so.1")"
printf '%s\n' "$out" | grep -qxF "$want" && t_ok "interpose/dladdr_is_driver_file" ||
    t_fail "interpose/dladdr_is_driver_file" "$(printf '%s' "$out" | tr '\n' '|') (want: $want)"

# With both loaded, the name libcuda.so.1 is the shim's (loaded first), not the driver's
# SONAME; without vramio-run it is the driver.
a=$(base timeout 60 "$dir/client" byname 2>&1 | grep '^by name')
b=$(base timeout 60 "$run" "$dir/client" byname 2>&1 | grep '^by name')
[ "$a|$b" = "by name: the driver|by name: the shim" ] && t_ok "interpose/dlopen_by_name_is_shim" ||
    t_fail "interpose/dlopen_by_name_is_shim" "without: '$a', under vramio-run: '$b'"

result_lines() { # label cmd...: the program's result lines, prefixed; a crash is a failure
    local label=$1 out rc
    shift
    out=$(base timeout 60 "$@" 2>&1); rc=$?
    t_relay "interpose/$label/exit" $rc "$out"
}
result_lines ucm_bistro "$run" "$dir/ucm_like" bistro
result_lines ucm_reloc "$run" "$dir/ucm_like" reloc
result_lines second_copy_static "$run" "$dir/second_copy"
result_lines second_copy_by_path "$run" "$dir/second_copy" "$dir/lib/libgdrapi_copy.so"
# A program that allocates with cuMemAlloc itself (gdrcopy_sanity's kind cuda: the tools load
# the driver as programs do) gets the pool's memory, which the vulkan backend pins; the token
# test is left out (the stand-in driver has no cuPointerGetAttribute). FORCE_PCIE's data test is
# waived on a GPU without a coherent link (the flag is refused there, as upstream's is).
out=$(base timeout 120 "$run" "$B/bin/gdrcopy_sanity" --kind cuda --timeout 30 -t basic -t 'basic_v2*' \
      -t 'basic_[uc]*' -t basic_small_buffers_mapping -t 'data_*' 2>&1)
n=$(printf '%s\n' "$out" | grep -c '^ok .*\.cuda$')
bad=$(printf '%s\n' "$out" | grep -E '^(not ok|skip) ' | grep -v '^skip data_validation_forcepci\.' |
      head -n 3 | cut -c1-160 | tr '\n' '|')
[ "$n" -ge 9 ] && [ -z "$bad" ] && t_ok "interpose/tools_cuda_kind_from_pool ($n tests)" ||
    t_fail "interpose/tools_cuda_kind_from_pool" "$n ok; $bad"
t_done

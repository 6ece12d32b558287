#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bridge/test_bridge.sh - the allocation bridge without a GPU: a client (bridge_client.c)
# against a stand-in libcuda.so.1 (fake_cuda_vmm.c) under vramio-run (its libcuda.so.1 shim
# first on the library path), in each mode (pool, no VMM, no context) and without it; then
# vramio-run's command line and the directory it makes. The programs come from make
# (tests/bridge/bridge.mk).
set -u
. "$(dirname "$0")/../lib/t.sh"
B=${BUILD:-build}
dir=$B/tests/bridge
fake=$B/tests/fake/cuda-vmm
# The stand-in Vulkan loader too: the pool serves only where the vulkan backend can pin
# (tests/vulkan/test_vulkan_unpinnable.sh tries the machines where it cannot).
fakes=$fake:$B/tests/fake/vulkan
bridge=$B/lib/libvramio_bridge.so
run=$B/bin/vramio-run
for f in "$bridge" "$B/lib/libvramio_cuda.so" "$run"; do
    [ -e "$f" ] || { t_fail "bridge/built" "$f is not built"; exit 1; }
done
t_make bridge/build bridge-progs || exit 1
# vramio-run's directories: in the kit's private one (not the build tree, which may be in /tmp).
t_run_dir bridge/run_dir || t_done
rundir=$T_RUN_DIR
export VRAMIO_RUN_DIR=$rundir

client() { # mode [VAR=VALUE...]: the client's result lines; a crash is a failure
    local mode=$1 out rc
    shift
    out=$(env -u GDRCOPY_BACKEND -u VRAMIO_BRIDGE_LOG LD_LIBRARY_PATH="$fakes" "$@" \
          timeout 60 $RUN "$dir/bridge_client" "$mode" 2>&1)
    rc=$?
    t_relay "bridge/$mode/exit" $rc "$out"
}
RUN=$run
client bridged
client fallback FAKE_CUDA_VMM=0
client noctx FAKE_CUDA_NO_CTX=1
client peers FAKE_CUDA_DEVICES=4 FAKE_VK_GPUS=4
client peers_refused FAKE_CUDA_DEVICES=4 FAKE_VK_GPUS=4 FAKE_CUDA_PEER_REFUSE=1
client multigpu FAKE_CUDA_DEVICES=2 FAKE_VK_GPUS=2
client new_abi FAKE_CUDA_NEW_ABI=cuMemAlloc:14000
client per_device FAKE_CUDA_DEVICES=2 FAKE_VK_GPUS=2 FAKE_CUDA_VMM_REFUSE=1 \
    FAKE_CUDA_VMM_OS_ERRORS=1
client sync_error FAKE_CUDA_SYNC_ERROR=999 VRAMIO_LOG_LEVEL=0
RUN=
client plain

# CUDA IPC of bridged blocks between two processes (bridge_ipc.c): ipc_client.c.
out=$(env -u GDRCOPY_BACKEND -u VRAMIO_BRIDGE_LOG LD_LIBRARY_PATH="$fakes" \
      timeout 90 "$run" "$dir/ipc_client" "$(pwd)/$fake" 2>&1)
t_relay bridge/ipc/exit $? "$out"
# A block of chunks (4 MiB: the stand-in Vulkan offers placed maps, so the vulkan backend pins
# across chunks and the pool makes them), then the same client where chunks are off (one
# allocation, the same answers, the handle of a slab) and where the stand-in Vulkan offers no
# placed maps (the pool makes one allocation: vr_pins_can_span says no).
out=$(env -u GDRCOPY_BACKEND -u VRAMIO_BRIDGE_LOG LD_LIBRARY_PATH="$fakes" \
      VRAMIO_POOL_CHUNK_MB=4 CHUNKS_EXPECTED=3 timeout 90 "$run" "$dir/ipc_client" "$(pwd)/$fake" \
      chunks 2>&1)
t_relay bridge/ipc/chunks/exit $? "$out"
out=$(env -u GDRCOPY_BACKEND -u VRAMIO_BRIDGE_LOG LD_LIBRARY_PATH="$fakes" \
      VRAMIO_POOL_CHUNK_MB=2 timeout 90 "$run" "$dir/ipc_client" "$(pwd)/$fake" many 2>&1)
t_relay bridge/ipc/many/exit $? "$out"
for off in chunks_off:VRAMIO_POOL_CHUNK_MB=0 chunks_no_placed:FAKE_VK_NO_PLACED=1; do
    out=$(env -u GDRCOPY_BACKEND -u VRAMIO_BRIDGE_LOG LD_LIBRARY_PATH="$fakes" \
          VRAMIO_POOL_CHUNK_MB=4 "${off#*:}" CHUNKS_EXPECTED=1 timeout 90 "$run" \
          "$dir/ipc_client" "$(pwd)/$fake" chunks 2>&1)
    rc=$?
    out=$(printf '%s\n' "$out" | sed "s#bridge/ipc/chunks/#bridge/ipc/${off%%:*}/#")
    t_relay "bridge/ipc/${off%%:*}/exit" $rc "$out"
done

# The log says what was intercepted, and how it ended.
log=$(LD_LIBRARY_PATH="$fakes" timeout 60 "$run" --log "$dir/bridge_client" bridged 2>&1 >/dev/null)
if printf '%s\n' "$log" | grep -q 'cuGetProcAddress("cuMemAlloc", 13000): the bridge' &&
   printf '%s\n' "$log" | grep -q 'cuMemAlloc(100) = 0x[0-9a-f]* from the pool' &&
   printf '%s\n' "$log" | grep -q 'at exit: '; then
    t_ok "bridge/log_says_what_was_intercepted"
else
    t_fail "bridge/log_says_what_was_intercepted" "$(printf '%s' "$log" | head -c 300)"
fi

# NVIDIA's runtime itself, shared and static: it finds cuGetProcAddress_v2 with dlsym on its
# own handle of the driver (the shim's), then asks it for "cuGetProcAddress", the
# allocation functions, the pointer attributes and the copies; each answer must be the
# bridge's.
CUDA_LIB=${CUDA_HOME:-/usr/local/cuda}/lib64
for kind in shared static; do
    case $kind in
        shared) lib=$CUDA_LIB/libcudart.so ;;
        static) lib=$CUDA_LIB/libcudart_static.a ;;
    esac
    if [ ! -e "$lib" ]; then
        t_skip "bridge/runtime_${kind}_lookups_caught" "no $lib (the CUDA toolkit's runtime)"; continue
    fi
    if ! t_make "bridge/runtime_${kind}_lookups_caught" "$dir/runtime_$kind"; then
        continue
    fi
    log=$(LD_LIBRARY_PATH="$fakes" timeout 60 "$run" --log "$dir/runtime_$kind" 2>&1)
    miss=
    printf '%s\n' "$log" | grep -q "vramio-bridge: libcuda.so.1 is vramio's shim" || miss=" the shim"
    for want in 'cuGetProcAddress("cuGetProcAddress", 1[2-9][0-9]*)' \
                'cuGetProcAddress("cuMemAlloc", [0-9]*)' 'cuGetProcAddress("cuMemFree", [0-9]*)' \
                'cuGetProcAddress("cuMemAllocPitch", [0-9]*)' 'cuGetProcAddress("cuMemGetAddressRange", [0-9]*)' \
                'cuGetProcAddress("cuPointerGetAttribute", [0-9]*)' 'cuGetProcAddress("cuPointerGetAttributes", [0-9]*)' \
                'cuGetProcAddress("cuMemcpyHtoD", [0-9]*)'; do
        printf '%s\n' "$log" | grep -q "vramio-bridge: $want: the bridge's" || miss="$miss $want"
    done
    [ -z "$miss" ] && t_ok "bridge/runtime_${kind}_lookups_caught" ||
        t_fail "bridge/runtime_${kind}_lookups_caught" "not seen:$miss"
done

# Each row's ABI (bridge/bridge_routes.h) is the newest that the toolkit's cudaTypedefs.h has
# for its base name (PFN_<base>_v<version>): a newer one means the row must follow it.
td=${CUDA_HOME:-/usr/local/cuda}/include/cudaTypedefs.h
if [ ! -e "$td" ]; then
    t_skip bridge/routes_abi_is_the_toolkits_newest "no $td"
else
    bad=
    while read -r base since until; do
        newest=$(grep -oE "PFN_${base}_v[0-9]+\)" "$td" | grep -oE '[0-9]+' | sort -n | tail -n 1)
        [ "$newest" = "$since" ] && [ "$until" -ge "$since" ] ||
            bad="$bad $base (row $since-$until, header ${newest:-none})"
    done < <(sed -nE 's/^ *X\(\w+, (\w+), ([0-9]+), ([0-9]+),.*/\1 \2 \3/p' bridge/bridge_routes.h)
    [ -z "$bad" ] && t_ok bridge/routes_abi_is_the_toolkits_newest ||
        t_fail bridge/routes_abi_is_the_toolkits_newest "$bad"
fi

# ---- vramio-run ------------------------------------------------------------------------
expect() { # name want_rc want_regex cmd...
    local name=$1 want=$2 re=$3 out rc
    shift 3
    out=$(timeout 30 "$@" 2>&1); rc=$?
    if [ "$rc" -eq "$want" ] && printf '%s\n' "$out" | grep -qE -- "$re"; then
        t_ok "bridge/run_$name"
    else
        t_fail "bridge/run_$name" "exit $rc (want $want): $(printf '%s' "$out" | head -c 200)"
    fi
}
expect help 0 '^usage: vramio-run' "$run" --help
expect version 0 '^vramio-run \(vramio\) [0-9]' "$run" --version
expect no_program 2 'no program to run' "$run"
expect no_program_after_dashes 2 'no program to run' "$run" --log --
expect bad_option 2 "unknown option '--frobnicate'" "$run" --frobnicate true
fk=(env LD_LIBRARY_PATH="$fakes")
expect missing_program 127 "cannot run 'no-such-program-here'" "${fk[@]}" "$run" no-such-program-here
expect not_executable 126 "cannot run '/'" "${fk[@]}" "$run" /
# As a shell says it, whether the message could be written or not (a daemon's closed stderr).
expect missing_program_stderr_closed 127 '' \
    "${fk[@]}" sh -c 'exec "$@" 2>&-' sh "$run" no-such-program-here
expect missing_program_stderr_full 127 '' \
    "${fk[@]}" sh -c 'exec "$@" 2>/dev/full' sh "$run" no-such-program-here
expect missing_bridge 127 'bridge library /nonexistent/libx.so cannot be read' \
    env VRAMIO_BRIDGE_LIB=/nonexistent/libx.so "$run" true
expect exit_status_passed_on 3 '' "${fk[@]}" "$run" sh -c 'exit 3'
keep=$(cd "$B/lib" && pwd)/libgdrapi.so.2
# The shim's directory goes first on the library path; LD_PRELOAD is the user's, untouched.
expect sets_library_path_and_vulkan 0 "^$keep\|$rundir/cuda-[0-9a-f]{16}:$fakes\|1\$" \
    env LD_PRELOAD="$keep" LD_LIBRARY_PATH="$fakes" "$run" \
    sh -c 'echo "$LD_PRELOAD|$LD_LIBRARY_PATH|$VRAMIO_ENABLE_VULKAN"'
shim=$(realpath "$B/lib/libvramio_cuda.so")
expect links_to_shim_and_driver 0 "^$shim $shim $(realpath "$fake/libcuda.so.1")\$" \
    "${fk[@]}" "$run" sh -c 'd=${LD_LIBRARY_PATH%%:*}; echo $(readlink $d/libcuda.so.1) $(readlink $d/libcuda.so) $(readlink $d/libcuda.so.1.real)'
expect arguments_passed 0 '^<a b> <c>$' "${fk[@]}" "$run" -- sh -c 'echo "<$1> <$2>"' sh 'a b' c
expect run_dir_with_colon_refused 127 "/tmp/a:b: LD_LIBRARY_PATH cannot hold it" \
    env LD_LIBRARY_PATH="$fakes" VRAMIO_RUN_DIR=/tmp/a:b "$run" true
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    t_skip "bridge/run_no_driver_refused" "this machine has a CUDA driver"
else
    expect no_driver_refused 127 'no CUDA driver to run the program with' \
        env LD_LIBRARY_PATH=/nonexistent "$run" true
fi
# Installed under a path that LD_LIBRARY_PATH (and LD_PRELOAD) cannot hold, and run from a
# program already under vramio-run: the pool still serves.
inst="$dir/in st:all"
rm -rf "$inst" && mkdir -p "$inst/bin" "$inst/lib" &&
    cp -P "$B"/lib/libvramio_bridge.so "$B"/lib/libvramio_cuda.so "$B"/lib/libgdrapi.so* "$inst/lib/" &&
    cp "$run" "$inst/bin/"
expect path_with_colon_and_space 0 'cuMemAlloc\(100\) = 0x[0-9a-f]* from the pool' \
    "${fk[@]}" "$inst/bin/vramio-run" --log "$dir/bridge_client" bridged
expect nested 0 'cuMemAlloc\(100\) = 0x[0-9a-f]* from the pool' \
    "${fk[@]}" "$run" "$run" --log "$dir/bridge_client" bridged
# The user's VRAMIO_ENABLE_VULKAN=0 stands; with it nothing can be pinned, so the driver
# serves every allocation (as without vramio-run), and the program is told once.
expect user_vulkan_setting_kept 0 '^0$' \
    env LD_LIBRARY_PATH="$fakes" VRAMIO_ENABLE_VULKAN=0 "$run" sh -c 'echo $VRAMIO_ENABLE_VULKAN'
out=$(env LD_LIBRARY_PATH="$fakes" VRAMIO_ENABLE_VULKAN=0 timeout 60 "$run" \
      "$dir/bridge_client" plain 2>&1)
n=$(printf '%s\n' "$out" | grep -c "the vulkan backend cannot pin this program's memory")
if [ "$n" = 1 ] && printf '%s\n' "$out" | grep -q '^ok bridge/plain_driver_serves'; then
    t_ok bridge/run_nothing_pinnable_driver_serves_said_once
else
    t_fail bridge/run_nothing_pinnable_driver_serves_said_once \
        "said $n times: $(printf '%s' "$out" | head -c 300)"
fi
# The directory removed under the program (logind removes XDG_RUNTIME_DIR at logout, tmp
# cleaners old directories): the driver serves, and the program's libgdrapi says so once.
out=$(env LD_LIBRARY_PATH="$fakes" VRAMIO_RUN_DIR="$rundir/lost" timeout 60 "$run" \
      sh -c 'rm -rf "${LD_LIBRARY_PATH%%:*}"; exec "$0" plain' "$dir/bridge_client" 2>&1)
n=$(printf '%s\n' "$out" | grep -c "libcuda.so.1 is not vramio's shim (.*/lost/cuda-[0-9a-f]*/libcuda.so.1 is gone")
if [ "$n" = 1 ] && printf '%s\n' "$out" | grep -q '^ok bridge/plain_driver_serves'; then
    t_ok bridge/run_lost_directory_said_once
else
    t_fail bridge/run_lost_directory_said_once "said $n times: $(printf '%s' "$out" | head -c 300)"
fi
# The shim without its bridge says so, and the driver serves the program unchanged.
shimdir=$(ls -d "$rundir"/cuda-* | head -n 1)
expect shim_without_bridge_says_so 0 'the bridge /nonexistent/b.so cannot be loaded .*: the CUDA driver serves' \
    env LD_LIBRARY_PATH="$shimdir:$fakes" VRAMIO_BRIDGE_LIB=/nonexistent/b.so \
        "$dir/bridge_client" plain
# Loaded without the launcher, the bridge enables the vulkan backend itself (unless set).
expect preload_enables_vulkan 0 '^1 0$' sh -c "a=\$(LD_PRELOAD=$bridge sh -c 'echo \$VRAMIO_ENABLE_VULKAN'); \
    b=\$(VRAMIO_ENABLE_VULKAN=0 LD_PRELOAD=$bridge sh -c 'echo \$VRAMIO_ENABLE_VULKAN'); echo \$a \$b"
t_done

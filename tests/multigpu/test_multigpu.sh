#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/multigpu/test_multigpu.sh - the vulkan backend with several GPUs in one host, without
# a GPU: a client (multigpu_client.c) against the stand-in CUDA driver and Vulkan loader of
# tests/fake/, found through LD_LIBRARY_PATH, one mode per process, with the backend forced
# (GDRCOPY_BACKEND=vulkan) and opted into (VRAMIO_ENABLE_VULKAN=1); again against the
# ASan+UBSan library when 'make check' has built it; and a pin that outlives the free of its
# pool memory (freed_pin_client.c). The programs come from make (tests/multigpu/multigpu.mk).
# One result line per case.
set -u
. "$(dirname "$0")/../lib/t.sh"
B=${BUILD:-build}
t_make multigpu/build multigpu-progs || exit 1
fake=$B/tests/fake/cuda-vmm:$B/tests/fake/vulkan

# report PREFIX NAME RC OUT: a client's result lines under PREFIX; a crash is a failure.
report() {
    printf '%s\n' "$4" | sed -n "s#^\(ok\|not ok\|skip\) #\1 $1#p"
    if [ "$3" -ne 0 ] && ! printf '%s\n' "$4" | grep -q '^not ok '; then
        t_fail "$2/exit" "status $3"
        printf '%s\n' "$4" | tail -n 5 | sed 's/^/    /'
    fi
}

run_modes() { # label build: that build's client, against its library
    local label=$1 prog=$2/tests/multigpu/multigpu_client mode sel out rc
    for mode in both cross alloc missing fork foreign both:optin fork:optin fork_start; do
        sel=GDRCOPY_BACKEND=vulkan tag=
        case $mode in *:optin) sel=VRAMIO_ENABLE_VULKAN=1 tag=optin/ ;; esac
        set -- FAKE_CUDA_DEVICES=2 FAKE_VK_GPUS=2
        [ "${mode%:*}" = missing ] && set -- FAKE_CUDA_DEVICES=3 FAKE_VK_GPUS=2
        [ "$mode" = fork_start ] && set -- "$@" FAKE_VK_START_MS=300
        out=$(env -u GDRCOPY_BACKEND -u VRAMIO_ENABLE_VULKAN -u GDRCOPY_USE_DMABUF_MMAP \
              -u GDRCOPY_ENABLE_LOGGING -u FAKE_CUDA_NO_CTX -u FAKE_VK_ACCEPT_FOREIGN \
              LD_LIBRARY_PATH="$fake" "$sel" "$@" timeout 60 "$prog" "${mode%:*}" 2>&1)
        rc=$?
        report "multigpu/$label/${tag}" "multigpu/$label/${tag}${mode%:*}" $rc "$out"
    done
}

run_modes plain "$B"

# A pin that outlives the free of its pool memory: the _auto copies keep to its pages.
out=$(env -u GDRCOPY_BACKEND -u VRAMIO_ENABLE_VULKAN LD_LIBRARY_PATH="$fake" \
      GDRCOPY_BACKEND=vulkan FAKE_CUDA_DEVICES=1 FAKE_VK_GPUS=1 VRAMIO_DMA_CROSSOVER_WRITE=4K \
      timeout 60 "$B/tests/multigpu/freed_pin_client" 2>&1)
report "multigpu/" "multigpu/freed_pin" $? "$out"

# A vramio_alloc block of chunks pinned inside one chunk and whole (chunk_pin_client.c): 4 MiB
# chunks; then chunks off, and no placed maps offered (one allocation: the pool asks the
# backends whether a pin may span chunks).
for c in chunks:3:VRAMIO_POOL_CHUNK_MB=4 chunks_off:1:VRAMIO_POOL_CHUNK_MB=0 \
         chunks_no_placed:1:FAKE_VK_NO_PLACED=1; do
    IFS=: read -r name n var <<<"$c"
    out=$(env -u GDRCOPY_BACKEND -u VRAMIO_ENABLE_VULKAN -u FAKE_VK_NO_PLACED \
          LD_LIBRARY_PATH="$fake" GDRCOPY_BACKEND=vulkan FAKE_CUDA_DEVICES=1 FAKE_VK_GPUS=1 \
          VRAMIO_POOL_CHUNK_MB=4 CHUNKS="$n" "$var" timeout 60 \
          "$B/tests/multigpu/chunk_pin_client" 2>&1)
    report "multigpu/$name/" "multigpu/$name" $? "$out"
done

# The debug log names the Vulkan device that serves each GPU (what shows it on real GPUs).
log=$(env -u GDRCOPY_BACKEND LD_LIBRARY_PATH="$fake" FAKE_CUDA_DEVICES=2 FAKE_VK_GPUS=2 \
      VRAMIO_ENABLE_VULKAN=1 GDRCOPY_ENABLE_LOGGING=1 GDRCOPY_LOG_LEVEL=1 \
      timeout 60 "$B/tests/multigpu/multigpu_client" both 2>&1)
if printf '%s\n' "$log" | grep -q "CUDA device 0 is Vulkan physical device 1 of 2, 'fake GPU 0'" &&
   printf '%s\n' "$log" | grep -q "CUDA device 1 is Vulkan physical device 0 of 2, 'fake GPU 1'"; then
    t_ok "multigpu/log_names_each_gpus_vulkan_device"
else
    t_fail "multigpu/log_names_each_gpus_vulkan_device" "$(printf '%s' "$log" | grep 'vulkan: CUDA' | head -c 300)"
fi
# The same client of the ASan build ('make check' has built it: SCRIPT_ASAN_PROGS).
if [ -e "$B/asan/lib/libgdrapi.so" ] && t_make multigpu/asan/build BUILD="$B/asan" SANITIZE=asan \
       "$B/asan/tests/multigpu/multigpu_client"; then
    run_modes asan "$B/asan"
fi
t_done

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/dmabuf/test_dmabuf_emulated.sh - the dma-buf backend end to end on any machine: runs
# each client (dmabuf_client.c, dmabuf_upstream_client.c, dma_auto_client.c) against the
# library in each mode with the stand-in libcuda.so.1 (tests/fake/fake_cuda_dmabuf.c) found
# through LD_LIBRARY_PATH and its mmap (fake_mmap.c) preloaded; again against the ASan+UBSan
# library when 'make check' has built it. The programs come from make (tests/dmabuf/dmabuf.mk).
# One result line per case.
#
# tests/cross/cross_user.sh runs it for another architecture: CC is the cross compiler, BUILD
# its build, DMABUF_EMU_QEMU the emulator (QEMU_LD_PREFIX set), DMABUF_EMU_PREFIX the prefix of
# the result names, and only the modes an emulator can run (qemu-user ignores MADV_DONTFORK).
set -u
. "$(dirname "$0")/../lib/t.sh"
B=${BUILD:-build}
QEMU=${DMABUF_EMU_QEMU:-}
PFX=dmabuf_emu/${DMABUF_EMU_PREFIX:-}
t_make "${PFX}build" dmabuf-emu-progs || exit 1
fake=$(cd "$B/tests/fake/cuda-dmabuf" && pwd)

run_client() { # name prog mode VAR=value...: run with the stand-in, one result line per case
    local name=$1 prog=$2 mode=$3 out kv
    local -a cmd=(env -u GDRCOPY_BACKEND -u GDRCOPY_USE_DMABUF_MMAP -u GDRCOPY_ENABLE_LOGGING
                  -u VRAMIO_DMA_CROSSOVER_READ -u VRAMIO_DMA_CROSSOVER_WRITE -u LD_PRELOAD)
    shift 3
    # The stand-in's mmap comes first; ASan then no longer comes first, which is harmless here.
    set -- LD_LIBRARY_PATH="$fake" LD_PRELOAD="$fake/libfake_mmap.so" \
        ASAN_OPTIONS=verify_asan_link_order=0 "$@"
    if [ -n "$QEMU" ]; then
        cmd+=("$QEMU")
        for kv in "$@"; do cmd+=(-E "$kv"); done
    else
        cmd+=("$@")
    fi
    out=$(timeout --kill-after=10 120 "${cmd[@]}" "$prog" "$mode" 2>&1)
    t_relay "$PFX$name/exit" $? "$out" "$PFX$name/"
}

# The modes of dmabuf_upstream_client.c: what GDRCopy 2.6 does on an R610 driver.
run_upstream() { # label prog
    local label=$1 prog=$2 v=FAKE_CUDA_VERSION=13030
    run_client "$label/open_refused_cuinit" "$prog" open_refused $v FAKE_CUDA_INIT=100 \
        EXPECT_WHY="cuInit failed"
    run_client "$label/open_refused_no_device" "$prog" open_refused $v FAKE_CUDA_DEVICES=0 \
        EXPECT_WHY="no CUDA device"
    run_client "$label/open_refused_no_dmabuf_device" "$prog" open_refused $v \
        FAKE_CUDA_DEVICES=2 FAKE_CUDA_DMABUF=0:0 EXPECT_WHY="DMA_BUF_SUPPORTED is 0"
    run_client "$label/open_refused_forced_no_dmabuf_device" "$prog" open_refused $v \
        FAKE_CUDA_DMABUF=0 GDRCOPY_USE_DMABUF_MMAP=1 EXPECT_WHY="DMA_BUF_SUPPORTED is 0"
    run_client "$label/coherent" "$prog" coherent $v FAKE_CUDA_COHERENT=1
    run_client "$label/refuse_one" "$prog" refuse_one $v
    run_client "$label/rounding" "$prog" rounding $v
    run_client "$label/multidev" "$prog" multidev $v FAKE_CUDA_DEVICES=2 FAKE_CUDA_NO_CTX=1
    run_client "$label/multidev_no_dmabuf" "$prog" multidev $v FAKE_CUDA_DEVICES=2 \
        FAKE_CUDA_DMABUF=1:0
    run_client "$label/exports" "$prog" exports $v
    [ -n "$QEMU" ] && return
    run_client "$label/env_rule" "$prog" env_rule $v
    run_client "$label/fd_exhaustion" "$prog" fd_exhaustion $v
    run_client "$label/cloexec_fork" "$prog" cloexec_fork $v FAKE_CUDA_EXPORT_DELAY_US=2000
    run_client "$label/fork_closes_exports" "$prog" fork_closes_exports $v
    run_client "$label/ctx_pin" "$prog" ctx_pin $v FAKE_CUDA_NO_CTX=1 FAKE_CUDA_NO_OWNER=1
    # Driver 580: exports, refuses their mmap; the forced trial finds it out.
    set -- FAKE_CUDA_VERSION=13000 GDRCOPY_USE_DMABUF_MMAP=1
    run_client "$label/ctx_open_null" "$prog" ctx_open_null "$@" FAKE_CUDA_NO_CTX=1
    run_client "$label/trial_transient" "$prog" trial_transient "$@" FAKE_CUDA_INTEGRATED=1
    run_client "$label/env_probe" "$prog" env_probe FAKE_CUDA_VERSION=13000 FAKE_CUDA_INTEGRATED=1
    run_client "$label/default_alignment" "$prog" upstream_alignment $v
    run_client "$label/upstream_alignment" "$prog" upstream_alignment $v VRAMIO_UPSTREAM_ALIGNMENT=1
}

run_modes() { # label build: the clients of that build, against its library
    local label=$1 dir=$2/tests/dmabuf mode
    local prog=$dir/dmabuf_client up=$dir/dmabuf_upstream_client auto=$dir/dma_auto_client
    run_upstream "$label" "$up"
    [ -n "$QEMU" ] && return
    run_client "$label/main" "$prog" main FAKE_CUDA_VERSION=13030
    run_client "$label/force_pcie_coherent" "$prog" force_pcie_coherent FAKE_CUDA_VERSION=13030 \
        FAKE_CUDA_COHERENT=1
    run_client "$label/old" "$prog" old FAKE_CUDA_VERSION=13000
    run_client "$label/refuse" "$prog" refuse FAKE_CUDA_VERSION=13030 FAKE_CUDA_MMAP=refuse
    # 580: its exports' mmap refused (the stand-in's rule below 13.3, no FAKE_CUDA_MMAP).
    run_client "$label/forced_refuse" "$prog" forced_refuse FAKE_CUDA_VERSION=13000 \
        GDRCOPY_USE_DMABUF_MMAP=1
    run_client "$label/forced_ok" "$prog" forced_ok FAKE_CUDA_VERSION=13000 \
        GDRCOPY_USE_DMABUF_MMAP=1 FAKE_CUDA_INTEGRATED=1
    # The _auto copies (src/dma/) against the same stand-in.
    set -- FAKE_CUDA_VERSION=13030 VRAMIO_DMA_CROSSOVER_READ=8K VRAMIO_DMA_CROSSOVER_WRITE=8192
    run_client "$label/auto_set" "$auto" set "$@"
    run_client "$label/auto_noctx" "$auto" noctx "$@" FAKE_CUDA_NO_CTX=1
    run_client "$label/auto_measured" "$auto" measured FAKE_CUDA_VERSION=13030
    run_client "$label/auto_measured_no_pools" "$auto" measured FAKE_CUDA_VERSION=13030 \
        FAKE_CUDA_NO_ASYNC_ALLOC=1
    run_client "$label/auto_otherctx" "$auto" otherctx "$@" FAKE_CUDA_OTHER_CTX=1
}

run_modes plain "$B"
# gdr_open with a usable gdrdrv (a fake one) calls no cuInit; the real dmabuf backend is probed
# at the first pin gdrdrv refuses (tests/unit/wb_lazy_probe.c, its part with the stand-in).
if [ -z "$QEMU" ] && t_make "${PFX}lazy/build" "$B/tests/wb_lazy_probe"; then
    run_client lazy "$B/tests/wb_lazy_probe" -
fi
# The same clients of the ASan build ('make check' has built them: SCRIPT_ASAN_PROGS).
if [ -z "$QEMU" ] && [ -e "$B/asan/lib/libgdrapi.so" ] &&
   t_make "${PFX}asan/build" BUILD="$B/asan" SANITIZE=asan \
       "$B"/asan/tests/dmabuf/{dmabuf_client,dmabuf_upstream_client,dma_auto_client}; then
    run_modes asan "$B/asan"
fi
t_done

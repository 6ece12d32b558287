/* SPDX-License-Identifier: MIT */
/*
 * fence.h - every fence the library issues, inline: the store fence that ends a copy to a
 * mapping, the read fence that begins a copy from one, the full fence of a copy while mappings
 * of several types are live, and the full fence with a wait that comes before a clock read.
 * Which copy issues which is said once, at the top of src/copy/copy.h; tests/unit/
 * wb_copy_fences.c (x86, ptrace) and tests/unit/wb_copy_insns.c (arm64 and ppc64 under
 * qemu-user's instruction log) check that the copies run them.
 */
#ifndef VRAMIO_ARCH_FENCE_H
#define VRAMIO_ARCH_FENCE_H

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/*
 * What ends every write to a mapping, whatever its type, so that all its bytes reach the
 * device before any later store of the thread (the flag the GPU polls after the data):
 *  - x86: SFENCE. Non-temporal stores to WC memory are weakly ordered against later stores;
 *    SFENCE drains the write-combining buffers first. Stores to cached (CACHING) memory are
 *    already seen in program order by every coherent observer (x86 orders stores), so there
 *    it only costs a few cycles.
 *  - arm64: DMB OSHST, stores before it ordered before stores after it for every observer in
 *    the Outer Shareable domain. Needed for every type: Device and Normal non-cacheable (WC)
 *    stores are not ordered among themselves otherwise, and neither are Normal cacheable
 *    stores, which are all a CACHING mapping's (the only type a Grace pin gets). The GPU of
 *    a coherent platform reaches CPU memory over NVLink-C2C as an agent of the system's
 *    coherent interconnect, not as one of the CPUs: the architecture promises it nothing of
 *    an Inner Shareable barrier (DMB ISHST orders stores only for the observers of the Inner
 *    Shareable domain, the CPUs that one operating system runs on); the Outer Shareable
 *    domain contains the Inner one and the system's coherent agents, as Linux assumes for
 *    every DMA-coherent device (its dma_wmb() is DMB OSHST). A full-system DMB ST would
 *    also do, for no gain.
 *  - ppc64: SYNC (hwsync, a sequentially consistent fence). Caching-inhibited stores (a BAR
 *    is such storage on POWER) are ordered against later ones only by sync or eieio, not by
 *    lwsync; sync also covers cached stores for a coherent (NVLink) GPU, where lwsync would
 *    do.
 */
static inline void vr_store_fence(void)
{
#if defined(__x86_64__)
    _mm_sfence();
#elif defined(__aarch64__)
    __asm__ volatile("dmb oshst" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* Every earlier load and store of this thread, to any mapping type, ordered before every
 * later one (mfence, dmb sy, sync): what a copy ends with while mappings of more than one type
 * are live (src/core/handles.h, vr_mappings_mixed). On ppc64 it is sync, not lwsync: lwsync
 * does not order accesses to caching-inhibited storage. */
static inline void vr_full_fence(void)
{
#if defined(__x86_64__)
    _mm_mfence();
#elif defined(__aarch64__)
    __asm__ volatile("dmb sy" ::: "memory");
#elif defined(__powerpc64__)
    __asm__ volatile("sync" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/*
 * What begins every read from a mapping, so that each byte read is one the device memory held
 * after the read began:
 *  - x86: MFENCE (vr_full_fence). A streaming load (MOVNTDQA) of WC memory may be answered from a
 *    streaming-load buffer that an earlier streaming load of the same line filled, for as long
 *    as that buffer lives: a poll of a flag would see the flag's old value, and a read of data
 *    behind a fresh flag the data's old value. MFENCE retires those buffers; LFENCE does not
 *    (on the H200 machine back-to-back 8-byte reads of one address took 0.055 us after LFENCE,
 *    1.03 us, one PCIe round trip, after MFENCE), nor is SFENCE documented to (bench/
 *    read_bench.cu times both). It also keeps the read after every earlier load and store of
 *    the thread: a flag written through the library is on its way to the device before the
 *    answer to it is read (x86 lets a load pass an earlier store, and weakly ordered WC loads
 *    pass earlier loads).
 *  - arm64: DMB SY, for the same order (Normal non-cacheable loads are not ordered after earlier
 *    loads or stores by anything else). AArch64 has no streaming load like MOVNTDQA.
 *  - ppc64: SYNC, likewise (LWSYNC does not order caching-inhibited loads); elsewhere a
 *    sequentially consistent fence.
 * The price is the wait for the thread's earlier accesses, which a read through the mapping
 * pays anyway (a read of the BAR is an uncached round trip, about 1 us).
 */
static inline void vr_read_fence(void)
{
    vr_full_fence();
}

/* Every earlier load and store completed (and the stores visible) before any later
 * instruction runs, a clock read included: rdtsc, and the clock reads of the vDSO, do not
 * wait for earlier slow uncached loads or for stores still on their way (timing a BAR copy). */
static inline void vr_full_fence_wait(void)
{
#if defined(__x86_64__)
    __asm__ volatile("mfence; lfence" ::: "memory");
#elif defined(__aarch64__)
    __asm__ volatile("dsb sy; isb" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

#endif /* VRAMIO_ARCH_FENCE_H */

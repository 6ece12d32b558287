/* SPDX-License-Identifier: MIT */
/*
 * fence.h - every fence the library issues, inline: the store fence that ends a copy to a
 * mapping, the full fence of a copy while mappings of several types are live, and the full
 * fence with a wait that comes before a clock read.
 */
#ifndef VRAMIO_ARCH_FENCE_H
#define VRAMIO_ARCH_FENCE_H

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* Stores to a WC (or device) mapping are weakly ordered against later stores (a flag the GPU
 * polls, a doorbell); one store fence at the end of a whole copy makes them all visible
 * first. */
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
 * are live (src/handles.h, vr_mappings_mixed). */
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

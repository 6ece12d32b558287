/* SPDX-License-Identifier: MIT */
/*
 * fence.h - the store fence of a mapping: stores to a WC (or device) mapping are weakly
 * ordered against later stores (a flag the GPU polls, a doorbell); one fence at the end of a
 * whole copy makes them all visible first. Inline: every copy to a mapping ends with it.
 */
#ifndef VRAMIO_ARCH_FENCE_H
#define VRAMIO_ARCH_FENCE_H

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

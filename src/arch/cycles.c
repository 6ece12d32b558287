/* SPDX-License-Identifier: MIT */
/* cycles.c - the cycle clock of pin time stamps (see cycles.h). */
#include "cycles.h"

#include <pthread.h>
#include <time.h>

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>

uint64_t vr_cycles_now(void)
{
    return __rdtsc();
}

static uint32_t clock_rate;
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;

/* The TSC rate against the monotonic clock over 2 ms: once per process, at the first
 * gdr_get_info of such a pin, so that opening and pinning stay cheap. */
static void clock_calibrate(void)
{
    uint64_t t0 = mono_ns(), c0 = __rdtsc(), t1, c1;

    do {
        t1 = mono_ns();
    } while (t1 - t0 < 2000000u);
    c1 = __rdtsc();
    clock_rate = (uint32_t)((c1 - c0) * 1000000u / (t1 - t0));
}

uint32_t vr_cycles_per_ms(void)
{
    pthread_once(&clock_once, clock_calibrate);
    return clock_rate;
}
#else
uint64_t vr_cycles_now(void)
{
    return mono_ns();
}

uint32_t vr_cycles_per_ms(void)
{
    return 1000000u;
}
#endif

uint32_t vr_kernel_cycles_per_ms(void)
{
#if defined(__aarch64__)
    /* The kernel's get_cycles() is the generic timer, whose rate EL0 can read. */
    uint64_t freq;

    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(freq));
    return (uint32_t)(freq / 1000);
#else
    return 0;
#endif
}

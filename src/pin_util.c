/* SPDX-License-Identifier: MIT */
/* pin_util.c - GPU-page arithmetic and pin time stamps for the user-space backends. */
#include "pin_util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "gdrapi.h"

int vr_gpu_page_range(uint64_t addr, uint64_t size, uint64_t *va, uint64_t *len)
{
    uint64_t start = addr & GPU_PAGE_MASK;
    uint64_t last;

    if (size == 0 || size - 1 > UINT64_MAX - addr)
        return EINVAL;
    last = addr + (size - 1);            /* last byte: cannot wrap, checked above */
    if ((last | GPU_PAGE_OFFSET) == UINT64_MAX)
        return EINVAL;                   /* the rounded end would be 2^64 */
    *va = start;
    *len = (last | GPU_PAGE_OFFSET) + 1 - start;
    return 0;
}

int vr_range_inside(uint64_t va, uint64_t len, uint64_t base, uint64_t bsize)
{
    if (va < base || len > bsize)
        return 0;
    return va - base <= bsize - len;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>

uint64_t vr_pin_clock_now(void)
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

uint32_t vr_pin_clock_per_ms(void)
{
    pthread_once(&clock_once, clock_calibrate);
    return clock_rate;
}
#else
uint64_t vr_pin_clock_now(void)
{
    return mono_ns();
}

uint32_t vr_pin_clock_per_ms(void)
{
    return 1000000u;
}
#endif

int vr_check_owner(pid_t owner, char *why, size_t len)
{
    if (owner == getpid())
        return 0;
    if (why && len)
        snprintf(why, len, "this gdr_t was opened by process %d; a forked child must call "
                 "gdr_open itself", (int)owner);
    return EACCES;
}

int vr_compat_driver_version(void *ctx, int *major, int *minor)
{
    (void)ctx;
    *major = 2;
    *minor = 6;
    return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * clock.h - the one monotonic clock of the library, the tools and the benchmarks:
 * nanoseconds from an arbitrary start, for durations and deadlines (never a date). In util/
 * because the tools share it; the library's cycle clock of pin time stamps is arch/cycles.h.
 */
#ifndef VRAMIO_CLOCK_H
#define VRAMIO_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t vr_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif /* VRAMIO_CLOCK_H */

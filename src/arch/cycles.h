/* SPDX-License-Identifier: MIT */
/*
 * cycles.h - the cycle clock behind gdr_info's tm_cycles and cycles_per_ms: the time stamp
 * counter on x86 (its rate measured once), nanoseconds elsewhere; and the rate of the
 * kernel's get_cycles() where user space can read it, for modules that report none.
 */
#ifndef VRAMIO_ARCH_CYCLES_H
#define VRAMIO_ARCH_CYCLES_H

#include <stdint.h>

/* A time stamp in CPU cycles (the TSC on x86, nanoseconds elsewhere). */
uint64_t vr_cycles_now(void);

/* The rate of vr_cycles_now() per millisecond, measured once per process. */
uint32_t vr_cycles_per_ms(void);

/* The rate per millisecond of the kernel's get_cycles() where user space can read it (the
 * generic timer's cntfrq_el0 on arm64), else 0. */
uint32_t vr_kernel_cycles_per_ms(void);

#endif /* VRAMIO_ARCH_CYCLES_H */

/* SPDX-License-Identifier: MIT */
/*
 * pin_util.h - small pure helpers shared by the backends that live in user space (dma-buf,
 * vulkan): the GPU-page arithmetic of a pin request, the fork check and the compatible
 * driver version. (The pin time stamp's clock is arch/cycles.h.)
 */
#ifndef VRAMIO_PIN_UTIL_H
#define VRAMIO_PIN_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Round [addr, addr+size) out to whole GPU pages (GPU_PAGE_SIZE). 0, or EINVAL when size is
 * 0 or the range wraps around the end of the address space. */
int vr_gpu_page_range(uint64_t addr, uint64_t size, uint64_t *va, uint64_t *len);

/* 1 when [va, va+len) lies inside [base, base+bsize), else 0 (no overflow on any input). */
int vr_range_inside(uint64_t va, uint64_t len, uint64_t base, uint64_t bsize);

/* EACCES with why when the calling process is not owner (a forked child using its parent's
 * gdr_t: the driver objects behind it belong to the parent), else 0. */
int vr_check_owner(pid_t owner, char *why, size_t len);

/* The gdrdrv version a backend without the kernel module behaves like (a persistent-mode
 * 2.6), so that clients comparing the driver version against 2.1 / 2.5 take modern paths. */
int vr_compat_driver_version(void *ctx, int *major, int *minor);

#endif /* VRAMIO_PIN_UTIL_H */

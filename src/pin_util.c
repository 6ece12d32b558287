/* SPDX-License-Identifier: MIT */
/* pin_util.c - GPU-page arithmetic and the fork check for the user-space backends. */
#include "pin_util.h"

#include <errno.h>
#include <stdio.h>
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

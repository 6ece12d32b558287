// SPDX-License-Identifier: MIT
/*
 * copy_c.c - the portable kernel: 8-byte volatile accesses on the mapping side.
 *
 * It runs on any CPU, and because its accesses are aligned and never wider than 8 bytes it
 * is also every kernel's DEVICE path (copy.c). volatile keeps the compiler from merging the
 * accesses into wider vector ones or turning the loop into a memcpy call.
 */
#include <stdint.h>
#include <string.h>

#include "copy_kernels.h"

/* dst (mapping) 8-byte aligned, n a multiple of 8. */
static void store8(void *dst, const void *src, size_t n)
{
    volatile uint64_t *d = dst;
    const unsigned char *s = src;
    uint64_t v;

    for (size_t i = 0; i < n / 8; i++) {
        memcpy(&v, s + 8 * i, 8);
        d[i] = v;
    }
}

/* src (mapping) 8-byte aligned, n a multiple of 8. */
static void load8(void *dst, const void *src, size_t n)
{
    const volatile uint64_t *s = src;
    unsigned char *d = dst;
    uint64_t v;

    for (size_t i = 0; i < n / 8; i++) {
        v = s[i];
        memcpy(d + 8 * i, &v, 8);
    }
}

void vr_copy_c_to(void *dst, const void *src, size_t n)
{
    if (!(((uintptr_t)dst | n) & 7)) {
        store8(dst, src, n);
        return;
    }
    vr_copy_shaped(1, dst, src, n, 8, store8, NULL);
}

void vr_copy_c_from(void *dst, const void *src, size_t n)
{
    if (!(((uintptr_t)src | n) & 7)) {
        load8(dst, src, n);
        return;
    }
    vr_copy_shaped(0, dst, src, n, 8, load8, NULL);
}

// SPDX-License-Identifier: MIT
/*
 * copy_movdir64b.c - 64-byte direct stores: each MOVDIR64B writes one 64-byte aligned block
 * as a single non-torn transaction, whatever the alignment of the source. Selectable by name
 * only (see the kernel order in copy.c: slower than NT stores on the GPU machine). Its reads
 * are sse41's streaming loads. Built with -mmovdir64b only (copy.mk).
 */
#include <immintrin.h>

#include "copy_kernels.h"

/* dst (mapping) 64-byte aligned, n a multiple of 64. */
void vr_copy_movdir64b_store(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;

    for (; n; n -= 64, s += 64, d += 64)
        _movdir64b(d, s);
}

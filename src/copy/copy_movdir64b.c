// SPDX-License-Identifier: MIT
/*
 * copy_movdir64b.c - 64-byte direct stores: each MOVDIR64B writes one 64-byte aligned block
 * as a single non-torn transaction, whatever the alignment of the source. Selectable by name
 * only (see the kernel order in copy.c: slower than NT stores on the GPU machine). Its reads
 * are sse41's streaming loads (copy.c's table). Built with -mmovdir64b only (copy.mk); the
 * 16-byte step to the block's alignment is SSE2's MOVNTDQ, which every x86-64 CPU has.
 */
#include <stdint.h>
#include <immintrin.h>

#include "copy_kernels.h"

/* dst (mapping) 64-byte aligned, n a multiple of 64. */
static void store_lines(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;

    for (; n; n -= 64, s += 64, d += 64)
        _movdir64b(d, s);
}

/* dst 16-byte aligned, n a multiple of 16. */
static void store16(void *dst, const void *src, size_t n)
{
    __m128i *d = dst;
    const unsigned char *s = src;

    for (; n; n -= 16, s += 16, d++)
        _mm_stream_si128(d, _mm_loadu_si128((const __m128i *)s));
}

/* Not whole blocks: out of line, so that the whole-block write above reaches its loop by a
 * jump, with no register saved. */
static __attribute__((noinline)) void write_shaped(void *dst, const void *src, size_t n)
{
    vr_copy_shaped(1, dst, src, n, 64, store_lines, store16);
}

void vr_copy_movdir64b_to_wc(void *dst, const void *src, size_t n)
{
    if (!(((uintptr_t)dst | n) & 63)) {
        store_lines(dst, src, n);
        return;
    }
    write_shaped(dst, src, n);
}

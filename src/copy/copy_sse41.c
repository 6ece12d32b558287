// SPDX-License-Identifier: MIT
/*
 * copy_sse41.c - 16-byte kernel: MOVNTDQ stores to the mapping, MOVNTDQA (SSE4.1) streaming
 * loads from it; also the movdir64b kernel's reads (copy.c's table). Built with -msse4.1 only
 * (copy.mk).
 */
#include <stdint.h>
#include <string.h>
#include <immintrin.h>

#include "copy_kernels.h"

/* dst (mapping) 16-byte aligned, n a multiple of 16. */
static void store16(void *dst, const void *src, size_t n)
{
    __m128i *d = dst;
    const unsigned char *s = src;

    for (; n >= 64; n -= 64, s += 64, d += 4) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128(d, a);
        _mm_stream_si128(d + 1, b);
        _mm_stream_si128(d + 2, c);
        _mm_stream_si128(d + 3, e);
    }
    for (; n; n -= 16, s += 16, d++)
        _mm_stream_si128(d, _mm_loadu_si128((const __m128i *)s));
}

/* src (mapping) 16-byte aligned, n a multiple of 16. The four loads of a line are issued
 * before any store so that they share one streaming-load buffer fill. */
static void load16(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    __m128i *s = (__m128i *)(uintptr_t)src;   /* gcc's prototype lacks the const */

    for (; n >= 64; n -= 64, s += 4, d += 64) {
        __m128i a = _mm_stream_load_si128(s);
        __m128i b = _mm_stream_load_si128(s + 1);
        __m128i c = _mm_stream_load_si128(s + 2);
        __m128i e = _mm_stream_load_si128(s + 3);
        _mm_storeu_si128((__m128i *)d, a);
        _mm_storeu_si128((__m128i *)(d + 16), b);
        _mm_storeu_si128((__m128i *)(d + 32), c);
        _mm_storeu_si128((__m128i *)(d + 48), e);
    }
    for (; n; n -= 16, s++, d += 16)
        _mm_storeu_si128((__m128i *)d, _mm_stream_load_si128(s));
}

/* 1 <= n <= 64 bytes at any place: one streaming load of each aligned 16-byte chunk they
 * touch (one to five, all issued before any store). */
static void small_read(void *dst, const void *src, size_t n)
{
    const uintptr_t lo = (uintptr_t)src & ~(uintptr_t)15;
    const size_t chunks = (((uintptr_t)src + n - 1) >> 4) - (lo >> 4) + 1;
    unsigned char buf[80] __attribute__((aligned(16)));
    __m128i *s = (__m128i *)lo, v[5];
    size_t k;

    for (k = 0; k < chunks; k++)
        v[k] = _mm_stream_load_si128(s + k);
    for (k = 0; k < chunks; k++)
        _mm_store_si128((__m128i *)buf + k, v[k]);
    memcpy(dst, buf + ((uintptr_t)src - lo), n);
}

/* More than 64 bytes, not whole blocks: out of line, so that the whole-block and small reads
 * above it save no register and reach their loads by a jump. */
static __attribute__((noinline)) void read_lines(void *dst, const void *src, size_t n)
{
    vr_copy_read_lines(dst, src, n, small_read, load16);
}

/* Not whole blocks: out of line, so that the whole-block write above reaches its loop by a
 * jump, with no register saved. */
static __attribute__((noinline)) void write_shaped(void *dst, const void *src, size_t n)
{
    vr_copy_shaped(1, dst, src, n, 16, store16, NULL);
}

void vr_copy_sse41_to_wc(void *dst, const void *src, size_t n)
{
    if (!(((uintptr_t)dst | n) & 15)) {
        store16(dst, src, n);
        return;
    }
    write_shaped(dst, src, n);
}

void vr_copy_sse41_from_wc(void *dst, const void *src, size_t n)
{
    if (!(((uintptr_t)src | n) & 15)) {     /* whole blocks at a block-aligned place */
        load16(dst, src, n);
        return;
    }
    if (n <= 64) {
        if (n)
            small_read(dst, src, n);
        return;
    }
    read_lines(dst, src, n);
}

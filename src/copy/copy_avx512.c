// SPDX-License-Identifier: MIT
/*
 * copy_avx512.c - 64-byte kernel: one VMOVNTDQ zmm store fills a whole WC buffer line;
 * VMOVNTDQA zmm streaming loads read a whole line at once. AVX-512F only, built with
 * -mavx512f only (copy.mk).
 */
#include <stdint.h>
#include <string.h>
#include <immintrin.h>

#include "copy_kernels.h"

/* dst (mapping) 64-byte aligned, n a multiple of 64. */
static void store_lines(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;

    for (; n >= 256; n -= 256, s += 256, d += 256) {
        __m512i a = _mm512_loadu_si512(s);
        __m512i b = _mm512_loadu_si512(s + 64);
        __m512i c = _mm512_loadu_si512(s + 128);
        __m512i e = _mm512_loadu_si512(s + 192);
        _mm512_stream_si512((void *)d, a);
        _mm512_stream_si512((void *)(d + 64), b);
        _mm512_stream_si512((void *)(d + 128), c);
        _mm512_stream_si512((void *)(d + 192), e);
    }
    for (; n; n -= 64, s += 64, d += 64)
        _mm512_stream_si512((void *)d, _mm512_loadu_si512(s));
}

/* dst 16-byte aligned, n a multiple of 16: the step to the block's alignment. */
static void store16(void *dst, const void *src, size_t n)
{
    __m128i *d = dst;
    const unsigned char *s = src;

    for (; n; n -= 16, s += 16, d++)
        _mm_stream_si128(d, _mm_loadu_si128((const __m128i *)s));
}

/* src (mapping) 64-byte aligned, n a multiple of 64; four lines in flight per turn. */
static void load_lines(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    unsigned char *s = (unsigned char *)(uintptr_t)src;   /* gcc's prototype lacks the const */

    for (; n >= 256; n -= 256, s += 256, d += 256) {
        __m512i a = _mm512_stream_load_si512(s);
        __m512i b = _mm512_stream_load_si512(s + 64);
        __m512i c = _mm512_stream_load_si512(s + 128);
        __m512i e = _mm512_stream_load_si512(s + 192);
        _mm512_storeu_si512(d, a);
        _mm512_storeu_si512(d + 64, b);
        _mm512_storeu_si512(d + 128, c);
        _mm512_storeu_si512(d + 192, e);
    }
    for (; n; n -= 64, s += 64, d += 64)
        _mm512_storeu_si512(d, _mm512_stream_load_si512(s));
}

/* 1 <= n <= 64 bytes at any place: one streaming load of the aligned 16-, 32- or 64-byte
 * chunk that holds them (the smallest that does), or of each of the two lines they straddle. */
static void small_read(void *dst, const void *src, size_t n)
{
    const uintptr_t a = (uintptr_t)src, last = a + n - 1;
    unsigned char buf[128] __attribute__((aligned(64)));
    uintptr_t lo;

    if ((a >> 4) == (last >> 4)) {
        lo = a & ~(uintptr_t)15;
        _mm_store_si128((__m128i *)buf, _mm_stream_load_si128((__m128i *)lo));
    } else if ((a >> 5) == (last >> 5)) {
        lo = a & ~(uintptr_t)31;
        _mm256_store_si256((__m256i *)buf, _mm256_stream_load_si256((__m256i *)lo));
    } else {
        unsigned char *s = (unsigned char *)(lo = a & ~(uintptr_t)63);
        __m512i x = _mm512_stream_load_si512(s);

        if ((last >> 6) != (a >> 6))
            _mm512_store_si512(buf + 64, _mm512_stream_load_si512(s + 64));
        _mm512_store_si512(buf, x);
    }
    memcpy(dst, buf + (a - lo), n);
}

/* More than 64 bytes, not whole blocks: out of line, so that the whole-block and small reads
 * above it save no register and reach their loads by a jump. */
static __attribute__((noinline)) void read_lines(void *dst, const void *src, size_t n)
{
    vr_copy_read_lines(dst, src, n, small_read, load_lines);
}

/* Not whole blocks: out of line, so that the whole-block write above reaches its loop by a
 * jump, with no register saved. */
static __attribute__((noinline)) void write_shaped(void *dst, const void *src, size_t n)
{
    vr_copy_shaped(1, dst, src, n, 64, store_lines, store16);
}

void vr_copy_avx512_to_wc(void *dst, const void *src, size_t n)
{
    if (!(((uintptr_t)dst | n) & 63)) {
        store_lines(dst, src, n);
        return;
    }
    write_shaped(dst, src, n);
}

void vr_copy_avx512_from_wc(void *dst, const void *src, size_t n)
{
    if (!(((uintptr_t)src | n) & 63)) {     /* whole blocks at a block-aligned place */
        load_lines(dst, src, n);
        return;
    }
    if (n <= 64) {
        if (n)
            small_read(dst, src, n);
        return;
    }
    read_lines(dst, src, n);
}

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
void vr_copy_avx512_store(void *dst, const void *src, size_t n)
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

/* src (mapping) 64-byte aligned, n a multiple of 64; four lines in flight per turn. */
void vr_copy_avx512_load(void *dst, const void *src, size_t n)
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

/* 1 <= n <= 64 bytes at any place (vr_small_span): one streaming load of the 16-, 32- or
 * 64-byte chunk that holds them, or of each of the two lines they straddle. */
void vr_copy_avx512_small_load(void *dst, const void *src, size_t n)
{
    unsigned char buf[128] __attribute__((aligned(64)));
    uintptr_t lo;
    size_t w, len = vr_small_span((uintptr_t)src, n, 64, &lo, &w);
    unsigned char *s = (unsigned char *)lo;

    if (w == 16) {
        _mm_store_si128((__m128i *)buf, _mm_stream_load_si128((__m128i *)s));
    } else if (w == 32) {
        _mm256_store_si256((__m256i *)buf, _mm256_stream_load_si256((__m256i *)s));
    } else {
        __m512i a = _mm512_stream_load_si512(s);

        if (len > 64)
            _mm512_store_si512(buf + 64, _mm512_stream_load_si512(s + 64));
        _mm512_store_si512(buf, a);
    }
    memcpy(dst, buf + ((uintptr_t)src - lo), n);
}

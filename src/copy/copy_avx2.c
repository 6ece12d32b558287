// SPDX-License-Identifier: MIT
/*
 * copy_avx2.c - 32-byte kernel: VMOVNTDQ ymm stores to the mapping, VMOVNTDQA ymm streaming
 * loads (AVX2) from it. Built with -mavx2 only (copy.mk); the compiler ends each function
 * with vzeroupper, so the SSE code around it pays no transition penalty.
 */
#include <stdint.h>
#include <string.h>
#include <immintrin.h>

#include "copy_kernels.h"

/* dst (mapping) 32-byte aligned, n a multiple of 32. */
void vr_copy_avx2_store(void *dst, const void *src, size_t n)
{
    __m256i *d = dst;
    const unsigned char *s = src;

    for (; n >= 128; n -= 128, s += 128, d += 4) {
        __m256i a = _mm256_loadu_si256((const __m256i *)s);
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(s + 64));
        __m256i e = _mm256_loadu_si256((const __m256i *)(s + 96));
        _mm256_stream_si256(d, a);
        _mm256_stream_si256(d + 1, b);
        _mm256_stream_si256(d + 2, c);
        _mm256_stream_si256(d + 3, e);
    }
    for (; n; n -= 32, s += 32, d++)
        _mm256_stream_si256(d, _mm256_loadu_si256((const __m256i *)s));
}

/* src (mapping) 32-byte aligned, n a multiple of 32. Loads of two lines go out before the
 * stores, for more reads in flight over the slow uncached path. */
void vr_copy_avx2_load(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const __m256i *s = src;

    for (; n >= 128; n -= 128, s += 4, d += 128) {
        __m256i a = _mm256_stream_load_si256(s);
        __m256i b = _mm256_stream_load_si256(s + 1);
        __m256i c = _mm256_stream_load_si256(s + 2);
        __m256i e = _mm256_stream_load_si256(s + 3);
        _mm256_storeu_si256((__m256i *)d, a);
        _mm256_storeu_si256((__m256i *)(d + 32), b);
        _mm256_storeu_si256((__m256i *)(d + 64), c);
        _mm256_storeu_si256((__m256i *)(d + 96), e);
    }
    for (; n; n -= 32, s++, d += 32)
        _mm256_storeu_si256((__m256i *)d, _mm256_stream_load_si256(s));
}

/* 1 <= n <= 64 bytes at any place (vr_small_span): one streaming load of the 16- or 32-byte
 * chunk that holds them, or of each 32-byte chunk they touch (all issued before any store). */
void vr_copy_avx2_small_load(void *dst, const void *src, size_t n)
{
    unsigned char buf[128] __attribute__((aligned(32)));
    uintptr_t lo;
    size_t w, len = vr_small_span((uintptr_t)src, n, 32, &lo, &w);
    __m256i *s = (__m256i *)lo;

    if (w == 16) {
        _mm_store_si128((__m128i *)buf, _mm_stream_load_si128((__m128i *)s));
    } else {
        __m256i a = _mm256_stream_load_si256(s), b = a, c = a;

        if (len > 32)
            b = _mm256_stream_load_si256(s + 1);
        if (len > 64)
            c = _mm256_stream_load_si256(s + 2);
        _mm256_store_si256((__m256i *)buf, a);
        _mm256_store_si256((__m256i *)buf + 1, b);
        _mm256_store_si256((__m256i *)buf + 2, c);
    }
    memcpy(dst, buf + ((uintptr_t)src - lo), n);
}

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
static void store32(void *dst, const void *src, size_t n)
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

/* dst 16-byte aligned, n a multiple of 16: the step to the block's alignment. */
static void store16(void *dst, const void *src, size_t n)
{
    __m128i *d = dst;
    const unsigned char *s = src;

    for (; n; n -= 16, s += 16, d++)
        _mm_stream_si128(d, _mm_loadu_si128((const __m128i *)s));
}

/* src (mapping) 32-byte aligned, n a multiple of 32. Loads of two lines go out before the
 * stores, for more reads in flight over the slow uncached path. */
static void load32(void *dst, const void *src, size_t n)
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

/* 1 <= n <= 64 bytes at any place: one streaming load of the aligned 16-byte chunk that holds
 * them, else of each aligned 32-byte chunk they touch (all issued before any store). */
static void small_read(void *dst, const void *src, size_t n)
{
    const uintptr_t a = (uintptr_t)src, last = a + n - 1;
    unsigned char buf[96] __attribute__((aligned(32)));
    uintptr_t lo;

    if ((a >> 4) == (last >> 4)) {
        lo = a & ~(uintptr_t)15;
        _mm_store_si128((__m128i *)buf, _mm_stream_load_si128((__m128i *)lo));
    } else {
        const __m256i *s = (const __m256i *)(lo = a & ~(uintptr_t)31);
        const size_t chunks = (last >> 5) - (a >> 5) + 1;
        __m256i x = _mm256_stream_load_si256(s), y = x, z = x;

        if (chunks > 1)
            y = _mm256_stream_load_si256(s + 1);
        if (chunks > 2)
            z = _mm256_stream_load_si256(s + 2);
        _mm256_store_si256((__m256i *)buf, x);
        _mm256_store_si256((__m256i *)buf + 1, y);
        _mm256_store_si256((__m256i *)buf + 2, z);
    }
    memcpy(dst, buf + (a - lo), n);
}

/* More than 64 bytes, not whole blocks: out of line, so that the whole-block and small reads
 * above it save no register and reach their loads by a jump. */
static __attribute__((noinline)) void read_lines(void *dst, const void *src, size_t n)
{
    vr_copy_read_lines(dst, src, n, small_read, load32);
}

/* Not whole blocks: out of line, so that the whole-block write above reaches its loop by a
 * jump, with no register saved. */
static __attribute__((noinline)) void write_shaped(void *dst, const void *src, size_t n)
{
    vr_copy_shaped(1, dst, src, n, 32, store32, store16);
}

void vr_copy_avx2_to_wc(void *dst, const void *src, size_t n)
{
    if (!(((uintptr_t)dst | n) & 31)) {
        store32(dst, src, n);
        return;
    }
    write_shaped(dst, src, n);
}

void vr_copy_avx2_from_wc(void *dst, const void *src, size_t n)
{
    if (!(((uintptr_t)src | n) & 31)) {     /* whole blocks at a block-aligned place */
        load32(dst, src, n);
        return;
    }
    if (n <= 64) {
        if (n)
            small_read(dst, src, n);
        return;
    }
    read_lines(dst, src, n);
}

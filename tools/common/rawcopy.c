/* SPDX-License-Identifier: MIT */
/* rawcopy.c - inline reference loops for the benchmarks (see rawcopy.h). */
#include "rawcopy.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

static void sfence(void)
{
    _mm_sfence();
}

/* Unaligned heads and tails of the bulk loops are done with plain stores: WC combines them. */
static size_t head_to_align(const void *p, size_t align, size_t n)
{
    size_t h = (align - ((uintptr_t)p & (align - 1))) & (align - 1);

    return h < n ? h : n;
}

__attribute__((target("avx512f")))
static void write_avx512(char *d, const char *s, size_t n)
{
    for (; n >= 256; n -= 256, d += 256, s += 256) {
        __m512i a = _mm512_loadu_si512(s), b = _mm512_loadu_si512(s + 64);
        __m512i c = _mm512_loadu_si512(s + 128), e = _mm512_loadu_si512(s + 192);
        _mm512_stream_si512((void *)d, a);
        _mm512_stream_si512((void *)(d + 64), b);
        _mm512_stream_si512((void *)(d + 128), c);
        _mm512_stream_si512((void *)(d + 192), e);
    }
    for (; n >= 64; n -= 64, d += 64, s += 64)
        _mm512_stream_si512((void *)d, _mm512_loadu_si512(s));
    if (n)
        memcpy(d, s, n);
}

__attribute__((target("avx2")))
static void write_avx2(char *d, const char *s, size_t n)
{
    for (; n >= 128; n -= 128, d += 128, s += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)s);
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(s + 64));
        __m256i e = _mm256_loadu_si256((const __m256i *)(s + 96));
        _mm256_stream_si256((__m256i *)d, a);
        _mm256_stream_si256((__m256i *)(d + 32), b);
        _mm256_stream_si256((__m256i *)(d + 64), c);
        _mm256_stream_si256((__m256i *)(d + 96), e);
    }
    for (; n >= 32; n -= 32, d += 32, s += 32)
        _mm256_stream_si256((__m256i *)d, _mm256_loadu_si256((const __m256i *)s));
    if (n)
        memcpy(d, s, n);
}

static void write_sse(char *d, const char *s, size_t n)
{
    for (; n >= 16; n -= 16, d += 16, s += 16)
        _mm_stream_si128((__m128i *)d, _mm_loadu_si128((const __m128i *)s));
    if (n)
        memcpy(d, s, n);
}

__attribute__((target("avx512f")))
static void read_avx512(char *d, const char *s, size_t n)
{
    for (; n >= 256; n -= 256, d += 256, s += 256) {
        __m512i a = _mm512_stream_load_si512((void *)s);
        __m512i b = _mm512_stream_load_si512((void *)(s + 64));
        __m512i c = _mm512_stream_load_si512((void *)(s + 128));
        __m512i e = _mm512_stream_load_si512((void *)(s + 192));
        _mm512_storeu_si512(d, a);
        _mm512_storeu_si512(d + 64, b);
        _mm512_storeu_si512(d + 128, c);
        _mm512_storeu_si512(d + 192, e);
    }
    for (; n >= 64; n -= 64, d += 64, s += 64)
        _mm512_storeu_si512(d, _mm512_stream_load_si512((void *)s));
    memcpy(d, s, n);
}

__attribute__((target("avx2")))
static void read_avx2(char *d, const char *s, size_t n)
{
    for (; n >= 128; n -= 128, d += 128, s += 128) {
        __m256i a = _mm256_stream_load_si256((const __m256i *)s);
        __m256i b = _mm256_stream_load_si256((const __m256i *)(s + 32));
        __m256i c = _mm256_stream_load_si256((const __m256i *)(s + 64));
        __m256i e = _mm256_stream_load_si256((const __m256i *)(s + 96));
        _mm256_storeu_si256((__m256i *)d, a);
        _mm256_storeu_si256((__m256i *)(d + 32), b);
        _mm256_storeu_si256((__m256i *)(d + 64), c);
        _mm256_storeu_si256((__m256i *)(d + 96), e);
    }
    for (; n >= 32; n -= 32, d += 32, s += 32)
        _mm256_storeu_si256((__m256i *)d, _mm256_stream_load_si256((const __m256i *)s));
    memcpy(d, s, n);
}

__attribute__((target("sse4.1")))
static void read_sse41(char *d, const char *s, size_t n)
{
    for (; n >= 16; n -= 16, d += 16, s += 16)
        _mm_storeu_si128((__m128i *)d, _mm_stream_load_si128((__m128i *)s));
    memcpy(d, s, n);
}

enum raw_isa { RAW_C, RAW_SSE, RAW_AVX2, RAW_AVX512 };

static enum raw_isa raw_isa(void)
{
    static int isa = -1;

    if (isa < 0) {
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f"))
            isa = RAW_AVX512;
        else if (__builtin_cpu_supports("avx2"))
            isa = RAW_AVX2;
        else if (__builtin_cpu_supports("sse4.1"))
            isa = RAW_SSE;
        else
            isa = RAW_C;
    }
    return (enum raw_isa)isa;
}

void raw_write_nt(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    size_t h = head_to_align(d, 64, n);

    /* No memcpy call where there is nothing to copy (whole lines, the case a reference is
     * taken from): a library call per copy would slow the reference, not the copy. */
    if (h)
        memcpy(d, s, h);
    d += h, s += h, n -= h;
    switch (raw_isa()) {
    case RAW_AVX512: write_avx512(d, s, n); break;
    case RAW_AVX2: write_avx2(d, s, n); break;
    default: write_sse(d, s, n); break;
    }
    sfence();
}

/* One whole 64-byte line at an aligned address, with streaming loads, into out. */
__attribute__((target("avx512f")))
static void line_avx512(void *out, const char *s)
{
    _mm512_storeu_si512(out, _mm512_stream_load_si512((void *)s));
}

__attribute__((target("avx2")))
static void line_avx2(void *out, const char *s)
{
    _mm256_storeu_si256((__m256i *)out, _mm256_stream_load_si256((const __m256i *)s));
    _mm256_storeu_si256((__m256i *)out + 1, _mm256_stream_load_si256((const __m256i *)(s + 32)));
}

__attribute__((target("sse4.1")))
static void line_sse41(void *out, const char *s)
{
    for (int k = 0; k < 4; k++)
        _mm_storeu_si128((__m128i *)out + k, _mm_stream_load_si128((__m128i *)(s + 16 * k)));
}

/* A partial line (head or tail) is read as its whole aligned line: a line never crosses a page,
 * so this stays inside the mapping, and it is one read like the hardware's, never the several
 * small uncached loads that memcpy would issue. */
static void read_partial(char *d, const char *s, size_t n)
{
    const char *line = (const char *)((uintptr_t)s & ~(uintptr_t)63);
    unsigned char buf[64] __attribute__((aligned(64)));

    switch (raw_isa()) {
    case RAW_AVX512: line_avx512(buf, line); break;
    case RAW_AVX2: line_avx2(buf, line); break;
    case RAW_SSE: line_sse41(buf, line); break;
    default: memcpy(buf, line, 64); break;
    }
    memcpy(d, buf + (s - line), n);
}

void raw_read_nt(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    size_t h = head_to_align(s, 64, n), body;

    /* A read is a floor only if it reaches the device: without the fence a streaming load
     * may be answered from a buffer an earlier one filled (src/arch/fence.h). */
    _mm_mfence();
    if (h) {
        read_partial(d, s, h);
        d += h, s += h, n -= h;
    }
    body = n & ~(size_t)63;
    switch (raw_isa()) {
    case RAW_AVX512: read_avx512(d, s, body); break;
    case RAW_AVX2: read_avx2(d, s, body); break;
    case RAW_SSE: read_sse41(d, s, body); break;
    default: memcpy(d, s, body); break;
    }
    if (n > body)
        read_partial(d + body, s + body, n - body);
}

const char *raw_kernel_name(void)
{
    static const char *const names[] = { "c", "sse", "avx2", "avx512" };

    return names[raw_isa()];
}

#else /* other CPUs: plain loops; the figures are then only indicative */

static void sfence(void)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void raw_write_nt(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
    sfence();
}

void raw_read_nt(void *dst, const void *src, size_t n)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    memcpy(dst, src, n);
}

const char *raw_kernel_name(void)
{
    return "c";
}
#endif

void raw_sfence(void)
{
    sfence();
}

#if defined(__x86_64__)
#include <cpuid.h>

/* MOVDIR64B: one 64-byte direct store per aligned line, as a single write transaction; then
 * the fence, here, so that raw_write reaches it by a jump (as write_lines_avx512). */
__attribute__((target("movdir64b")))
static void write_movdir64b(char *d, const char *s, size_t n)
{
    for (; n >= 64; n -= 64, d += 64, s += 64)
        _movdir64b(d, s);
    _mm_sfence();
}

static int have_movdir64b(void)
{
    unsigned a, b, c, e;

    return __get_cpuid_count(7, 0, &a, &b, &c, &e) && (c & (1u << 28));
}
#endif

static const char *const write_names[RAW_W_COUNT] = {
    [RAW_W_ST8] = "st8", [RAW_W_NT] = "nt", [RAW_W_MOVDIR64B] = "movdir64b",
};

const char *raw_write_name(enum raw_write w)
{
    return (unsigned)w < RAW_W_COUNT ? write_names[w] : "?";
}

int raw_write_usable(enum raw_write w, size_t n)
{
    switch (w) {
    case RAW_W_ST8: return 1;
    case RAW_W_NT: return n >= 64;
#if defined(__x86_64__)
    case RAW_W_MOVDIR64B: return n >= 64 && n % 64 == 0 && have_movdir64b();
#endif
    default: return 0;
    }
}

#if defined(__x86_64__)
/* Whole 64-byte aligned lines, one VMOVNTDQ zmm each, then the fence: the reference for whole
 * lines as lean as the instructions themselves (raw_write_nt's alignment head and ISA switch
 * would count against the reference, not the library). */
__attribute__((target("avx512f")))
static void write_lines_avx512(char *d, const char *s, size_t n)
{
    for (; n; n -= 64, d += 64, s += 64)
        _mm512_stream_si512((void *)d, _mm512_loadu_si512(s));
    _mm_sfence();
}

static int lines_avx512;    /* set before main: the CPU has AVX-512F */

__attribute__((constructor)) static void raw_init(void)
{
    lines_avx512 = raw_isa() == RAW_AVX512;
}
#endif

void raw_write(enum raw_write w, void *dst, const void *src, size_t n)
{
    switch (w) {
#if defined(__x86_64__)
    case RAW_W_MOVDIR64B:
        write_movdir64b(dst, src, n);
        break;
    case RAW_W_NT:
        if (lines_avx512 && !(((uintptr_t)dst | n) & 63))
            write_lines_avx512(dst, src, n);
        else
            raw_write_nt(dst, src, n);
        break;
#else
    case RAW_W_NT: raw_write_nt(dst, src, n); break;
#endif
    default: raw_store_small(dst, src, n); break;
    }
}

/* An 8-byte store at any address: one instruction on x86 and Arm, without undefined behaviour. */
typedef uint64_t __attribute__((aligned(1), may_alias)) u64_any;

void raw_store_small(void *dst, const void *src, size_t n)
{
    volatile u64_any *d = dst;
    const char *s = src;
    size_t i = 0;

    for (; i + 8 <= n; i += 8, d++) {
        uint64_t v;

        memcpy(&v, s + i, 8);
        *d = v;
    }
    /* The tail as the widest stores its place and length allow (a 2- or 4-byte flag is one
     * store, as the library's), bytes only where nothing wider fits. */
    while (i < n) {
        uintptr_t a = (uintptr_t)dst + i;

        if (n - i >= 4 && !(a & 3)) {
            uint32_t v;

            memcpy(&v, s + i, 4);
            *(volatile uint32_t *)a = v;
            i += 4;
        } else if (n - i >= 2 && !(a & 1)) {
            uint16_t v;

            memcpy(&v, s + i, 2);
            *(volatile uint16_t *)a = v;
            i += 2;
        } else {
            *(volatile char *)a = s[i];
            i++;
        }
    }
    sfence();
}

// SPDX-License-Identifier: MIT
/*
 * read_bench.cu - reads from GPU memory through a mapping, side by side in one run, at one
 * address read back to back (the way a client polls a flag or reads a completion record):
 *
 *   ours       gdr_copy_from_mapping (this library, the process's copy kernel)
 *   auto       vramio_copy_from_mapping_auto
 *   gdrcopy26  GDRCopy 2.6's own read code on the same mapping, when its source was given
 *              (bench/gdrcopy26_read.c, built by run_reads_on_gpu.sh; otherwise left out)
 *   plain      plain loads: 8 bytes wide (the access's own width below 8 bytes)
 *   mf+nt64    MFENCE, then one 64-byte streaming load per line (the widest, AVX-512)
 *   mf+nt16    MFENCE, then 16-byte streaming loads (SSE4.1)
 *   lk+nt64    a locked add to the stack instead of MFENCE, then 64-byte streaming loads
 *   lf+nt64    LFENCE, then 64-byte streaming loads
 *   sf+nt64    SFENCE, then 64-byte streaming loads
 *   nt64       64-byte streaming loads alone (no fence: may be answered from a buffer)
 *   memcpy     cudaMemcpy device to pinned host
 *
 * A raw sequence is a floor only if each of its reads must reach the device: plain loads,
 * and streaming loads after MFENCE (src/arch/fence.h says why). nt64, lk+nt64, lf+nt64 and
 * sf+nt64 are shown, never the floor: nothing documented retires a streaming-load buffer
 * without MFENCE, so their figure, fast or not, proves nothing for the next machine; a "*" on
 * one of them shows that this machine's buffer answered across that fence. A median under half of one
 * plain load's (one uncached round trip) was answered from a buffer and is marked "*".
 * "best" is the fastest of the correct raw sequences. Each method reads in blocks of back-to-back calls (50, or
 * 10 from 16 KiB), the methods' blocks in turn, so that a slow moment falls on all of them
 * while each read still follows a read of its own kind (interleaved single calls would hide a
 * buffered answer: another method's accesses in between retire the buffer); medians, p90
 * and p99 in ns. Checks (result lines): ours within 1.05x
 * of best, and no slower than GDRCopy 2.6's code where that code reaches the device.
 *
 *   read_bench [GDRCOPY26_SO]     run under vramio-run (cudaMalloc memory)
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>
#include "bridge_gpu.h"

#define REGION (1u << 20)

static const struct bg_pin *pin;
static unsigned char *cpu_at;        /* the address every method reads */
static unsigned char *dev_at;
static int (*gdrcopy26_read)(void *, const void *, size_t);

static inline uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void plain(void *dst, const volatile unsigned char *src, size_t n)
{
    unsigned char *d = (unsigned char *)dst;

    if (n < 8) {    /* the sizes measured are powers of two at an aligned place */
        if (n == 4) {
            uint32_t v = *(const volatile uint32_t *)src;
            memcpy(d, &v, 4);
        } else if (n == 2) {
            uint16_t v = *(const volatile uint16_t *)src;
            memcpy(d, &v, 2);
        } else {
            *d = *src;
        }
        return;
    }
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = *(const volatile uint64_t *)(src + i);
        memcpy(d + i, &v, 8);
    }
}

__attribute__((target("avx512f"))) static void nt64_lines(void *dst, unsigned char *src,
                                                           size_t n)
{
    unsigned char *d = (unsigned char *)dst;
    unsigned char line[64] __attribute__((aligned(64)));

    if (n < 64) {
        _mm512_store_si512(line, _mm512_stream_load_si512(src));
        memcpy(d, line, n);
        return;
    }
    for (size_t i = 0; i < n; i += 256 <= n - i ? 256 : 64) {
        if (n - i >= 256) {
            __m512i a = _mm512_stream_load_si512(src + i);
            __m512i b = _mm512_stream_load_si512(src + i + 64);
            __m512i c = _mm512_stream_load_si512(src + i + 128);
            __m512i e = _mm512_stream_load_si512(src + i + 192);
            _mm512_storeu_si512(d + i, a);
            _mm512_storeu_si512(d + i + 64, b);
            _mm512_storeu_si512(d + i + 128, c);
            _mm512_storeu_si512(d + i + 192, e);
        } else {
            _mm512_storeu_si512(d + i, _mm512_stream_load_si512(src + i));
        }
    }
}

__attribute__((target("sse4.1"))) static void nt16(void *dst, unsigned char *src, size_t n)
{
    unsigned char *d = (unsigned char *)dst;
    unsigned char piece[16] __attribute__((aligned(16)));

    if (n < 16) {
        _mm_store_si128((__m128i *)piece, _mm_stream_load_si128((__m128i *)src));
        memcpy(d, piece, n);
        return;
    }
    for (size_t i = 0; i < n; i += 64) {
        __m128i a = _mm_stream_load_si128((__m128i *)(src + i));
        __m128i b = _mm_stream_load_si128((__m128i *)(src + i + 16));
        __m128i c = _mm_stream_load_si128((__m128i *)(src + i + 32));
        __m128i e = _mm_stream_load_si128((__m128i *)(src + i + 48));
        _mm_storeu_si128((__m128i *)(d + i), a);
        if (n - i > 16)
            _mm_storeu_si128((__m128i *)(d + i + 16), b);
        if (n - i > 32) {
            _mm_storeu_si128((__m128i *)(d + i + 32), c);
            _mm_storeu_si128((__m128i *)(d + i + 48), e);
        }
    }
}

static unsigned char *host_buf;    /* cudaMallocHost'ed, for cudaMemcpy */

static int m_ours(void *d, size_t n) { return gdr_copy_from_mapping(pin->mh, d, cpu_at, n); }
static int m_auto(void *d, size_t n)
{
    return vramio_copy_from_mapping_auto(pin->mh, d, cpu_at, n);
}
static int m_26(void *d, size_t n) { return gdrcopy26_read(d, cpu_at, n); }
static int m_plain(void *d, size_t n) { plain(d, cpu_at, n); return 0; }
static int m_mf_nt64(void *d, size_t n) { _mm_mfence(); nt64_lines(d, cpu_at, n); return 0; }
static int m_mf_nt16(void *d, size_t n) { _mm_mfence(); nt16(d, cpu_at, n); return 0; }
static int m_lk_nt64(void *d, size_t n)
{
    __asm__ volatile("lock addl $0, (%%rsp)" ::: "memory", "cc");
    nt64_lines(d, cpu_at, n);
    return 0;
}
static int m_lf_nt64(void *d, size_t n) { _mm_lfence(); nt64_lines(d, cpu_at, n); return 0; }
static int m_sf_nt64(void *d, size_t n) { _mm_sfence(); nt64_lines(d, cpu_at, n); return 0; }
static int m_nt64(void *d, size_t n) { nt64_lines(d, cpu_at, n); return 0; }
static int m_memcpy(void *d, size_t n)
{
    (void)d;
    return cudaMemcpy(host_buf, dev_at, n, cudaMemcpyDeviceToHost) != cudaSuccess;
}

struct method {
    const char *name;
    int (*fn)(void *, size_t);
    int raw;          /* a correct raw sequence: a candidate for best */
};

static const method methods[] = {
    { "ours", m_ours, 0 }, { "auto", m_auto, 0 }, { "gdrcopy26", m_26, 0 },
    { "plain", m_plain, 1 }, { "mf+nt64", m_mf_nt64, 1 }, { "mf+nt16", m_mf_nt16, 1 },
    { "lk+nt64", m_lk_nt64, 0 }, { "lf+nt64", m_lf_nt64, 0 }, { "sf+nt64", m_sf_nt64, 0 },
    { "nt64", m_nt64, 0 }, { "memcpy", m_memcpy, 0 },
};
#define NM (sizeof(methods) / sizeof(methods[0]))

struct stat3 {
    uint32_t p50, p90, p99;
};

static stat3 stats(std::vector<uint32_t> &v)
{
    std::sort(v.begin(), v.end());
    return { v[v.size() / 2], v[v.size() * 9 / 10], v[v.size() * 99 / 100] };
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096, 16384, 65536 };
    std::vector<unsigned char> dst(65536 + 64);
    void *d = NULL;
    struct bg_pin p;
    uint32_t rt = 0;
    gdr_t g;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && argv[1][0]) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        void (*init)(void) = h ? (void (*)(void))dlsym(h, "gdrcopy26_init") : NULL;

        gdrcopy26_read = h ? (int (*)(void *, const void *, size_t))dlsym(h, "gdrcopy26_read")
                           : NULL;
        if (!init || !gdrcopy26_read) {
            printf("# %s: %s; GDRCopy 2.6's code left out\n", argv[1], dlerror());
            gdrcopy26_read = NULL;
        } else {
            init();
        }
    }
    if (!__builtin_cpu_supports("avx512f")) {
        t_skip("readbench/all", "the raw sequences need AVX-512");
        return 0;
    }
    if (cudaMalloc(&d, REGION) != cudaSuccess || cudaMemset(d, 0x5a, REGION) != cudaSuccess ||
        cudaMallocHost((void **)&host_buf, 65536) != cudaSuccess) {
        t_skip("readbench/all", "no CUDA device");
        return 0;
    }
    g = gdr_open();
    if (!g || bg_pin(g, (unsigned long long)(uintptr_t)d, REGION, &p) != 0) {
        t_skip("readbench/all", "cannot pin cudaMalloc memory (run under vramio-run)");
        return 0;
    }
    pin = &p;
    cpu_at = (unsigned char *)p.cpu + 4096;
    dev_at = (unsigned char *)d + 4096;
    printf("# kernel %s; back-to-back reads of one address, ns: p50 / p90 / p99\n",
           vramio_copy_kernel());
    printf("%-6s", "bytes");
    for (size_t m = 0; m < NM; m++)
        if (methods[m].fn != m_26 || gdrcopy26_read)
            printf(" %21s", methods[m].name);
    printf("  best       ours/best ours/26\n");
    for (size_t n : sizes) {
        int reps = n >= 16384 ? 200 : 2000, block = n >= 16384 ? 10 : 50;
        std::vector<uint32_t> t[NM];
        stat3 s[NM];

        for (int r = 0; r < reps; r += block)
            for (size_t m = 0; m < NM; m++) {
                if (methods[m].fn == m_26 && !gdrcopy26_read)
                    continue;
                for (int b = 0; b < block; b++) {
                    uint64_t t0 = now_ns();

                    methods[m].fn(dst.data(), n);
                    t[m].push_back((uint32_t)(now_ns() - t0));
                }
            }
        for (size_t m = 0; m < NM; m++)
            if (!t[m].empty())
                s[m] = stats(t[m]);
        if (n == sizes[0])
            rt = s[3].p50;      /* one plain load: one device round trip */
        int best = -1;
        printf("%-6zu", n);
        for (size_t m = 0; m < NM; m++) {
            if (t[m].empty())
                continue;
            int buffered = n <= 64 && 2 * s[m].p50 < rt;
            char cell[40];

            snprintf(cell, sizeof(cell), "%u/%u/%u%s", s[m].p50, s[m].p90, s[m].p99,
                     buffered ? "*" : "");
            printf(" %21s", cell);
            if (methods[m].raw && !buffered && (best < 0 || s[m].p50 < s[best].p50))
                best = (int)m;
        }
        double vs_best = (double)s[0].p50 / s[best].p50;
        int has26 = gdrcopy26_read != NULL, buf26 = has26 && n <= 64 && 2 * s[2].p50 < rt;
        double vs_26 = has26 ? (double)s[0].p50 / s[2].p50 : 0;

        printf("  %-10s %9.3f %7.3f%s\n", methods[best].name, vs_best, vs_26,
               buf26 ? " (26 buffered)" : "");
        char name[64];

        snprintf(name, sizeof(name), "readbench/%zu/within_1.05_of_best", n);
        t_check(vs_best <= 1.05, name, "ours %u ns, best %s %u ns (%.3fx)", s[0].p50,
                methods[best].name, s[best].p50, vs_best);
        if (has26 && !buf26) {
            snprintf(name, sizeof(name), "readbench/%zu/not_slower_than_gdrcopy26", n);
            t_check(vs_26 <= 1.05, name, "ours %u ns, GDRCopy 2.6's code %u ns (%.3fx)",
                    s[0].p50, s[2].p50, vs_26);
        }
    }
    printf("# *: under half of one plain load (%u ns): answered from a buffer, not the "
           "device; never a floor\n", rt);
    bg_unpin(g, &p);
    gdr_close(g);
    return 0;
}

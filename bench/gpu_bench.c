/* SPDX-License-Identifier: MIT */
/*
 * gpu_bench.c - the library against raw code on the same mapping, and against cuMemcpy, in
 * one run: small writes (8-byte stores + sfence), write bandwidth (non-temporal stores), read
 * bandwidth (streaming loads after an MFENCE, as the library's reads begin, at a new address
 * every time), the cost of gdr_open, of a first pin (import) and of a repeated pin inside
 * an imported allocation. Prints min / median / p99 and the ratios, then each target with
 * MET or MISSED. A benchmark, not a test: it fails only when it cannot run. With --costs only
 * the last part (open and pin costs) runs, with --small only the small writes.
 */
#include <cpuid.h>
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_common.h"

#define MiB (1ull << 20)
#define AREA (64 * MiB) /* the mapping the bandwidth and read loops move through */

struct stats {
    double min, p50, p99;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static struct stats stats_of(double *v, int n)
{
    struct stats s;

    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    s.min = v[0];
    s.p50 = v[n / 2];
    s.p99 = v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
    return s;
}

/* ---- raw reference loops ------------------------------------------------------------ */

static void raw_store8_sfence(void *dst, const void *src, size_t n)
{
    volatile uint64_t *d = dst;
    const uint64_t *s = src;
    size_t i;

    for (i = 0; i < n / 8; i++)
        d[i] = s[i];
    _mm_sfence();
}

__attribute__((target("avx512f")))
static void raw_nt_store512(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    size_t i;

    for (i = 0; i + 256 <= n; i += 256) {
        __m512i a = _mm512_loadu_si512(s + i), b = _mm512_loadu_si512(s + i + 64),
                c = _mm512_loadu_si512(s + i + 128), e = _mm512_loadu_si512(s + i + 192);
        _mm512_stream_si512((void *)(d + i), a);
        _mm512_stream_si512((void *)(d + i + 64), b);
        _mm512_stream_si512((void *)(d + i + 128), c);
        _mm512_stream_si512((void *)(d + i + 192), e);
    }
    _mm_sfence();
}

__attribute__((target("avx2")))
static void raw_nt_store256(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    size_t i;

    for (i = 0; i + 128 <= n; i += 128) {
        __m256i a = _mm256_loadu_si256((const void *)(s + i)),
                b = _mm256_loadu_si256((const void *)(s + i + 32)),
                c = _mm256_loadu_si256((const void *)(s + i + 64)),
                e = _mm256_loadu_si256((const void *)(s + i + 96));
        _mm256_stream_si256((void *)(d + i), a);
        _mm256_stream_si256((void *)(d + i + 32), b);
        _mm256_stream_si256((void *)(d + i + 64), c);
        _mm256_stream_si256((void *)(d + i + 96), e);
    }
    _mm_sfence();
}

__attribute__((target("avx512f")))
static void raw_nt_load512(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    size_t i;
    _mm_mfence();   /* as every read of the library begins (src/arch/fence.h) */

    for (i = 0; i + 256 <= n; i += 256) {
        __m512i a = _mm512_stream_load_si512((void *)(s + i)),
                b = _mm512_stream_load_si512((void *)(s + i + 64)),
                c = _mm512_stream_load_si512((void *)(s + i + 128)),
                e = _mm512_stream_load_si512((void *)(s + i + 192));
        _mm512_storeu_si512(d + i, a);
        _mm512_storeu_si512(d + i + 64, b);
        _mm512_storeu_si512(d + i + 128, c);
        _mm512_storeu_si512(d + i + 192, e);
    }
}

__attribute__((target("avx2")))
static void raw_nt_load256(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    size_t i;
    _mm_mfence();   /* as every read of the library begins (src/arch/fence.h) */

    for (i = 0; i + 128 <= n; i += 128) {
        __m256i a = _mm256_stream_load_si256((void *)(s + i)),
                b = _mm256_stream_load_si256((void *)(s + i + 32)),
                c = _mm256_stream_load_si256((void *)(s + i + 64)),
                e = _mm256_stream_load_si256((void *)(s + i + 96));
        _mm256_storeu_si256((void *)(d + i), a);
        _mm256_storeu_si256((void *)(d + i + 32), b);
        _mm256_storeu_si256((void *)(d + i + 64), c);
        _mm256_storeu_si256((void *)(d + i + 96), e);
    }
}

static void raw_load8(void *dst, const void *src, size_t n)
{
    const volatile uint64_t *s = src;
    uint64_t *d = dst;
    size_t i;

    for (i = 0; i < n / 8; i++)
        d[i] = s[i];
}

/* Whole 64-byte lines, one full-line store each (the best raw write of a line there), or one
 * MOVDIR64B each; n a multiple of 64. And the same lines read by streaming loads. */
__attribute__((target("avx512f")))
static void raw_nt_lines512(void *dst, const void *src, size_t n)
{
    for (size_t i = 0; i < n; i += 64)
        _mm512_stream_si512((void *)((char *)dst + i), _mm512_loadu_si512((const char *)src + i));
    _mm_sfence();
}

__attribute__((target("avx2")))
static void raw_nt_lines256(void *dst, const void *src, size_t n)
{
    for (size_t i = 0; i < n; i += 32)
        _mm256_stream_si256((void *)((char *)dst + i),
                            _mm256_loadu_si256((const void *)((const char *)src + i)));
    _mm_sfence();
}

__attribute__((target("movdir64b")))
static void raw_movdir64b_lines(void *dst, const void *src, size_t n)
{
    for (size_t i = 0; i < n; i += 64)
        _movdir64b((char *)dst + i, (const char *)src + i);
    _mm_sfence();
}

__attribute__((target("avx512f")))
static void raw_nt_load_lines512(void *dst, const void *src, size_t n)
{
    _mm_mfence();   /* as every read of the library begins (src/arch/fence.h) */
    for (size_t i = 0; i < n; i += 64)
        _mm512_storeu_si512((char *)dst + i, _mm512_stream_load_si512((void *)((const char *)src + i)));
}

__attribute__((target("avx2")))
static void raw_nt_load_lines256(void *dst, const void *src, size_t n)
{
    _mm_mfence();   /* as every read of the library begins (src/arch/fence.h) */
    for (size_t i = 0; i < n; i += 32)
        _mm256_storeu_si256((void *)((char *)dst + i),
                            _mm256_stream_load_si256((const void *)((const char *)src + i)));
}

/* The reference loop behind an out-of-line call through a pointer, as a library call is:
 * shows how much of a difference is the call itself. */
static void (*volatile raw_call)(void *, const void *, size_t) = raw_store8_sfence;

/* ---- what is being timed ------------------------------------------------------------ */

static gdr_mh_t mh;
static char *map;            /* CPU mapping of AREA */
static CUdeviceptr dev;      /* its GPU address */
static char *host;           /* ordinary host memory */
static char *pinned;         /* cuMemAllocHost memory */
static int have_avx512, have_movdir64b;

enum op { RAW_ST8, RAW_ST8_CALL, RAW_NT512, RAW_NT256, GDR_TO, CU_HTOD, RAW_LD8, RAW_NTLD512, RAW_NTLD256,
          GDR_FROM, CU_DTOH, RAW_NTLINES_LD };
static const char *const op_name[] = { "raw 8B store+sfence", "raw, via a call",
    "raw NT store avx512",
    "raw NT store avx2", "gdr_copy_to_mapping", "cuMemcpyHtoD pinned", "raw 8B load",
    "raw NT load avx512", "raw NT load avx2", "gdr_copy_from_mapping", "cuMemcpyDtoH pinned",
    "raw NT line loads" };

static void do_op(enum op o, size_t off, size_t n)
{
    switch (o) {
    case RAW_ST8: raw_store8_sfence(map + off, host, n); break;
    case RAW_ST8_CALL: raw_call(map + off, host, n); break;
    case RAW_NT512: raw_nt_store512(map + off, host, n); break;
    case RAW_NT256: raw_nt_store256(map + off, host, n); break;
    case GDR_TO: gdr_copy_to_mapping(mh, map + off, host, n); break;
    case CU_HTOD: cuMemcpyHtoD(dev + off, pinned, n); break;
    case RAW_LD8: raw_load8(host, map + off, n); break;
    case RAW_NTLD512: raw_nt_load512(host, map + off, n); break;
    case RAW_NTLD256: raw_nt_load256(host, map + off, n); break;
    case GDR_FROM: gdr_copy_from_mapping(mh, host, map + off, n); break;
    case CU_DTOH: cuMemcpyDtoH(pinned, dev + off, n); break;
    case RAW_NTLINES_LD:
        if (have_avx512)
            raw_nt_load_lines512(host, map + off, n);
        else
            raw_nt_load_lines256(host, map + off, n);
        break;
    }
}

static int is_read(enum op o)
{
    return o >= RAW_LD8;
}

/* Time per op in ns: batches of `batch` back-to-back ops, `nb` batches. Reads move to a new
 * address (4 KiB apart at least) for every op, writes stay at one place. */
static struct stats time_op(enum op o, size_t n, int batch, int nb)
{
    double *v = malloc(sizeof(double) * (size_t)nb);
    size_t step = n < 4096 ? 4096 : (n + 4095) & ~(size_t)4095, off = 0;
    struct stats s;
    int b, i;

    for (b = -1; b < nb; b++) { /* batch -1 warms up */
        uint64_t t0 = gpu_now_ns();
        for (i = 0; i < batch; i++) {
            do_op(o, off, n);
            if (is_read(o)) {
                off += step;
                if (off + n > AREA)
                    off = (off + 64) % step;
            }
        }
        if (b >= 0)
            v[b] = (double)(gpu_now_ns() - t0) / batch;
    }
    s = stats_of(v, nb);
    free(v);
    return s;
}

static double gbps(size_t n, double ns)
{
    return (double)n / ns;
}

/* ---- the tables --------------------------------------------------------------------- */

static int missed;

static void target(int met, const char *what, const char *detail)
{
    printf("TARGET %-58s %s  (%s)\n", what, met ? "MET" : "MISSED", detail);
    missed += !met;
}

/* Three ops in rounds: one batch of each per round, the order turning from round to round,
 * so that drift, noise and the position in a round hit all alike. r[0] and r[2] get the
 * medians of the per-round ratios t[1]/t[0] and t[1]/t[2]. */
static void time_rounds(const enum op o[3], size_t n, int batch, int nb, struct stats st[3],
                        double r[3])
{
    double *v[3], *q[3];
    int k, j, i;

    for (j = 0; j < 3; j++) {
        v[j] = malloc(sizeof(double) * (size_t)nb);
        q[j] = malloc(sizeof(double) * (size_t)nb);
    }
    for (k = -3; k < nb; k++) { /* three warm-up rounds */
        double t[3];

        for (i = 0; i < 3; i++) {
            int w = (i + (k < 0 ? 0 : k)) % 3;
            uint64_t t0 = gpu_now_ns();

            for (j = 0; j < batch; j++)
                do_op(o[w], 0, n);
            t[w] = (double)(gpu_now_ns() - t0) / batch;
        }
        if (k >= 0)
            for (j = 0; j < 3; j++) {
                v[j][k] = t[j];
                q[j][k] = t[1] / t[j];
            }
    }
    for (j = 0; j < 3; j++) {
        st[j] = stats_of(v[j], nb);
        r[j] = stats_of(q[j], nb).p50;
        free(v[j]);
        free(q[j]);
    }
}

/* The raw write sequences of a small copy: 8-byte stores + sfence; one full-line NT store per
 * 64-byte line (AVX-512, else two 32-byte AVX stores); MOVDIR64B per line. */
struct raw_seq {
    const char *name;
    void (*fn)(void *, const void *, size_t);
};

/* The fastest raw sequence for n bytes in this run (batches of 200, best p50 of three tries). */
static struct raw_seq best_raw_write(size_t n)
{
    struct raw_seq c[3] = { { "st8", raw_store8_sfence } };
    int nc = 1, best = 0;
    double bt = 0;

    if (n >= 64 && n % 64 == 0) {
        c[nc++] = have_avx512 ? (struct raw_seq){ "nt64", raw_nt_lines512 }
                              : (struct raw_seq){ "nt32x2", raw_nt_lines256 };
        if (have_movdir64b)
            c[nc++] = (struct raw_seq){ "movdir64b", raw_movdir64b_lines };
    }
    for (int k = 0; k < 3 * nc; k++) {
        struct stats st;

        raw_call = c[k % nc].fn;
        st = time_op(RAW_ST8_CALL, n, 200, 20);
        if (bt == 0 || st.p50 < bt) {
            bt = st.p50;
            best = k % nc;
        }
    }
    return c[best];
}

/*
 * The small-write target compares like with like: gdr_copy_to_mapping is a call into a
 * shared library, so its reference is the fastest raw sequence for that size (best_raw_write,
 * chosen in this run) behind a call through a pointer, as copylat's raw reference is. The
 * 8-byte store loop inlined into the timing loop is printed beside it: the difference between
 * a call and none on a WC mapping, which no library function can avoid, reported, not hidden.
 */
static void small_writes(void)
{
    static const size_t sizes[] = { 8, 16, 32, 64, 128, 256, 1024, 4096 };
    static const enum op ops[3] = { RAW_ST8_CALL, GDR_TO, RAW_ST8 };
    int worst_ok = 1, cu_ok = 1;
    char detail[400] = "", cdetail[256] = "";
    size_t i;

    printf("\nCPU->GPU small copies, ns per copy (rounds of three batches of 200 back to back, "
           "order turning; min / p50 / p99 of batch means; ratios = medians of per-round "
           "ratios)\n%6s  %-10s %-22s %-22s %-22s %-22s %8s %8s %8s\n", "bytes", "best raw",
           "best raw, call", "gdr_copy_to_mapping", "raw st8, inlined", "cuMemcpyHtoD",
           "gdr/call", "gdr/inl", "cu/gdr");
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];
        struct raw_seq best = best_raw_write(n);
        struct stats st[3], c = time_op(CU_HTOD, n, 50, 40);
        double r[3], cu;

        raw_call = best.fn;
        time_rounds(ops, n, 200, 300, st, r);
        cu = c.p50 / st[1].p50;
        printf("%6zu  %-10s %6.0f %6.0f %6.0f   %6.0f %6.0f %6.0f   %6.0f %6.0f %6.0f   "
               "%6.0f %6.0f %6.0f %8.3f %8.3f %8.1f\n", n, best.name, st[0].min, st[0].p50,
               st[0].p99, st[1].min, st[1].p50, st[1].p99, st[2].min, st[2].p50, st[2].p99,
               c.min, c.p50, c.p99, r[0], r[2], cu);
        if (n <= 256) {
            worst_ok &= r[0] <= 1.03;
            snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail),
                     "%s%zuB %.3f vs %s", i ? ", " : "", n, r[0], best.name);
        }
        if (n <= 1024) {
            cu_ok &= cu >= 40;
            snprintf(cdetail + strlen(cdetail), sizeof(cdetail) - strlen(cdetail),
                     "%s%zuB %.0fx", i ? ", " : "", n, cu);
        }
    }
    raw_call = raw_store8_sfence;
    target(worst_ok, "copy_to_mapping 8-256 B within 3% of the best raw sequence (call)", detail);
    target(cu_ok, "copy_to_mapping up to 1 KiB at least 40x faster than cuMemcpy", cdetail);
}

static void bandwidth(int reads)
{
    static const size_t sizes[] = { 4096, 16384, 65536, 262144, MiB, 4 * MiB, 16 * MiB };
    enum op raw512 = reads ? RAW_NTLD512 : RAW_NT512, raw256 = reads ? RAW_NTLD256 : RAW_NT256;
    enum op lib = reads ? GDR_FROM : GDR_TO, cu = reads ? CU_DTOH : CU_HTOD;
    double need = reads ? 0.90 : 0.95;
    char detail[256] = "";
    int ok = 1;
    size_t i;

    printf("\n%s bandwidth, GB/s (best / median)\n%9s  %-14s %-14s %-14s %-14s %8s\n",
           reads ? "GPU->CPU" : "CPU->GPU", "bytes", op_name[raw512], op_name[raw256],
           op_name[lib], op_name[cu], "lib/raw");
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];
        size_t budget = reads ? 8 * MiB : 128 * MiB;
        int nb = (int)(budget / n) < 5 ? 5 : (int)(budget / n) > 400 ? 400 : (int)(budget / n);
        struct stats a = { 0, 0, 0 }, b = time_op(raw256, n, 1, nb), l = time_op(lib, n, 1, nb),
                     c = time_op(cu, n, 1, nb < 50 ? nb : 50);
        double best_raw;

        if (have_avx512)
            a = time_op(raw512, n, 1, nb);
        best_raw = gbps(n, have_avx512 && a.min < b.min ? a.min : b.min);
        printf("%9zu  %6.2f %6.2f  %6.2f %6.2f  %6.2f %6.2f  %6.2f %6.2f  %8.3f\n", n,
               have_avx512 ? gbps(n, a.min) : 0, have_avx512 ? gbps(n, a.p50) : 0,
               gbps(n, b.min), gbps(n, b.p50), gbps(n, l.min), gbps(n, l.p50), gbps(n, c.min),
               gbps(n, c.p50), gbps(n, l.min) / best_raw);
        if (n >= 65536 && n <= MiB) {
            ok &= gbps(n, l.min) >= need * best_raw;
            snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail), "%s%zuK %.2f",
                     strlen(detail) ? ", " : "", n >> 10, gbps(n, l.min) / best_raw);
        }
    }
    target(ok, reads ? "reads 64K-1M at least 90% of best raw streaming-load (best)"
                     : "writes 64K-1M at least 95% of best raw NT-store (best)", detail);
}

static void small_reads(void)
{
    static const size_t sizes[] = { 8, 64, 128, 256, 1024, 4096 };
    char detail[256] = "";
    int ok = 1;
    size_t i;

    printf("\nGPU->CPU small reads, ns per read (batches of 200 back to back, a new address "
           "each time)\n%6s  %-22s %-22s %-22s %-22s %8s\n", "bytes", "raw 8B loads",
           "raw NT line loads", "gdr_copy_from_mapping", "cuMemcpyDtoH", "gdr/NT");
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];
        struct stats r = time_op(RAW_LD8, n, 50, 40), nt = { 0, 0, 0 }, l, c;

        /* NT raw and the library alternate three times; the best p50 of each counts. */
        l = time_op(GDR_FROM, n, 200, 10);
        for (int k = 0; k < 3 && n % 64 == 0; k++) {
            struct stats a = time_op(RAW_NTLINES_LD, n, 200, 10), b = time_op(GDR_FROM, n, 200, 10);

            if (k == 0 || a.p50 < nt.p50)
                nt = a;
            if (b.p50 < l.p50)
                l = b;
        }
        c = time_op(CU_DTOH, n, 50, 20);
        printf("%6zu  %6.0f %6.0f %6.0f   %6.0f %6.0f %6.0f   %6.0f %6.0f %6.0f   %6.0f %6.0f "
               "%6.0f %8.3f\n", n, r.min, r.p50, r.p99, nt.min, nt.p50, nt.p99, l.min, l.p50,
               l.p99, c.min, c.p50, c.p99, nt.p50 > 0 ? l.p50 / nt.p50 : 0);
        if (n >= 64 && n <= 256) {
            ok &= nt.p50 > 0 && l.p50 <= 1.10 * nt.p50;
            snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail), "%s%zuB %.3f",
                     strlen(detail) ? ", " : "", n, nt.p50 > 0 ? l.p50 / nt.p50 : 0);
        }
    }
    target(ok, "copy_from_mapping 64-256 B at new addresses within 1.1x of raw NT loads", detail);
}

static void costs(gdr_t g, double first_open_us, double first_pin_ms)
{
    enum { N = 1000 };
    static double v[N], u[N];
    static const size_t import_sizes[] = { 2 * MiB, 32 * MiB, 128 * MiB };
    struct gpu_vmm a;
    gdr_mh_t hold, h;
    unsigned seed = 3;
    struct stats s, su;
    char detail[160];
    size_t i;
    int k;

    printf("\ncosts\n  first gdr_open in the process: %.1f us\n"
           "  first pin (CUDA already up; Vulkan instance + device start + import of 64 MiB): "
           "%.1f ms\n", first_open_us, first_pin_ms);
    for (k = 0; k < 200; k++) {
        uint64_t t0 = gpu_now_ns();
        gdr_t x = gdr_open();
        v[k] = (double)(gpu_now_ns() - t0) / 1e3;
        gdr_close(x);
    }
    s = stats_of(v, 200);
    printf("  gdr_open (+close, not timed): min %.1f p50 %.1f p99 %.1f us\n", s.min, s.p50,
           s.p99);
    snprintf(detail, sizeof(detail), "p50 %.1f us, first in process %.1f us", s.p50,
             first_open_us);
    target(s.p50 <= 1000, "gdr_open at most 1 ms", detail);

    for (i = 0; i < sizeof(import_sizes) / sizeof(import_sizes[0]); i++) {
        uint64_t t0, t1;

        if (gpu_vmm_alloc(import_sizes[i], &a))
            break;
        t0 = gpu_now_ns();
        if (gdr_pin_buffer_v2(g, (unsigned long)a.ptr, 4096, 0, &hold)) {
            printf("  pin failed: %s\n", vramio_last_error());
            gpu_vmm_free(&a);
            break;
        }
        t1 = gpu_now_ns();
        gdr_unpin_buffer(g, hold);
        printf("  first pin of a %zu MiB allocation (export + import + map): %.1f us; "
               "last unpin (free of the import): %.1f us\n", import_sizes[i] >> 20,
               (double)(t1 - t0) / 1e3, (double)(gpu_now_ns() - t1) / 1e3);
        gpu_vmm_free(&a);
    }

    if (gpu_vmm_alloc(32 * MiB, &a) || gdr_pin_buffer_v2(g, (unsigned long)a.ptr, 4096, 0, &hold)) {
        printf("  repeated pin: set-up failed: %s\n", vramio_last_error());
        return;
    }
    for (k = 0; k < N; k++) {
        CUdeviceptr p = a.ptr + (rand_r(&seed) % 512) * 65536;
        uint64_t t0 = gpu_now_ns(), t1;

        if (gdr_pin_buffer_v2(g, (unsigned long)p, 65536, 0, &h)) {
            printf("  repeated pin failed: %s\n", vramio_last_error());
            break;
        }
        t1 = gpu_now_ns();
        gdr_unpin_buffer(g, h);
        v[k] = (double)(t1 - t0) / 1e3;
        u[k] = (double)(gpu_now_ns() - t1) / 1e3;
    }
    s = stats_of(v, N);
    su = stats_of(u, N);
    printf("  repeated pin inside an imported allocation: min %.2f p50 %.2f p99 %.2f us; "
           "its unpin: min %.2f p50 %.2f p99 %.2f us\n", s.min, s.p50, s.p99, su.min, su.p50,
           su.p99);
    snprintf(detail, sizeof(detail), "p50 %.2f us, p99 %.2f us", s.p50, s.p99);
    target(s.p50 <= 5, "repeated pin inside an imported allocation at most 5 us", detail);
    gdr_unpin_buffer(g, hold);
    gpu_vmm_free(&a);
}

int main(int argc, char **argv)
{
    int costs_only = argc > 1 && strcmp(argv[1], "--costs") == 0;
    int small_only = argc > 1 && strcmp(argv[1], "--small") == 0;
    unsigned long long d = 0;
    void *m = NULL, *at = NULL;
    size_t len = 0;
    uint64_t t0;
    double first_open_us, first_pin_ms;
    gdr_t g;

    /* These programs test the vulkan backend too: opt in (a user's own setting wins). */
    setenv("VRAMIO_ENABLE_VULKAN", "1", 0);
    setvbuf(stdout, NULL, _IOLBF, 0);
    gpu_cuda_setup();
    have_avx512 = __builtin_cpu_supports("avx512f");
    {
        unsigned a, b, c, e;

        have_movdir64b = __get_cpuid_count(7, 0, &a, &b, &c, &e) && (c & (1u << 28));
    }
    t0 = gpu_now_ns();
    g = gdr_open();
    first_open_us = (double)(gpu_now_ns() - t0) / 1e3;
    if (!g) {
        printf("gdr_open failed: %s\n", vramio_last_error());
        return 1;
    }
    if (vramio_alloc(0, AREA, &d)) {
        printf("vramio_alloc failed: %s\n", vramio_last_error());
        return 1;
    }
    t0 = gpu_now_ns();
    if (gpu_pin_map(g, d, AREA, &mh, &m, &len, &at)) {
        printf("pin/map failed: %s\n", vramio_last_error());
        return 1;
    }
    first_pin_ms = (double)(gpu_now_ns() - t0) / 1e6;
    map = at;
    dev = d;
    host = aligned_alloc(4096, AREA);
    CU_MUST(cuMemAllocHost((void **)&pinned, 16 * MiB));
    t_pattern(host, AREA, 1);
    memcpy(pinned, host, 16 * MiB);
    printf("copy kernel %s, avx512 %s, mapping %p of %zu bytes\n", vramio_copy_kernel(),
           have_avx512 ? "yes" : "no", (void *)map, len);

    if (!costs_only)
        small_writes();
    if (!costs_only && !small_only) {
        bandwidth(0);
        small_reads();
        bandwidth(1);
    }
    if (!small_only)
        costs(g, first_open_us, first_pin_ms);
    gdr_unpin_buffer(g, mh);
    vramio_free(d);
    gdr_close(g);
    printf("\n%d target(s) missed\n", missed);
    return 0;
}

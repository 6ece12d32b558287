/* SPDX-License-Identifier: MIT */
/*
 * bench_dispatch.c - what gdr_copy_to_mapping adds over the copy kernel it dispatches to
 * (make bench-dispatch; a measurement, not a test).
 *
 * White-box: a mapping of ordinary memory is registered as a pin with the handle table's
 * test-only insert (no backend involved), then 8-byte copies are timed through
 * gdr_copy_to_mapping(handle, ...) and through a direct vr_copy_to_mapping(type, ...) call to
 * the same kernel with the same addresses. Each sample is the mean over a batch of calls long
 * enough to dwarf the clock; the two ways alternate sample by sample so that frequency drift
 * hits both alike. Reports min / p50 / p99 ns per call and the difference.
 *
 *   bench_dispatch [-s samples] [-b batch] [-n bytes] [-t wc|caching|device]
 *
 * With -R, instead: sizes 1 B to 256 B (powers of two) through gdr_copy_to_mapping beside the
 * benchmarks' raw reference (tools/common/rawcopy.c, the fastest per size of 8-byte stores,
 * one 64-byte NT store per line and MOVDIR64B), in copylat's harness (tools/common/measure.c:
 * alternating batches of 200, ratio = median of the per-round ratios, p25-p75 beside it), on
 * the same mapping of ordinary memory: the per-call cost of the library's path in ns and TSC
 * cycles, which on a WC BAR hides under the fence's wait only in part.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "clock.h"
#include "gdrapi.h"
#include "core/handles.h"
#include "copy/copy.h"
#include "wb/hooks.h"
#include "common/measure.h"
#include "common/rawcopy.h"
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* Sorts s. A paired difference can be negative when a sample of the direct calls was hit by
 * an interruption, so its min is noise; its p50 is the figure to read. */
static void report(const char *what, double *s, int n)
{
    qsort(s, (size_t)n, sizeof(*s), cmp_double);
    printf("%-28s min %8.2f  p50 %6.2f  p99 %6.2f  ns/call\n", what, s[0], s[n / 2],
           s[(int)(n * 0.99)]);
}

struct raw_ctx {
    gdr_mh_t mh;
    void *map;
    const void *host;
    size_t n;
    enum raw_write w;
};

static void op_lib(void *p, size_t i)
{
    struct raw_ctx *c = p;

    gdr_copy_to_mapping(c->mh, c->map, c->host, c->n);
}

static void op_raw(void *p, size_t i)
{
    struct raw_ctx *c = p;

    raw_write(c->w, c->map, c->host, c->n);
}

/* TSC ticks per ns (0 where there is no TSC to read). */
static double tsc_per_ns(void)
{
#if defined(__x86_64__)
    double t0 = (double)vr_now_ns();
    uint64_t c0 = __rdtsc();

    while ((double)vr_now_ns() - t0 < 50e6)
        ;
    return (double)(__rdtsc() - c0) / ((double)vr_now_ns() - t0);
#else
    return 0;
#endif
}

/*
 * On ordinary memory an NT store evicts its line to DRAM and the fence waits for it, which a
 * WC BAR does not do alike; so besides the fastest raw sequence here (what copylat picks), each
 * size is also paired with the raw sequence of the same instructions as the library's path
 * (8-byte or narrower stores below a line, one 64-byte NT store per whole line): the difference
 * to that one is the cost of the library's path itself.
 */
static enum raw_write same_instructions(size_t n)
{
    return n >= 64 && raw_write_usable(RAW_W_NT, n) ? RAW_W_NT : RAW_W_ST8;
}

static int raw_sweep(gdr_mh_t mh, void *map, const void *host, size_t iters, double budget)
{
    struct raw_ctx c = { mh, map, host, 0, RAW_W_ST8 };
    double ghz = tsc_per_ns(), q[3];
    struct stats sr, sl;

    printf("copy kernel %s, raw %s; ordinary memory as a WC mapping; %zu calls per size; TSC "
           "%.2f GHz\n  Size(B)  raw seq     vramio(ns)  raw(ns)  extra(ns) extra(cyc)  "
           "vramio/raw (p25-p75)\n", vr_copy_kernel_name(), raw_kernel_name(), iters, ghz);
    for (c.n = 1; c.n <= 256; c.n <<= 1) {
        enum raw_write best_w = RAW_W_ST8;
        double best_r = 0;

        /* The fastest raw sequence, chosen as copylat does (pick_raw_write). */
        for (int w = 0; w < RAW_W_COUNT; w++) {
            if (!raw_write_usable((enum raw_write)w, c.n))
                continue;
            c.w = (enum raw_write)w;
            measure_latency_pair_q(op_raw, op_lib, &c, iters / 4, budget / 4, &sr, &sl, q);
            if (q[1] > best_r) {
                best_r = q[1];
                best_w = (enum raw_write)w;
            }
        }
        for (int k = 0; k < 2; k++) {
            c.w = k ? same_instructions(c.n) : best_w;
            if (k && c.w == best_w)
                break;
            measure_latency_pair_q(op_raw, op_lib, &c, iters, budget, &sr, &sl, q);
            printf("  %7zu  %-10s %10.2f %8.2f %10.2f %10.1f  %10.3f (%.3f-%.3f)%s\n", c.n,
                   raw_write_name(c.w), sl.p50 * 1e3, sr.p50 * 1e3, (sl.p50 - sr.p50) * 1e3,
                   (sl.p50 - sr.p50) * 1e3 * ghz, q[1], q[0], q[2],
                   k ? "  (same instructions)" : "");
        }
    }
    return 0;
}

struct args {
    int raw_mode;                 /* -R: 1-256 B beside the raw loops */
    int samples, batch;
    size_t n;                     /* bytes per copy */
    gdr_mapping_type_t type;
};

/* The command line into a: 0, or 2 (usage) after saying why. */
static int parse_args(int argc, char **argv, struct args *a, size_t max_n)
{
    int opt;

    *a = (struct args){ .samples = 2000, .batch = 1000, .n = 8, .type = GDR_MAPPING_TYPE_WC };
    while ((opt = getopt(argc, argv, "s:b:n:t:R")) != -1) {
        switch (opt) {
        case 'R': a->raw_mode = 1; break;
        case 's': a->samples = atoi(optarg); break;
        case 'b': a->batch = atoi(optarg); break;
        case 'n': a->n = (size_t)atol(optarg); break;
        case 't':
            a->type = !strcmp(optarg, "caching") ? GDR_MAPPING_TYPE_CACHING :
                      !strcmp(optarg, "device") ? GDR_MAPPING_TYPE_DEVICE : GDR_MAPPING_TYPE_WC;
            break;
        default:
            fprintf(stderr, "usage: %s [-s samples] [-b batch] [-n bytes] "
                    "[-t wc|caching|device] [-R]\n", argv[0]);
            return 2;
        }
    }
    if (a->samples < 10 || a->batch < 1 || a->n == 0 || a->n > max_n) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    return 0;
}

/* -s samples of -b calls each, through gdr_copy_to_mapping and straight to the engine's
 * inline copy, paired: what the entry point adds. 0, or 1 when a copy fails. */
static int paired_run(gdr_mh_t mh, char *map, const char *host, const struct args *a)
{
    double *via = calloc((size_t)a->samples, sizeof(double));
    double *direct = calloc((size_t)a->samples, sizeof(double));
    double *diff = calloc((size_t)a->samples, sizeof(double));
    double t0;
    int i, k, rc = 1;

    if (!via || !direct || !diff) {
        fprintf(stderr, "out of memory\n");
        goto out;
    }
    /* Warm up caches, branch predictors and the kernel choice. */
    for (i = 0; i < 100000; i++) {
        gdr_copy_to_mapping(mh, map, host, a->n);
        vr_copy_to_mapping(a->type, map, host, a->n);
    }
    for (k = 0; k < a->samples; k++) {
        t0 = (double)vr_now_ns();
        for (i = 0; i < a->batch; i++)
            if (gdr_copy_to_mapping(mh, map, host, a->n) != 0)
                goto out;
        via[k] = ((double)vr_now_ns() - t0) / a->batch;
        t0 = (double)vr_now_ns();
        for (i = 0; i < a->batch; i++)
            vr_copy_to_mapping(a->type, map, host, a->n);
        direct[k] = ((double)vr_now_ns() - t0) / a->batch;
        diff[k] = via[k] - direct[k];
    }
    printf("copy kernel %s, %zu-byte copies to a %s-type mapping of ordinary memory, "
           "%d samples x %d calls\n", vr_copy_kernel_name(), a->n,
           a->type == GDR_MAPPING_TYPE_WC ? "WC" :
           a->type == GDR_MAPPING_TYPE_CACHING ? "CACHING" : "DEVICE", a->samples, a->batch);
    /* diff first: report() sorts in place and the pairs must still match. */
    report("difference, paired samples", diff, a->samples);
    report("gdr_copy_to_mapping", via, a->samples);
    report("vr_copy_to_mapping (direct)", direct, a->samples);
    printf("dispatch overhead: %.2f ns (p50 - p50), %.2f ns (min - min)\n",
           via[a->samples / 2] - direct[a->samples / 2], via[0] - direct[0]);
    rc = 0;
out:
    free(via);
    free(direct);
    free(diff);
    return rc;
}

int main(int argc, char **argv)
{
    static char map[4096] __attribute__((aligned(4096)));
    char host[4096] __attribute__((aligned(64)));
    struct args a;
    unsigned long tok;
    gdr_mh_t mh;
    int rc;

    if (parse_args(argc, argv, &a, sizeof(map)))
        return 2;
    memset(host, 0x5a, sizeof(host));
    if (vr_handles_test_insert(map, sizeof(map), a.type, &tok) != 0) {
        fprintf(stderr, "cannot register the test mapping\n");
        return 1;
    }
    mh.h = tok;
    /* -R: -s samples of -b calls in all, at most 2 s per size. */
    rc = a.raw_mode ? raw_sweep(mh, map, host, (size_t)a.samples * (size_t)a.batch, 2.0)
                    : paired_run(mh, map, host, &a);
    vr_handles_test_remove(tok);
    return rc;
}

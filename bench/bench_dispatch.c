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
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gdrapi.h"
#include "handles.h"
#include "copy/copy.h"
#include "wb/hooks.h"

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

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

int main(int argc, char **argv)
{
    int samples = 2000, batch = 1000, i, k, opt;
    size_t n = 8;
    gdr_mapping_type_t type = GDR_MAPPING_TYPE_WC;
    static char map[4096] __attribute__((aligned(4096)));
    char host[4096] __attribute__((aligned(64)));
    double *via, *direct, *diff, t0;
    unsigned long tok;
    gdr_mh_t mh;

    while ((opt = getopt(argc, argv, "s:b:n:t:")) != -1) {
        switch (opt) {
        case 's': samples = atoi(optarg); break;
        case 'b': batch = atoi(optarg); break;
        case 'n': n = (size_t)atol(optarg); break;
        case 't':
            type = !strcmp(optarg, "caching") ? GDR_MAPPING_TYPE_CACHING :
                   !strcmp(optarg, "device") ? GDR_MAPPING_TYPE_DEVICE : GDR_MAPPING_TYPE_WC;
            break;
        default:
            fprintf(stderr, "usage: %s [-s samples] [-b batch] [-n bytes] [-t wc|caching|device]\n",
                    argv[0]);
            return 2;
        }
    }
    if (samples < 10 || batch < 1 || n == 0 || n > sizeof(map)) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    memset(host, 0x5a, sizeof(host));
    if (vr_handles_test_insert(map, sizeof(map), type, &tok) != 0) {
        fprintf(stderr, "cannot register the test mapping\n");
        return 1;
    }
    mh.h = tok;
    via = calloc((size_t)samples, sizeof(double));
    direct = calloc((size_t)samples, sizeof(double));
    diff = calloc((size_t)samples, sizeof(double));

    /* Warm up caches, branch predictors and the kernel choice. */
    for (i = 0; i < 100000; i++) {
        gdr_copy_to_mapping(mh, map, host, n);
        vr_copy_to_mapping(type, map, host, n);
    }
    for (k = 0; k < samples; k++) {
        t0 = now_ns();
        for (i = 0; i < batch; i++)
            if (gdr_copy_to_mapping(mh, map, host, n) != 0)
                return 1;
        via[k] = (now_ns() - t0) / batch;
        t0 = now_ns();
        for (i = 0; i < batch; i++)
            vr_copy_to_mapping(type, map, host, n);
        direct[k] = (now_ns() - t0) / batch;
        diff[k] = via[k] - direct[k];
    }
    printf("copy kernel %s, %zu-byte copies to a %s-type mapping of ordinary memory, "
           "%d samples x %d calls\n", vr_copy_kernel_name(), n,
           type == GDR_MAPPING_TYPE_WC ? "WC" : type == GDR_MAPPING_TYPE_CACHING ? "CACHING" : "DEVICE",
           samples, batch);
    /* diff first: report() sorts in place and the pairs must still match. */
    report("difference, paired samples", diff, samples);
    report("gdr_copy_to_mapping", via, samples);
    report("vr_copy_to_mapping (direct)", direct, samples);
    printf("dispatch overhead: %.2f ns (p50 - p50), %.2f ns (min - min)\n",
           via[samples / 2] - direct[samples / 2], via[0] - direct[0]);
    vr_handles_test_remove(tok);
    free(via);
    free(direct);
    free(diff);
    return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * copy_path_bench.c - the cost of the copy path itself: gdr_copy_to_mapping and
 * gdr_copy_from_mapping of a few bytes on a mapping of ordinary memory, registered as a pin
 * with the test hooks (tests/unit/wb/hooks.c), so that what is timed is the entry, the
 * lookup, the checks, the kernel's accesses and the fences, with no device behind them.
 * bench/copy_path_compare.sh builds it against two trees and runs them side by side
 * (alternating processes, and callgrind's instruction counts); a measurement, not a test.
 *
 *   copy_path_bench [-n bytes] [-c calls] [-r rounds] [-t wc|caching|device|none] [-o offset]
 *
 * Prints one line per direction: the median ns per call over the rounds (each round: -c
 * calls of each direction, the two directions alternating round by round), min and max.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gdrapi.h"
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

/* One round of calls of one direction: ns per call, or -1 when a copy failed. */
static double round_of(int to_map, gdr_mh_t mh, unsigned char *map, unsigned char *host,
                       size_t n, long calls)
{
    double t0 = now_ns();

    for (long i = 0; i < calls; i++)
        if ((to_map ? gdr_copy_to_mapping(mh, map, host, n)
                    : gdr_copy_from_mapping(mh, host, map, n)) != 0)
            return -1;
    return (now_ns() - t0) / (double)calls;
}

int main(int argc, char **argv)
{
    static unsigned char area[8192] __attribute__((aligned(4096)));
    static unsigned char host[4096] __attribute__((aligned(64)));
    static const char *const types[] = { "none", "wc", "caching", "device" };
    long calls = 1000000, rounds = 11;
    size_t n = 8, off = 0;
    int type = GDR_MAPPING_TYPE_WC, opt;
    unsigned long tok;
    double *t[2];
    gdr_mh_t mh;

    while ((opt = getopt(argc, argv, "n:c:r:t:o:")) != -1) {
        switch (opt) {
        case 'n': n = (size_t)atol(optarg); break;
        case 'c': calls = atol(optarg); break;
        case 'r': rounds = atol(optarg); break;
        case 'o': off = (size_t)atol(optarg); break;
        case 't':
            for (type = 0; type < 4 && strcmp(optarg, types[type]); type++)
                ;
            break;
        default:
            type = -1;
        }
    }
    if (type < 0 || type > 3 || n == 0 || n + off > sizeof(host) || calls < 1 || rounds < 1) {
        fprintf(stderr, "usage: %s [-n bytes] [-c calls] [-r rounds] "
                "[-t wc|caching|device|none] [-o offset]\n", argv[0]);
        return 2;
    }
    memset(host, 0x5a, sizeof(host));
    if (vr_handles_test_insert(area, sizeof(area), type, &tok) != 0) {
        fprintf(stderr, "cannot register the test mapping\n");
        return 1;
    }
    mh.h = tok;
    t[0] = calloc((size_t)rounds, sizeof(double));
    t[1] = calloc((size_t)rounds, sizeof(double));
    if (!t[0] || !t[1])
        return 1;
    /* Warm up: caches, branch predictors, the first touch of every page. */
    round_of(1, mh, area + off, host, n, calls / 10 + 1);
    round_of(0, mh, area + off, host, n, calls / 10 + 1);
    for (long r = 0; r < rounds; r++)
        for (int k = 0; k < 2; k++) {
            int to_map = (int)((r + k) & 1);    /* the order alternates round by round */

            t[to_map][r] = round_of(to_map, mh, area + off, host, n, calls);
            if (t[to_map][r] < 0) {
                fprintf(stderr, "a copy failed\n");
                return 1;
            }
        }
    for (int to_map = 1; to_map >= 0; to_map--) {
        qsort(t[to_map], (size_t)rounds, sizeof(double), cmp_double);
        printf("%s %zu B %s: %.3f ns/call (min %.3f, max %.3f; %ld rounds x %ld calls)\n",
               to_map ? "write" : "read", n, types[type], t[to_map][rounds / 2], t[to_map][0],
               t[to_map][rounds - 1], rounds, calls);
    }
    vr_handles_test_remove(tok);
    return 0;
}

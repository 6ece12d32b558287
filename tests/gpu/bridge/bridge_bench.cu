// SPDX-License-Identifier: MIT
/*
 * bridge_bench.cu - the bridge's speed figures, in one process:
 *   pool: vramio_alloc+vramio_free of 256 B-64 KiB, p50 per pair (target 2 us);
 *   large: vramio_alloc+free of 2 MiB-1 GiB against cudaMalloc+cudaFree (run without the
 *     bridge, so cudaMalloc is the driver's; target within 2x);
 *   --bridged (under vramio-run): the first pin (pin + map) of a cudaMalloc'd buffer against
 *     one of vramio_alloc memory of the same size, and copy speed on both (target: equal).
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "bridge_gpu.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_d);
    return v[n / 2];
}

static double pair_vramio(size_t n)
{
    unsigned long long d;
    double t = bg_now_us();

    if (vramio_alloc(0, n, &d))
        return 1e9;
    vramio_free(d);
    return bg_now_us() - t;
}

static double pair_cuda(size_t n)
{
    void *d;
    double t = bg_now_us();

    if (cudaMalloc(&d, n) != cudaSuccess)
        return 1e9;
    cudaFree(d);
    return bg_now_us() - t;
}

static void small_sizes(void)
{
    static double v[2000], c[2000];
    size_t n;
    int i;

    for (n = 256; n <= 65536; n *= 16) {
        char name[64];

        for (i = 0; i < 2000; i++) {
            v[i] = pair_vramio(n);
            c[i] = pair_cuda(n);
        }
        double pv = median(v, 2000), pc = median(c, 2000);
        printf("# alloc+free %6zu B: vramio_alloc p50 %.2f us, cudaMalloc p50 %.2f us\n", n, pv, pc);
        snprintf(name, sizeof(name), "bench/pool_pair_%zuB_p50_under_2us", n);
        t_check(pv <= 2.0, name, "%.2f us", pv);
    }
}

static void large_sizes(void)
{
    double v[7], c[7];
    size_t n;
    int i;

    for (n = 2u << 20; n <= (1u << 30); n *= 8) {
        char name[64];

        for (i = 0; i < 7; i++) {
            v[i] = pair_vramio(n);
            c[i] = pair_cuda(n);
        }
        double mv = median(v, 7), mc = median(c, 7);
        printf("# alloc+free %5zu MiB: vramio_alloc %.1f us, cudaMalloc %.1f us (%.2fx)\n",
               n >> 20, mv, mc, mv / mc);
        snprintf(name, sizeof(name), "bench/large_pair_%zuMiB_within_2x", n >> 20);
        t_check(mv <= 2 * mc, name, "%.1f us vs %.1f us", mv, mc);
    }
}

/* First pin + map of a fresh buffer, median of 5; then copy speed on the last one. */
static void pin_and_copy(gdr_t g, int bridged_kind, size_t n, double *pin_us, double *wr_gbs,
                         double *rd_gbs)
{
    double t[5], w = 1e9, r = 1e9, s;
    size_t c = n < (1u << 20) ? n : (1u << 20);
    char *host = (char *)calloc(1, c);
    struct bg_pin p;
    int i, k;

    for (i = 0; i < 5; i++) {
        unsigned long long d = 0;
        void *cd = NULL;

        if (bridged_kind) {
            cudaMalloc(&cd, n);
            d = (unsigned long long)(uintptr_t)cd;
        } else {
            vramio_alloc(0, n, &d);
        }
        s = bg_now_us();
        if (!d || bg_pin(g, d, n, &p)) {
            t[i] = 1e9;
        } else {
            t[i] = bg_now_us() - s;
            if (i == 4) {
                for (k = 0; k < 20; k++) {
                    s = bg_now_us();
                    gdr_copy_to_mapping(p.mh, p.cpu, host, c);
                    w = fmin(w, bg_now_us() - s);
                }
                for (k = 0; k < 5; k++) {
                    s = bg_now_us();
                    gdr_copy_from_mapping(p.mh, host, p.cpu, c);
                    r = fmin(r, bg_now_us() - s);
                }
            }
            bg_unpin(g, &p);
        }
        if (bridged_kind)
            cudaFree(cd);
        else
            vramio_free(d);
    }
    *pin_us = median(t, 5);
    *wr_gbs = c / w / 1e3;
    *rd_gbs = c / r / 1e3;
    free(host);
}

static void bridged(void)
{
    static const size_t sizes[] = { 4096, 2u << 20, 32u << 20 };
    gdr_t g = gdr_open();
    size_t i;

    if (!t_check(g != NULL, "bench/gdr_open", "%s", vramio_last_error()))
        return;
    for (i = 0; i < 3; i++) {
        double pb, wb, rb, pv, wv, rv;
        char name[80];

        pin_and_copy(g, 1, sizes[i], &pb, &wb, &rb);
        pin_and_copy(g, 0, sizes[i], &pv, &wv, &rv);
        printf("# %zu KiB: first pin+map cudaMalloc %.1f us, vramio_alloc %.1f us; copy of up to "
               "1 MiB to %.2f / %.2f GB/s, from %.3f / %.3f GB/s\n", sizes[i] >> 10, pb, pv, wb, wv,
               rb, rv);
        snprintf(name, sizeof(name), "bench/first_pin_%zuKiB_as_fast", sizes[i] >> 10);
        t_check(pb <= pv * 1.25 + 20, name, "%.1f us vs %.1f us", pb, pv);
        if (sizes[i] < (1u << 20))
            continue; /* too small for a bandwidth figure */
        snprintf(name, sizeof(name), "bench/copy_speed_%zuKiB_equal", sizes[i] >> 10);
        t_check(wb >= wv * 0.9 && rb >= rv * 0.9, name, "to %.2f vs %.2f, from %.3f vs %.3f GB/s",
                wb, wv, rb, rv);
    }
    gdr_close(g);
}

int main(int argc, char **argv)
{
    cudaFree(0);
    small_sizes();
    if (argc > 1 && !strcmp(argv[1], "--bridged"))
        bridged();
    else
        large_sizes();
    return t_status();
}

/* SPDX-License-Identifier: MIT */
/*
 * gpu_auto_test.c - vramio_copy_{to,from}_mapping_auto on a real GPU, every copy checked
 * against cuMemcpy: the crossover measured by the first large copy of each direction (and how
 * long that took) and that it is where the BAR and cuMemcpy meet in this process (the BAR the
 * faster at half of it, cuMemcpy at twice), correct bytes for sizes around both crossovers and
 * far from them, from and to pageable and pinned host memory at two offsets; a thread with no
 * CUDA context (left without one); a copy while the legacy default stream is held up by a wait
 * on a flag (as a kernel spinning on a flag holds it), which must finish anyway; errors as
 * gdr_copy's; the crossover against one timed directly here (check_against_direct), and the
 * library's own calibration timings, logged at info level (stderr).
 * Every wait is bounded. Prints one line per case; exits 1 when any case failed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gpu_common.h"
#include "t.h"

#define AREA (32u << 20)

static gdr_mh_t mh;
static unsigned char *map;
static CUdeviceptr dev;

static double ms_since(const struct timespec *t0)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* One size both ways at offset off, through host buffer h: 0 when the bytes are right. */
static int both_ways(unsigned char *h, unsigned char *check_buf, size_t n, size_t off,
                     uint64_t seed)
{
    int rc;

    t_pattern(h, n, seed);
    rc = vramio_copy_to_mapping_auto(mh, map + off, h, n);
    if (rc || cuMemcpyDtoH(check_buf, dev + off, n) || memcmp(h, check_buf, n))
        return 1;
    t_pattern(check_buf, n, seed + 1);
    if (cuMemcpyHtoD(dev + off, check_buf, n) || cuCtxSynchronize())
        return 1;
    memset(h, 0, n);
    rc = vramio_copy_from_mapping_auto(mh, h, map + off, n);
    return rc || memcmp(h, check_buf, n) != 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

enum { BY_BAR = 0, BY_CUMEMCPY = 1, BY_AUTO = 2 };

/* Median of 15 timed copies of n bytes, in us: through the BAR (gdr_copy_*), by cuMemcpy, or
 * by the _auto call, from/to the pinned buffer h; -1 when a copy failed. */
static double median_us(int write, int how, unsigned char *h, size_t n)
{
    double t[15];
    struct timespec t0;
    int rc;

    for (int k = 0; k < 15; k++) {
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (how == BY_AUTO)
            rc = write ? vramio_copy_to_mapping_auto(mh, map, h, n)
                       : vramio_copy_from_mapping_auto(mh, h, map, n);
        else if (how == BY_CUMEMCPY)
            rc = write ? cuMemcpyHtoD(dev, h, n) != CUDA_SUCCESS
                       : cuMemcpyDtoH(h, dev, n) != CUDA_SUCCESS;
        else
            rc = write ? gdr_copy_to_mapping(mh, map, h, n) : gdr_copy_from_mapping(mh, h, map, n);
        t[k] = ms_since(&t0) * 1e3;
        if (rc)
            return -1;
    }
    qsort(t, 15, sizeof(t[0]), cmp_double);
    return t[7];
}

/* The measured crossover x is where the two ways meet, in the same process: at x/2 the BAR is
 * the faster (or within 5%), at 2x cuMemcpy. A crossover measured with a cold BAR side (the
 * 31-40 KiB of writes once seen here, where the BAR wins up to 256 KiB) fails the second. */
static void check_crossover_meets(int write, size_t x, unsigned char *pinned, size_t cap)
{
    const char *name = write ? "auto/write_crossover_where_bar_meets_cumemcpy"
                             : "auto/read_crossover_where_bar_meets_cumemcpy";
    double bar_lo, eng_lo, bar_hi, eng_hi;

    if (x == SIZE_MAX || x > cap / 2) {
        t_skip(name, "crossover %zu B (never, or above %zu B)", x, cap / 2);
        return;
    }
    bar_lo = median_us(write, BY_BAR, pinned, x / 2);
    eng_lo = median_us(write, BY_CUMEMCPY, pinned, x / 2);
    bar_hi = median_us(write, BY_BAR, pinned, 2 * x);
    eng_hi = median_us(write, BY_CUMEMCPY, pinned, 2 * x);
    printf("# %s crossover %zu B: at %zu B BAR %.2f us, cuMemcpy %.2f us; at %zu B BAR %.2f us,"
           " cuMemcpy %.2f us\n", write ? "write" : "read", x, x / 2, bar_lo, eng_lo, 2 * x,
           bar_hi, eng_hi);
    t_check(bar_lo > 0 && eng_lo > 0 && bar_hi > 0 && eng_hi > 0 && bar_lo <= 1.05 * eng_lo &&
                eng_hi <= 1.05 * bar_hi, name, "x/2: BAR %.2f cuMemcpy %.2f us; 2x: BAR %.2f "
            "cuMemcpy %.2f us", bar_lo, eng_lo, bar_hi, eng_hi);
}

/*
 * The library's crossover x against one timed here, directly: BAR and cuMemcpy at five sizes
 * around where it is expected (writes 32-512 KiB, reads 2-32 KiB), each the median of 15; the
 * direct crossover is where cuMemcpy goes below the BAR for good, between the two sizes around
 * it by a straight line. x must be within 2x of it (when cuMemcpy wins at every size, x at
 * most twice the smallest; when the BAR does, x at least half the largest). Also prints the
 * _auto call's time at each size, against the better of the two. The library's own raw
 * timings are its info line "copy engine ... crossover" (logging is on in this test).
 */
static void check_against_direct(int write, size_t x, unsigned char *pinned)
{
    static const size_t wr[5] = { 32768, 65536, 131072, 262144, 524288 };
    static const size_t rd[5] = { 2048, 4096, 8192, 16384, 32768 };
    const size_t *sz = write ? wr : rd;
    const char *dir = write ? "write" : "read";
    const char *where = "between timed sizes";
    double bar[5], eng[5], lo = 0, hi = 0;
    char name[96];
    int i;

    snprintf(name, sizeof(name), "auto/%s_crossover_within_2x_of_direct", dir);
    for (i = 0; i < 5; i++) {
        double au;

        bar[i] = median_us(write, BY_BAR, pinned, sz[i]);
        eng[i] = median_us(write, BY_CUMEMCPY, pinned, sz[i]);
        au = median_us(write, BY_AUTO, pinned, sz[i]);
        if (bar[i] <= 0 || eng[i] <= 0 || au <= 0) {
            t_check(0, name, "a timed %s of %zu B failed", dir, sz[i]);
            return;
        }
        printf("# direct %s %7zu B: BAR %8.2f us, cuMemcpy %8.2f us, _auto %8.2f us (%.2fx the "
               "better)\n", dir, sz[i], bar[i], eng[i], au,
               (bar[i] < eng[i] ? bar[i] : eng[i]) / au);
    }
    if (eng[4] >= bar[4]) {
        lo = (double)sz[4];             /* the BAR wins throughout: the crossover is above */
        hi = (double)SIZE_MAX;
        where = "above the largest size timed";
    } else {
        for (i = 3; i >= 0 && eng[i] < bar[i]; i--)
            ;
        if (i < 0) {
            hi = (double)sz[0];         /* cuMemcpy wins throughout: the crossover is below */
            where = "below the smallest size timed";
        } else {
            double d0 = eng[i] - bar[i], d1 = eng[i + 1] - bar[i + 1];

            lo = hi = (double)sz[i] + d0 / (d0 - d1) * (double)(sz[i + 1] - sz[i]);
        }
    }
    printf("# %s crossover: library %zu B, direct %.0f-%.0f B (%s)\n", dir, x, lo, hi, where);
    t_check((double)x >= lo / 2 && (double)x <= 2 * hi, name, "library %zu B, direct %.0f-%.0f B",
          x, lo, hi);
}

static void test_crossover_and_data(void)
{
    size_t xr = 0, xw = 0, big = (8u << 20) + 5, sizes[40], ns = 0;
    unsigned char *pageable = malloc(big + 8), *pinned = NULL, *chk = malloc(big + 8);
    struct timespec t0;
    double first_ms;
    int bad = 0;
    char why[512] = "";

    if (!t_check(pageable && chk && cuMemAllocHost((void **)&pinned, big + 8) == CUDA_SUCCESS,
                 "auto/alloc", "out of memory"))
        return;
    t_pattern(pageable, 1u << 20, 1);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    vramio_copy_to_mapping_auto(mh, map, pageable, 1u << 20);
    vramio_copy_from_mapping_auto(mh, pageable, map, 1u << 20);
    first_ms = ms_since(&t0);
    vramio_copy_auto_crossover(mh, &xr, &xw);
    printf("# crossover: reads %zu B, writes %zu B (SIZE_MAX = never); first two 1 MiB copies "
           "with the measurement %.2f ms\n", xr, xw, first_ms);
    t_check(xr >= 4096 && xw >= 4096, "auto/crossover_measured", "read %zu write %zu", xr, xw);
    t_check(first_ms < 50, "auto/measurement_within_a_few_ms", "%.2f ms", first_ms);
    {
        static const size_t far[] = { 1, 8, 4095, 4096, 65536 + 3, 1u << 20 };

        for (size_t k = 0; k < sizeof(far) / sizeof(far[0]); k++)
            sizes[ns++] = far[k];
        sizes[ns++] = big;
        for (int d = 0; d < 2; d++) {
            size_t x = d ? xw : xr;

            if (x < big)
                for (size_t n = x - 2; n <= x + 2; n++)
                    sizes[ns++] = n;
        }
    }
    for (int p = 0; p < 2; p++)
        for (size_t k = 0; k < ns; k++)
            for (size_t off = 0; off <= 3; off += 3)
                if (both_ways(p ? pinned : pageable, chk, sizes[k], off, sizes[k] * 7 + off)) {
                    bad++;
                    snprintf(why + strlen(why), sizeof(why) - strlen(why), " %s %zu+%zu",
                             p ? "pinned" : "pageable", sizes[k], off);
                }
    t_check(bad == 0, "auto/data_around_crossover_pageable_and_pinned", "%d wrong:%s", bad, why);
    check_crossover_meets(1, xw, pinned, big);
    check_crossover_meets(0, xr, pinned, big);
    check_against_direct(1, xw, pinned);
    check_against_direct(0, xr, pinned);
    t_check(vramio_copy_to_mapping_auto(mh, map + AREA - 10, pinned, 4096 * 4) == EINVAL &&
                vramio_copy_from_mapping_auto(mh, NULL, map, 1u << 20) == EINVAL,
            "auto/errors_as_gdr_copy", "accepted");
    cuMemFreeHost(pinned);
    free(pageable);
    free(chk);
}

struct job {
    size_t n;
    int rc, done, ctx_after_null;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned char *buf;
};

static void *copy_thread(void *arg)
{
    struct job *j = arg;
    CUcontext c = NULL;
    int rc;

    t_pattern(j->buf, j->n, 42);
    rc = vramio_copy_to_mapping_auto(mh, map, j->buf, j->n);
    if (!rc)
        rc = vramio_copy_from_mapping_auto(mh, j->buf, map, j->n);
    cuCtxGetCurrent(&c);
    pthread_mutex_lock(&j->lock);
    j->rc = rc;
    j->ctx_after_null = c == NULL;
    j->done = 1;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->lock);
    return NULL;
}

/* Run the copy job in a thread with no context; wait for it at most 5 s. 1 when it finished. */
static int run_bounded(struct job *j)
{
    struct timespec dl;
    pthread_t t;
    int done;

    pthread_mutex_init(&j->lock, NULL);
    pthread_cond_init(&j->cond, NULL);
    if (pthread_create(&t, NULL, copy_thread, j))
        return 0;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 5;
    pthread_mutex_lock(&j->lock);
    while (!j->done && pthread_cond_timedwait(&j->cond, &j->lock, &dl) == 0)
        ;
    done = j->done;
    pthread_mutex_unlock(&j->lock);
    if (done)
        pthread_join(t, NULL);
    else
        pthread_detach(t);
    return done;
}

static void test_no_context_thread(void)
{
    struct job j = { .n = 4u << 20 };

    j.buf = malloc(j.n);
    if (!t_check(j.buf != NULL, "auto/no_context_alloc", "out of memory"))
        return;
    t_check(run_bounded(&j) && j.rc == 0, "auto/thread_without_context", "rc %d, done %d", j.rc,
            j.done);
    t_check(j.ctx_after_null, "auto/thread_context_left_as_it_was", "a context is current after");
    free(j.buf);
}

/* The legacy stream held by a wait on a host flag (what a kernel spinning on a flag does to
 * it): the _auto copy must not queue behind it. */
static void test_legacy_stream_held(void)
{
    volatile unsigned *flag = NULL;
    CUdeviceptr dflag = 0;
    struct job j = { .n = 4u << 20 };
    int ok;

    if (cuMemHostAlloc((void **)&flag, 4096, CU_MEMHOSTALLOC_DEVICEMAP) != CUDA_SUCCESS ||
        cuMemHostGetDevicePointer(&dflag, (void *)flag, 0) != CUDA_SUCCESS) {
        t_skip("auto/legacy_stream_held", "no mapped host memory");
        return;
    }
    *flag = 0;
    if (cuStreamWaitValue32(NULL, dflag, 1, CU_STREAM_WAIT_VALUE_EQ) != CUDA_SUCCESS) {
        t_skip("auto/legacy_stream_held", "cuStreamWaitValue32 is not supported here");
        cuMemFreeHost((void *)flag);
        return;
    }
    j.buf = malloc(j.n);
    ok = j.buf && run_bounded(&j) && j.rc == 0;
    *flag = 1;             /* release the legacy stream whatever happened */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    t_check(ok, "auto/does_not_wait_for_the_legacy_stream", "rc %d, done %d (5 s bound)", j.rc,
            j.done);
    t_check(cuCtxSynchronize() == CUDA_SUCCESS, "auto/legacy_stream_released", "sync failed");
    if (j.done)
        free(j.buf);
    cuMemFreeHost((void *)flag);
}

int main(void)
{
    struct gpu_vmm v;
    gdr_t g;
    void *m = NULL, *at = NULL;
    size_t mlen = 0;

    setenv("VRAMIO_ENABLE_VULKAN", "1", 0);     /* our memory is VMM with a POSIX-fd handle */
    gpu_cuda_setup();
    g = gdr_open();
    if (!g || gpu_vmm_alloc(AREA, &v)) {
        t_skip("auto", "no usable backend or no VMM memory: %s", vramio_last_error());
        return 0;
    }
    if (!t_check(gpu_pin_map(g, v.ptr, AREA, &mh, &m, &mlen, &at) == 0, "auto/pin_map", "%s",
                 vramio_last_error()))
        return t_status();
    map = at;
    dev = v.ptr;
    test_crossover_and_data();
    test_no_context_thread();
    test_legacy_stream_held();
    gdr_unpin_buffer(g, mh);
    gdr_close(g);
    gpu_vmm_free(&v);
    return t_status();
}

/* SPDX-License-Identifier: MIT */
/* measure.c - batched latency and bandwidth measurement (see measure.h). */
#include "measure.h"

#include <stdlib.h>

#include "util.h"

#define TARGET_BATCH_NS 2000.0
#define MIN_SAMPLES 8    /* never stop on the time budget before this many */
#define WANT_SAMPLES 100

size_t measure_latency(op_fn fn, void *ctx, size_t iters, double budget_s, struct stats *st)
{
    size_t batch, done = 0, n = 0, cap;
    double *samples, est;
    uint64_t t0, start;

    /* Warm up (page-table walks, first touches) and estimate the cost of one operation. */
    for (size_t i = 0; i < 4; i++)
        fn(ctx, i);
    t0 = now_ns();
    for (size_t i = 0; i < 8; i++)
        fn(ctx, i);
    est = (double)(now_ns() - t0) / 8.0;
    batch = est >= TARGET_BATCH_NS ? 1 : (size_t)(TARGET_BATCH_NS / (est > 1 ? est : 1)) + 1;
    /* Percentiles need samples: at least WANT_SAMPLES of them when iters allows. */
    if (batch > iters / WANT_SAMPLES)
        batch = iters / WANT_SAMPLES;
    if (batch == 0)
        batch = 1;
    cap = iters / batch + 1;
    samples = malloc(cap * sizeof(*samples));
    if (!samples) {
        stats_compute(NULL, 0, st);
        return 0;
    }
    start = now_ns();
    while (done < iters && n < cap) {
        t0 = now_ns();
        for (size_t k = 0; k < batch; k++)
            fn(ctx, done + k);
        samples[n++] = (double)(now_ns() - t0) / 1000.0 / (double)batch;
        done += batch;
        if (n >= MIN_SAMPLES && (double)(now_ns() - start) > budget_s * 1e9)
            break;
    }
    stats_compute(samples, n, st);
    free(samples);
    return done;
}

double measure_bandwidth(op_fn fn, void *ctx, size_t bytes, size_t iters, struct stats *st)
{
    double *samples = st ? malloc(iters * sizeof(*samples)) : NULL;
    uint64_t t0, t1, start;

    if (iters == 0)
        return 0;
    for (size_t i = 0; i < 16 && i < iters; i++) /* warm-up: page walks, TLB, first touches */
        fn(ctx, i);
    start = now_ns();
    t0 = start;
    for (size_t i = 0; i < iters; i++) {
        fn(ctx, i);
        if (samples) {
            t1 = now_ns();
            samples[i] = (double)(t1 - t0) / 1000.0;
            t0 = t1;
        }
    }
    t1 = now_ns();
    if (st)
        stats_compute(samples, samples ? iters : 0, st);
    free(samples);
    return (double)bytes * (double)iters / ((double)(t1 - start) / 1e9) / (1024.0 * 1024.0);
}

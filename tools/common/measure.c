/* SPDX-License-Identifier: MIT */
/* measure.c - batched latency and bandwidth measurement (see measure.h). */
#include "measure.h"

#include <stdlib.h>

#include "util.h"

#define TARGET_BATCH_NS 2000.0
#define MIN_SAMPLES 8    /* never stop on the time budget before this many */
#define WANT_SAMPLES 100
#define PAIR_MIN_BATCH 200 /* measure_latency_pair: operations per batch when they are short */

/* Operations per timed batch for one that takes est ns: about TARGET_BATCH_NS per batch, but
 * percentiles need samples, so at least WANT_SAMPLES batches when iters allows. */
static size_t batch_for(double est, size_t iters)
{
    size_t batch = est >= TARGET_BATCH_NS ? 1 : (size_t)(TARGET_BATCH_NS / (est > 1 ? est : 1)) + 1;

    if (batch > iters / WANT_SAMPLES)
        batch = iters / WANT_SAMPLES;
    return batch ? batch : 1;
}

size_t measure_latency(op_fn fn, void *ctx, size_t iters, double budget_s, struct stats *st)
{
    size_t batch, done = 0, n = 0, cap;
    double *samples, est;
    uint64_t t0, start;

    /* Warm up (page-table walks, first touches) and estimate the cost of one operation. */
    for (size_t i = 0; i < 4; i++)
        fn(ctx, i);
    t0 = vr_now_ns();
    for (size_t i = 0; i < 8; i++)
        fn(ctx, i);
    est = (double)(vr_now_ns() - t0) / 8.0;
    batch = batch_for(est, iters);
    cap = iters / batch + 1;
    samples = malloc(cap * sizeof(*samples));
    if (!samples) {
        stats_compute(NULL, 0, st);
        return 0;
    }
    start = vr_now_ns();
    while (done < iters && n < cap) {
        t0 = vr_now_ns();
        for (size_t k = 0; k < batch; k++)
            fn(ctx, done + k);
        samples[n++] = (double)(vr_now_ns() - t0) / 1000.0 / (double)batch;
        done += batch;
        if (n >= MIN_SAMPLES && (double)(vr_now_ns() - start) > budget_s * 1e9)
            break;
    }
    stats_compute(samples, n, st);
    free(samples);
    return done;
}

size_t measure_latency_pair(op_fn a, op_fn b, void *ctx, size_t iters, double budget_s,
                            struct stats *sa, struct stats *sb, double *ratio)
{
    double q[3];
    size_t done = measure_latency_pair_q(a, b, ctx, iters, budget_s, sa, sb, q);

    *ratio = q[1];
    return done;
}

size_t measure_latency_pair_q(op_fn a, op_fn b, void *ctx, size_t iters, double budget_s,
                              struct stats *sa, struct stats *sb, double q[3])
{
    size_t batch, done = 0, n = 0, cap;
    double *va, *vb, *vr, est, t[2];
    uint64_t t0, start;
    op_fn fn[2] = { a, b };

    /* One batch length for both, from the slower of the two: the same number of operations
     * back to back is the same regime for each (a fence after every one, the timer outside).
     * And a long one for operations under 2 us (PAIR_MIN_BATCH, as iters allows): with batches of
     * about 2 us (9-15 small WC writes) the H200 gave raw 64 B writes of 0.03 us and the
     * library's 0.25 us in the same rounds, a transient at each batch start that the batch
     * before had left; batches of 200 (bench/gpu_bench.c) give both 0.13-0.15 us. */
    for (size_t i = 0; i < 4; i++) {
        a(ctx, i);
        b(ctx, iters + i);
    }
    est = 0;
    for (int k = 0; k < 2; k++) {
        t0 = vr_now_ns();
        for (size_t i = 0; i < 8; i++)
            fn[k](ctx, i + (k ? iters : 0));
        t[k] = (double)(vr_now_ns() - t0) / 8.0;
        if (t[k] > est)
            est = t[k];
    }
    batch = batch_for(est, iters);
    if (est < TARGET_BATCH_NS && batch < PAIR_MIN_BATCH && batch < iters / WANT_SAMPLES)
        batch = iters / WANT_SAMPLES < PAIR_MIN_BATCH ? iters / WANT_SAMPLES : PAIR_MIN_BATCH;
    cap = iters / batch + 1;
    va = malloc(cap * sizeof(*va));
    vb = malloc(cap * sizeof(*vb));
    vr = malloc(cap * sizeof(*vr));
    if (!va || !vb || !vr) {
        free(va);
        free(vb);
        free(vr);
        stats_compute(NULL, 0, sa);
        stats_compute(NULL, 0, sb);
        q[0] = q[1] = q[2] = 0;
        return 0;
    }
    start = vr_now_ns();
    while (done < iters && n < cap) {
        /* a then b in even rounds, b then a in odd ones: neither always goes first. */
        for (int k = 0; k < 2; k++) {
            int w = (int)((k + n) & 1);

            t0 = vr_now_ns();
            /* b counts from iters + batch, past every index a gets: an operation that
             * moves through memory by its index never reads what the other has just read. */
            for (size_t i = 0; i < batch; i++)
                fn[w](ctx, done + i + (w ? iters + batch : 0));
            t[w] = (double)(vr_now_ns() - t0) / 1000.0 / (double)batch;
        }
        va[n] = t[0];
        vb[n] = t[1];
        vr[n] = t[0] > 0 ? t[1] / t[0] : 0;
        n++;
        done += batch;
        if (n >= MIN_SAMPLES && (double)(vr_now_ns() - start) > budget_s * 1e9)
            break;
    }
    stats_compute(va, n, sa);
    stats_compute(vb, n, sb);
    {
        struct stats r;

        stats_compute(vr, n, &r);   /* sorts vr */
        q[0] = n ? vr[n / 4] : 0;
        q[1] = r.p50;
        q[2] = n ? vr[(3 * n) / 4] : 0;
    }
    free(va);
    free(vb);
    free(vr);
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
    start = vr_now_ns();
    t0 = start;
    for (size_t i = 0; i < iters; i++) {
        fn(ctx, i);
        if (samples) {
            t1 = vr_now_ns();
            samples[i] = (double)(t1 - t0) / 1000.0;
            t0 = t1;
        }
    }
    t1 = vr_now_ns();
    if (st)
        stats_compute(samples, samples ? iters : 0, st);
    free(samples);
    return (double)bytes * (double)iters / ((double)(t1 - start) / 1e9) / (1024.0 * 1024.0);
}

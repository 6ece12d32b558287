/* SPDX-License-Identifier: MIT */
/*
 * measure.h - timing of one operation repeated many times, as latency samples.
 *
 * Operations shorter than the clock's resolution are timed in batches: a sample is the time of
 * a batch divided by its length, the batch sized so that it lasts about 2 us but leaves at least
 * 100 samples when iters allows (so p99 is of batch means for tiny operations). A run stops
 * after `iters` operations or `budget_s` seconds, whichever comes first (at least 8 samples).
 */
#ifndef TOOLS_MEASURE_H
#define TOOLS_MEASURE_H

#include <stddef.h>

#include "stats.h"

/* One operation; i counts from 0 (use it to vary the address). */
typedef void (*op_fn)(void *ctx, size_t i);

/* Latency in microseconds of fn(ctx, i). Returns the number of operations run. */
size_t measure_latency(op_fn fn, void *ctx, size_t iters, double budget_s, struct stats *st);

/* Two operations side by side (the library and its raw reference): batches of the same
 * length alternate, the order turning every round, so that drift and noise hit both alike.
 * Stats of each go to sa and sb; *ratio gets the median of the per-round ratios b/a.
 * a gets the indices 0, 1, ... and b indices from iters + batch on, so that operations that
 * pick an address from their index do not share addresses (on the H200 a read right after
 * the other's read of the same line came back in about half the time). Returns the number of
 * operations of each that ran. */
size_t measure_latency_pair(op_fn a, op_fn b, void *ctx, size_t iters, double budget_s,
                            struct stats *sa, struct stats *sb, double *ratio);

/* The same, with the spread of the per-round ratios: q[0], q[1], q[2] = p25, p50 (= *ratio
 * of measure_latency_pair), p75. */
size_t measure_latency_pair_q(op_fn a, op_fn b, void *ctx, size_t iters, double budget_s,
                              struct stats *sa, struct stats *sb, double q[3]);

/* Bandwidth in MB/s (2^20 bytes, as GDRCopy's tools) of `iters` operations of `bytes` each,
 * timed as one run; per-operation latencies go to st when st != NULL. */
double measure_bandwidth(op_fn fn, void *ctx, size_t bytes, size_t iters, struct stats *st);

#endif /* TOOLS_MEASURE_H */

/* SPDX-License-Identifier: MIT */
/*
 * dma_policy.h - when the _auto copies (copy_dma.c) use the GPU's copy engine instead of the
 * BAR: the crossover size from measured costs, and its setting from the environment. Pure
 * functions, unit-tested without a GPU (tests/unit/wb_dma_policy.c).
 */
#ifndef VRAMIO_DMA_POLICY_H
#define VRAMIO_DMA_POLICY_H

#include <stddef.h>
#include <stdint.h>

/* "Never": the copy engine is not used for that direction. */
#define VR_DMA_NEVER SIZE_MAX

/* Below this the _auto calls never consider the copy engine: one copy-engine transfer costs
 * several microseconds of fixed overhead, more than a BAR copy of that size anywhere. */
#define VR_DMA_FLOOR 4096u

/* What a calibration measured: each way's cost as fixed + per byte (the BAR's fixed cost is one
 * fence or one uncached round trip; 0 when not measured). */
struct vr_dma_costs {
    double dma_fixed_ns;
    double dma_ns_per_byte;
    double bar_ns_per_byte;
    double bar_fixed_ns;
};

/* The smallest size from which the copy engine is faster, where the two lines meet: at least
 * VR_DMA_FLOOR, VR_DMA_NEVER when its per-byte cost is not below the BAR's (or a figure is not
 * a positive number). */
size_t vr_dma_crossover(const struct vr_dma_costs *c);

/* One timed copy of n bytes that took ns. */
struct vr_dma_sample {
    size_t n;
    double ns;
};

/* Fixed and per-byte costs from timed copies of (at least) two sizes: the first sample is a
 * warm-up and ignored (the first access through a mapping pays one-time costs that no later
 * copy pays), then the best time of the smallest and of the largest size make the line.
 * 0, or EINVAL as vr_dma_fit (also when fewer than two sizes remain). */
int vr_dma_fit_best(const struct vr_dma_sample *s, size_t count, double *fixed_ns,
                    double *per_byte_ns);

/* Fixed and per-byte costs from two timed sizes n1 < n2 (t1, t2 in ns). 0, or EINVAL when the
 * figures do not make a line with a positive slope. */
int vr_dma_fit(size_t n1, double t1, size_t n2, double t2, double *fixed_ns, double *per_byte_ns);

/* A VRAMIO_DMA_CROSSOVER_READ/_WRITE value: a size in bytes with an optional K, M or G suffix
 * (powers of 1024), or "never"/"off". 0 on success, EINVAL for anything else (*out untouched).
 * A value below VR_DMA_FLOOR is raised to it. */
int vr_dma_parse_crossover(const char *s, size_t *out);

#endif /* VRAMIO_DMA_POLICY_H */

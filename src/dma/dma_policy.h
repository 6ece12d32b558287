/* SPDX-License-Identifier: MIT */
/*
 * dma_policy.h - when the _auto copies (copy_dma.c) use the GPU's copy engine instead of the
 * BAR: the sizes the calibration times, the crossover from those timings, and its setting from
 * the environment. Pure functions, unit-tested without a GPU (tests/unit/wb_dma_policy.c).
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

/* The sizes at which the calibration times the copy engine, both directions: around every
 * crossover plausible on PCIe (reads cross at 4-16 KiB, writes at 64 KiB-1 MiB). Timed, not
 * extrapolated: a copy-engine copy is no straight line in its size, so a line through a
 * small and a large size puts the crossover far from its place (docs/auto-copies.md). */
#define VR_DMA_ENGINE_POINTS 6
extern const size_t vr_dma_engine_sizes[VR_DMA_ENGINE_POINTS];
#define VR_DMA_ENGINE_LARGEST ((size_t)1 << 20)

/* The calibration's BAR writes: the caller's own first bytes, in chunks of unit and 4 * unit
 * bytes (a warm-up of unit, then three of each in turn: 16 * unit in all), each chunk written
 * twice before the copy engine is timed and twice after, always with the same bytes.
 * The unit for a first write of n bytes (at least 16 * 4 KiB): the largest of 4, 16 and
 * 64 KiB that the write covers, so that the chunks are as near the crossover as it allows. */
#define VR_DMA_BAR_WRITE_MIN (16u * 4096u)
size_t vr_dma_bar_write_unit(size_t n);

/* One timed copy of n bytes that took ns. */
struct vr_dma_sample {
    size_t n;
    double ns;
};

/* One way's cost as measured: per size, the median of its timings, by ascending size; between
 * and beyond the sizes, straight lines through the neighbouring (or the two end) points. */
#define VR_DMA_MAX_POINTS  8
#define VR_DMA_MAX_SAMPLES 64
struct vr_dma_curve {
    size_t count;
    struct vr_dma_sample p[VR_DMA_MAX_POINTS];
};

/* The curve of count samples (any order, sizes repeated; a warm-up is left out by the
 * caller). 0, or EINVAL when a time is not a positive number, a size is 0, there are more
 * than VR_DMA_MAX_SAMPLES samples, or fewer than two or more than VR_DMA_MAX_POINTS sizes. */
int vr_dma_curve(const struct vr_dma_sample *s, size_t count, struct vr_dma_curve *c);

/* c made, at each size that o also has, the lower of the two times: the same way timed twice
 * (the calibration times the BAR before and after the copy engine), the slower pass dropped,
 * since a slow moment only ever adds time. */
void vr_dma_curve_lower(struct vr_dma_curve *c, const struct vr_dma_curve *o);

/* The curve's cost at n bytes, in ns (a curve of vr_dma_curve). */
double vr_dma_curve_at(const struct vr_dma_curve *c, size_t n);

/* The smallest size from which the copy engine stays the faster way (the last place where the
 * two curves cross), at least VR_DMA_FLOOR; VR_DMA_NEVER when the BAR is faster at the largest
 * size and the engine's end slope does not bring it ahead, or a curve has fewer than two
 * points. Beyond both curves' largest sizes their end segments decide. */
size_t vr_dma_crossover(const struct vr_dma_curve *bar, const struct vr_dma_curve *dma);

/* A VRAMIO_DMA_CROSSOVER_READ/_WRITE value: a size in bytes with an optional K, M or G suffix
 * (powers of 1024), or "never"/"off". 0 on success, EINVAL for anything else (*out untouched).
 * A value below VR_DMA_FLOOR is raised to it. */
int vr_dma_parse_crossover(const char *s, size_t *out);

#endif /* VRAMIO_DMA_POLICY_H */

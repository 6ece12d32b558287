/* SPDX-License-Identifier: MIT */
/*
 * copy_kernels.h - the contract between the copy engine (copy.c) and its ISA files: the
 * table of kernels, the CPU features each needs, and the bulk loops. It includes nothing of
 * the engine: an ISA file sees this and no more.
 *
 * Each ISA file holds only its bulk loops. A bulk loop may assume that the mapping side of
 * the copy (the destination of a write, the source of a read) is aligned to its block and
 * that n is a multiple of the block; copy.c brings the copy there (heads, tails, fences).
 */
#ifndef VRAMIO_COPY_KERNELS_H
#define VRAMIO_COPY_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include "arch/cpu_features.h"

/* How a kernel stores one whole 64-byte aligned line as a single store, if it can: the inline
 * write path of copy.h uses it for whole lines (VR_LINE_NONE: such lines take the bulk loop). */
enum vr_line_store { VR_LINE_NONE, VR_LINE_NT512, VR_LINE_MOVDIR64B };

typedef void (*vr_bulk_fn)(void *dst, const void *src, size_t n);

/* One direction of a kernel. */
struct vr_copy_dir {
    vr_bulk_fn bulk;    /* mapping side aligned to block, n a multiple of block */
    vr_bulk_fn step16;  /* 16-byte pieces from 16- up to block alignment; NULL if block <= 16 */
    size_t block;       /* 8, 16, 32 or 64 */
};

struct vr_copy_kernel {
    const char *name;
    unsigned needs;              /* enum vr_cpu_feature bits */
    struct vr_copy_dir to_map;   /* WC writes: non-temporal stores */
    struct vr_copy_dir from_map; /* WC reads: streaming loads, normal stores to host */
    vr_bulk_fn small_read;       /* WC reads of 1 to 64 bytes at any place; NULL: shaped */
    unsigned char line_store;    /* enum vr_line_store: its one store of a whole line, if any */
};

/*
 * What a small read (1 <= n <= 64 bytes at a) loads: aligned chunks of the smallest width of
 * 16, 32 and 64 (at most max) whose one chunk holds the whole range, else of width max; *lo
 * and *w the first chunk and the width, the span's length returned (at most 128). On a BAR a
 * read is an uncached round trip, and one streaming load of a chunk costs one, where the
 * scalar accesses of the shaped path cost one each. A chunk of at most 64 bytes at its own
 * alignment never crosses a page, and a mapping is whole pages: a chunk that holds a byte of
 * the range is mapped.
 */
static inline size_t vr_small_span(uintptr_t a, size_t n, size_t max, uintptr_t *lo, size_t *w)
{
    const uintptr_t last = a + n - 1;
    size_t cw = 16;

    while (cw < max && (a & ~(uintptr_t)(cw - 1)) != (last & ~(uintptr_t)(cw - 1)))
        cw <<= 1;
    *w = cw;
    *lo = a & ~(uintptr_t)(cw - 1);
    return (size_t)((last & ~(uintptr_t)(cw - 1)) + cw - *lo);
}

/* Bulk loops, one pair per ISA file. */
void vr_copy_c_store(void *dst, const void *src, size_t n);
void vr_copy_c_load(void *dst, const void *src, size_t n);
#if defined(__x86_64__)
void vr_copy_sse41_store(void *dst, const void *src, size_t n);
void vr_copy_sse41_load(void *dst, const void *src, size_t n);
void vr_copy_avx2_store(void *dst, const void *src, size_t n);
void vr_copy_avx2_load(void *dst, const void *src, size_t n);
void vr_copy_avx512_store(void *dst, const void *src, size_t n);
void vr_copy_avx512_load(void *dst, const void *src, size_t n);
void vr_copy_sse41_small_load(void *dst, const void *src, size_t n);
void vr_copy_avx2_small_load(void *dst, const void *src, size_t n);
void vr_copy_avx512_small_load(void *dst, const void *src, size_t n);
void vr_copy_movdir64b_store(void *dst, const void *src, size_t n);
#elif defined(__aarch64__)
void vr_copy_neon_store(void *dst, const void *src, size_t n);
void vr_copy_neon_load(void *dst, const void *src, size_t n);
#endif

/* Whether a kernel runs with these features. */
int vr_copy_kernel_usable(const struct vr_copy_kernel *k, unsigned features);

/* The choice among ks[0..count) (copy_select.c; copy.c hands it its table, in the order of
 * the automatic choice): 'forced' (a name, or NULL/"" for automatic) if known and usable,
 * else the first usable kernel in table order; an unusable or unknown name is logged
 * (vr_warn). */
const struct vr_copy_kernel *vr_copy_choose_from(const struct vr_copy_kernel *ks, size_t count,
                                                 unsigned features, const char *forced);

#endif /* VRAMIO_COPY_KERNELS_H */

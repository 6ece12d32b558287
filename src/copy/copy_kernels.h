/* SPDX-License-Identifier: MIT */
/*
 * copy_kernels.h - the contract between the copy engine (copy.c) and its ISA files: what a
 * kernel is (a whole write to and a whole read from a WC mapping, each in its ISA file), the
 * CPU features each needs, and the one shape of a copy around a bulk loop that every kernel
 * uses for what is not whole blocks (the heads and tails live here, once). It includes nothing
 * of the engine: an ISA file sees this and no more.
 *
 * Rules every kernel keeps (tests/unit/copy_*.c prove them):
 *  - every access lies inside [dst, dst+n) and [src, src+n): a mapping may end exactly at the
 *    range end, and a read past the end of a BAR page can fault. One exception, inside a
 *    page: a streaming read of 1 to 64 bytes (a small read) loads the aligned 16-, 32- or
 *    64-byte chunks that hold them, which lie in the pages of the range's own bytes (a chunk
 *    at its own alignment never crosses a page, and a mapping is whole pages);
 *  - on the mapping side, accesses narrower than the kernel's block are naturally aligned
 *    scalar accesses of 1, 2, 4 or 8 bytes (volatile, so the compiler neither merges nor
 *    widens them), then 16-byte pieces up to the block's alignment;
 *  - the host side may have any alignment: it is read or written through memcpy into locals
 *    or unaligned vector accesses;
 *  - no fence (the engine issues them, copy.h), no logging, no asserts: the core has
 *    validated everything. n may be 0.
 */
#ifndef VRAMIO_COPY_KERNELS_H
#define VRAMIO_COPY_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "arch/cpu_features.h"

/* How a kernel stores one whole 64-byte aligned line as a single store, if it can: the inline
 * write path of copy.h uses it for whole lines (VR_LINE_NONE: such lines take the kernel). */
enum vr_line_store { VR_LINE_NONE, VR_LINE_NT512, VR_LINE_MOVDIR64B };

/* A whole copy of n bytes at any place, or a bulk loop (mapping side aligned to its block, n
 * a multiple of the block). */
typedef void (*vr_copy_fn)(void *dst, const void *src, size_t n);

struct vr_copy_kernel {
    const char *name;
    unsigned needs;              /* enum vr_cpu_feature bits */
    vr_copy_fn to_wc;            /* a write to a WC (or unknown) mapping: non-temporal stores */
    vr_copy_fn from_wc;          /* a read from one: streaming loads, ordinary stores to host */
    unsigned char line_store;    /* enum vr_line_store: its one store of a whole line, if any */
};

/* The kernels, one pair per ISA file. The portable one (copy_c.c) is also every kernel's
 * DEVICE path: its accesses are aligned, volatile and at most 8 bytes wide. */
void vr_copy_c_to(void *dst, const void *src, size_t n);
void vr_copy_c_from(void *dst, const void *src, size_t n);
#if defined(__x86_64__)
void vr_copy_sse41_to_wc(void *dst, const void *src, size_t n);
void vr_copy_sse41_from_wc(void *dst, const void *src, size_t n);
void vr_copy_avx2_to_wc(void *dst, const void *src, size_t n);
void vr_copy_avx2_from_wc(void *dst, const void *src, size_t n);
void vr_copy_avx512_to_wc(void *dst, const void *src, size_t n);
void vr_copy_avx512_from_wc(void *dst, const void *src, size_t n);
void vr_copy_movdir64b_to_wc(void *dst, const void *src, size_t n);
#elif defined(__aarch64__)
void vr_copy_neon_to_wc(void *dst, const void *src, size_t n);
void vr_copy_neon_from_wc(void *dst, const void *src, size_t n);
#endif

/* Whether a kernel runs with these features. */
int vr_copy_kernel_usable(const struct vr_copy_kernel *k, unsigned features);

/* The choice among ks[0..count) (copy_select.c; copy.c hands it its table, in the order of
 * the automatic choice): 'forced' (a name, or NULL/"" for automatic) if known and usable,
 * else the first usable kernel in table order; an unusable or unknown name is logged
 * (vr_warn). */
const struct vr_copy_kernel *vr_copy_choose_from(const struct vr_copy_kernel *ks, size_t count,
                                                 unsigned features, const char *forced);

/* ---- the shape of a copy around a bulk loop: inlined into each kernel, whose loops are
 * constants there, so no call is left but the loop's own ------------------------------------ */

/* Largest access of 1, 2, 4 or 8 bytes that 'a' is aligned to and that fits in n (n > 0). */
static inline size_t vr_scalar_size(uintptr_t a, size_t n)
{
    size_t s = 8;

    while (s > 1 && ((a & (s - 1)) || s > n))
        s >>= 1;
    return s;
}

/* One access of exactly s bytes to or from the mapping at 'map'; the host side by memcpy. */
static inline void vr_scalar(int to_map, unsigned char *map, unsigned char *host, size_t s)
{
    uint64_t v8; uint32_t v4; uint16_t v2;

    if (to_map) {
        switch (s) {
        case 8: memcpy(&v8, host, 8); *(volatile uint64_t *)map = v8; break;
        case 4: memcpy(&v4, host, 4); *(volatile uint32_t *)map = v4; break;
        case 2: memcpy(&v2, host, 2); *(volatile uint16_t *)map = v2; break;
        default: *(volatile uint8_t *)map = *host; break;
        }
        return;
    }
    switch (s) {
    case 8: v8 = *(const volatile uint64_t *)map; memcpy(host, &v8, 8); break;
    case 4: v4 = *(const volatile uint32_t *)map; memcpy(host, &v4, 4); break;
    case 2: v2 = *(const volatile uint16_t *)map; memcpy(host, &v2, 2); break;
    default: *host = *(const volatile uint8_t *)map; break;
    }
}

/*
 * A copy of any alignment and size with a kernel's bulk loop ('to_map': the destination is
 * the mapping, else the source is; the mapping side sets the alignment):
 *   scalar accesses up to 16-byte alignment (or the block, if smaller)
 *   16-byte pieces (step16) up to block alignment
 *   the bulk loop over whole blocks
 *   16-byte pieces, then scalar accesses for what is left.
 * step16 is NULL for a kernel whose block is 16 bytes or less.
 */
static inline __attribute__((always_inline)) void
vr_copy_shaped(int to_map, void *dst_, const void *src_, size_t n, size_t block, vr_copy_fn bulk,
               vr_copy_fn step16)
{
    unsigned char *dst = dst_, *src = (unsigned char *)(uintptr_t)src_;
    uintptr_t a = (uintptr_t)(to_map ? (void *)dst : (void *)src);
    const size_t first = block < 16 ? block : 16;
    size_t s;

#define VR_ADVANCE(k) do { dst += (k); src += (k); a += (k); n -= (k); } while (0)
    while (n && (a & (first - 1))) {
        s = vr_scalar_size(a, n);
        vr_scalar(to_map, to_map ? dst : src, to_map ? src : dst, s);
        VR_ADVANCE(s);
    }
    if (step16 && (a & (block - 1)) && n >= 16) {
        s = block - (a & (block - 1));          /* a multiple of 16 here */
        if (s > (n & ~(size_t)15))
            s = n & ~(size_t)15;
        step16(dst, src, s);
        VR_ADVANCE(s);
    }
    /* If the 16-byte head stopped short of the block's alignment, n < block now. */
    s = n & ~(block - 1);
    if (s) {
        bulk(dst, src, s);
        VR_ADVANCE(s);
    }
    if (step16 && n >= 16) {
        s = n & ~(size_t)15;
        step16(dst, src, s);
        VR_ADVANCE(s);
    }
    while (n) {
        s = vr_scalar_size(a, n);
        vr_scalar(to_map, to_map ? dst : src, to_map ? src : dst, s);
        VR_ADVANCE(s);
    }
#undef VR_ADVANCE
}

/*
 * A read of more than 64 bytes by a kernel with a small read (1 to 64 bytes at any place, in
 * one uncached round trip where scalar loads and 16-byte pieces cost one each): the partial
 * line at each end by one small read, the whole lines between straight to the bulk loop
 * (every such kernel's block divides 64, so they are whole blocks at a block-aligned place).
 */
static inline __attribute__((always_inline)) void
vr_copy_read_lines(void *dst_, const void *src_, size_t n, vr_copy_fn small, vr_copy_fn bulk)
{
    unsigned char *dst = dst_;
    const unsigned char *src = src_;
    size_t head = (64 - ((uintptr_t)src & 63)) & 63, body;

    if (head) {
        small(dst, src, head);
        dst += head;
        src += head;
        n -= head;
    }
    body = n & ~(size_t)63;
    if (body)
        bulk(dst, src, body);
    if (n > body)
        small(dst + body, src + body, n - body);
}

#endif /* VRAMIO_COPY_KERNELS_H */

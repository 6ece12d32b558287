// SPDX-License-Identifier: MIT
/*
 * copy.c - the copy engine's dispatch: mapping type -> access pattern, alignment heads and
 * tails, and the one fence at the end of a copy. The ISA files hold only bulk loops. In the
 * order a reader meets them: the kernels and the choice of one, the two entry points that
 * copy.h calls, then the steps of the general path as a copy runs through them.
 *
 * Rules that every path here keeps (tests/unit/copy_*.c prove them):
 *  - every access lies inside [dst, dst+n) and [src, src+n): a mapping may end exactly at the
 *    range end, and a read past the end of a BAR page can fault, so no head or tail reads an
 *    aligned-down or rounded-up block. One exception, inside a page: a WC read of at most 64
 *    bytes, and each partial 64-byte line at the ends of a longer one, loads the aligned
 *    16-, 32- or 64-byte chunks that hold it (the kernel's small_read, copy_kernels.h),
 *    which lie in the pages of the range's own bytes;
 *  - on the mapping side, accesses narrower than the kernel's block are naturally aligned
 *    scalar accesses of 1, 2, 4 or 8 bytes (volatile, so the compiler neither merges nor
 *    widens them), then 16-byte pieces up to the block's alignment;
 *  - the host side may have any alignment: it is read or written through memcpy into locals
 *    or unaligned vector accesses;
 *  - no logging, no asserts: the core has validated everything.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "copy.h"
#include "process/log.h"

/*
 * The kernels, in the order of the automatic choice; the first one the CPU runs wins, so
 * the choice depends only on the CPU's features (deterministic).
 *
 * Order, from WC BAR figures of raw loops (docs/copy-kernels.md has them):
 *  avx512    writes as fast as avx2 (the link is the limit), reads faster with 64-byte
 *            streaming loads: first, for reads.
 *  avx2      then sse41: a 16-byte store fills a quarter of a WC line where the wider
 *            kernels fill a half or all of it.
 *  c         8-byte volatile accesses. Always usable, so no entry after it is ever chosen
 *            automatically.
 *  movdir64b after c, so by name only: its 64-byte direct stores are well below the NT
 *            stores; its reads are sse41's streaming loads.
 * A 16-byte step (sse41) leads the wider kernels to their alignment; every AVX2 or AVX-512
 * CPU has SSE4.1, and each kernel's 'needs' says so all the same.
 */
#if defined(__x86_64__)
#define VR_STEP16_STORE vr_copy_sse41_store
#define VR_STEP16_LOAD  vr_copy_sse41_load
static const struct vr_copy_kernel kernels[] = {
    { "avx512", VR_CPU_AVX512F | VR_CPU_SSE41,
      { vr_copy_avx512_store, VR_STEP16_STORE, 64 }, { vr_copy_avx512_load, VR_STEP16_LOAD, 64 },
      vr_copy_avx512_small_load, VR_LINE_NT512 },
    { "avx2", VR_CPU_AVX2 | VR_CPU_SSE41,
      { vr_copy_avx2_store, VR_STEP16_STORE, 32 }, { vr_copy_avx2_load, VR_STEP16_LOAD, 32 },
      vr_copy_avx2_small_load, VR_LINE_NONE },
    { "sse41", VR_CPU_SSE41,
      { vr_copy_sse41_store, NULL, 16 }, { vr_copy_sse41_load, NULL, 16 },
      vr_copy_sse41_small_load, VR_LINE_NONE },
    { "c", 0, { vr_copy_c_store, NULL, 8 }, { vr_copy_c_load, NULL, 8 }, NULL, VR_LINE_NONE },
    { "movdir64b", VR_CPU_MOVDIR64B | VR_CPU_SSE41,
      { vr_copy_movdir64b_store, VR_STEP16_STORE, 64 }, { vr_copy_sse41_load, NULL, 16 },
      vr_copy_sse41_small_load, VR_LINE_MOVDIR64B },
};
#define KERNEL_C (&kernels[3])
#elif defined(__aarch64__)
/* NEON: 16-byte accesses, 64 bytes per loop turn; every AArch64 CPU has it. */
static const struct vr_copy_kernel kernels[] = {
    { "neon", VR_CPU_NEON,
      { vr_copy_neon_store, NULL, 16 }, { vr_copy_neon_load, NULL, 16 }, NULL, VR_LINE_NONE },
    { "c", 0, { vr_copy_c_store, NULL, 8 }, { vr_copy_c_load, NULL, 8 }, NULL, VR_LINE_NONE },
};
#define KERNEL_C (&kernels[1])
#else
static const struct vr_copy_kernel kernels[] = {
    { "c", 0, { vr_copy_c_store, NULL, 8 }, { vr_copy_c_load, NULL, 8 }, NULL, VR_LINE_NONE },
};
#define KERNEL_C (&kernels[0])
#endif

/* The portable kernel until the constructor below has run: correct on every CPU, so a copy
 * made by another library's constructor before ours is still right, only slower. */
static const struct vr_copy_kernel *active = KERNEL_C;

/* The inline whole-line write of copy.h (vr_copy_to_mapping), from the active kernel. */
unsigned char vr_copy_line_store = VR_LINE_NONE;

/* The inline whole-block read of copy.h (vr_copy_from_mapping), from the active kernel. */
struct vr_copy_bulk_read vr_copy_inline_read = { vr_copy_c_load, 7 };

/* The policy that chooses is copy_select.c's; it is handed the table, which stays here, where
 * the copy paths see the portable kernel's fields as constants. */
__attribute__((constructor)) static void vr_copy_init(void)
{
    active = vr_copy_choose_from(kernels, sizeof(kernels) / sizeof(kernels[0]),
                                 vr_cpu_features(), getenv("GDRCOPY_COPY_KERNEL"));
    vr_copy_inline_read = (struct vr_copy_bulk_read){ active->from_map.bulk,
                                                      active->from_map.block - 1 };
    vr_copy_line_store = active->line_store;
    vr_dbg("copy kernel: %s", active->name);
}

const char *vr_copy_kernel_name(void)
{
    return active->name;
}

/* The steps of the general path, defined below in the order a copy runs through them; all
 * inlined into the two entry points (the rule at the top of copy.h). */
static inline __attribute__((always_inline)) void
copy_to(const struct vr_copy_kernel *k, gdr_mapping_type_t type, void *dst, const void *src,
        size_t n);
static inline __attribute__((always_inline)) void
copy_from(const struct vr_copy_kernel *k, gdr_mapping_type_t type, void *dst, const void *src,
          size_t n);
static inline const struct vr_copy_kernel *kernel_for(const struct vr_copy_kernel *k,
                                                      gdr_mapping_type_t type);
static inline __attribute__((always_inline)) void
copy_shaped(int to_map, const struct vr_copy_dir *d, unsigned char *dst,
            const unsigned char *src, size_t n);
static inline __attribute__((always_inline)) void
read_lines(const struct vr_copy_kernel *k, unsigned char *dst, const unsigned char *src,
           size_t n);
static inline size_t scalar_size(uintptr_t a, size_t n);
static inline void scalar_store(unsigned char *map, const unsigned char *host, size_t s);
static inline void scalar_load(unsigned char *host, const unsigned char *map, size_t s);

/*
 * Host -> mapping: what the inline path of copy.h (vr_copy_to_mapping) leaves: unaligned or
 * odd sizes, more than 4 KiB, whole lines of a kernel without a single 64-byte store, CACHING
 * and DEVICE mappings. Whole blocks of the kernel at a block-aligned place go straight to its
 * bulk loop, then the fence, without the shaping steps (the rule at the top of copy.h).
 */
int vr_copy_to_mapping_any(gdr_mapping_type_t type, void *dst, const void *src, size_t n)
{
    const struct vr_copy_dir *d = type == GDR_MAPPING_TYPE_DEVICE ? &KERNEL_C->to_map
                                                                  : &active->to_map;

    if (type != GDR_MAPPING_TYPE_CACHING && n && !(((uintptr_t)dst | n) & (d->block - 1))) {
        d->bulk(dst, src, n);
        vr_store_fence();
        return 0;
    }
    copy_to(active, type, dst, src, n);
    return 0;
}

/* Mapping -> host: what the inline path of copy.h (vr_copy_from_mapping) leaves. */
int vr_copy_from_mapping_any(gdr_mapping_type_t type, void *dst, const void *src, size_t n)
{
    copy_from(active, type, dst, src, n);
    return 0;
}

/* A copy to a mapping with kernel k: CACHING by memcpy, the others shaped, then the fence. */
static inline __attribute__((always_inline)) void
copy_to(const struct vr_copy_kernel *k, gdr_mapping_type_t type, void *dst, const void *src,
        size_t n)
{
    if (n == 0)
        return;
    k = kernel_for(k, type);
    if (!k) {
        memcpy(dst, src, n);
        return;
    }
    copy_shaped(1, &k->to_map, dst, src, n);
    vr_store_fence();
}

/* Reads store only to host memory, which is ordinary cached memory: no fence after them. */
static inline __attribute__((always_inline)) void
copy_from(const struct vr_copy_kernel *k, gdr_mapping_type_t type, void *dst, const void *src,
          size_t n)
{
    if (n == 0)
        return;
    k = kernel_for(k, type);
    if (!k)
        memcpy(dst, src, n);
    else if (n <= 64 && k->small_read)      /* one uncached round trip, not one per access */
        k->small_read(dst, src, n);
    else if (k->small_read)
        read_lines(k, dst, src, n);
    else
        copy_shaped(0, &k->from_map, dst, src, n);
}

/*
 * A read of more than 64 bytes by a kernel with a small read: the partial line at each end by
 * one small read (one uncached round trip, where the shaped path's scalar loads and 16-byte
 * pieces cost one each: a 14-byte tail was three), the whole lines between straight to the
 * bulk loop (every kernel's block divides 64, so they are whole blocks at a block-aligned
 * place, as the loop needs).
 */
static inline __attribute__((always_inline)) void
read_lines(const struct vr_copy_kernel *k, unsigned char *dst, const unsigned char *src,
           size_t n)
{
    size_t head = (64 - ((uintptr_t)src & 63)) & 63, body;

    if (head) {
        k->small_read(dst, src, head);
        dst += head;
        src += head;
        n -= head;
    }
    body = n & ~(size_t)63;
    if (body)
        k->from_map.bulk(dst, src, body);
    if (n > body)
        k->small_read(dst + body, src + body, n - body);
}

/*
 * Which code a mapping type runs:
 * CACHING: ordinary cacheable memory, memcpy is best and needs no fence (NULL here).
 * DEVICE: the portable kernel, whose accesses are aligned, volatile and at most 8 bytes wide.
 * WC and NONE (unknown: assume the weakest, write-combined): the chosen kernel.
 */
static inline const struct vr_copy_kernel *kernel_for(const struct vr_copy_kernel *k,
                                                      gdr_mapping_type_t type)
{
    if (type == GDR_MAPPING_TYPE_CACHING)
        return NULL;
    return type == GDR_MAPPING_TYPE_DEVICE ? KERNEL_C : k;
}

/*
 * The shape of every non-cached copy, 'to_map' telling which side is the mapping:
 *   scalar accesses up to 16-byte alignment (or the block, if smaller)
 *   16-byte pieces up to block alignment
 *   the kernel's bulk loop over whole blocks
 *   16-byte pieces, then scalar accesses for what is left.
 * Inlined with a constant 'to_map', so the branches on it disappear.
 */
static inline __attribute__((always_inline)) void
copy_shaped(int to_map, const struct vr_copy_dir *d, unsigned char *dst,
            const unsigned char *src, size_t n)
{
    uintptr_t a = (uintptr_t)(to_map ? (const void *)dst : (const void *)src);
    const size_t block = d->block;
    const size_t first = block < 16 ? block : 16;
    size_t s;

#define VR_ADVANCE(k) do { dst += (k); src += (k); a += (k); n -= (k); } while (0)
#define VR_SCALAR(k) (to_map ? scalar_store(dst, src, (k)) : scalar_load(dst, src, (k)))

    while (n && (a & (first - 1))) {
        s = scalar_size(a, n);
        VR_SCALAR(s);
        VR_ADVANCE(s);
    }
    if (d->step16 && (a & (block - 1)) && n >= 16) {
        s = block - (a & (block - 1));          /* a multiple of 16 here */
        if (s > (n & ~(size_t)15))
            s = n & ~(size_t)15;
        d->step16(dst, src, s);
        VR_ADVANCE(s);
    }
    /* If the 16-byte head stopped short of the block's alignment, n < block now. */
    s = n & ~(block - 1);
    if (s) {
        d->bulk(dst, src, s);
        VR_ADVANCE(s);
    }
    if (d->step16 && n >= 16) {
        s = n & ~(size_t)15;
        d->step16(dst, src, s);
        VR_ADVANCE(s);
    }
    while (n) {
        s = scalar_size(a, n);
        VR_SCALAR(s);
        VR_ADVANCE(s);
    }
#undef VR_SCALAR
#undef VR_ADVANCE
}

/* Largest access of 1, 2, 4 or 8 bytes that 'a' is aligned to and that fits in n (n > 0). */
static inline size_t scalar_size(uintptr_t a, size_t n)
{
    size_t s = 8;

    while (s > 1 && ((a & (s - 1)) || s > n))
        s >>= 1;
    return s;
}

/* One access of exactly s bytes to the mapping at 'map'; the host side through memcpy. */
static inline void scalar_store(unsigned char *map, const unsigned char *host, size_t s)
{
    uint64_t v8; uint32_t v4; uint16_t v2;

    switch (s) {
    case 8: memcpy(&v8, host, 8); *(volatile uint64_t *)map = v8; break;
    case 4: memcpy(&v4, host, 4); *(volatile uint32_t *)map = v4; break;
    case 2: memcpy(&v2, host, 2); *(volatile uint16_t *)map = v2; break;
    default: *(volatile uint8_t *)map = *host; break;
    }
}

static inline void scalar_load(unsigned char *host, const unsigned char *map, size_t s)
{
    uint64_t v8; uint32_t v4; uint16_t v2;

    switch (s) {
    case 8: v8 = *(const volatile uint64_t *)map; memcpy(host, &v8, 8); break;
    case 4: v4 = *(const volatile uint32_t *)map; memcpy(host, &v4, 4); break;
    case 2: v2 = *(const volatile uint16_t *)map; memcpy(host, &v2, 2); break;
    default: *host = *(const volatile uint8_t *)map; break;
    }
}

/* SPDX-License-Identifier: MIT */
/*
 * copy.h - the copy engine used by gdr_copy_to_mapping / gdr_copy_from_mapping.
 *
 * The kernel (instruction set) is chosen once per process from cpuid/xgetbv, or forced with
 * GDRCOPY_COPY_KERNEL=<name>. These functions do no argument checking and no logging: the
 * core has validated the handle, the mapping type and the range.
 */
#ifndef VRAMIO_COPY_H
#define VRAMIO_COPY_H

#include <stddef.h>
#include <stdint.h>
#include "gdrapi.h"

/* Host -> mapping. Ends with the fence the mapping type needs (sfence for WC). Returns 0:
 * gdr_copy_to_mapping ends with "return vr_copy_to_mapping(...)", a tail call, so a small
 * copy pays for one call level less (each one showed in the H200's per-copy time). */
int vr_copy_to_mapping(gdr_mapping_type_t type, void *dst, const void *src, size_t n);

/* Mapping -> host, the general path (any alignment, any size). No trailing store fence
 * (nothing was stored to the mapping). Returns 0. */
int vr_copy_from_mapping_any(gdr_mapping_type_t type, void *dst, const void *src, size_t n);

/* The chosen kernel's bulk read and the alignment it needs (block - 1), for the inline path
 * below; set once by copy.c before main (the portable kernel's until then). */
struct vr_copy_fast {
    void (*bulk)(void *dst, const void *src, size_t n);
    size_t mask;
};
extern struct vr_copy_fast vr_copy_fast_from;

/*
 * Mapping -> host. Inline into gdr_copy_from_mapping, because on the H200 the length of the
 * per-call path decided how many small reads were in flight at once. A BAR read is an uncached
 * round trip of about 1 us; the CPU overlaps the next calls' reads with it only as far as its
 * reorder window reaches past the oldest, unfinished load, so a batch of 64-byte reads costs
 * about (window / instructions per call) reads per microsecond. Nothing here waits for a load:
 * the handle check before it reads only the handle table (ordinary cached memory; its seqlock
 * uses acquire loads, which are plain loads on x86, no fence), and no fence follows, because a
 * read stores only to host memory. So the one lever is length: whole blocks of the chosen
 * kernel at a block-aligned place (for avx512, whole 64-byte lines) go straight to its bulk
 * loop, with no frame, no shaping code and no second call level. WC and unknown (NONE)
 * mappings only; DEVICE and CACHING mappings and everything else take the general path
 * (where a WC read of at most 64 bytes is one streaming load of the aligned chunk that holds
 * it, or one per line it straddles: one round trip, where scalar loads cost one each).
 *
 * Streaming loads from WC memory are weakly ordered against later loads: this path keeps the
 * contract the general path has always had (no load fence), so a caller that must order a
 * read of a flag before a read of the data behind it fences between the two calls itself.
 */
static inline int vr_copy_from_mapping(gdr_mapping_type_t type, void *dst, const void *src,
                                       size_t n)
{
    const struct vr_copy_fast f = vr_copy_fast_from;

    if ((unsigned)type <= GDR_MAPPING_TYPE_WC && !(((uintptr_t)src | n) & f.mask)) {
        f.bulk(dst, src, n);
        return 0;
    }
    return vr_copy_from_mapping_any(type, dst, src, n);
}

/* A full fence (mfence, dmb sy, sync): every earlier load and store of this thread, to any
 * mapping type, is ordered before every later one. For copies while mappings of more than one
 * type are live (src/handles.h, vr_mappings_mixed). */
void vr_copy_full_fence(void);

/* Name of the kernel in use ("avx512", "avx2", "sse41", "movdir64b", "neon", "c"). */
const char *vr_copy_kernel_name(void);

#endif /* VRAMIO_COPY_H */

/* SPDX-License-Identifier: MIT */
/*
 * copy.h - the copy engine as its callers see it (the copies of gdrapi.c, the _auto copies of
 * dma/): one copy to or from a mapping of a given type, read top to bottom in the two inline
 * functions below, each of which issues its fence by name where it runs:
 *  - a read (vr_copy_from_mapping) begins with vr_read_fence: every byte it returns is a
 *    value the device memory held at some moment after the read began (never one a
 *    streaming-load buffer kept from an earlier read), and the read is ordered after every
 *    earlier load and store of the thread, through the library or not (acquire order). No
 *    fence ends a read: its stores go to host memory, and the next read begins with its own;
 *  - a write (vr_copy_to_mapping, or vr_copy_to_engine for the shapes it does not store
 *    inline) ends with vr_store_fence, whatever the mapping type: its
 *    bytes are on their way to the device, in order before any later store of the thread (a
 *    flag the GPU polls after the data), a CACHING mapping's on a coherent GPU included;
 *  - while mappings of more than one type are live in the process, a copy of either direction
 *    also ends with vr_full_fence: not issued here, but by the callers that know the census
 *    (src/core/gdrapi.c, copy_checked; src/dma/dma_transfer.c, vr_dma_move).
 * arch/fence.h says which instruction each fence is, and why; docs/copy-contract.md what a
 * caller may rely on, and where upstream GDRCopy differs.
 *
 * Between the fences, one call through vr_copy_engine, the table of copies per mapping type
 * and direction that copy.c fills once, before main, with the kernel chosen for this CPU
 * (GDRCOPY_COPY_KERNEL=<name> forces one): for WC and NONE mappings the kernel's to_wc and
 * from_wc (src/copy/copy_<kernel>.c), for CACHING memcpy, for DEVICE the portable kernel's
 * (copy_c.c). No argument checking and no logging: the caller has validated the handle, the
 * mapping type and the range.
 *
 * The rule of the engine's fast paths (the inline write shapes here, and in each kernel the
 * whole-block shortcut and the inlined shaping): a small copy to or from a BAR costs every
 * instruction on its path, so a shape that can go straight to its accesses does, with no
 * call, stack frame or shaping step in between. For a write, that is the time from the entry
 * to the fence after the last store; for a read, from the read fence to the last load. The
 * measurements behind each fast path are in docs/copy-kernels.md.
 */
#ifndef VRAMIO_COPY_H
#define VRAMIO_COPY_H

#include <stddef.h>
#include <stdint.h>
#include "gdrapi.h"
#include "arch/fence.h"
#include "copy_kernels.h"

/* The copies per mapping type and direction, and the inline write's whole-line store, of the
 * kernel chosen for this CPU (copy.c, before main; the portable kernel's until then). */
struct vr_copy_engine {
    vr_copy_fn to[GDR_MAPPING_TYPE_MAX];    /* a whole write, no fence */
    vr_copy_fn from[GDR_MAPPING_TYPE_MAX];  /* a whole read, after the read fence */
    unsigned char line_store;               /* enum vr_line_store */
    const char *name;                       /* "avx512", "avx2", "sse41", "movdir64b", "neon", "c" */
};
extern struct vr_copy_engine vr_copy_engine;

/*
 * A write that none of vr_copy_to_mapping's inline shapes takes: the engine's copy for the
 * mapping type, then the store fence. Out of line (one copy in each file that calls it), with
 * the arguments of vr_copy_to_mapping in the same order, so that the inline path reaches it by
 * a jump with no register moved: called inline, the table's call would move the arguments
 * into place before the inline shapes' stores, an instruction or two on every small write.
 */
static __attribute__((noinline, unused)) int
vr_copy_to_engine(gdr_mapping_type_t type, void *dst, const void *src, size_t n)
{
    vr_copy_engine.to[type](dst, src, n);
    vr_store_fence();
    return 0;
}

#if defined(__x86_64__)
/*
 * One 64-byte line, as one store: VMOVNTDQ zmm (avx512 kernel) or MOVDIR64B (movdir64b
 * kernel), the raw loop's instruction for a whole line. Inline assembly, because this is
 * inlined into code built for the baseline ISA (gdrapi.c) and runs only where the kernel
 * choice found the feature. zmm16: a baseline build never allocates xmm16-31, and unlike
 * zmm0-15 they leave no dirty upper state behind, so no vzeroupper is needed (where the
 * includer is itself built for AVX-512, the intrinsics say what is clobbered). A caller with
 * a target("avx512f") attribute must not inline it: it may hold a value in zmm16.
 */
static inline void vr_line_nt512(void *dst, const void *src)
{
#if defined(__AVX512F__)
    _mm512_stream_si512(dst, _mm512_loadu_si512(src));
#else
    __asm__ volatile("vmovdqu64 (%1), %%zmm16\n\tvmovntdq %%zmm16, (%0)"
                     : : "r"(dst), "r"(src) : "memory");
#endif
}

static inline void vr_line_movdir64b(void *dst, const void *src)
{
    __asm__ volatile("movdir64b (%1), %0" : : "r"(dst), "r"(src) : "memory");
}
#endif

/*
 * Host -> mapping. The shapes of short messages store straight from here (the rule at the
 * top), with the fence right after the last store:
 *  - 1, 2 or 4 bytes at a place aligned to their size: one store of that width;
 *  - 8 to 56 bytes, a multiple of 8 at an 8-byte aligned place: 8-byte stores;
 *  - 64 bytes to 4 KiB of whole 64-byte aligned lines, WC or NONE, with a kernel that has a
 *    single 64-byte store (line_store): one per line.
 * DEVICE mappings take the first two (naturally aligned accesses of at most 8 bytes, what the
 * portable kernel issues for them). Everything else goes to vr_copy_to_engine: the engine's
 * copy for the mapping type, which issues the same accesses for these shapes, so the bytes in
 * memory are the same either way (copy_matrix runs both); then the same fence.
 */
static inline int vr_copy_to_mapping(gdr_mapping_type_t type, void *dst, const void *src,
                                     size_t n)
{
    const uintptr_t a = (uintptr_t)dst;
    unsigned char *d = dst;
    const unsigned char *s = src;
    size_t i;

    if (type != GDR_MAPPING_TYPE_CACHING && n - 1 < 4096) {
        if (!((a | n) & 7)) {
            if (n < 64) {
                for (i = 0; i < n; i += 8) {
                    uint64_t v;

                    __builtin_memcpy(&v, s + i, 8);
                    *(volatile uint64_t *)(d + i) = v;
                }
                vr_store_fence();
                return 0;
            }
#if defined(__x86_64__)
            if (!((a | n) & 63) && (unsigned)type <= GDR_MAPPING_TYPE_WC &&
                vr_copy_engine.line_store) {
                if (vr_copy_engine.line_store == VR_LINE_NT512)
                    for (i = 0; i < n; i += 64)
                        vr_line_nt512(d + i, s + i);
                else
                    for (i = 0; i < n; i += 64)
                        vr_line_movdir64b(d + i, s + i);
                vr_store_fence();
                return 0;
            }
#endif
        } else if (n <= 4 && n != 3 && !(a & (n - 1))) {
            if (n == 1) {
                *(volatile uint8_t *)d = *s;
            } else if (n == 2) {
                uint16_t v;

                __builtin_memcpy(&v, s, 2);
                *(volatile uint16_t *)d = v;
            } else {
                uint32_t v;

                __builtin_memcpy(&v, s, 4);
                *(volatile uint32_t *)d = v;
            }
            vr_store_fence();
            return 0;
        }
    }
    return vr_copy_to_engine(type, dst, src, n);
}

/*
 * Mapping -> host: the read fence, then the engine's copy for the mapping type. For WC and
 * NONE mappings that is the kernel's from_wc: whole blocks at a block-aligned place straight
 * to its loop; with a streaming-load kernel a read of at most 64 bytes, and each partial line
 * at the ends of a longer one, is one streaming load of the aligned chunk that holds it, or
 * one per line it straddles (one round trip, where scalar loads cost one each). Every load of
 * a read comes after its fence, so a line loaded more than once within one read (the 16-byte
 * loads of a line by the sse41 kernel) is still a value from after the read began.
 */
static inline int vr_copy_from_mapping(gdr_mapping_type_t type, void *dst, const void *src,
                                       size_t n)
{
    vr_read_fence();
    vr_copy_engine.from[type](dst, src, n);
    return 0;
}

/* Name of the kernel in use ("avx512", "avx2", "sse41", "movdir64b", "neon", "c"). */
static inline const char *vr_copy_kernel_name(void)
{
    return vr_copy_engine.name;
}

#endif /* VRAMIO_COPY_H */

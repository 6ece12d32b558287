// SPDX-License-Identifier: MIT
/*
 * copy.c - the copy engine's one choice: which code copies to and from each mapping type,
 * made once per process, before main, into the table that copy.h calls through
 * (vr_copy_engine). The kernels themselves are the ISA files' (copy_kernels.h); the fences
 * are copy.h's.
 */
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
 * Every AVX2 or AVX-512 CPU has SSE4.1, and each kernel's 'needs' says so all the same.
 */
#if defined(__x86_64__)
static const struct vr_copy_kernel kernels[] = {
    { "avx512", VR_CPU_AVX512F | VR_CPU_SSE41, vr_copy_avx512_to_wc, vr_copy_avx512_from_wc,
      VR_LINE_NT512 },
    { "avx2", VR_CPU_AVX2 | VR_CPU_SSE41, vr_copy_avx2_to_wc, vr_copy_avx2_from_wc,
      VR_LINE_NONE },
    { "sse41", VR_CPU_SSE41, vr_copy_sse41_to_wc, vr_copy_sse41_from_wc, VR_LINE_NONE },
    { "c", 0, vr_copy_c_to, vr_copy_c_from, VR_LINE_NONE },
    { "movdir64b", VR_CPU_MOVDIR64B | VR_CPU_SSE41, vr_copy_movdir64b_to_wc,
      vr_copy_sse41_from_wc, VR_LINE_MOVDIR64B },
};
#elif defined(__aarch64__)
/* NEON: 16-byte accesses, 64 bytes per loop turn; every AArch64 CPU has it. */
static const struct vr_copy_kernel kernels[] = {
    { "neon", VR_CPU_NEON, vr_copy_neon_to_wc, vr_copy_neon_from_wc, VR_LINE_NONE },
    { "c", 0, vr_copy_c_to, vr_copy_c_from, VR_LINE_NONE },
};
#else
static const struct vr_copy_kernel kernels[] = {
    { "c", 0, vr_copy_c_to, vr_copy_c_from, VR_LINE_NONE },
};
#endif

/* CACHING mappings are ordinary cacheable memory: memcpy is the best copy of either way. */
static void copy_cached(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

/*
 * Which code a mapping type runs:
 *  WC, and NONE (unknown: assume the weakest, write-combined): the chosen kernel;
 *  CACHING: memcpy;
 *  DEVICE: the portable kernel, whose accesses are aligned, volatile and at most 8 bytes wide.
 * The portable kernel's table until the constructor below has run: correct on every CPU, so a
 * copy made by another library's constructor before ours is still right, only slower.
 */
#define VR_ENGINE(to_wc, from_wc, line, kname)                                               \
    { .to = { [GDR_MAPPING_TYPE_NONE] = (to_wc), [GDR_MAPPING_TYPE_WC] = (to_wc),           \
              [GDR_MAPPING_TYPE_CACHING] = copy_cached, [GDR_MAPPING_TYPE_DEVICE] = vr_copy_c_to }, \
      .from = { [GDR_MAPPING_TYPE_NONE] = (from_wc), [GDR_MAPPING_TYPE_WC] = (from_wc),     \
                [GDR_MAPPING_TYPE_CACHING] = copy_cached,                                  \
                [GDR_MAPPING_TYPE_DEVICE] = vr_copy_c_from },                              \
      .line_store = (line), .name = (kname) }
struct vr_copy_engine vr_copy_engine = VR_ENGINE(vr_copy_c_to, vr_copy_c_from, VR_LINE_NONE, "c");

/* The policy that chooses is copy_select.c's; it is handed the table, which stays here. */
__attribute__((constructor)) static void vr_copy_init(void)
{
    const struct vr_copy_kernel *k =
        vr_copy_choose_from(kernels, sizeof(kernels) / sizeof(kernels[0]), vr_cpu_features(),
                            getenv("GDRCOPY_COPY_KERNEL"));

    vr_copy_engine = (struct vr_copy_engine)VR_ENGINE(k->to_wc, k->from_wc, k->line_store,
                                                      k->name);
    vr_dbg("copy kernel: %s", k->name);
}

// SPDX-License-Identifier: MIT
/*
 * copy_select.c - which copy kernels this CPU runs, and the choice of one (automatic, or
 * forced by GDRCOPY_COPY_KERNEL=<name>). Runs once per process, from copy.c's constructor;
 * the copy loops never look at CPU features.
 */
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "copy_kernels.h"
#include "log.h"

#if defined(__x86_64__)
/* XCR0 bits the OS must set (it saves and restores that register state on a context switch):
 * SSE and AVX for YMM; opmask, ZMM_Hi256 and Hi16_ZMM on top for AVX-512. */
#define XCR0_YMM 0x06u
#define XCR0_ZMM 0xe6u
#define CPUID7_ECX_MOVDIR64B (1u << 28)

static uint64_t read_xcr0(void)
{
    uint32_t lo, hi;

    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

unsigned vr_cpu_features(void)
{
    unsigned a, b, c, d, f = 0;
    uint64_t xcr0 = 0;
    int avx;

    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    if (c & bit_SSE4_1)
        f |= VR_CPU_SSE41;
    avx = (c & bit_AVX) != 0;
    if (c & bit_OSXSAVE)            /* xgetbv faults unless the OS enabled it */
        xcr0 = read_xcr0();
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return f;
    if (avx && (b & bit_AVX2) && (xcr0 & XCR0_YMM) == XCR0_YMM)
        f |= VR_CPU_AVX2;
    if ((b & bit_AVX512F) && (xcr0 & XCR0_ZMM) == XCR0_ZMM)
        f |= VR_CPU_AVX512F;
    if (c & CPUID7_ECX_MOVDIR64B)
        f |= VR_CPU_MOVDIR64B;
    return f;
}
#elif defined(__aarch64__)
unsigned vr_cpu_features(void)
{
    return VR_CPU_NEON;             /* Advanced SIMD is mandatory in AArch64 */
}
#else
unsigned vr_cpu_features(void)
{
    return 0;
}
#endif

int vr_copy_kernel_usable(const struct vr_copy_kernel *k, unsigned features)
{
    return (k->needs & features) == k->needs;
}

const struct vr_copy_kernel *vr_copy_choose(unsigned features, const char *forced)
{
    size_t count, i;
    const struct vr_copy_kernel *ks = vr_copy_kernels(&count);
    const struct vr_copy_kernel *best = NULL;

    for (i = 0; i < count && !best; i++)
        if (vr_copy_kernel_usable(&ks[i], features))
            best = &ks[i];
    if (!forced || !*forced)
        return best;
    for (i = 0; i < count; i++) {
        if (strcmp(ks[i].name, forced) != 0)
            continue;
        if (vr_copy_kernel_usable(&ks[i], features))
            return &ks[i];
        vr_warn("GDRCOPY_COPY_KERNEL=%s: this CPU cannot run it; using %s", forced, best->name);
        return best;
    }
    vr_warn("GDRCOPY_COPY_KERNEL=%s: no such copy kernel here; using %s", forced, best->name);
    return best;
}

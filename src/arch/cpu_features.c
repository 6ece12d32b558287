/* SPDX-License-Identifier: MIT */
/* cpu_features.c - what this CPU and OS can run, detected once (see cpu_features.h). */
#include "cpu_features.h"

#include <stdint.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

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

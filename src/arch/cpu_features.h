/* SPDX-License-Identifier: MIT */
/*
 * cpu_features.h - the CPU features the copy kernels need, detected once per process by
 * their user (copy.c's constructor); the copy loops never look at them.
 */
#ifndef VRAMIO_ARCH_CPU_FEATURES_H
#define VRAMIO_ARCH_CPU_FEATURES_H

enum vr_cpu_feature {
    VR_CPU_SSE41     = 1u << 0,
    VR_CPU_AVX2      = 1u << 1, /* with the OS saving YMM state (XCR0) */
    VR_CPU_AVX512F   = 1u << 2, /* with the OS saving ZMM and opmask state (XCR0) */
    VR_CPU_MOVDIR64B = 1u << 3,
    VR_CPU_NEON      = 1u << 4,
};

/* Features of this CPU and OS (cpuid/xgetbv on x86), enum vr_cpu_feature bits. */
unsigned vr_cpu_features(void);

#endif /* VRAMIO_ARCH_CPU_FEATURES_H */

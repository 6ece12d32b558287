// SPDX-License-Identifier: MIT
/*
 * copy_neon.c - AArch64 kernel: 16-byte NEON accesses, four per loop turn (a 64-byte line).
 * Compiled only when building for aarch64 (copy.mk). AArch64 has no streaming-load
 * instruction comparable to MOVNTDQA, so reads are ordinary vector loads; Normal
 * non-cacheable (WC) memory accepts them at 16-byte alignment.
 */
#include <arm_neon.h>

#include "copy_kernels.h"

/* dst (mapping) 16-byte aligned, n a multiple of 16. */
void vr_copy_neon_store(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;

    for (; n >= 64; n -= 64, s += 64, d += 64) {
        uint8x16_t a = vld1q_u8(s), b = vld1q_u8(s + 16);
        uint8x16_t c = vld1q_u8(s + 32), e = vld1q_u8(s + 48);
        vst1q_u8(d, a);
        vst1q_u8(d + 16, b);
        vst1q_u8(d + 32, c);
        vst1q_u8(d + 48, e);
    }
    for (; n; n -= 16, s += 16, d += 16)
        vst1q_u8(d, vld1q_u8(s));
}

/* src (mapping) 16-byte aligned, n a multiple of 16. */
void vr_copy_neon_load(void *dst, const void *src, size_t n)
{
    vr_copy_neon_store(dst, src, n);   /* the same instructions: only the aligned side differs */
}

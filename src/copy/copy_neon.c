// SPDX-License-Identifier: MIT
/*
 * copy_neon.c - AArch64 kernel: 16-byte NEON accesses, four per loop turn (a 64-byte line).
 * Compiled only when building for aarch64 (copy.mk). AArch64 has no streaming-load
 * instruction comparable to MOVNTDQA, so reads are ordinary vector loads; Normal
 * non-cacheable (WC) memory accepts them at 16-byte alignment.
 */
#include <arm_neon.h>

#include "copy_kernels.h"

/* The mapping side (dst of a write, src of a read) 16-byte aligned, n a multiple of 16: the
 * same instructions both ways. */
static void lines16(void *dst, const void *src, size_t n)
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

/* Not whole blocks: out of line, so that the whole-block write above reaches its loop by a
 * jump, with no register saved. */
static __attribute__((noinline)) void write_shaped(void *dst, const void *src, size_t n)
{
    vr_copy_shaped(1, dst, src, n, 16, lines16, NULL);
}

void vr_copy_neon_to_wc(void *dst, const void *src, size_t n)
{
    if (!(((uintptr_t)dst | n) & 15)) {
        lines16(dst, src, n);
        return;
    }
    write_shaped(dst, src, n);
}

void vr_copy_neon_from_wc(void *dst, const void *src, size_t n)
{
    if (!(((uintptr_t)src | n) & 15)) {
        lines16(dst, src, n);
        return;
    }
    vr_copy_shaped(0, dst, src, n, 16, lines16, NULL);
}

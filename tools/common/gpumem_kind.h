/* SPDX-License-Identifier: MIT */
/*
 * gpumem_kind.h - what one allocation kind of gpumem.h provides: a table of operations per
 * kind, so that gpumem.c dispatches instead of testing the kind at every call. The CUDA kinds
 * live in gpumem.c; the emulated provider's kind (tests/kernel/emu/gpumem_emu.c) is linked only
 * into the QEMU guest's static sanity program.
 */
#ifndef TOOLS_GPUMEM_KIND_H
#define TOOLS_GPUMEM_KIND_H

#include "gpumem.h"

struct gm_kind_ops {
    /* Make the kind usable on GPU ordinal gpu: 0, or an errno with the reason. */
    int (*init)(int gpu, char *why, size_t len);
    /* 1 once init has succeeded. */
    int (*ready)(void);
    /* b is zeroed with kind, size and alloc_size = size set; fill in dptr (and the rest). */
    int (*alloc)(size_t size, struct gm_buf *b, char *why, size_t len);
    int (*free)(struct gm_buf *b);
    /* Range-checked by gpumem.c; n > 0. */
    int (*write)(const struct gm_buf *b, size_t off, const void *src, size_t n);
    int (*read)(const struct gm_buf *b, size_t off, void *dst, size_t n);
    int (*fill)(const struct gm_buf *b, uint8_t byte);
    /* Pins the provider has handed out and not got back; NULL where no provider counts. */
    int (*live_pins)(uint64_t *pins);
};

/* Defined only where tests/kernel/emu/gpumem_emu.c is linked in (a weak reference elsewhere). */
extern const struct gm_kind_ops gm_emu_kind __attribute__((weak));

#endif /* TOOLS_GPUMEM_KIND_H */

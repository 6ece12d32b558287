/* SPDX-License-Identifier: MIT */
/*
 * pins.h - what the core (pin.c, gdrapi.c) offers the directories beside it (alloc/, dma/):
 * calls by GPU address and by handle, none of the core's objects. Each call takes the locks
 * it needs. tests/abi/test_src_layers.sh checks that alloc/ and dma/ use nothing else of the
 * core but export.h.
 */
#ifndef VRAMIO_PINS_H
#define VRAMIO_PINS_H

#include <stddef.h>
#include <stdint.h>
#include "gdrapi.h"

/* GPU memory [base, base + size) was released while pins of it may live on (their imports
 * hold the pages): their GPU addresses reach other memory or none from now on, so the copy
 * engine is never used for them again; their mappings still reach the pinned pages. */
void vr_pins_gpu_released(uint64_t base, uint64_t size);

/* 1 when the first backend that gdr_open would use here (the one every pin is offered to
 * first) pins a range spanning several VMM allocations mapped side by side in one
 * reservation of GPU gpu (backend.h, spans), else 0: what lets vramio_alloc's pool make a
 * large allocation of chunks. -1 when that cannot be told now (memory or descriptors ran
 * out meanwhile): ask again later. */
int vr_pins_can_span(int gpu);

/* A pin's copy-engine device: not looked up yet, or the copy engine unusable for this pin
 * (BAR only); otherwise the CUDA device ordinal whose copy engine serves it. */
#define VR_DMA_DEV_UNKNOWN (-1)
#define VR_DMA_DEV_NONE    (-2)

/* Where a checked copy range lies in GPU memory (vr_pin_dma_range, for the _auto copies). */
struct vr_dma_range {
    uint64_t dev_addr;                     /* GPU address of the range's first byte */
    gdr_mapping_type_t type;               /* the mapping's type, for the BAR copy */
    int dma_dev;                           /* the pin's copy-engine device: VR_DMA_DEV_* */
    size_t avail;                          /* bytes of the mapping from the range's start on */
    int mixed;                             /* mappings of several types live at the check: the
                                            * copy ends with vr_full_fence (copy/copy.h) */
};

/* Check [p, p+n) against handle's mapping (and host against NULL) exactly as
 * gdr_copy_*_mapping do, with the same errors; on success fill r. */
int vr_pin_dma_range(gdr_mh_t handle, const void *p, size_t n, const void *host,
                     struct vr_dma_range *r, const char *fn);

/* The range of the first byte of handle's mapping (what the copy engine's crossover of a pin
 * is looked up by): 0, or EINVAL when handle is not a pin mapped in this process. */
int vr_pin_dma_start(gdr_mh_t handle, struct vr_dma_range *r, const char *fn);

/* gdr_copy_to_mapping / gdr_copy_from_mapping themselves (core/gdrapi.c), called without the
 * PLT: an _auto copy below every crossover. */
int vr_gdr_copy_to_mapping(gdr_mh_t handle, void *map_d_ptr, const void *h_ptr, size_t size);
int vr_gdr_copy_from_mapping(gdr_mh_t handle, void *h_ptr, const void *map_d_ptr, size_t size);

/* Remember the copy engine's finding (a VR_DMA_DEV_* value or an ordinal) for handle's pin. */
void vr_pin_set_dma_dev(gdr_mh_t handle, int dma_dev);

#endif /* VRAMIO_PINS_H */

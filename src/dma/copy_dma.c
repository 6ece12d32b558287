/* SPDX-License-Identifier: MIT */
/*
 * copy_dma.c - vramio_copy_to_mapping_auto / vramio_copy_from_mapping_auto: the contract of
 * gdr_copy_*_mapping (synchronous, the same checks and errors), but from a crossover size up
 * the bytes move with the GPU's copy engine instead of the CPU through the BAR. A BAR read
 * is an uncached round trip per line (about 1 GB/s); the copy engine reaches tens of GB/s
 * after a fixed cost of several microseconds, so past some size it wins by far.
 *
 * The entry points of the copy engine's directory (dma.h): below the smallest crossover of any
 * device the API's own copy (gdrapi.c, through its hidden alias: the same path and fences),
 * above it auto_copy.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/export.h"
#include "core/pins.h"
#include "dma.h"
#include "dma_policy.h"
#include "nocancel.h"         /* util/: calls that are no cancellation points */
#include "vramio.h"

/* From the smallest crossover of any device up: the checks of gdr_copy_*_mapping and where
 * the range lies in GPU memory (pin.c), the way (dma_device.c: the pin's device, its
 * crossover, measured by this copy if nobody has), then the move (dma_transfer.c: the engine
 * or the BAR for what is left, then the full fence while mappings of several types live). */
static int auto_copy(int dir, gdr_mh_t handle, unsigned char *map, unsigned char *host,
                     size_t n, const char *fn)
{
    struct vr_dma_range r;
    struct vr_dma_way w;
    int nc = vr_nocancel_begin(); /* the way and the engine take the device's locks */
    int rc = vr_pin_dma_range(handle, map, n, host, &r, fn);

    if (rc) {
        vr_nocancel_end(nc);
        return rc;
    }
    vr_dma_way(dir, handle, &r, map, host, n, &w);
    return vr_dma_move(&w, dir, &r, map, host, n, nc, fn); /* restores nc */
}

VR_EXPORT int vramio_copy_to_mapping_auto(gdr_mh_t handle, void *map_d_ptr, const void *h_ptr,
                                          size_t size)
{
    size_t x = atomic_load_explicit(&vr_dma_min_crossover[DIR_WRITE], memory_order_relaxed);

    if (size < VR_DMA_FLOOR || size < x)
        return vr_gdr_copy_to_mapping(handle, map_d_ptr, h_ptr, size);
    return auto_copy(DIR_WRITE, handle, map_d_ptr, (unsigned char *)(uintptr_t)h_ptr, size,
                     "vramio_copy_to_mapping_auto");
}

VR_EXPORT int vramio_copy_from_mapping_auto(gdr_mh_t handle, void *h_ptr, const void *map_d_ptr,
                                            size_t size)
{
    size_t x = atomic_load_explicit(&vr_dma_min_crossover[DIR_READ], memory_order_relaxed);

    if (size < VR_DMA_FLOOR || size < x)
        return vr_gdr_copy_from_mapping(handle, h_ptr, map_d_ptr, size);
    return auto_copy(DIR_READ, handle, (unsigned char *)(uintptr_t)map_d_ptr, h_ptr, size,
                     "vramio_copy_from_mapping_auto");
}

static int auto_crossover(gdr_mh_t handle, size_t *read_bytes, size_t *write_bytes)
{
    const struct vr_cuda *cu;
    struct vr_dma_range r;
    struct dma_dev *d = NULL;
    int rc;

    if (!read_bytes || !write_bytes)
        return vr_fail(EINVAL, "vramio_copy_auto_crossover: NULL output");
    *read_bytes = *write_bytes = 0;
    rc = vr_pin_dma_start(handle, &r, "vramio_copy_auto_crossover");
    if (rc)
        return rc;
    if ((cu = vr_dma_cuda()))
        d = vr_dma_dev_of_pin(cu, handle, &r);
    if (!d) {
        *read_bytes = *write_bytes = VR_DMA_NEVER;
        return 0;
    }
    *read_bytes = atomic_load(&d->crossover[DIR_READ]);
    *write_bytes = atomic_load(&d->crossover[DIR_WRITE]);
    return 0;
}

VR_EXPORT int vramio_copy_auto_crossover(gdr_mh_t handle, size_t *read_bytes,
                                         size_t *write_bytes)
{
    return VR_NOCANCEL(auto_crossover(handle, read_bytes, write_bytes));
}

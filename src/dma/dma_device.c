/* SPDX-License-Identifier: MIT */
/*
 * dma_device.c - the copy engine's devices: each set up once per process, on the first _auto
 * copy that reaches it, with a private CU_STREAM_NON_BLOCKING stream in its primary context
 * (never the legacy default stream: it neither waits for the program's kernels nor makes
 * them wait; a kernel spinning on a flag that this very copy will set would otherwise
 * deadlock) and two pinned bounce buffers; the device of a pin, found once and remembered
 * in the pin. Memory that belongs to a CUDA context other than its device's primary one is
 * copied through the BAR (the primary context may not reach it); so is everything when CUDA
 * cannot be used. And the way of one _auto copy (vr_dma_way): the device of its pin, and the
 * crossover measured now if nobody has (dma_calibrate.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "dma.h"
#include "dma_policy.h"
#include "core/export.h"
#include "process/fork.h"

static struct dma_dev devs[DMA_MAX_DEVICES];
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * A forked child: a device its parent set up is the parent's (its primary context, stream,
 * events and bounce buffers; and CUDA is not for a child forked after cuInit), so the child
 * copies through the BAR there. setup_lock, which a thread of the parent may have held at the
 * fork, is made fresh rather than taken by every fork (fork.h): a setup waits on the driver,
 * and what it guards is used in the child only for a device the parent had not set up (state
 * 0: the child sets it up afresh).
 */
static void devs_fork_child(void)
{
    pthread_mutex_init(&setup_lock, NULL);
    for (int i = 0; i < DMA_MAX_DEVICES; i++)
        if (__atomic_load_n(&devs[i].state, __ATOMIC_RELAXED))
            __atomic_store_n(&devs[i].state, -1, __ATOMIC_RELAXED);
}

/* At load, not at the first use (fork.h). */
__attribute__((constructor)) static void devs_fork_register(void)
{
    vr_fork_on_child(devs_fork_child);
}

/* Under setup_lock, with d->ctx current. */
static int dev_setup_in_ctx(const struct vr_cuda *cu, struct dma_dev *d)
{
    CUresult r;
    int i;

    r = cu->cuStreamCreate(&d->stream, CU_STREAM_NON_BLOCKING);
    for (i = 0; i < 2 && r == CUDA_SUCCESS; i++) {
        void *p = NULL;

        r = cu->cuMemAllocHost(&p, BOUNCE_BYTES);
        d->bounce[i] = p;
        if (r == CUDA_SUCCESS)
            r = cu->cuEventCreate(&d->done[i], CU_EVENT_DISABLE_TIMING);
    }
    if (r != CUDA_SUCCESS)
        vr_warn("copy engine: setup failed (%s); the _auto copies use the BAR",
                vr_cuda_errstr(r));
    return r == CUDA_SUCCESS ? 0 : EIO;
}

static int dev_setup(const struct vr_cuda *cu, int ord, struct dma_dev *d)
{
    CUdevice dev;
    CUcontext popped;
    CUresult r = cu->cuDeviceGet(&dev, ord);
    int rc, i;

    if (r == CUDA_SUCCESS)
        r = cu->cuDevicePrimaryCtxRetain(&d->ctx, dev);
    if (r != CUDA_SUCCESS || cu->cuCtxPushCurrent(d->ctx) != CUDA_SUCCESS) {
        vr_warn("copy engine: no primary context on CUDA device %d (%s); using the BAR", ord,
                vr_cuda_errstr(r));
        return ENODEV;
    }
    rc = dev_setup_in_ctx(cu, d);
    cu->cuCtxPopCurrent(&popped);
    if (rc)
        return rc;
    pthread_mutex_init(&d->bounce_lock, NULL);
    for (i = 0; i < 2; i++) {
        atomic_store(&d->pageable_x[i], vr_dma_env_crossover(i));
        atomic_store(&d->crossover[i], vr_dma_env_crossover(i));
    }
    return 0;
}

/* The loaded driver has every entry point this directory calls. */
static int have_entry_points(const struct vr_cuda *cu)
{
    return cu->cuPointerGetAttribute && cu->cuDeviceGet && cu->cuDevicePrimaryCtxRetain &&
           cu->cuCtxPushCurrent && cu->cuCtxPopCurrent && cu->cuStreamCreate &&
           cu->cuStreamSynchronize && cu->cuMemcpyHtoDAsync && cu->cuMemcpyDtoHAsync &&
           cu->cuEventCreate && cu->cuEventRecord && cu->cuEventSynchronize &&
           cu->cuMemAllocHost && cu->cuMemAlloc && cu->cuMemFree;
}

/* Device ord set up (once per process), or NULL when the copy engine cannot be used there. */
static struct dma_dev *dev_ready(const struct vr_cuda *cu, int ord)
{
    struct dma_dev *d;

    if (ord < 0 || ord >= DMA_MAX_DEVICES)
        return NULL;
    d = &devs[ord];
    if (!__atomic_load_n(&d->state, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&setup_lock);
        if (!d->state)
            __atomic_store_n(&d->state, dev_setup(cu, ord, d) ? -1 : 1, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&setup_lock);
    }
    return __atomic_load_n(&d->state, __ATOMIC_ACQUIRE) == 1 ? d : NULL;
}

/* The ready state of the device that holds dev_addr, or NULL: copy through the BAR. Asks the
 * driver (two or three queries), so auto_copy does it once per pin and remembers the answer. */
static struct dma_dev *dev_for(const struct vr_cuda *cu, uint64_t dev_addr)
{
    struct dma_dev *d, *any;
    CUcontext owner = NULL, popped;
    CUresult r;
    int ord = -1, pushed = 0;

    r = cu->cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dev_addr);
    if (r == CUDA_ERROR_INVALID_CONTEXT && (any = dev_ready(cu, 0))) {
        /* A driver that answers only with a context current: any primary one will do. */
        pushed = cu->cuCtxPushCurrent(any->ctx) == CUDA_SUCCESS;
        r = cu->cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dev_addr);
    }
    if (r == CUDA_SUCCESS &&
        cu->cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, dev_addr) != CUDA_SUCCESS)
        owner = NULL;       /* VMM memory has no owning context: any on its device reaches it */
    if (pushed)
        cu->cuCtxPopCurrent(&popped);
    d = r == CUDA_SUCCESS ? dev_ready(cu, ord) : NULL;
    /* Memory of another context than the device's primary one may be out of its reach. */
    if (!d || (owner && owner != d->ctx))
        return NULL;
    return d;
}

const struct vr_cuda *vr_dma_cuda(void)
{
    const struct vr_cuda *cu;
    char why[VR_REASON_LEN];

    if (vr_cuda_init(&cu, why, sizeof(why)) || !have_entry_points(cu)) {
        vr_dma_note_crossover(DIR_READ, VR_DMA_NEVER);
        vr_dma_note_crossover(DIR_WRITE, VR_DMA_NEVER);
        return NULL;
    }
    return cu;
}

struct dma_dev *vr_dma_dev_of_pin(const struct vr_cuda *cu, gdr_mh_t handle,
                                  const struct vr_dma_range *r)
{
    struct dma_dev *d;

    if (r->dma_dev == VR_DMA_DEV_NONE)
        return NULL;
    if (r->dma_dev >= 0)
        return dev_ready(cu, r->dma_dev);
    d = dev_for(cu, r->dev_addr);
    vr_pin_set_dma_dev(handle, d ? (int)(d - devs) : VR_DMA_DEV_NONE);
    return d;
}

void vr_dma_way(int dir, gdr_mh_t handle, const struct vr_dma_range *r, unsigned char *map,
                unsigned char *host, size_t n, struct vr_dma_way *w)
{
    *w = (struct vr_dma_way){ vr_dma_cuda(), NULL, 0 };
    if (w->cu)
        w->d = vr_dma_dev_of_pin(w->cu, handle, r);
    if (w->d && !atomic_load(&w->d->crossover[dir]))
        w->done = vr_dma_calibrate(w->cu, w->d, dir, r, map, host, n);
}

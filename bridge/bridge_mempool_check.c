/* SPDX-License-Identifier: MIT */
/*
 * bridge_mempool_check.c - whether this driver lets stream-ordered memory be pinned, asked of
 * the driver itself before the bridge relies on it (bridge_mempool.c), once per GPU.
 *
 * Nothing is assumed of what the driver does with pool memory: whether a pool with a POSIX-fd
 * handle type can be made, whether cuMemRetainAllocationHandle gives its allocations' handle,
 * whether the handle's fd imports into Vulkan, and whether a pin then maps the bytes of the
 * block pinned. The check makes the pool the bridge will use (the POSIX-fd type, on the GPU,
 * the default pool's attributes and peer access copied), takes a block from it on a stream of
 * its own, and pins and maps it through libgdrapi as a client would; libgdrapi's vulkan
 * backend checks, with bytes of its own, that a block is found where the driver puts it
 * (src/backends/vulkan_pool.c). Any step that fails says no, with why; then the pool is
 * destroyed and the driver's own pools serve as without the bridge.
 * It runs in a context of the GPU (the caller's, or the GPU's primary one retained for it),
 * with the thread's capture mode relaxed (another thread's global capture is not disturbed by
 * its synchronizations), outside a capture of the stream the program allocates on.
 */
#include <stdio.h>
#include <string.h>
#include "bridge.h"
#include "vramio.h"

#define CHECK_BYTES (64u << 10)

/* Copy the default pool's settable attributes and peer access to pool. */
static void mirror(const struct vr_cuda *t, CUmemoryPool def, CUmemoryPool pool, int dev, int ndev)
{
    static const CUmemPool_attribute ints[] = {
        CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
        CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
    };
    cuuint64_t thr;
    size_t i;
    int e, v;

    for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
        if (t->cuMemPoolGetAttribute(def, ints[i], &v) == CUDA_SUCCESS)
            t->cuMemPoolSetAttribute(pool, ints[i], &v);
    if (t->cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr) == CUDA_SUCCESS)
        t->cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr);
    for (e = 0; e < ndev && t->cuMemPoolGetAccess; e++) {
        CUmemAccessDesc a;

        memset(&a, 0, sizeof(a));
        a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        a.location.id = e;
        if (e != dev && t->cuMemPoolGetAccess(&a.flags, def, &a.location) == CUDA_SUCCESS &&
            a.flags)
            t->cuMemPoolSetAccess(pool, &a, 1);
    }
}

/* A block of pool, pinned and mapped through libgdrapi as a client would: 0, or 1 with why.
 * libgdrapi's vulkan backend checks once per GPU, with bytes of its own, that it finds such a
 * block where the driver puts it (src/backends/vulkan_pool.c); this is the whole way through
 * the pool the bridge will serve from. */
static int block_check(const struct vr_cuda *t, CUmemoryPool pool, char *why, size_t len)
{
    CUdeviceptr b = 0;
    CUstream s = NULL;
    gdr_t g = NULL;
    gdr_mh_t mh;
    void *map = NULL;
    CUresult r;
    int bad = 1;

    r = t->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    if (r == CUDA_SUCCESS)
        r = t->cuMemAllocFromPoolAsync(&b, CHECK_BYTES, pool, s);
    if (r == CUDA_SUCCESS)
        r = t->cuStreamSynchronize(s);
    if (r != CUDA_SUCCESS)
        snprintf(why, len, "allocating from it failed: %s", vr_cuda_errstr(r));
    else if (!(g = gdr_open()))
        snprintf(why, len, "gdr_open: %s", vramio_last_error());
    else if (gdr_pin_buffer(g, (unsigned long)b, CHECK_BYTES, 0, 0, &mh))
        snprintf(why, len, "its memory cannot be pinned: %s", vramio_last_error());
    else {
        if (gdr_map(g, mh, &map, CHECK_BYTES))
            snprintf(why, len, "its memory cannot be mapped: %s", vramio_last_error());
        else
            bad = gdr_unmap(g, mh, map, CHECK_BYTES) != 0;
        gdr_unpin_buffer(g, mh);
    }
    if (g)
        gdr_close(g);
    if (b)
        t->cuMemFreeAsync(b, s);
    if (s) {
        t->cuStreamSynchronize(s);
        t->cuStreamDestroy(s);
    }
    return bad;
}

/* The driver functions the bridge's stream-ordered routes and this check call. */
static int has_calls(const struct vr_cuda *t, char *why, size_t len)
{
    int rc = 0;

#define VB_NEED(fn) if (!rc) rc = vr_cuda_require(t, fn, why, len);
    VB_NEED(cuMemPoolCreate) VB_NEED(cuMemPoolDestroy) VB_NEED(cuMemAllocFromPoolAsync)
    VB_NEED(cuMemFreeAsync) VB_NEED(cuDeviceGetDefaultMemPool) VB_NEED(cuDeviceGetMemPool)
    VB_NEED(cuMemPoolSetAttribute) VB_NEED(cuMemPoolGetAttribute) VB_NEED(cuMemPoolTrimTo)
    VB_NEED(cuMemPoolSetAccess) VB_NEED(cuStreamIsCapturing) VB_NEED(cuStreamCreate)
    VB_NEED(cuStreamDestroy) VB_NEED(cuStreamSynchronize) VB_NEED(cuDevicePrimaryCtxRetain)
    VB_NEED(cuCtxPushCurrent)
    VB_NEED(cuCtxPopCurrent) VB_NEED(cuThreadExchangeStreamCaptureMode)
#undef VB_NEED
    return rc;
}

int vb_mempool_check(const struct vr_cuda *t, int dev, int ndev, CUmemoryPool def,
                     CUmemoryPool *out, char *why, size_t len)
{
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CUcontext cur = NULL, primary = NULL, popped;
    CUmemoryPool pool = NULL;
    CUmemPoolProps props;
    CUdevice cd = -1;
    int v = 0, bad = 1, retained = 0, pushed = 0;
    CUresult r;

    if (has_calls(t, why, len))
        return 1;
    if (!t->cuDeviceGetAttribute ||
        t->cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, dev) !=
            CUDA_SUCCESS || !(v & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) {
        snprintf(why, len, "GPU %d makes no stream-ordered pools with POSIX-fd handles", dev);
        return 1;
    }
    t->cuCtxGetCurrent(&cur);
    if (!cur || t->cuCtxGetDevice(&cd) != CUDA_SUCCESS || cd != dev) {
        if (t->cuDevicePrimaryCtxRetain(&primary, dev) != CUDA_SUCCESS) {
            snprintf(why, len, "no context of GPU %d", dev);
            return 1;
        }
        retained = 1;
        pushed = t->cuCtxPushCurrent(primary) == CUDA_SUCCESS;
    }
    if (!retained || pushed) {
        t->cuThreadExchangeStreamCaptureMode(&mode);
        memset(&props, 0, sizeof(props));
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = dev;
        r = t->cuMemPoolCreate(&pool, &props);
        if (r != CUDA_SUCCESS) {
            snprintf(why, len, "a pool with a POSIX-fd handle type cannot be made: %s",
                     vr_cuda_errstr(r));
            pool = NULL;
        } else {
            mirror(t, def, pool, dev, ndev);
            bad = block_check(t, pool, why, len);
            t->cuMemPoolTrimTo(pool, 0);   /* what the check took goes back to the GPU */
            if (bad) {
                t->cuMemPoolDestroy(pool);
                pool = NULL;
            }
        }
        t->cuThreadExchangeStreamCaptureMode(&mode);
    } else {
        snprintf(why, len, "the primary context of GPU %d cannot be made current", dev);
    }
    if (pushed)
        t->cuCtxPopCurrent(&popped);
    if (retained)
        t->cuDevicePrimaryCtxRelease(dev);
    *out = pool;
    return bad;
}

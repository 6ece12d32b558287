/* SPDX-License-Identifier: MIT */
/*
 * bridge_mempool.c - stream-ordered memory (cudaMallocAsync / cuMemAllocAsync,
 * cuMemAllocFromPoolAsync, the pools a program makes) made pinnable where the driver allows.
 *
 * A device's default pool is made by the driver without a handle type, which the vulkan
 * backend needs to import its memory, and its properties cannot change. So the bridge makes,
 * per GPU, a pool of its own with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (once
 * bridge_mempool_check.c has shown on this driver that such memory pins and maps), and serves
 * from it what the program asks of the default pool: cuMemAllocAsync while the default pool
 * is the device's current pool, and cuMemAllocFromPoolAsync naming the default pool. The
 * driver's state is never changed: cuDeviceGetMemPool, cuDeviceGetDefaultMemPool and
 * cuDeviceSetMemPool stay the driver's and answer as without the bridge. What the program
 * does to the default pool reaches the bridge's as well: cuMemPoolSetAttribute (the release
 * threshold, the reuse policies, the high-mark resets), cuMemPoolSetAccess and
 * cuMemPoolTrimTo (the default pool first, the bridge's to what is left of the bytes to
 * keep); cuMemPoolGetAttribute of the default pool adds the bridge's pool's bytes to the four
 * counters (reserved and used, current and high: the sum of the two high marks is an upper
 * bound of the high mark of their sum); CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE of its memory
 * answers the default pool (bridge_attr.c, vb_mempool_program_view). Freeing (cuMemFreeAsync,
 * cuMemFree) stays the driver's: it finds the pool from the address.
 * The pools a program makes (cuMemPoolCreate of device memory without a POSIX-fd type) get the
 * type added, on a GPU where the check said yes; the driver refusing it, the pool is made as
 * asked. Such pools can then export handles the program did not ask for
 * (cuMemPoolExportToShareableHandle with a POSIX fd, cuMemPoolExportPointer): nothing takes
 * away what the program asked for.
 * During a stream capture every call is passed to the driver as it is (graph memory nodes
 * come from the graph's own memory, which the bridge does not touch); so is everything on a
 * GPU where the check said no, or for a stream of another context than the current one.
 * IPC of the default pool is refused by the driver as without the bridge (it has no handle
 * type); memory of the bridge's pool exported by pointer cannot be imported without the
 * pool's handle, which the program never sees.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include "bridge.h"

#define VB_POOL_GPUS 64
enum { UNKNOWN = 0, ON = 1, OFF = 2, CHECKING = 3 };

static struct {
    atomic_int state;
    CUmemoryPool def;        /* the driver's default pool of the GPU (set before state) */
    CUmemoryPool ours;       /* the bridge's pool, when state is ON */
} gpus[VB_POOL_GPUS];
static atomic_int ndev = -1;

static int device_count(const struct vr_cuda *t)
{
    int n = atomic_load_explicit(&ndev, memory_order_acquire);

    if (n >= 0)
        return n;
    if (!t->cuDeviceGetCount || t->cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 0)
        return 0;
    n = n > VB_POOL_GPUS ? VB_POOL_GPUS : n;
    atomic_store_explicit(&ndev, n, memory_order_release);
    return n;
}

/* The default pool of GPU d, asked of the driver once. */
static CUmemoryPool default_of(const struct vr_cuda *t, int d)
{
    CUmemoryPool p = __atomic_load_n(&gpus[d].def, __ATOMIC_ACQUIRE);

    if (!p && t->cuDeviceGetDefaultMemPool && t->cuDeviceGetDefaultMemPool(&p, d) == CUDA_SUCCESS)
        __atomic_store_n(&gpus[d].def, p, __ATOMIC_RELEASE);
    return p;
}

/* The bridge's pool of GPU d, checked now when nobody has: NULL where it cannot serve. The
 * first caller runs the check, holding no lock (the check calls into the driver and
 * libgdrapi, whose locks a fork takes); a caller that finds it under way gets the driver's
 * pool meanwhile rather than waiting. */
static CUmemoryPool ours_of(const struct vr_cuda *t, int d)
{
    char why[320];
    CUmemoryPool p = NULL;
    int st = atomic_load_explicit(&gpus[d].state, memory_order_acquire), unknown = UNKNOWN;

    if (st == UNKNOWN && atomic_compare_exchange_strong(&gpus[d].state, &unknown, CHECKING)) {
        if (!vb_pinnable()) {
            snprintf(why, sizeof(why), "the vulkan backend cannot pin here");
            st = OFF;
        } else if (!default_of(t, d)) {
            snprintf(why, sizeof(why), "GPU %d has no default pool", d);
            st = OFF;
        } else {
            st = vb_mempool_check(t, d, device_count(t), default_of(t, d), &p, why,
                                  sizeof(why)) ? OFF : ON;
        }
        gpus[d].ours = p;
        atomic_store_explicit(&gpus[d].state, st, memory_order_release);
        if (st == ON)
            vb_log("GPU %d: stream-ordered memory of the default pool and of the program's "
                   "pools is made pinnable (a pool with a POSIX-fd handle type)", d);
        else
            vb_log("GPU %d: stream-ordered memory stays the driver's: %s", d, why);
    }
    return st == ON ? gpus[d].ours : NULL;
}

/* The GPU whose default pool is pool, or -1. */
static int default_gpu(const struct vr_cuda *t, CUmemoryPool pool)
{
    int d, n = device_count(t);

    for (d = 0; pool && d < n; d++)
        if (default_of(t, d) == pool)
            return d;
    return -1;
}

/* The bridge's pool standing in for pool (a default pool it serves for), or NULL. */
static CUmemoryPool ours_for(CUmemoryPool pool)
{
    int d, n = atomic_load_explicit(&ndev, memory_order_acquire);

    for (d = 0; pool && d < n; d++)
        if (atomic_load_explicit(&gpus[d].state, memory_order_acquire) == ON &&
            __atomic_load_n(&gpus[d].def, __ATOMIC_RELAXED) == pool)
            return gpus[d].ours;
    return NULL;
}

CUmemoryPool vb_mempool_program_view(CUmemoryPool pool)
{
    int d, n = atomic_load_explicit(&ndev, memory_order_acquire);

    for (d = 0; pool && d < n; d++)
        if (atomic_load_explicit(&gpus[d].state, memory_order_acquire) == ON &&
            gpus[d].ours == pool)
            return __atomic_load_n(&gpus[d].def, __ATOMIC_RELAXED);
    return pool;
}

/* Where the program's request for pool (NULL: the device's current pool) on stream is
 * served: the bridge's pool, or NULL for the driver's call as it is. hs: the stream by an
 * explicit handle. */
static CUmemoryPool serve_from(const struct vr_cuda *t, CUmemoryPool pool, CUstream stream,
                               CUstream hs)
{
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    CUcontext cur = NULL, sctx = NULL;
    CUmemoryPool current = NULL;
    CUdevice dev;
    int d;

    if (pool) {
        d = default_gpu(t, pool);
    } else {
        /* The stream's device: the current context's, for a stream of that context. */
        if (!t->cuCtxGetDevice || t->cuCtxGetDevice(&dev) != CUDA_SUCCESS || dev < 0 ||
            dev >= device_count(t))
            return NULL;
        if (hs != NULL && hs != CU_STREAM_LEGACY && hs != CU_STREAM_PER_THREAD &&
            (!t->cuStreamGetCtx || t->cuStreamGetCtx(hs, &sctx) != CUDA_SUCCESS ||
             t->cuCtxGetCurrent(&cur) != CUDA_SUCCESS || sctx != cur))
            return NULL;
        d = (int)dev;
        if (!t->cuDeviceGetMemPool || t->cuDeviceGetMemPool(&current, dev) != CUDA_SUCCESS ||
            current != default_of(t, d))
            return NULL;
    }
    if (d < 0 || atomic_load_explicit(&gpus[d].state, memory_order_acquire) == OFF)
        return NULL;
    if (!t->cuStreamIsCapturing || t->cuStreamIsCapturing(hs, &cap) != CUDA_SUCCESS ||
        cap != CU_STREAM_CAPTURE_STATUS_NONE)
        return NULL;
    return ours_of(t, d);
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream stream,
                            CUstream hs, void *drv)
{
    const struct vr_cuda *t = vb_real();
    CUmemoryPool ours = NULL;
    CUresult r;

    if (dptr && size && t && t->cuMemAllocFromPoolAsync)
        ours = serve_from(t, pool, stream, hs);
    if (ours) {
        r = t->cuMemAllocFromPoolAsync(dptr, size, ours, hs);
        if (r == CUDA_SUCCESS)
            return r;
        vb_log("cuMemAlloc%sAsync(%zu): the bridge's pool failed (error %d): the driver's",
               pool ? "FromPool" : "", size, (int)r);
    }
    if (!drv)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (pool)
        return ((CUresult (*)(CUdeviceptr *, size_t, CUmemoryPool, CUstream))drv)(dptr, size,
                                                                                  pool, stream);
    return ((CUresult (*)(CUdeviceptr *, size_t, CUstream))drv)(dptr, size, stream);
}

CUresult vb_mem_alloc_async(CUdeviceptr *dptr, size_t size, CUstream stream)
{
    const struct vr_cuda *t = vb_real();

    return alloc_async(dptr, size, NULL, stream, stream, t ? (void *)t->cuMemAllocAsync : NULL);
}

CUresult vb_mem_alloc_async_ptsz(CUdeviceptr *dptr, size_t size, CUstream stream)
{
    return alloc_async(dptr, size, NULL, stream, stream ? stream : CU_STREAM_PER_THREAD,
                       vb_real_ptsz("cuMemAllocAsync", 11020));
}

CUresult vb_mem_alloc_from_pool_async(CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
                                      CUstream stream)
{
    const struct vr_cuda *t = vb_real();

    if (!pool)   /* the driver's answer for no pool */
        return t && t->cuMemAllocFromPoolAsync ? t->cuMemAllocFromPoolAsync(dptr, size, pool, stream)
                                               : CUDA_ERROR_NOT_INITIALIZED;
    return alloc_async(dptr, size, pool, stream, stream,
                       t ? (void *)t->cuMemAllocFromPoolAsync : NULL);
}

CUresult vb_mem_alloc_from_pool_async_ptsz(CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
                                           CUstream stream)
{
    void *drv = vb_real_ptsz("cuMemAllocFromPoolAsync", 11020);

    if (!pool)
        return drv ? ((CUresult (*)(CUdeviceptr *, size_t, CUmemoryPool, CUstream))drv)(
                         dptr, size, pool, stream) : CUDA_ERROR_NOT_INITIALIZED;
    return alloc_async(dptr, size, pool, stream, stream ? stream : CU_STREAM_PER_THREAD, drv);
}

CUresult vb_mem_pool_create(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    const struct vr_cuda *t = vb_real();
    CUmemPoolProps with;
    CUresult r;
    int d;

    if (!t || !t->cuMemPoolCreate)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        props->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        (props->handleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        return t->cuMemPoolCreate(pool, props);
    d = props->location.id;
    if (d < 0 || d >= device_count(t) || !ours_of(t, d))
        return t->cuMemPoolCreate(pool, props);
    memcpy(&with, props, sizeof(with));
    with.handleTypes =
        (CUmemAllocationHandleType)(with.handleTypes | CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    r = t->cuMemPoolCreate(pool, &with);
    if (r == CUDA_SUCCESS) {
        vb_log("cuMemPoolCreate(GPU %d, handle types %#x): made with a POSIX-fd handle type as "
               "well", d, (unsigned)props->handleTypes);
        return r;
    }
    vb_log("cuMemPoolCreate(GPU %d) with a POSIX-fd handle type added: error %d; made as asked",
           d, (int)r);
    return t->cuMemPoolCreate(pool, props);
}

static int counter(CUmemPool_attribute a)
{
    return a == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT || a == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH ||
           a == CU_MEMPOOL_ATTR_USED_MEM_CURRENT || a == CU_MEMPOOL_ATTR_USED_MEM_HIGH;
}

CUresult vb_mem_pool_set_attribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    const struct vr_cuda *t = vb_real();
    CUmemoryPool ours = ours_for(pool);
    CUresult r;

    if (!t || !t->cuMemPoolSetAttribute)
        return CUDA_ERROR_NOT_INITIALIZED;
    r = t->cuMemPoolSetAttribute(pool, attr, value);
    if (r == CUDA_SUCCESS && ours)
        t->cuMemPoolSetAttribute(ours, attr, value);
    return r;
}

CUresult vb_mem_pool_get_attribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    const struct vr_cuda *t = vb_real();
    CUmemoryPool ours = ours_for(pool);
    cuuint64_t more = 0;
    CUresult r;

    if (!t || !t->cuMemPoolGetAttribute)
        return CUDA_ERROR_NOT_INITIALIZED;
    r = t->cuMemPoolGetAttribute(pool, attr, value);
    if (r == CUDA_SUCCESS && ours && counter(attr) &&
        t->cuMemPoolGetAttribute(ours, attr, &more) == CUDA_SUCCESS)
        *(cuuint64_t *)value += more;
    return r;
}

CUresult vb_mem_pool_trim_to(CUmemoryPool pool, size_t keep)
{
    const struct vr_cuda *t = vb_real();
    CUmemoryPool ours = ours_for(pool);
    cuuint64_t held = 0;
    CUresult r;

    if (!t || !t->cuMemPoolTrimTo)
        return CUDA_ERROR_NOT_INITIALIZED;
    r = t->cuMemPoolTrimTo(pool, keep);
    if (r == CUDA_SUCCESS && ours) {
        if (t->cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &held) !=
            CUDA_SUCCESS)
            held = 0;
        t->cuMemPoolTrimTo(ours, held < keep ? keep - (size_t)held : 0);
    }
    return r;
}

CUresult vb_mem_pool_set_access(CUmemoryPool pool, const CUmemAccessDesc *desc, size_t count)
{
    const struct vr_cuda *t = vb_real();
    CUmemoryPool ours = ours_for(pool);
    CUresult r;

    if (!t || !t->cuMemPoolSetAccess)
        return CUDA_ERROR_NOT_INITIALIZED;
    r = t->cuMemPoolSetAccess(pool, desc, count);
    if (r == CUDA_SUCCESS && ours)
        t->cuMemPoolSetAccess(ours, desc, count);
    return r;
}

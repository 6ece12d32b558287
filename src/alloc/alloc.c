/* SPDX-License-Identifier: MIT */
/*
 * alloc.c - vramio_alloc / vramio_free: device memory that every backend can pin.
 *
 * CUDA VMM allocations (cuMemCreate + cuMemAddressReserve + cuMemMap + cuMemSetAccess)
 * requesting a POSIX-fd handle type (so the vulkan backend can export them) and GPUDirect RDMA
 * capability (so the kernel module can pin them) wherever the device offers them. CUDA memory
 * imported into Vulkan maps exactly as fast as Vulkan's own memory exported to CUDA, so the
 * simple direction is the one taken.
 *
 * Each GPU has a pool (slab_pool.c) whose slabs are such allocations of one granularity
 * (2 MiB): requests up to 1 MiB are carved from shared slabs, larger ones get their own. A
 * pin inside a block finds the slab's allocation (cuMemRetainAllocationHandle), so the vulkan
 * backend imports each slab once however many blocks are pinned. The pools know every
 * address they handed out, so vramio_free of anything else is a clean EINVAL.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "alloc.h"
#include "process/cuda_ctx.h"
#include "cuda_loader.h"
#include "core/export.h"
#include "process/fork.h"
#include "nocancel.h"         /* util/: calls that are no cancellation points */
#include "core/pins.h"
#include "slab_pool.h"
#include "vramio.h"

static int dev_attr(const struct vr_cuda *cu, CUdevice d, CUdevice_attribute a)
{
    int v = 0;

    if (cu->cuDeviceGetAttribute(&v, a, d) != CUDA_SUCCESS)
        return 0;
    return v;
}

/* Out of GPU memory is an answer to the caller, not a fault of the library: the bridge then
 * asks the driver, a framework frees its cache and retries, as after cudaMalloc's answer,
 * which prints nothing. So it is logged at info level (the thread's last error says it all
 * the same); any other failure of the driver is an error. */
static int cuda_fail(const char *what, CUresult r)
{
    return vr_fail_at(r == CUDA_ERROR_OUT_OF_MEMORY ? VR_LOG_INFO : VR_LOG_ERROR,
                      vr_cuda_errno(r), "vramio_alloc/free: %s failed: %s", what,
                      vr_cuda_errstr(r));
}

/* Reserve, map and open access to handle h of size bytes for the devices of access[]: the
 * owner first, then its peers, like cudaMalloc memory that peers may reach once peer access
 * is enabled; when the peers are refused, the owner alone. */
static int map_allocation(const struct vr_cuda *cu, const CUmemAccessDesc *access, int naccess,
                          CUmemGenericAllocationHandle h, size_t size, size_t align,
                          CUdeviceptr *out)
{
    CUdeviceptr ptr = 0;
    CUresult r;

    r = cu->cuMemAddressReserve(&ptr, size, align, 0, 0);
    if (r != CUDA_SUCCESS)
        return cuda_fail("cuMemAddressReserve", r);
    r = cu->cuMemMap(ptr, size, 0, h, 0);
    if (r != CUDA_SUCCESS) {
        cu->cuMemAddressFree(ptr, size);
        return cuda_fail("cuMemMap", r);
    }
    r = cu->cuMemSetAccess(ptr, size, access, (size_t)naccess);
    if (r != CUDA_SUCCESS && naccess > 1)
        r = cu->cuMemSetAccess(ptr, size, access, 1);
    if (r != CUDA_SUCCESS) {
        cu->cuMemUnmap(ptr, size);
        cu->cuMemAddressFree(ptr, size);
        return cuda_fail("cuMemSetAccess", r);
    }
    *out = ptr;
    return 0;
}


#define VR_POOL_MAX_GPUS 64
#define VR_POOL_SMALL_MAX (1u << 20)
#define VR_POOL_CACHE_DEFAULT_MB 64

struct gpu_pool {
    struct vr_pool pool;
    int gpu;
    CUmemAllocationProp prop;
    int naccess;
    CUmemAccessDesc access[VR_POOL_MAX_GPUS];   /* this GPU, then its peers */
};

/* pools_lock: the table of pools; slabs_lock: the bookkeeping of every pool (held for a few
 * hundred nanoseconds per call). A fork must not leave the child either lock held. */
static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t slabs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gpu_pool *pools[VR_POOL_MAX_GPUS];

/* At load, not at the first use (fork.h). */
__attribute__((constructor)) static void pools_fork_register(void)
{
    vr_fork_protect_mutex(&pools_lock);
    vr_fork_protect_mutex(&slabs_lock);
}

static void pools_lock_take(void)
{
    pthread_mutex_lock(&pools_lock);
}

static int slab_create(void *ctx, size_t size, uint64_t *base, void **cookie, unsigned *pieces)
{
    struct gpu_pool *gp = ctx;
    const struct vr_cuda *cu = vr_cuda_load(NULL, 0);
    struct vr_cuda_ctx_guard guard;
    CUmemGenericAllocationHandle h;
    CUdeviceptr ptr = 0;
    char why[VR_REASON_LEN];
    CUresult r;
    int rc;

    /* A thread without a context borrows the device's primary one for the reservation. */
    rc = vr_cuda_ctx_enter(cu, gp->gpu, &guard, why, sizeof(why));
    if (rc)
        return vr_fail_err(rc, "vramio_alloc: %s", why);
    r = cu->cuMemCreate(&h, size, &gp->prop, 0);
    if (r != CUDA_SUCCESS) {
        vr_cuda_ctx_leave(cu, &guard);
        return cuda_fail("cuMemCreate", r);
    }
    /* Aligned to the slab size: the pool finds a block's slab by masking its address. */
    rc = map_allocation(cu, gp->access, gp->naccess, h, size, gp->pool.slab_size, &ptr);
    vr_cuda_ctx_leave(cu, &guard);
    if (rc) {
        cu->cuMemRelease(h);
        return rc;
    }
    *base = (uint64_t)ptr;
    *cookie = (void *)(uintptr_t)h;
    return 0;
}

static void slab_destroy(void *ctx, uint64_t base, size_t size, void *cookie, unsigned pieces)
{
    const struct vr_cuda *cu = vr_cuda_load(NULL, 0);
    CUresult r1, r2, r3;

    /* Pins of it stay valid: a backend's import holds the pages until it is unpinned; but the
     * address stops reaching them, so their copies keep to the mappings from now on. */
    vr_pins_gpu_released(base, size);
    r1 = cu->cuMemUnmap((CUdeviceptr)base, size);
    r2 = cu->cuMemAddressFree((CUdeviceptr)base, size);
    r3 = cu->cuMemRelease((CUmemGenericAllocationHandle)(uintptr_t)cookie);
    if (r1 != CUDA_SUCCESS || r2 != CUDA_SUCCESS || r3 != CUDA_SUCCESS)
        vr_err("vramio_free: releasing 0x%llx + %zu failed: unmap %d, address free %d, "
               "release %d", (unsigned long long)base, size, (int)r1, (int)r2, (int)r3);
}

static const struct vr_slab_ops vmm_slab_ops = { slab_create, slab_destroy };

/* Bytes of emptied slabs each GPU's pool keeps: VRAMIO_POOL_CACHE_MB, default 64. */
static size_t pool_cache_bytes(void)
{
    const char *e = getenv("VRAMIO_POOL_CACHE_MB");
    char *end = NULL;
    unsigned long mb = VR_POOL_CACHE_DEFAULT_MB;

    if (e && *e) {
        mb = strtoul(e, &end, 10);
        if (*end || mb > (SIZE_MAX >> 20))
            mb = VR_POOL_CACHE_DEFAULT_MB;
    }
    return (size_t)mb << 20;
}

/* Read-write access for gpu and for every device that can reach it peer to peer. */
static void pool_access(const struct vr_cuda *cu, struct gpu_pool *gp, int count)
{
    int peer, can;

    gp->naccess = 0;
    for (peer = -1; peer < count && peer < VR_POOL_MAX_GPUS; peer++) {
        CUmemAccessDesc *a = &gp->access[gp->naccess];

        if (peer == gp->gpu)
            continue;
        if (peer >= 0 && (!cu->cuDeviceCanAccessPeer ||
                          cu->cuDeviceCanAccessPeer(&can, peer, gp->gpu) != CUDA_SUCCESS || !can))
            continue;
        memset(a, 0, sizeof(*a));
        a->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        a->location.id = peer < 0 ? gp->gpu : peer;
        a->flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        gp->naccess++;
    }
}

/* The allocation properties and granularity of device gpu: POSIX fd and RDMA where offered. */
static int pool_make(const struct vr_cuda *cu, int gpu, int count, struct gpu_pool **out)
{
    struct gpu_pool *gp;
    size_t gran = 0;
    CUdevice d;
    CUresult r;
    int rc;

    r = cu->cuDeviceGet(&d, gpu);
    if (r != CUDA_SUCCESS)
        return cuda_fail("cuDeviceGet", r);
    gp = calloc(1, sizeof(*gp));
    if (!gp)
        return ENOMEM;
    gp->gpu = gpu;
    pool_access(cu, gp, count);
    gp->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    gp->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    gp->prop.location.id = gpu;
    if (dev_attr(cu, d, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED))
        gp->prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    if (dev_attr(cu, d, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED))
        gp->prop.allocFlags.gpuDirectRDMACapable = 1;
    r = cu->cuMemGetAllocationGranularity(&gran, &gp->prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    if (r != CUDA_SUCCESS || gran == 0 || (gran & (gran - 1))) {
        free(gp);
        return r != CUDA_SUCCESS ? cuda_fail("cuMemGetAllocationGranularity", r) :
               vr_fail_err(EIO, "vramio_alloc: GPU %d reports an allocation granularity of %zu "
                           "bytes (not a power of two)", gpu, gran);
    }
    rc = vr_pool_init(&gp->pool, &vmm_slab_ops, gp, gran, VR_POOL_SMALL_MAX, pool_cache_bytes(),
                      &slabs_lock);
    if (rc) {
        free(gp);
        return vr_fail_err(rc, "vramio_alloc: cannot set up the pool of GPU %d", gpu);
    }
    *out = gp;
    return 0;
}

/* The pool of gpu, made at its first use. */
static int pool_get(int gpu, struct gpu_pool **out)
{
    const struct vr_cuda *cu;
    char why[VR_REASON_LEN];
    int count = 0, rc;

    rc = vr_cuda_init(&cu, why, sizeof(why));
    if (rc)
        return vr_fail_err(rc, "vramio_alloc: %s", why);
    if (cu->cuDeviceGetCount(&count) != CUDA_SUCCESS || gpu >= count || gpu >= VR_POOL_MAX_GPUS)
        return vr_fail(ENODEV, "vramio_alloc: there is no CUDA device %d (%d found)", gpu, count);
    pools_lock_take();
    rc = pools[gpu] ? 0 : pool_make(cu, gpu, count, &pools[gpu]);
    *out = pools[gpu];
    pthread_mutex_unlock(&pools_lock);
    return rc;
}

/* The pools made so far (they live as long as the process). */
static int pools_snapshot(struct gpu_pool **out)
{
    int i, n = 0;

    pools_lock_take();
    for (i = 0; i < VR_POOL_MAX_GPUS; i++)
        if (pools[i])
            out[n++] = pools[i];
    pthread_mutex_unlock(&pools_lock);
    return n;
}

static int alloc_block(int gpu, size_t size, unsigned long long *dptr)
{
    struct gpu_pool *gp = NULL;
    uint64_t addr = 0;
    int rc;

    if (!dptr || size == 0 || gpu < 0)
        return vr_fail(EINVAL, "vramio_alloc: %s", !dptr ? "dptr is NULL" :
                       size == 0 ? "size is 0" : "negative GPU ordinal");
    *dptr = 0;
    if (size > SIZE_MAX / 2)
        return vr_fail(EINVAL, "vramio_alloc: size %zu too large", size);
    rc = pool_get(gpu, &gp);
    if (rc)
        return rc;
    rc = vr_pool_alloc(&gp->pool, size, &addr);
    if (rc) /* the reason was recorded where it failed */
        return rc;
    *dptr = addr;
    return 0;
}

VR_EXPORT int vramio_alloc(int gpu, size_t size, unsigned long long *dptr)
{
    return VR_NOCANCEL(alloc_block(gpu, size, dptr));
}

static int free_block(unsigned long long dptr)
{
    struct gpu_pool *gp[VR_POOL_MAX_GPUS];
    int i, n = pools_snapshot(gp);

    for (i = 0; i < n; i++)
        if (vr_pool_free(&gp[i]->pool, dptr) == 0)
            return 0;
    return vr_fail(EINVAL, "vramio_free: 0x%llx is not memory from vramio_alloc (or was freed "
                   "already)", dptr);
}

VR_EXPORT int vramio_free(unsigned long long dptr)
{
    return VR_NOCANCEL(free_block(dptr));
}

VR_EXPORT int vramio_alloc_range(unsigned long long ptr, unsigned long long *base, size_t *size)
{
    struct gpu_pool *gp[VR_POOL_MAX_GPUS];
    const struct vr_cuda *cu = vr_cuda_load(NULL, 0);
    int i, n = pools_snapshot(gp);
    unsigned long long at = ptr;
    uint64_t b = 0;
    size_t s = 0;
    int pass;

    /* Deep inside a large allocation the pool cannot tell: its mapping's start can. That
     * start holds a live block of its own only for a large allocation; in a shared slab it
     * is the first block, which must hold ptr (a freed block's address is in no block). */
    for (pass = 0; pass < 2; pass++) {
        for (i = 0; i < n; i++) {
            if (vr_pool_find(&gp[i]->pool, at, &b, &s) == 0 && ptr - b < s) {
                if (base)
                    *base = b;
                if (size)
                    *size = s;
                return 0;
            }
        }
        if (pass || !n || !cu || !cu->cuMemGetAddressRange)
            break;
        {
            CUdeviceptr mb = 0;

            if (cu->cuMemGetAddressRange(&mb, NULL, (CUdeviceptr)ptr) != CUDA_SUCCESS ||
                mb == (CUdeviceptr)ptr)
                break;
            at = (unsigned long long)mb;
        }
    }
    /* A freed block (or a cached slab) is still mapped: the driver would describe the slab. */
    for (i = 0; i < n; i++)
        if (vr_pool_owns(&gp[i]->pool, ptr))
            return EFAULT;
    return ENOENT;
}

int vr_alloc_gpu(unsigned long long ptr)
{
    struct gpu_pool *gp[VR_POOL_MAX_GPUS];
    int i, n = pools_snapshot(gp);
    uint64_t b = 0;
    size_t s = 0;

    for (i = 0; i < n; i++)
        if (vr_pool_find(&gp[i]->pool, ptr, &b, &s) == 0 && b == ptr)
            return gp[i]->gpu;
    return -1;
}

static void stats_add(struct vramio_pool_stats *st, const struct vr_pool_stats *s)
{
    st->slabs += s->slabs;
    st->cached_slabs += s->cached_slabs;
    st->slab_bytes += s->slab_bytes;
    st->small_allocs += s->small_allocs;
    st->small_bytes += s->small_bytes;
    st->large_allocs += s->large_allocs;
    st->large_bytes += s->large_bytes;
}

VR_EXPORT int vramio_pool_stats(int gpu, struct vramio_pool_stats *st)
{
    struct gpu_pool *gp[VR_POOL_MAX_GPUS];
    struct vr_pool_stats s;
    int i, n = pools_snapshot(gp);

    if (!st || gpu < -1)
        return vr_fail(EINVAL, "vramio_pool_stats: %s", !st ? "st is NULL" : "bad GPU ordinal");
    memset(st, 0, sizeof(*st));
    for (i = 0; i < n; i++) {
        if (gpu == -1 || gp[i]->gpu == gpu) {
            vr_pool_get_stats(&gp[i]->pool, &s);
            stats_add(st, &s);
        }
    }
    return 0;
}

static int trim_pool(int gpu)
{
    struct gpu_pool *gp[VR_POOL_MAX_GPUS];
    int i, n = pools_snapshot(gp);

    if (gpu < -1)
        return vr_fail(EINVAL, "vramio_pool_trim: bad GPU ordinal %d", gpu);
    for (i = 0; i < n; i++)
        if (gpu == -1 || gp[i]->gpu == gpu)
            vr_pool_trim(&gp[i]->pool);
    return 0;
}

VR_EXPORT int vramio_pool_trim(int gpu)
{
    return VR_NOCANCEL(trim_pool(gpu));
}

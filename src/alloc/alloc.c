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
 *
 * A request above the chunk size (VRAMIO_POOL_CHUNK_MB, 1 GiB) is made of chunks: one
 * allocation per chunk, mapped side by side in one reservation, so that a pin inside it
 * imports the chunk it touches, not the whole block (docs/large-allocations.md: a 1 MiB pin in
 * a 59 GiB allocation could not be imported at all). Only where a backend that gdr_open would
 * use pins across chunks (vr_pins_can_span, asked once per GPU) and the driver describes a
 * chunk as its own allocation (checked on the first chunked block); else one allocation.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
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

/* Map handle h of size bytes at ptr (reserved) and open access to it for the devices of
 * access[]: the owner first, then its peers, like cudaMalloc memory that peers may reach once
 * peer access is enabled; when the peers are refused, the owner alone. Unmapped on failure. */
static int map_piece(const struct vr_cuda *cu, const CUmemAccessDesc *access, int naccess,
                     CUmemGenericAllocationHandle h, size_t size, CUdeviceptr ptr)
{
    CUresult r;

    r = cu->cuMemMap(ptr, size, 0, h, 0);
    if (r != CUDA_SUCCESS)
        return cuda_fail("cuMemMap", r);
    r = cu->cuMemSetAccess(ptr, size, access, (size_t)naccess);
    if (r != CUDA_SUCCESS && naccess > 1)
        r = cu->cuMemSetAccess(ptr, size, access, 1);
    if (r != CUDA_SUCCESS) {
        cu->cuMemUnmap(ptr, size);
        return cuda_fail("cuMemSetAccess", r);
    }
    return 0;
}

/* Reserve, map and open access to handle h of size bytes (map_piece). */
static int map_allocation(const struct vr_cuda *cu, const CUmemAccessDesc *access, int naccess,
                          CUmemGenericAllocationHandle h, size_t size, size_t align,
                          CUdeviceptr *out)
{
    CUdeviceptr ptr = 0;
    CUresult r;
    int rc;

    r = cu->cuMemAddressReserve(&ptr, size, align, 0, 0);
    if (r != CUDA_SUCCESS)
        return cuda_fail("cuMemAddressReserve", r);
    rc = map_piece(cu, access, naccess, h, size, ptr);
    if (rc) {
        cu->cuMemAddressFree(ptr, size);
        return rc;
    }
    *out = ptr;
    return 0;
}

#define VR_POOL_MAX_GPUS 64
#define VR_POOL_SMALL_MAX (1u << 20)
#define VR_POOL_CACHE_DEFAULT_MB 64
#define VR_POOL_CHUNK_DEFAULT_MB 1024

/* Whether the pool of a GPU makes a request above its chunk size of chunks: not asked yet;
 * the backends pin across chunks (vr_pins_can_span) but no chunked block was checked yet;
 * checked (the driver describes a chunk as its own); no (one allocation per request). */
enum { SPLIT_UNKNOWN, SPLIT_UNCHECKED, SPLIT_YES, SPLIT_NO };

struct gpu_pool {
    struct vr_pool pool;
    int gpu;
    CUmemAllocationProp prop;
    int naccess;
    CUmemAccessDesc access[VR_POOL_MAX_GPUS];   /* this GPU, then its peers */
    size_t chunk;                               /* bytes; 0: never chunk */
    _Atomic int split;                          /* SPLIT_*, decided under split_lock */
};

/* pools_lock: the table of pools; slabs_lock: the bookkeeping of every pool (held for a few
 * hundred nanoseconds per call). A fork must not leave the child either lock held. */
static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t slabs_lock = PTHREAD_MUTEX_INITIALIZER;
/* Held while a pool decides whether it chunks (its first large request): the backends'
 * answer and the check of the first chunked block are made once, the others wait for them. */
static pthread_mutex_t split_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gpu_pool *pools[VR_POOL_MAX_GPUS];

/* At load, not at the first use (fork.h). */
__attribute__((constructor)) static void pools_fork_register(void)
{
    vr_fork_protect_mutex(&pools_lock);
    vr_fork_protect_mutex(&slabs_lock);
    vr_fork_protect_mutex(&split_lock);
}

static void pools_lock_take(void)
{
    pthread_mutex_lock(&pools_lock);
}

/* One allocation of size bytes, aligned to the slab size: the pool finds a block's slab by
 * masking its address. */
static int create_one(const struct vr_cuda *cu, struct gpu_pool *gp, size_t size,
                      CUdeviceptr *ptr, void **cookie)
{
    CUmemGenericAllocationHandle h;
    CUresult r;
    int rc;

    r = cu->cuMemCreate(&h, size, &gp->prop, 0);
    if (r != CUDA_SUCCESS)
        return cuda_fail("cuMemCreate", r);
    rc = map_allocation(cu, gp->access, gp->naccess, h, size, gp->pool.slab_size, ptr);
    if (rc) {
        cu->cuMemRelease(h);
        return rc;
    }
    *cookie = (void *)(uintptr_t)h;
    return 0;
}

/* A large block made of chunks: a reservation of size bytes, the pool's chunk bytes each but
 * the last (the size of chunk i below), and the chunks' handles, an array that is the block's
 * cookie. How many there are is the slab pool's count of the block's pieces (slab_destroy's
 * pieces), their size the pool's chunk (fixed when the pool is made): the one count and the
 * one size kept. */
static size_t chunk_size_of(const struct gpu_pool *gp, size_t size, unsigned i)
{
    size_t off = (size_t)i * gp->chunk;

    return size - off < gp->chunk ? size - off : gp->chunk;
}

/* Unmap and release the first made chunks (handles h) of a block of gp at ptr, free the
 * reservation of size bytes and h. */
static CUresult chunks_undo(const struct vr_cuda *cu, const struct gpu_pool *gp,
                            CUmemGenericAllocationHandle *h, unsigned made, CUdeviceptr ptr,
                            size_t size)
{
    CUresult r, first = CUDA_SUCCESS;
    unsigned i;

    for (i = 0; i < made; i++) {
        r = cu->cuMemUnmap(ptr + (CUdeviceptr)i * gp->chunk, chunk_size_of(gp, size, i));
        first = first ? first : r;
        r = cu->cuMemRelease(h[i]);
        first = first ? first : r;
    }
    r = cu->cuMemAddressFree(ptr, size);
    free(h);
    return first ? first : r;
}

/* size bytes of chunks of gp->chunk bytes (the last one the rest), each a cuMemCreate of the
 * pool's properties mapped at its offset in one reservation: one address, as one allocation
 * would give, whose pins import only the chunks they touch (docs/large-allocations.md). */
static int create_chunked(const struct vr_cuda *cu, struct gpu_pool *gp, size_t size,
                          CUdeviceptr *out, void **cookie, unsigned *pieces)
{
    unsigned n = (unsigned)((size + gp->chunk - 1) / gp->chunk), i;
    CUmemGenericAllocationHandle *h = calloc(n, sizeof(*h));
    CUdeviceptr ptr = 0;
    CUresult r;
    int rc = 0;

    if (!h)
        return vr_fail(ENOMEM, "vramio_alloc: no memory for the chunks of %zu bytes", size);
    r = cu->cuMemAddressReserve(&ptr, size, gp->pool.slab_size, 0, 0);
    if (r != CUDA_SUCCESS) {
        free(h);
        return cuda_fail("cuMemAddressReserve", r);
    }
    for (i = 0; i < n && !rc; i++) {
        size_t cs = chunk_size_of(gp, size, i);

        r = cu->cuMemCreate(&h[i], cs, &gp->prop, 0);
        if (r != CUDA_SUCCESS) {
            rc = cuda_fail("cuMemCreate", r);
            break;
        }
        rc = map_piece(cu, gp->access, gp->naccess, h[i], cs, ptr + (CUdeviceptr)i * gp->chunk);
        if (rc)
            cu->cuMemRelease(h[i]);
    }
    if (rc) { /* the chunks before i are mapped: each goes, then the reservation */
        chunks_undo(cu, gp, h, i, ptr, size);
        return rc;
    }
    *out = ptr;
    *cookie = h;
    *pieces = n;
    return 0;
}

/* Whether the driver describes the second chunk of the block at ptr as an allocation of its
 * own (its range and handle), which a pin inside one chunk relies on to import that chunk
 * alone: measured on an H100 (docs/large-allocations.md), checked here before it is relied on. */
static int chunks_described(const struct vr_cuda *cu, const struct gpu_pool *gp,
                            const CUmemGenericAllocationHandle *chunks, CUdeviceptr ptr,
                            size_t size)
{
    CUdeviceptr second = ptr + gp->chunk, base = 0;
    CUmemGenericAllocationHandle h = 0;
    size_t len = 0;
    int own;

    if (!cu->cuMemGetAddressRange || !cu->cuMemRetainAllocationHandle)
        return 0;
    own = cu->cuMemGetAddressRange(&base, &len, second + 1) == CUDA_SUCCESS && base == second &&
          len == chunk_size_of(gp, size, 1);
    if (cu->cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)(second + 1)) != CUDA_SUCCESS)
        return 0;
    own = own && h == chunks[1];
    cu->cuMemRelease(h);
    return own;
}

/* The first chunked block of a pool (split_lock held): the backends are asked once whether a
 * pin may span chunks, and the block made of chunks is checked; any no, and the pool makes
 * one allocation per request from then on. A failure to make the block (out of memory), or
 * backends that cannot tell now (their check ran out of memory or descriptors), make this
 * request one allocation and leave the decision to the next. */
static int create_first_large(const struct vr_cuda *cu, struct gpu_pool *gp, size_t size,
                              CUdeviceptr *ptr, void **cookie, unsigned *pieces)
{
    int rc;

    if (atomic_load(&gp->split) == SPLIT_UNKNOWN) {
        int can = vr_pins_can_span(gp->gpu), yes = can == 1;

        if (can < 0) {
            vr_dbg("vramio_alloc: GPU %d: the backends cannot tell now whether they pin across "
                   "chunks: this request gets one allocation, the next asks again", gp->gpu);
            return create_one(cu, gp, size, ptr, cookie);
        }
        vr_dbg("vramio_alloc: GPU %d: the backends %s pin across chunks: requests above %zu "
               "bytes get %s", gp->gpu, yes ? "can" : "cannot", gp->chunk,
               yes ? "chunks of that size" : "one allocation each");
        atomic_store(&gp->split, yes ? SPLIT_UNCHECKED : SPLIT_NO);
    }
    if (atomic_load(&gp->split) == SPLIT_NO)
        return create_one(cu, gp, size, ptr, cookie);
    rc = create_chunked(cu, gp, size, ptr, cookie, pieces);
    if (rc)
        return rc;
    if (chunks_described(cu, gp, *cookie, *ptr, size)) {
        atomic_store(&gp->split, SPLIT_YES);
        return 0;
    }
    vr_info("vramio_alloc: GPU %d: the driver does not describe a chunk of a reservation as "
            "an allocation of its own: requests above %zu bytes get one allocation each",
            gp->gpu, gp->chunk);
    atomic_store(&gp->split, SPLIT_NO);
    chunks_undo(cu, gp, *cookie, *pieces, *ptr, size);
    *cookie = NULL;
    *pieces = 1;
    return create_one(cu, gp, size, ptr, cookie);
}

/* A request above the chunk size: chunks once the pool has decided that it may. */
static int create_large(const struct vr_cuda *cu, struct gpu_pool *gp, size_t size,
                        CUdeviceptr *ptr, void **cookie, unsigned *pieces)
{
    int rc;

    switch (atomic_load(&gp->split)) {
    case SPLIT_YES:
        return create_chunked(cu, gp, size, ptr, cookie, pieces);
    case SPLIT_NO:
        return create_one(cu, gp, size, ptr, cookie);
    }
    pthread_mutex_lock(&split_lock);
    rc = create_first_large(cu, gp, size, ptr, cookie, pieces);
    pthread_mutex_unlock(&split_lock);
    return rc;
}

static int slab_create(void *ctx, size_t size, uint64_t *base, void **cookie, unsigned *pieces)
{
    struct gpu_pool *gp = ctx;
    const struct vr_cuda *cu = vr_cuda_load(NULL, 0);
    struct vr_cuda_ctx_guard guard;
    CUdeviceptr ptr = 0;
    char why[VR_REASON_LEN];
    int rc;

    /* A thread without a context borrows the device's primary one for the reservation. */
    rc = vr_cuda_ctx_enter(cu, gp->gpu, &guard, why, sizeof(why));
    if (rc)
        return vr_fail_err(rc, "vramio_alloc: %s", why);
    if (gp->chunk && size > gp->chunk)
        rc = create_large(cu, gp, size, &ptr, cookie, pieces);
    else
        rc = create_one(cu, gp, size, &ptr, cookie);
    vr_cuda_ctx_leave(cu, &guard);
    if (rc)
        return rc;
    *base = (uint64_t)ptr;
    return 0;
}

static void slab_destroy(void *ctx, uint64_t base, size_t size, void *cookie, unsigned pieces)
{
    const struct gpu_pool *gp = ctx;
    const struct vr_cuda *cu = vr_cuda_load(NULL, 0);
    CUresult r1, r2, r3;

    /* Pins of it stay valid: a backend's import holds the pages until it is unpinned; but the
     * address stops reaching them, so their copies keep to the mappings from now on. */
    vr_pins_gpu_released(base, size);
    if (pieces > 1) {
        r1 = chunks_undo(cu, gp, cookie, pieces, (CUdeviceptr)base, size);
        if (r1 != CUDA_SUCCESS)
            vr_err("vramio_free: releasing the %u chunks of 0x%llx + %zu failed: %d", pieces,
                   (unsigned long long)base, size, (int)r1);
        return;
    }
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

/* The chunk size of large requests, in bytes: VRAMIO_POOL_CHUNK_MB (default 1024; 0: one
 * allocation per request, as before chunks). A value that is no number or no whole multiple
 * of the granularity gran is not used: the default, said once. */
static size_t pool_chunk_bytes(size_t gran)
{
    static atomic_int said;
    const char *e = getenv("VRAMIO_POOL_CHUNK_MB");
    unsigned long long mb = VR_POOL_CHUNK_DEFAULT_MB;
    char *end = NULL;

    if (e && *e) {
        errno = 0;
        mb = strtoull(e, &end, 10);
        if (*end || errno || mb > (SIZE_MAX >> 21) || ((size_t)mb << 20) % gran) {
            if (!atomic_exchange(&said, 1))
                vr_dbg("vramio_alloc: VRAMIO_POOL_CHUNK_MB=%s is not a whole multiple of the "
                       "allocation granularity (%zu bytes) in MiB: %d MiB chunks", e, gran,
                       VR_POOL_CHUNK_DEFAULT_MB);
            mb = VR_POOL_CHUNK_DEFAULT_MB;
        }
    }
    if (((size_t)mb << 20) % gran)
        return 0; /* a granularity above the default chunk: never chunk */
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
    gp->chunk = pool_chunk_bytes(gran);
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

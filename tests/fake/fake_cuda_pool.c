// SPDX-License-Identifier: MIT
/*
 * fake_cuda_pool.c - the stream-ordered half of the VMM stand-in libcuda.so.1
 * (fake_cuda_vmm.c): memory pools (each device's default pool, its current pool, pools a
 * program makes), cuMemAllocAsync / cuMemAllocFromPoolAsync / cuMemFreeAsync, host functions
 * run in stream order, and stream capture, so that CI tests the bridge's routing of these
 * calls (bridge/bridge_async.c, bridge_mempool.c) without a GPU.
 *
 * Model. A pool's memory comes in chunks: each an allocation handle of fake_cuda_vmm.c (a
 * memfd named after its GPU, its handle types the pool's) mapped at a reserved address,
 * carved front to back and given back whole when its last block is freed and the pool is
 * trimmed: by cuMemPoolTrimTo, or, as the real driver does, by a synchronization (of a stream
 * or the context) while the pool holds more than its release threshold (0 by default). A block is a FAKE_POOLED record: cuMemGetAddressRange gives the block, the
 * pointer attributes its pool (MEMPOOL_HANDLE), the chunk's mapping (MAPPING_BASE_ADDR and
 * _SIZE) and handle types; cuMemRetainAllocationHandle the chunk's handle. Host functions
 * queue on their stream and run when it is synchronized (cuStreamSynchronize of it,
 * cuCtxSynchronize of all), on the synchronizing thread, marked as a host function: the CUDA
 * calls that the real driver forbids there fail with CUDA_ERROR_NOT_PERMITTED and are
 * counted (fake_host_fn_forbidden). A capturing stream (cuStreamBeginCapture) records instead
 * of running: an allocation becomes a graph allocation (plain memory, no pool), a free of
 * anything but a graph allocation fails and invalidates the capture, a host function is a
 * node that never runs here.
 * The per-thread-default-stream variants (_ptsz) are the same functions with stream 0 meaning
 * CU_STREAM_PER_THREAD; cuGetProcAddress hands them out under
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM and counts their calls (fake_ptsz_calls).
 *
 * Environment: FAKE_CUDA_POOL_FD=0 (pools with a POSIX-fd handle type are refused, as by a
 * driver without IPC pools), FAKE_CUDA_POOL_FD_MAX=N (only the first N such pools are made,
 * the later ones refused), FAKE_CUDA_POOL_RETAIN=0 (cuMemRetainAllocationHandle refuses
 * stream-ordered memory) and FAKE_CUDA_POOL_MAPPING=0 (no MAPPING_BASE_ADDR / _SIZE for it)
 * or =shifted (answered 64 KiB past where the chunk's import starts); both in the files that
 * answer them.
 * Exported for the tests: fake_pool_allocs(pool) (live blocks of a pool), fake_pool_types(pool)
 * (its handle types, -1 for none of ours), fake_pools_made() (cuMemPoolCreate successes),
 * fake_host_fn_forbidden(), fake_ptsz_calls(), fake_graph_allocs(), fake_capture_nodes().
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "fake_cuda_vmm.h"

#define MAX_POOLS   64
#define MAX_CHUNKS  16
#define MAX_QUEUES  32
#define CHUNK_BYTES (4u << 20)

struct chunk {
    uintptr_t base;
    size_t size, next;          /* bytes carved so far */
    int blocks;                 /* live blocks in it */
    CUmemGenericAllocationHandle h;
};

struct pool {
    int live, dflt, dev;
    CUmemPoolProps props;
    cuuint64_t attr[CU_MEMPOOL_ATTR_USED_MEM_HIGH + 1];
    CUmemAccess_flags access[FAKE_GPU_MAX];
    int nblocks;
    struct chunk chunk[MAX_CHUNKS];
};

struct host_fn {
    struct host_fn *next;
    CUhostFn fn;
    void *data;
};

/* What happens on one stream: its capture, and the host functions queued on it. */
struct queue {
    CUstream s;
    CUstreamCaptureStatus capture;
    struct host_fn *head, **tail;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct pool pools[MAX_POOLS];           /* 0..FAKE_GPU_MAX-1: the default pools */
static struct pool *current[FAKE_GPU_MAX];
static struct queue queues[MAX_QUEUES];
static __thread int in_host_fn;
static int n_forbidden, n_ptsz, n_graph_allocs, n_capture_nodes, n_made, n_fd_made;

int fake_host_fn_forbidden(void) { return __atomic_load_n(&n_forbidden, __ATOMIC_RELAXED); }
int fake_ptsz_calls(void) { return __atomic_load_n(&n_ptsz, __ATOMIC_RELAXED); }
int fake_graph_allocs(void) { return __atomic_load_n(&n_graph_allocs, __ATOMIC_RELAXED); }
int fake_capture_nodes(void) { return __atomic_load_n(&n_capture_nodes, __ATOMIC_RELAXED); }
int fake_pools_made(void) { return __atomic_load_n(&n_made, __ATOMIC_RELAXED); }

int fake_forbidden_in_host_fn(void)
{
    if (!in_host_fn)
        return 0;
    FAKE_COUNT(n_forbidden);
    return 1;
}

static struct pool *pool_of(CUmemoryPool p)
{
    struct pool *x = (struct pool *)p;

    return x >= pools && x < pools + MAX_POOLS && x->live ? x : NULL;
}

int fake_pool_allocs(CUmemoryPool p)
{
    struct pool *x = pool_of(p);

    return x ? x->nblocks : -1;
}

int fake_pool_types(CUmemoryPool p)
{
    struct pool *x = pool_of(p);

    return x ? (int)x->props.handleTypes : -1;
}

/* The default pool of dev, made at first use (the lock held). */
static struct pool *default_pool(int dev)
{
    struct pool *x = &pools[dev];

    if (!x->live) {
        memset(x, 0, sizeof(*x));
        x->live = x->dflt = 1;
        x->dev = dev;
        x->props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        x->props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        x->props.location.id = dev;
        x->access[dev] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        x->attr[CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = 1;
        x->attr[CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC] = 1;
        x->attr[CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES] = 1;
    }
    return x;
}

/* ---- streams: captures and host functions --------------------------------------------- */
/* The queue of stream s (0 is the legacy stream), made when make; NULL otherwise (the lock
 * held). */
static struct queue *queue_of(CUstream s, int make)
{
    struct queue *free_q = NULL;
    int i;

    if (!s)
        s = CU_STREAM_LEGACY;
    for (i = 0; i < MAX_QUEUES; i++) {
        if (queues[i].s == s)
            return &queues[i];
        if (!queues[i].s && !free_q)
            free_q = &queues[i];
    }
    if (!make || !free_q)
        return NULL;
    free_q->s = s;
    free_q->capture = CU_STREAM_CAPTURE_STATUS_NONE;
    free_q->head = NULL;
    free_q->tail = &free_q->head;
    return free_q;
}

static CUstreamCaptureStatus capture_of(CUstream s)
{
    struct queue *q;
    CUstreamCaptureStatus st;

    pthread_mutex_lock(&lock);
    q = queue_of(s, 0);
    st = q ? q->capture : CU_STREAM_CAPTURE_STATUS_NONE;
    pthread_mutex_unlock(&lock);
    return st;
}

static void invalidate(CUstream s)
{
    struct queue *q;

    pthread_mutex_lock(&lock);
    q = queue_of(s, 0);
    if (q && q->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE)
        q->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    pthread_mutex_unlock(&lock);
}

static void trim(struct pool *x, size_t keep);

void fake_stream_reached(CUstream s, int all)
{
    struct host_fn *run = NULL, **tail = &run, *f;
    int i;

    pthread_mutex_lock(&lock);
    for (i = 0; i < MAX_QUEUES; i++) {
        struct queue *q = &queues[i];

        if (!q->s || !q->head || (!all && q->s != (s ? s : CU_STREAM_LEGACY)))
            continue;
        *tail = q->head;
        tail = q->tail;
        q->head = NULL;
        q->tail = &q->head;
    }
    pthread_mutex_unlock(&lock);
    while ((f = run) != NULL) {
        run = f->next;
        in_host_fn = 1;
        f->fn(f->data);
        in_host_fn = 0;
        free(f);
    }
    /* A synchronization releases what a pool holds beyond its release threshold. */
    pthread_mutex_lock(&lock);
    for (i = 0; i < MAX_POOLS; i++)
        if (pools[i].live)
            trim(&pools[i], pools[i].attr[CU_MEMPOOL_ATTR_RELEASE_THRESHOLD]);
    pthread_mutex_unlock(&lock);
}

static CUresult launch_host_fn(CUstream s, CUhostFn fn, void *data)
{
    struct host_fn *f;
    struct queue *q;

    if (fake_current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    if (capture_of(s) != CU_STREAM_CAPTURE_STATUS_NONE) {
        FAKE_COUNT(n_capture_nodes); /* a host node of the graph: never run here */
        return CUDA_SUCCESS;
    }
    f = calloc(1, sizeof(*f));
    if (!f)
        return CUDA_ERROR_OUT_OF_MEMORY;
    f->fn = fn;
    f->data = data;
    pthread_mutex_lock(&lock);
    q = queue_of(s, 1);
    if (q) {
        *q->tail = f;
        q->tail = &f->next;
    }
    pthread_mutex_unlock(&lock);
    if (!q)
        free(f);
    return q ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data)
{
    return launch_host_fn(s, fn, data);
}

CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    struct queue *q;

    if (!s || s == CU_STREAM_LEGACY)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    pthread_mutex_lock(&lock);
    q = queue_of(s, 1);
    if (q)
        q->capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    pthread_mutex_unlock(&lock);
    return q ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuStreamEndCapture(CUstream s, CUgraph *graph)
{
    static int graph_token;
    CUstreamCaptureStatus st = capture_of(s);
    struct queue *q;

    if (st == CU_STREAM_CAPTURE_STATUS_NONE)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    q = queue_of(s, 0);
    if (q)
        q->capture = CU_STREAM_CAPTURE_STATUS_NONE;
    pthread_mutex_unlock(&lock);
    *graph = st == CU_STREAM_CAPTURE_STATUS_ACTIVE ? (CUgraph)&graph_token : NULL;
    return st == CU_STREAM_CAPTURE_STATUS_ACTIVE ? CUDA_SUCCESS
                                                 : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
}

CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st)
{
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    *st = capture_of(s);
    return CUDA_SUCCESS;
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    static __thread CUstreamCaptureMode mine = CU_STREAM_CAPTURE_MODE_GLOBAL;
    CUstreamCaptureMode old = mine;

    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    mine = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

/* Streams belong to the context current where they are used (one context per device here). */
CUresult cuStreamGetCtx(CUstream s, CUcontext *ctx)
{
    return cuCtxGetCurrent(ctx);
}

/* ---- pools ---------------------------------------------------------------------------- */
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *p, CUdevice dev)
{
    if (!p || !fake_dev_ok(dev))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    *p = (CUmemoryPool)default_pool(dev);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetMemPool(CUmemoryPool *p, CUdevice dev)
{
    if (!p || !fake_dev_ok(dev))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    *p = (CUmemoryPool)(current[dev] ? current[dev] : default_pool(dev));
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool p)
{
    struct pool *x;

    pthread_mutex_lock(&lock);
    x = pool_of(p);
    if (x && fake_dev_ok(dev) && x->dev == dev)
        current[dev] = x;
    pthread_mutex_unlock(&lock);
    return x && fake_dev_ok(dev) && x->dev == dev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Pools of device memory with no handle types or a POSIX-fd one (FAKE_CUDA_POOL_FD=0: that
 * one refused); any other type is refused as by a driver without it. */
CUresult cuMemPoolCreate(CUmemoryPool *p, const CUmemPoolProps *props)
{
    unsigned types = props ? (unsigned)props->handleTypes : 0;
    struct pool *x = NULL;
    int i;

    if (!p || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || !fake_dev_ok(props->location.id))
        return CUDA_ERROR_INVALID_VALUE;
    if ((types & ~(unsigned)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ||
        (types && fake_env_is("FAKE_CUDA_POOL_FD", "0")) ||
        (types && n_fd_made >= fake_env_int("FAKE_CUDA_POOL_FD_MAX", 1 << 30)))
        return CUDA_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&lock);
    for (i = FAKE_GPU_MAX; i < MAX_POOLS && !x; i++)
        if (!pools[i].live)
            x = &pools[i];
    if (x) {
        memset(x, 0, sizeof(*x));
        x->live = 1;
        x->dev = props->location.id;
        x->props = *props;
        x->access[x->dev] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        x->attr[CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = 1;
        x->attr[CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC] = 1;
        x->attr[CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES] = 1;
        n_made++;
        n_fd_made += types != 0;
        *p = (CUmemoryPool)x;
    }
    pthread_mutex_unlock(&lock);
    return x ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* Give back chunk c (its blocks all freed): the lock held. */
static void chunk_release(struct pool *x, struct chunk *c)
{
    mmap((void *)c->base, c->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    munmap((void *)c->base, c->size);
    cuMemRelease(c->h);
    x->attr[CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT] -= c->size;
    memset(c, 0, sizeof(*c));
}

/* Release empty chunks while the pool holds more than keep bytes (the lock held). */
static void trim(struct pool *x, size_t keep)
{
    int i;

    for (i = 0; i < MAX_CHUNKS && x->attr[CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT] > keep; i++)
        if (x->chunk[i].base && !x->chunk[i].blocks)
            chunk_release(x, &x->chunk[i]);
}

CUresult cuMemPoolDestroy(CUmemoryPool p)
{
    struct pool *x;

    pthread_mutex_lock(&lock);
    x = pool_of(p);
    if (x && !x->dflt) {
        trim(x, 0);
        for (int d = 0; d < FAKE_GPU_MAX; d++)
            if (current[d] == x)
                current[d] = NULL;
        x->live = 0;
    }
    pthread_mutex_unlock(&lock);
    return x && !x->dflt ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemPoolTrimTo(CUmemoryPool p, size_t keep)
{
    struct pool *x;

    pthread_mutex_lock(&lock);
    x = pool_of(p);
    if (x)
        trim(x, keep);
    pthread_mutex_unlock(&lock);
    return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The settable attributes are ints but RELEASE_THRESHOLD; the counters cuuint64_t, the high
 * marks reset by setting 0. */
static int attr_is_int(CUmemPool_attribute a)
{
    return a >= CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES &&
           a <= CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool p, CUmemPool_attribute a, void *v)
{
    CUresult r = CUDA_SUCCESS;
    struct pool *x;

    if (!v || a < CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ||
        a > CU_MEMPOOL_ATTR_USED_MEM_HIGH || a == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT ||
        a == CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    x = pool_of(p);
    if (!x)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (attr_is_int(a))
        x->attr[a] = (cuuint64_t)*(int *)v;
    else if (a == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
        x->attr[a] = *(cuuint64_t *)v;
    else if (*(cuuint64_t *)v != 0)
        r = CUDA_ERROR_INVALID_VALUE;
    else
        x->attr[a] = x->attr[a - 1]; /* a high mark, reset to the current value */
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemPoolGetAttribute(CUmemoryPool p, CUmemPool_attribute a, void *v)
{
    struct pool *x;

    if (!v || a < CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES || a > CU_MEMPOOL_ATTR_USED_MEM_HIGH)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    x = pool_of(p);
    if (x && attr_is_int(a))
        *(int *)v = (int)x->attr[a];
    else if (x)
        *(cuuint64_t *)v = x->attr[a];
    pthread_mutex_unlock(&lock);
    return x ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemPoolSetAccess(CUmemoryPool p, const CUmemAccessDesc *d, size_t n)
{
    struct pool *x;
    size_t i;

    pthread_mutex_lock(&lock);
    x = pool_of(p);
    for (i = 0; x && d && i < n; i++)
        if (d[i].location.type == CU_MEM_LOCATION_TYPE_DEVICE && fake_dev_ok(d[i].location.id))
            x->access[d[i].location.id] = d[i].flags;
    pthread_mutex_unlock(&lock);
    return x && d ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemPoolGetAccess(CUmemAccess_flags *f, CUmemoryPool p, CUmemLocation *loc)
{
    struct pool *x;

    pthread_mutex_lock(&lock);
    x = pool_of(p);
    if (x && f && loc && fake_dev_ok(loc->id))
        *f = x->access[loc->id];
    pthread_mutex_unlock(&lock);
    return x && f && loc && fake_dev_ok(loc->id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- allocations ---------------------------------------------------------------------- */
/* A new chunk of at least size bytes for x (the lock held): its index, or -1. */
static int chunk_new(struct pool *x, size_t size)
{
    CUmemAllocationProp prop;
    struct chunk *c = NULL;
    CUdeviceptr va = 0;
    char name[32];
    int i, fd;

    for (i = 0; i < MAX_CHUNKS && !c; i++)
        if (!x->chunk[i].base)
            c = &x->chunk[i];
    if (!c)
        return -1;
    size = size < CHUNK_BYTES ? CHUNK_BYTES : (size + FAKE_GRAN - 1) & ~(size_t)(FAKE_GRAN - 1);
    snprintf(name, sizeof(name), FAKE_GPU_MEMFD_PREFIX "%d", x->dev);
    fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)size) || cuMemAddressReserve(&va, size, 0, 0, 0)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (mmap((void *)(uintptr_t)va, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
        MAP_FAILED) {
        close(fd);
        cuMemAddressFree(va, size);
        return -1;
    }
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location = x->props.location;
    prop.requestedHandleTypes = x->props.handleTypes;
    if (fake_vmm_handle_new(fd, size, &prop, &c->h) != CUDA_SUCCESS) {
        cuMemAddressFree(va, size);
        return -1;
    }
    c->base = (uintptr_t)va;
    c->size = size;
    x->attr[CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT] += size;
    if (x->attr[CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT] > x->attr[CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH])
        x->attr[CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH] = x->attr[CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT];
    return (int)(c - x->chunk);
}

/* A block of size bytes from x (the lock held, then the table's): CUDA_SUCCESS with *d. */
static CUresult pool_alloc(struct pool *x, size_t size, CUdeviceptr *d)
{
    size_t span = (size + 511) & ~(size_t)511;
    struct fake_range r;
    struct chunk *c = NULL;
    int i;

    for (i = 0; i < MAX_CHUNKS && !c; i++)
        if (x->chunk[i].base && x->chunk[i].size - x->chunk[i].next >= span)
            c = &x->chunk[i];
    if (!c) {
        i = chunk_new(x, span);
        if (i < 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
        c = &x->chunk[i];
    }
    memset(&r, 0, sizeof(r));
    r.base = c->base + c->next;
    r.size = size;
    r.span = span;
    r.dev = x->dev;
    r.vmm = FAKE_POOLED;
    r.handle = (int)c->h - 1;
    r.handle_types = x->props.handleTypes;
    r.pool = x;
    r.map_base = c->base;
    r.map_size = c->size;
    fake_lock();
    i = fake_range_add(&r);
    fake_unlock();
    if (i < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->next += span;
    c->blocks++;
    x->nblocks++;
    x->attr[CU_MEMPOOL_ATTR_USED_MEM_CURRENT] += span;
    if (x->attr[CU_MEMPOOL_ATTR_USED_MEM_CURRENT] > x->attr[CU_MEMPOOL_ATTR_USED_MEM_HIGH])
        x->attr[CU_MEMPOOL_ATTR_USED_MEM_HIGH] = x->attr[CU_MEMPOOL_ATTR_USED_MEM_CURRENT];
    *d = (CUdeviceptr)r.base;
    return CUDA_SUCCESS;
}

/* During a capture: a graph allocation (plain memory of no pool, as the graph's own). */
static CUresult graph_alloc(size_t size, CUdeviceptr *d)
{
    struct fake_range r = { .size = size, .span = (size + 511) & ~(size_t)511, .graph = 1 };

    r.dev = fake_current_device();
    r.base = (uintptr_t)aligned_alloc(512, r.span);
    if (!r.base)
        return CUDA_ERROR_OUT_OF_MEMORY;
    FAKE_COUNT(n_graph_allocs);
    return fake_add_plain(&r, d);
}

static CUresult alloc_from(CUdeviceptr *d, size_t size, CUmemoryPool p, CUstream s)
{
    struct pool *x;
    CUresult r;
    int dev = fake_current_device();

    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!d || !size)
        return CUDA_ERROR_INVALID_VALUE;
    if (capture_of(s) != CU_STREAM_CAPTURE_STATUS_NONE)
        return graph_alloc(size, d);
    pthread_mutex_lock(&lock);
    if (!p)
        x = current[dev] ? current[dev] : default_pool(dev);
    else
        x = pool_of(p);
    r = x ? pool_alloc(x, size, d) : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemAllocAsync(CUdeviceptr *d, size_t size, CUstream s)
{
    return alloc_from(d, size, NULL, s);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *d, size_t size, CUmemoryPool p, CUstream s)
{
    return p ? alloc_from(d, size, p, s) : CUDA_ERROR_INVALID_VALUE;
}

CUresult fake_free_pooled(CUdeviceptr d)
{
    struct fake_range r;
    struct pool *x;
    int i, k;

    fake_lock();
    i = fake_range_find((uintptr_t)d, 0);
    if (i >= 0 && (fake_range_at(i)->base != (uintptr_t)d || fake_range_at(i)->vmm != FAKE_POOLED))
        i = -1;
    if (i >= 0) {
        r = *fake_range_at(i);
        fake_range_del(i);
    }
    fake_unlock();
    if (i < 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    x = (struct pool *)r.pool;
    for (k = 0; k < MAX_CHUNKS; k++) {
        struct chunk *c = &x->chunk[k];

        if (c->base && r.base - c->base < c->size && --c->blocks == 0)
            c->next = 0; /* empty: carved again from its start */
    }
    x->nblocks--;
    x->attr[CU_MEMPOOL_ATTR_USED_MEM_CURRENT] -= r.span;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* Outside a capture the free happens at once (the stand-in runs no work later than its
 * call); during one it is a node, for graph allocations only. */
static CUresult free_async(CUdeviceptr d, CUstream s)
{
    struct fake_range r;

    if (fake_current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (capture_of(s) != CU_STREAM_CAPTURE_STATUS_NONE) {
        if (fake_range_of((uintptr_t)d, &r) && r.base == (uintptr_t)d && r.graph) {
            FAKE_COUNT(n_capture_nodes);
            return CUDA_SUCCESS;
        }
        invalidate(s);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (fake_free_pooled(d) == CUDA_SUCCESS)
        return CUDA_SUCCESS;
    return fake_free_plain(d);
}

CUresult cuMemFreeAsync(CUdeviceptr d, CUstream s)
{
    return free_async(d, s);
}

/* ---- the per-thread-default-stream variants ------------------------------------------- */
#define PTSZ(s) (FAKE_COUNT(n_ptsz), (s) ? (s) : CU_STREAM_PER_THREAD)
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *d, size_t size, CUstream s)
{
    return alloc_from(d, size, NULL, PTSZ(s));
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *d, size_t size, CUmemoryPool p, CUstream s)
{
    return p ? alloc_from(d, size, p, PTSZ(s)) : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr d, CUstream s) { return free_async(d, PTSZ(s)); }
CUresult cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *data)
{
    return launch_host_fn(PTSZ(s), fn, data);
}
CUresult cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *st)
{
    return cuStreamIsCapturing(PTSZ(s), st);
}

void *fake_pool_lookup(const char *sym, int ptsz)
{
    static const struct { const char *name; void *fn, *ptsz; } table[] = {
        { "cuMemAllocAsync", (void *)cuMemAllocAsync, (void *)cuMemAllocAsync_ptsz },
        { "cuMemAllocFromPoolAsync", (void *)cuMemAllocFromPoolAsync,
          (void *)cuMemAllocFromPoolAsync_ptsz },
        { "cuMemFreeAsync", (void *)cuMemFreeAsync, (void *)cuMemFreeAsync_ptsz },
        { "cuLaunchHostFunc", (void *)cuLaunchHostFunc, (void *)cuLaunchHostFunc_ptsz },
        { "cuStreamIsCapturing", (void *)cuStreamIsCapturing, (void *)cuStreamIsCapturing_ptsz },
        { "cuMemPoolCreate", (void *)cuMemPoolCreate, NULL },
        { "cuMemPoolDestroy", (void *)cuMemPoolDestroy, NULL },
        { "cuMemPoolSetAttribute", (void *)cuMemPoolSetAttribute, NULL },
        { "cuMemPoolGetAttribute", (void *)cuMemPoolGetAttribute, NULL },
        { "cuMemPoolTrimTo", (void *)cuMemPoolTrimTo, NULL },
        { "cuMemPoolSetAccess", (void *)cuMemPoolSetAccess, NULL },
        { "cuMemPoolGetAccess", (void *)cuMemPoolGetAccess, NULL },
        { "cuDeviceGetDefaultMemPool", (void *)cuDeviceGetDefaultMemPool, NULL },
        { "cuDeviceGetMemPool", (void *)cuDeviceGetMemPool, NULL },
        { "cuDeviceSetMemPool", (void *)cuDeviceSetMemPool, NULL },
    };
    size_t i;

    for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcmp(sym, table[i].name) == 0)
            return ptsz && table[i].ptsz ? table[i].ptsz : table[i].fn;
    return NULL;
}

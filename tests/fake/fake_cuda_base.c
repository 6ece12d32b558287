// SPDX-License-Identifier: MIT
/*
 * fake_cuda_base.c - what the stand-in libcuda.so.1 drivers share (see fake_cuda_base.h for
 * what is here, what each driver supplies and the environment read here).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fake_cuda_base.h"

struct fake_counts fake_counts;

/* ---- environment ------------------------------------------------------------------------ */
int fake_env_int(const char *name, int dflt)
{
    const char *e = getenv(name);

    return e && *e ? atoi(e) : dflt;
}

int fake_env_is(const char *name, const char *value)
{
    const char *e = getenv(name);

    return e && strcmp(e, value) == 0;
}

int fake_env_at(const char *name, int i, int dflt)
{
    const char *e = getenv(name);

    for (int k = 0; e && *e; k++) {
        if (k == i)
            return atoi(e);
        e = strchr(e, ':');
        e = e ? e + 1 : NULL;
    }
    return dflt;
}

/* ---- the driver ------------------------------------------------------------------------- */
CUresult cuInit(unsigned int flags)
{
    FAKE_COUNT(fake_counts.inits);
    return (CUresult)fake_env_int("FAKE_CUDA_INIT", CUDA_SUCCESS);
}

CUresult cuDriverGetVersion(int *v)
{
    *v = fake_env_int("FAKE_CUDA_VERSION", fake_default_version);
    return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult r, const char **s)
{
    *s = r == CUDA_ERROR_NOT_SUPPORTED ? "CUDA_ERROR_NOT_SUPPORTED" :
         r == CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE" :
         r == CUDA_ERROR_OPERATING_SYSTEM ? "CUDA_ERROR_OPERATING_SYSTEM" :
         r == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY" : "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
}

/* "fake driver", or with FAKE_CUDA_ERROR_TEXT=driver the texts the real driver gives for the
 * codes named above: the reasons the library builds around them are as long as on a GPU. */
CUresult cuGetErrorString(CUresult r, const char **s)
{
    *s = !fake_env_is("FAKE_CUDA_ERROR_TEXT", "driver") ? "fake driver" :
         r == CUDA_ERROR_NOT_SUPPORTED ? "operation not supported" :
         r == CUDA_ERROR_INVALID_VALUE ? "invalid argument" :
         r == CUDA_ERROR_OPERATING_SYSTEM ? "OS call failed or operation not supported on this OS" :
         r == CUDA_ERROR_OUT_OF_MEMORY ? "out of memory" : "fake driver";
    return CUDA_SUCCESS;
}

/* cuGetProcAddress (the _v2 ABI of CUDA 12 on): from the driver's own lookup, never dlsym. */
CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *st)
{
    CUdriverProcAddressQueryResult why = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;

    *pfn = fake_proc_lookup(sym, ver, flags, &why);
    if (st)
        *st = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : why;
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* ---- devices ---------------------------------------------------------------------------- */
int fake_ndev(void)
{
    int n = fake_env_int("FAKE_CUDA_DEVICES", 1);

    return n < 0 ? 0 : n > FAKE_GPU_MAX ? FAKE_GPU_MAX : n;
}

int fake_dev_ok(int dev)
{
    return dev >= 0 && dev < fake_ndev();
}

CUresult cuDeviceGetCount(int *n)
{
    *n = fake_ndev();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (!fake_dev_ok(ordinal))
        return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

/* ---- contexts --------------------------------------------------------------------------
 * A context is the address of its record: each device's primary one, and one more context of
 * device 0 that is not its primary one (the owner of FAKE_CUDA_OTHER_CTX's memory). Each
 * thread has its own stack of current contexts, set up at its first call. */
static struct fake_ctx { int refs, retains; } primaries[FAKE_GPU_MAX], other_ctx;
#define CTX_DEPTH 16
static __thread CUcontext ctx_stack[CTX_DEPTH];
static __thread int ctx_depth = -1; /* -1: this thread's stack is not set up yet */

CUcontext fake_primary_ctx(int dev)
{
    return (CUcontext)&primaries[dev];
}

/* The device of a context we handed out, or -1. */
static int ctx_dev(CUcontext c)
{
    struct fake_ctx *x = (struct fake_ctx *)c;

    if (x == &other_ctx)
        return 0;
    if (x < primaries || x >= primaries + fake_ndev())
        return -1;
    return (int)(x - primaries);
}

static void ctx_thread_init(void)
{
    if (ctx_depth >= 0)
        return;
    ctx_depth = 0;
    if (!fake_env_is("FAKE_CUDA_NO_CTX", "1") && fake_ndev() > 0)
        ctx_stack[ctx_depth++] = fake_primary_ctx(0);
}

static CUcontext ctx_current(void)
{
    ctx_thread_init();
    return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
}

int fake_current_device(void)
{
    CUcontext c = ctx_current();

    return c ? ctx_dev(c) : -1;
}

CUresult cuCtxGetCurrent(CUcontext *c)
{
    *c = ctx_current();
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *d)
{
    int dev = fake_current_device();

    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    *d = dev;
    return CUDA_SUCCESS;
}

/* NULL unbinds the current context (pops it); another replaces the top of the stack. */
CUresult cuCtxSetCurrent(CUcontext c)
{
    ctx_thread_init();
    if (c && ctx_dev(c) < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!c) {
        if (ctx_depth)
            ctx_depth--;
        return CUDA_SUCCESS;
    }
    if (ctx_depth)
        ctx_stack[ctx_depth - 1] = c;
    else
        ctx_stack[ctx_depth++] = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext c)
{
    ctx_thread_init();
    if (ctx_dev(c) < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == CTX_DEPTH)
        return CUDA_ERROR_OUT_OF_MEMORY;
    ctx_stack[ctx_depth++] = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext *c)
{
    ctx_thread_init();
    if (!ctx_depth)
        return CUDA_ERROR_INVALID_CONTEXT;
    ctx_depth--;
    if (c)
        *c = ctx_stack[ctx_depth];
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
    if (!fake_dev_ok(d))
        return CUDA_ERROR_INVALID_DEVICE;
    ctx_thread_init();
    FAKE_COUNT(primaries[d].retains);
    FAKE_COUNT(primaries[d].refs);
    *c = fake_primary_ctx(d);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice d)
{
    if (!fake_dev_ok(d) || __atomic_load_n(&primaries[d].refs, __ATOMIC_RELAXED) == 0)
        return CUDA_ERROR_INVALID_DEVICE;
    __atomic_sub_fetch(&primaries[d].refs, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

int fake_primary_refs(int dev)
{
    return dev >= 0 && dev < FAKE_GPU_MAX ? primaries[dev].refs : -1;
}

int fake_primary_retains(int dev)
{
    return dev >= 0 && dev < FAKE_GPU_MAX ? primaries[dev].retains : -1;
}

/* ---- stream order: the VMM stand-in supplies it (fake_cuda_pool.c); the dma-buf one runs
 * nothing in stream order and has no stream-ordered memory. -------------------------------- */
__attribute__((weak)) void fake_stream_reached(CUstream s, int all) {}
__attribute__((weak)) CUresult fake_free_pooled(CUdeviceptr d) { return CUDA_ERROR_INVALID_VALUE; }
__attribute__((weak)) int fake_forbidden_in_host_fn(void) { return 0; }

/* ---- synchronizations: counted per device of the current context ----------------------- */
static CUresult sync_counted(int *per_device)
{
    int dev = fake_current_device();
    CUresult e = (CUresult)fake_env_int("FAKE_CUDA_SYNC_ERROR", CUDA_SUCCESS);

    if (fake_forbidden_in_host_fn())
        return CUDA_ERROR_NOT_PERMITTED;
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (e != CUDA_SUCCESS)
        return e;
    FAKE_COUNT(per_device[dev]);
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
    CUresult r = sync_counted(fake_counts.syncs_on);

    if (r == CUDA_SUCCESS) {
        FAKE_COUNT(fake_counts.syncs);
        fake_stream_reached(NULL, 1);
    }
    return r;
}

CUresult cuStreamSynchronize(CUstream s)
{
    CUresult r = sync_counted(fake_counts.stream_syncs_on);

    if (r == CUDA_SUCCESS && s == CU_STREAM_LEGACY)
        FAKE_COUNT(fake_counts.legacy_syncs);
    if (r == CUDA_SUCCESS)
        fake_stream_reached(s, 0);
    return r;
}

/* ---- the table of device memory --------------------------------------------------------- */
#define MAX_RANGES 8192
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fake_range ranges[MAX_RANGES];

void fake_lock(void) { pthread_mutex_lock(&lock); }
void fake_unlock(void) { pthread_mutex_unlock(&lock); }

/* ---- fork --------------------------------------------------------------------------------
 * The real driver's calls in a child forked while other threads were inside it fail cleanly,
 * they never hang, and a test that forks must see the hangs of what it tests, not the
 * stand-in's: the table's lock is fresh in the child. Not taken by the fork itself: the
 * library loads the driver with dlopen after registering its own handlers, so a prepare
 * handler here would take this lock before the library's locks, the reverse of a thread of
 * the library that calls the driver under one of them. A record that a thread of the parent
 * was writing may be left half-written in the child: a child's own calls use records of
 * its own and of memory made before the fork.
 * The handler is registered as the stand-in loads, before any thread can be inside it. */
static pid_t loaded_by;

static void fork_child(void) { pthread_mutex_init(&lock, NULL); }

__attribute__((constructor)) static void fake_fork_register(void)
{
    loaded_by = getpid();
    pthread_atfork(NULL, NULL, fork_child);
}

int fake_child_refused(void)
{
    return getpid() != loaded_by && fake_env_is("FAKE_CUDA_FORK_REFUSE", "1");
}

struct fake_range *fake_range_at(int i) { return &ranges[i]; }
void fake_range_del(int i) { memset(&ranges[i], 0, sizeof(ranges[i])); }

int fake_range_add(const struct fake_range *r)
{
    int i;

    for (i = 0; i < MAX_RANGES && ranges[i].base; i++)
        ;
    if (i == MAX_RANGES)
        return -1;
    ranges[i] = *r;
    return i;
}

int fake_range_find(uintptr_t p, int whole)
{
    int i;

    for (i = 0; i < MAX_RANGES; i++)
        if (ranges[i].base && p >= ranges[i].base &&
            p - ranges[i].base < (whole ? ranges[i].span : ranges[i].size))
            return i;
    return -1;
}

int fake_range_count(int vmm)
{
    int i, n = 0;

    fake_lock();
    for (i = 0; i < MAX_RANGES; i++)
        n += ranges[i].base && ranges[i].vmm == vmm;
    fake_unlock();
    return n;
}

int fake_range_of(uintptr_t p, struct fake_range *out)
{
    int i;

    fake_lock();
    i = fake_range_find((uintptr_t)p, 0);
    if (i >= 0)
        *out = ranges[i];
    fake_unlock();
    return i >= 0;
}

CUresult fake_add_plain(const struct fake_range *r, CUdeviceptr *d)
{
    int i;

    fake_lock();
    i = fake_range_add(r);
    fake_unlock();
    if (i < 0) {
        fake_release_plain(r);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *d = (CUdeviceptr)r->base;
    return CUDA_SUCCESS;
}

CUresult fake_free_plain(CUdeviceptr d)
{
    int i;

    fake_lock();
    i = fake_range_find((uintptr_t)d, 0);
    if (i >= 0 && (ranges[i].base != (uintptr_t)d || ranges[i].vmm))
        i = -1;
    if (i >= 0) {
        fake_release_plain(&ranges[i]);
        fake_range_del(i);
    }
    fake_unlock();
    return i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemFree(CUdeviceptr d)
{
    if (!d)
        return CUDA_SUCCESS;
    FAKE_COUNT(fake_counts.device_syncs);
    /* Stream-ordered memory may be freed this way too, as the real driver allows. */
    return fake_free_plain(d) == CUDA_SUCCESS ? CUDA_SUCCESS : fake_free_pooled(d);
}

CUresult cuMemGetAddressRange(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    struct fake_range r;

    if (fake_current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!fake_range_of((uintptr_t)p, &r))
        return CUDA_ERROR_NOT_FOUND;
    if (base)
        *base = (CUdeviceptr)r.base;
    if (size)
        *size = r.size;
    return CUDA_SUCCESS;
}

/* ---- pinned host memory ----------------------------------------------------------------- */
#define MAX_HOST 256
static struct { void *p; size_t size; } hosts[MAX_HOST];

static int host_find(const void *p)
{
    const char *c = p;
    int i;

    for (i = 0; i < MAX_HOST; i++)
        if (hosts[i].p && c >= (const char *)hosts[i].p &&
            (size_t)(c - (const char *)hosts[i].p) < hosts[i].size)
            return i;
    return -1;
}

int fake_host_pinned(const void *p, size_t n)
{
    int i;

    fake_lock();
    i = host_find(p);
    if (i >= 0 && n > hosts[i].size - (size_t)((const char *)p - (const char *)hosts[i].p))
        i = -1;
    fake_unlock();
    return i >= 0;
}

CUresult cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
    void *p;
    int i;

    if (!size || posix_memalign(&p, 4096, (size + 4095) & ~(size_t)4095))
        return CUDA_ERROR_OUT_OF_MEMORY;
    fake_lock();
    for (i = 0; i < MAX_HOST && hosts[i].p; i++)
        ;
    if (i < MAX_HOST) {
        hosts[i].p = p;
        hosts[i].size = size;
    }
    fake_unlock();
    if (i == MAX_HOST) {
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pp = p;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocHost(void **pp, size_t size)
{
    return cuMemHostAlloc(pp, size, 0);
}

CUresult cuMemFreeHost(void *p)
{
    int i;

    fake_lock();
    i = host_find(p);
    if (i >= 0 && hosts[i].p == p)
        memset(&hosts[i], 0, sizeof(hosts[i]));
    else
        i = -1;
    fake_unlock();
    if (i < 0)
        return CUDA_ERROR_INVALID_VALUE;
    free(p);
    return CUDA_SUCCESS;
}

/* ---- pointer attributes ------------------------------------------------------------------
 * As the H200's driver answers (tests/gpu/bridge/driver_probe.c): the range and buffer id of
 * the whole allocation, SYNC_MEMOPS of plain memory only, legacy IPC for plain memory only,
 * an owning context for plain memory only; pinned host memory is of type HOST, other host
 * memory is unknown (pageable: the call fails, as the real one does). */
static CUresult host_attribute(void *data, CUpointer_attribute a)
{
    switch (a) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = CU_MEMORYTYPE_HOST;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = fake_primary_ctx(0);
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult owner_attribute(CUcontext *data, const struct fake_range *r)
{
    if (r->vmm || fake_env_is("FAKE_CUDA_NO_OWNER", "1"))
        return CUDA_ERROR_INVALID_VALUE;
    *data = getenv("FAKE_CUDA_OTHER_CTX") ? (CUcontext)&other_ctx : fake_primary_ctx(r->dev);
    return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr p)
{
    struct fake_range r;

    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_range_of((uintptr_t)p, &r))
        return fake_host_pinned((const void *)(uintptr_t)p, 1) ? host_attribute(data, a)
                                                              : CUDA_ERROR_INVALID_VALUE;
    switch (a) {
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = (CUdeviceptr)r.base;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = r.size;
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: /* one per allocation: its start will do */
        *(unsigned long long *)data = (unsigned long long)r.base;
        break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        *(unsigned int *)data = !r.vmm && r.sync_memops;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = r.dev;
        break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        *(int *)data = !r.vmm;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = CU_MEMORYTYPE_DEVICE;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:   /* this stand-in makes no managed memory */
        *(unsigned int *)data = 0;
        break;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        return owner_attribute(data, &r);
    /* Of the allocation behind the memory (cuMemCreate's, a pool chunk's), as CUDA 11.3 on. */
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        *(unsigned long long *)data = r.handle_types;
        break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *(void **)data = r.pool;
        break;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        if (r.vmm == FAKE_POOLED && fake_env_is("FAKE_CUDA_POOL_MAPPING", "0"))
            return CUDA_ERROR_NOT_SUPPORTED; /* a driver that does not describe it */
        if (r.vmm == FAKE_POOLED && fake_env_is("FAKE_CUDA_POOL_MAPPING", "shifted")) {
            /* A driver whose answer is not where an import of the allocation starts. */
            r.map_base += 65536;
            r.map_size -= 65536;
        }
        if (a == CU_POINTER_ATTRIBUTE_MAPPING_SIZE)
            *(size_t *)data = r.map_size ? r.map_size : r.span;
        else
            *(CUdeviceptr *)data = (CUdeviceptr)(r.map_base ? r.map_base : r.base);
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

/* ---- copies: device memory is host memory here. Like the real ones they need a context,
 * and a device address of a live allocation. ------------------------------------------- */
static CUresult device_ok(CUdeviceptr d)
{
    struct fake_range r;

    if (!fake_range_of((uintptr_t)d, &r))
        return CUDA_ERROR_INVALID_VALUE;
    return fake_current_device() < 0 ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD(CUdeviceptr d, const void *h, size_t n)
{
    CUresult r = device_ok(d);

    if (r == CUDA_SUCCESS)
        memcpy((void *)(uintptr_t)d, h, n);
    return r;
}

CUresult cuMemcpyDtoH(void *h, CUdeviceptr d, size_t n)
{
    CUresult r = device_ok(d);

    if (r == CUDA_SUCCESS)
        memcpy(h, (const void *)(uintptr_t)d, n);
    return r;
}

CUresult cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n)
{
    CUresult r = device_ok(d);

    if (r == CUDA_SUCCESS)
        memset((void *)(uintptr_t)d, v, n);
    return r;
}

/* ---- streams, events and the asynchronous copies of the copy engine (src/dma/) ----------
 * A stream records its flags; events are one token. The asynchronous copies run at once with
 * memcpy and count what they saw: the legacy stream, a blocking stream, pageable host memory
 * (not all of it from cuMemHostAlloc / cuMemAllocHost). */
#define MAX_STREAMS 16
static struct { unsigned int flags; int live; } streams[MAX_STREAMS];
static int event_token;

CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
    int i;

    if (fake_current_device() < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    fake_lock();
    for (i = 0; i < MAX_STREAMS && streams[i].live; i++)
        ;
    if (i < MAX_STREAMS) {
        streams[i].live = 1;
        streams[i].flags = flags;
        *s = (CUstream)&streams[i];
    }
    fake_unlock();
    return i < MAX_STREAMS ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuStreamDestroy(CUstream s)
{
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    memset(s, 0, sizeof(streams[0]));
    return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
    *e = (CUevent)&event_token;
    return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent e, CUstream s)
{
    return fake_current_device() < 0 ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent e) { return CUDA_SUCCESS; }
CUresult cuEventDestroy(CUevent e) { return CUDA_SUCCESS; }

static CUresult async_copy(CUdeviceptr d, void *dst, const void *src, size_t n,
                           const void *host, CUstream s)
{
    CUresult r = device_ok(d), fail = (CUresult)fake_env_int("FAKE_CUDA_FAIL_DMA", 0);

    if (r != CUDA_SUCCESS)
        return r;
    if (fail != CUDA_SUCCESS)
        return fail;
    if (!s)
        FAKE_COUNT(fake_counts.dma_legacy);
    else if (!(((unsigned int *)s)[0] & CU_STREAM_NON_BLOCKING))
        FAKE_COUNT(fake_counts.dma_blocking);
    if (!fake_host_pinned(host, n))
        FAKE_COUNT(fake_counts.dma_pageable);
    memcpy(dst, src, n);
    FAKE_COUNT(fake_counts.dma_calls);
    __atomic_add_fetch(&fake_counts.dma_bytes, n, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n, CUstream s)
{
    return async_copy(d, (void *)(uintptr_t)d, h, n, h, s);
}

CUresult cuMemcpyDtoHAsync(void *h, CUdeviceptr d, size_t n, CUstream s)
{
    return async_copy(d, h, (const void *)(uintptr_t)d, n, h, s);
}

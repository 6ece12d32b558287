// SPDX-License-Identifier: MIT
/*
 * fake_cuda_dmabuf.c - a stand-in libcuda.so.1 for testing the dma-buf backend where no GPU
 * (or no driver that maps dma-buf exports) exists: the backend's real code runs against it,
 * loaded by name through LD_LIBRARY_PATH exactly as the real driver would be.
 *
 * "Device memory" from cuMemAlloc is a memfd mapped into the process, so its device address
 * is also a host address the test can read directly. Allocations are laid out as driver 580
 * lays out cuMemAlloc's: each takes whole 1 MiB units of one reserved arena, one after the
 * other, so the bytes past its end up to the end of its last unit are mapped too, and two
 * allocations made in a row are adjacent (two of 1 MiB or less are 1 MiB apart).
 *
 * cuMemGetHandleForAddressRange is as unkind as driver 580 was: it exports any whole-page range
 * whose every unit belongs to a live allocation of the current context's device, so a
 * sub-range, a range spanning two allocations and a range past an allocation's end inside its
 * unit all export. An export that starts at an allocation's base is a dup of its memfd (it
 * maps from the exported start, as a real export does); any other is an empty memfd whose name
 * says what it exports, which only fake_mmap.c (preloaded) knows how to map: without it such
 * exports are refused with CUDA_ERROR_INVALID_VALUE, as before. A refused mmap is an export
 * that is a pipe (mmap fails; with fake_mmap.c, with the driver's errno 524): every export of a
 * driver that reports a version below 13.3 is one (discrete GPUs), unless FAKE_CUDA_INTEGRATED=1
 * (an integrated GPU, whose exports older drivers map). Running out of descriptors gives
 * CUDA_ERROR_OPERATING_SYSTEM, as 580 does. The PCIE mapping flag is refused with
 * CUDA_ERROR_NOT_SUPPORTED except on a coherent device, as the x86 driver does.
 * cuGetProcAddress refuses a version above the one cuDriverGetVersion reports, as 580 refuses
 * 13030 (the CUresult it gives is not recorded: CUDA_ERROR_NOT_FOUND here).
 *
 * Environment: FAKE_CUDA_VERSION (cuDriverGetVersion, default 13030); FAKE_CUDA_INIT=<CUresult>
 * (cuInit fails); FAKE_CUDA_DEVICES=<n> (default 1); FAKE_CUDA_DMABUF and FAKE_CUDA_COHERENT,
 * colon-separated per device (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, default 1, and
 * ..._PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, default 0); FAKE_CUDA_INTEGRATED=1 (see
 * above); FAKE_CUDA_MMAP=refuse (every export's mmap is refused); FAKE_CUDA_EXPORT_DELAY_US (the
 * export sleeps with its new fd open); FAKE_CUDA_NO_OWNER=1 (CU_POINTER_ATTRIBUTE_CONTEXT fails
 * for device memory, as for VMM memory that no context owns).
 * Exported for the tests: fake_cuda_exports() counts successful exports; fake_cuda_alloc_on()
 * allocates on a device; fake_cuda_refuse_mmap() makes one allocation's exports unmappable;
 * fake_cuda_retains() counts primary-context retains per device and fake_cuda_primary_refs()
 * the references held now; fake_cuda_inits() counts cuInit calls; fake_cuda_fail_allocs(n)
 * makes the next n cuMemAlloc calls fail with CUDA_ERROR_OUT_OF_MEMORY; fake_cuda_gpa_version()
 * is the version cuGetProcAddress was last asked for cuMemGetHandleForAddressRange at;
 * fake_cuda_piece() is for fake_mmap.c.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_ALLOCS 256
#define MAX_DEVS 8
#define BLOCK ((size_t)1 << 20)   /* the unit of the layout */
#define ARENA ((size_t)8 << 30)

static struct {
    CUdeviceptr base;
    size_t size, span;   /* the allocation, and the whole blocks it takes */
    int fd, dev, nommap;
} allocs[MAX_ALLOCS];
static uintptr_t arena, arena_next;
static int exports, retains[MAX_DEVS], refs[MAX_DEVS], gpa_version, inits, fail_allocs;
static int ctxs[MAX_DEVS];   /* the primary context of device i is &ctxs[i] */

int fake_cuda_exports(void) { return exports; }
int fake_cuda_retains(int dev) { return dev >= 0 && dev < MAX_DEVS ? retains[dev] : -1; }
int fake_cuda_gpa_version(void) { return gpa_version; }
int fake_cuda_primary_refs(int dev) { return dev >= 0 && dev < MAX_DEVS ? refs[dev] : -1; }
int fake_cuda_inits(void) { return inits; }
void fake_cuda_fail_allocs(int n) { fail_allocs = n; }

static int env_int(const char *name, int dflt)
{
    const char *e = getenv(name);

    return e && *e ? atoi(e) : dflt;
}

static int ndevs(void)
{
    int n = env_int("FAKE_CUDA_DEVICES", 1);

    return n < 0 ? 0 : n > MAX_DEVS ? MAX_DEVS : n;
}

/* Entry dev of a comma-separated list in the environment; dflt where it has none. */
static int dev_attr(const char *name, int dev, int dflt)
{
    const char *e = getenv(name);

    for (int i = 0; e && *e; i++) {
        if (i == dev)
            return atoi(e);
        e = strchr(e, ':');
        e = e ? e + 1 : NULL;
    }
    return dflt;
}

CUresult cuInit(unsigned int flags)
{
    inits++;
    return (CUresult)env_int("FAKE_CUDA_INIT", CUDA_SUCCESS);
}

CUresult cuDriverGetVersion(int *v)
{
    *v = env_int("FAKE_CUDA_VERSION", 13030);
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

CUresult cuGetErrorString(CUresult r, const char **s)
{
    *s = "fake driver";
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n)
{
    *n = ndevs();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (ordinal < 0 || ordinal >= ndevs())
        return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    if (d < 0 || d >= ndevs())
        return CUDA_ERROR_INVALID_DEVICE;
    if (a == CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)
        *v = dev_attr("FAKE_CUDA_DMABUF", d, 1);
    else if (a == CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES)
        *v = dev_attr("FAKE_CUDA_COHERENT", d, 0);
    else
        *v = 0;
    return CUDA_SUCCESS;
}

/* The current context: a per-thread stack; when it is empty, device 0's primary context,
 * unless FAKE_CUDA_NO_CTX=1 (see the end of the file), when a thread has one only between a
 * push and its pop. */
static __thread CUcontext ctx_stack[8];
static __thread int ctx_depth;

static int no_ctx_mode(void)
{
    return env_int("FAKE_CUDA_NO_CTX", 0) == 1;
}

static CUcontext ctx_now(void)
{
    if (ctx_depth > 0)
        return ctx_stack[ctx_depth - 1];
    return no_ctx_mode() ? NULL : (CUcontext)&ctxs[0];
}

static int ctx_current(void)
{
    return ctx_now() != NULL;
}

/* The device of a context: a primary one's, else (another context of the tests) device 0. */
static int ctx_device(CUcontext c)
{
    uintptr_t p = (uintptr_t)c, lo = (uintptr_t)&ctxs[0];

    return p >= lo && p < (uintptr_t)&ctxs[MAX_DEVS] ? (int)((p - lo) / sizeof(ctxs[0])) : 0;
}

CUresult cuCtxGetCurrent(CUcontext *c)
{
    *c = ctx_now();
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *d)
{
    if (!ctx_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    *d = ctx_device(ctx_now());
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext c)
{
    if (!c || ctx_depth == 8)
        return CUDA_ERROR_INVALID_CONTEXT;
    ctx_stack[ctx_depth++] = c;
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext *c)
{
    if (ctx_depth == 0) {
        if (no_ctx_mode())
            return CUDA_ERROR_INVALID_CONTEXT;
        *c = (CUcontext)&ctxs[0];
        return CUDA_SUCCESS;
    }
    *c = ctx_stack[--ctx_depth];
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext c)
{
    if (!c)
        ctx_depth = 0;
    else if (ctx_depth)
        ctx_stack[ctx_depth - 1] = c;
    else
        ctx_stack[ctx_depth++] = c;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
    if (d < 0 || d >= ndevs())
        return CUDA_ERROR_INVALID_DEVICE;
    retains[d]++;
    refs[d]++;
    *c = (CUcontext)&ctxs[d];
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice d)
{
    if (d < 0 || d >= ndevs() || refs[d] == 0)
        return CUDA_ERROR_INVALID_DEVICE;
    refs[d]--;
    return CUDA_SUCCESS;
}

/* Allocate size bytes on device dev, in whole blocks of the arena. */
CUresult fake_cuda_alloc_on(int dev, CUdeviceptr *d, size_t size)
{
    size_t span;
    int i, fd;

    for (i = 0; i < MAX_ALLOCS && allocs[i].base; i++)
        ;
    if (i == MAX_ALLOCS || size == 0 || dev < 0 || dev >= ndevs())
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!arena) {
        void *p = mmap(NULL, ARENA + BLOCK, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

        if (p == MAP_FAILED)
            return CUDA_ERROR_OUT_OF_MEMORY;
        arena = arena_next = ((uintptr_t)p + BLOCK - 1) & ~(uintptr_t)(BLOCK - 1);
    }
    size = (size + 0xffff) & ~(size_t)0xffff;
    span = (size + BLOCK - 1) & ~(BLOCK - 1);
    if (arena_next + span > arena + ARENA)
        return CUDA_ERROR_OUT_OF_MEMORY;
    fd = memfd_create("fake-vram", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)span) ||
        mmap((void *)arena_next, span, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
            MAP_FAILED) {
        if (fd >= 0)
            close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    allocs[i].base = (CUdeviceptr)arena_next;
    allocs[i].size = size;
    allocs[i].span = span;
    allocs[i].fd = fd;
    allocs[i].dev = dev;
    allocs[i].nommap = 0;
    arena_next += span;
    *d = allocs[i].base;
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr *d, size_t size)
{
    if (fail_allocs > 0) {
        fail_allocs--;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return fake_cuda_alloc_on(ctx_current() ? ctx_device(ctx_now()) : 0, d, size);
}

static int device_syncs;

static CUresult free_alloc(CUdeviceptr d)
{
    int i;


    for (i = 0; i < MAX_ALLOCS; i++) {
        if (allocs[i].base == d && d) {
            /* The blocks go back to PROT_NONE: freed, never reused. */
            mmap((void *)(uintptr_t)d, allocs[i].span, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
            close(allocs[i].fd);
            memset(&allocs[i], 0, sizeof(allocs[i]));
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemFree(CUdeviceptr d)
{
    device_syncs++;
    return free_alloc(d);
}

/* The allocation p lies in: within its size, or (blocks) within the whole blocks it takes;
 * -1 when none. */
static int find_in(CUdeviceptr p, int blocks)
{
    int i;

    for (i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].base && p >= allocs[i].base &&
            p - allocs[i].base < (blocks ? allocs[i].span : allocs[i].size))
            return i;
    return -1;
}

static int find(CUdeviceptr p) { return find_in(p, 0); }
static int find_block(CUdeviceptr p) { return find_in(p, 1); }

int fake_cuda_refuse_mmap(CUdeviceptr d)
{
    int i = find(d);

    if (i >= 0)
        allocs[i].nommap = 1;
    return i >= 0 ? 0 : -1;
}

/* For fake_mmap.c: the memfd behind device address va, the offset of va in it, and how many
 * bytes from there it holds. */
int fake_cuda_piece(CUdeviceptr va, int *fd, size_t *off, size_t *avail)
{
    int i = find_block(va);

    if (i < 0)
        return -1;
    *fd = allocs[i].fd;
    *off = (size_t)(va - allocs[i].base);
    *avail = allocs[i].span - *off;
    return 0;
}

CUresult cuMemGetAddressRange(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    int i = find(p);

    if (i < 0)
        return CUDA_ERROR_NOT_FOUND;
    *base = allocs[i].base;
    *size = allocs[i].size;
    return CUDA_SUCCESS;
}

/* A new descriptor for an export: CUDA_ERROR_OPERATING_SYSTEM when the process has none left,
 * as the real driver says it. */
static CUresult export_fd(int fd, int *out)
{
    int delay = env_int("FAKE_CUDA_EXPORT_DELAY_US", 0);

    if (fd < 0)
        return errno == EMFILE || errno == ENFILE ? CUDA_ERROR_OPERATING_SYSTEM
                                                  : CUDA_ERROR_OUT_OF_MEMORY;
    if (delay > 0)
        usleep((useconds_t)delay);
    *out = fd;
    exports++;
    return CUDA_SUCCESS;
}

CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr d, size_t size,
                                       CUmemRangeHandleType type, unsigned long long flags)
{
    const char *mode = getenv("FAKE_CUDA_MMAP");
    int i, first = find_block(d), dev, nommap = mode && strcmp(mode, "refuse") == 0, pfd[2], v;
    CUdeviceptr p;
    char name[64];

    if (type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || (d & 4095) || (size & 4095) || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ctx_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    dev = ctx_device(ctx_now());
    /* Every block of the range must be live and of the current context's device (which code
     * 580 gives for another device's memory is not recorded: this one falls through). */
    for (p = d; p < d + size; p = allocs[i].base + allocs[i].span) {
        i = find_block(p);
        if (i < 0 || allocs[i].dev != dev)
            return CUDA_ERROR_INVALID_VALUE;
        nommap |= allocs[i].nommap;
    }
    if ((flags & CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE) &&
        !dev_attr("FAKE_CUDA_COHERENT", dev, 0))
        return CUDA_ERROR_NOT_SUPPORTED;
    /* Drivers before 13.3 map exports of integrated GPUs only. */
    cuDriverGetVersion(&v);
    nommap |= v < 13030 && env_int("FAKE_CUDA_INTEGRATED", 0) != 1;
    if (nommap) {
        if (pipe(pfd))
            return export_fd(-1, (int *)handle);
        close(pfd[1]);
        return export_fd(pfd[0], (int *)handle);
    }
    if (d == allocs[first].base && size <= allocs[first].span)
        return export_fd(dup(allocs[first].fd), (int *)handle);
    if (!dlsym(RTLD_DEFAULT, "fake_mmap_interposed"))
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, sizeof(name), "fake-dmabuf:%llx:%zx", (unsigned long long)d, size);
    return export_fd(memfd_create(name, 0), (int *)handle);
}

/* cuGetProcAddress (the _v2 ABI of CUDA 12 on): only what the dma-buf backend resolves here,
 * and only at versions this driver has: from the entry point's (11.7) to the driver's own. */
CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    int have = 0;

    *pfn = NULL;
    cuDriverGetVersion(&have);
    if (strcmp(sym, "cuMemGetHandleForAddressRange") == 0) {
        gpa_version = ver;
        st = ver >= 11070 && ver <= have ? CU_GET_PROC_ADDRESS_SUCCESS
                                         : CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        if (st == CU_GET_PROC_ADDRESS_SUCCESS)
            *pfn = (void *)cuMemGetHandleForAddressRange;
    }
    if (status)
        *status = st;
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* VMM entry points exist (the vulkan backend checks for them) but plain cuMemAlloc memory
 * has no allocation handle, as with the real driver. */
CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *h, void *addr)
{
    return CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemRelease(CUmemGenericAllocationHandle h) { return CUDA_ERROR_INVALID_VALUE; }
CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *p,
                                                CUmemGenericAllocationHandle h)
{
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *p,
                                       CUmemAllocationGranularity_flags o)
{
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuMemExportToShareableHandle(void *s, CUmemGenericAllocationHandle h,
                                      CUmemAllocationHandleType t, unsigned long long f)
{
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d)
{
    return CUDA_ERROR_NOT_SUPPORTED;
}

/*
 * ---- what the copy engine of the _auto copies needs (src/dma/) ----
 * Contexts: FAKE_CUDA_NO_CTX=1 starts every thread with no current context; push and pop keep
 * a per-thread stack, and the stream and copy calls fail with CUDA_ERROR_INVALID_CONTEXT when
 * nothing is current. Host memory from cuMemAllocHost / cuMemHostAlloc is "pinned"
 * (CU_POINTER_ATTRIBUTE_MEMORY_TYPE says HOST); any other host address is pageable (the
 * attribute call fails, as the real driver's does). The async copies run at once with memcpy
 * and count what they saw; FAKE_CUDA_FAIL_DMA=<CUresult> makes them fail with that code.
 * FAKE_CUDA_OTHER_CTX=1 makes device memory belong to a context other than the primary one.
 */
#define MAX_HOST 64
#define MAX_STREAMS 16

static struct { void *p; size_t size; } hosts[MAX_HOST];
static struct { unsigned flags; int live; } streams[MAX_STREAMS];
static int event_dummy;
static int dma_calls, dma_legacy, dma_pageable, dma_blocking;
static size_t dma_bytes;

int fake_cuda_dma_calls(void) { return dma_calls; }
size_t fake_cuda_dma_bytes(void) { return dma_bytes; }
int fake_cuda_dma_legacy_stream(void) { return dma_legacy; }
int fake_cuda_dma_pageable(void) { return dma_pageable; }
int fake_cuda_dma_blocking_stream(void) { return dma_blocking; }

static int find_host(const void *p)
{
    int i;

    for (i = 0; i < MAX_HOST; i++)
        if (hosts[i].p && (const char *)p >= (const char *)hosts[i].p &&
            (size_t)((const char *)p - (const char *)hosts[i].p) < hosts[i].size)
            return i;
    return -1;
}

CUresult cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
    int i;

    for (i = 0; i < MAX_HOST && hosts[i].p; i++)
        ;
    if (i == MAX_HOST || size == 0 || posix_memalign(&hosts[i].p, 4096, size))
        return CUDA_ERROR_OUT_OF_MEMORY;
    hosts[i].size = size;
    *pp = hosts[i].p;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocHost(void **pp, size_t size)
{
    return cuMemHostAlloc(pp, size, 0);
}

CUresult cuMemFreeHost(void *p)
{
    int i = find_host(p);

    if (i < 0 || hosts[i].p != p)
        return CUDA_ERROR_INVALID_VALUE;
    free(p);
    memset(&hosts[i], 0, sizeof(hosts[i]));
    return CUDA_SUCCESS;
}

CUresult cuMemHostGetFlags(unsigned int *flags, void *p)
{
    if (find_host(p) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = 0;
    return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr p)
{
    int dev = find(p) >= 0, host = find_host((const void *)(uintptr_t)p) >= 0;

    switch (attr) {
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        if (!dev)
            return CUDA_ERROR_INVALID_VALUE;
        *(int *)data = allocs[find(p)].dev;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        if ((!dev && !host) || (dev && env_int("FAKE_CUDA_NO_OWNER", 0) == 1))
            return CUDA_ERROR_INVALID_VALUE;
        /* FAKE_CUDA_OTHER_CTX=1: device memory of a context that is not the primary one */
        *(CUcontext *)data = dev && getenv("FAKE_CUDA_OTHER_CTX") ? (CUcontext)&event_dummy
                             : (CUcontext)&ctxs[dev ? allocs[find(p)].dev : 0];
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        if (!dev && !host)
            return CUDA_ERROR_INVALID_VALUE;
        *(unsigned *)data = dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
    int i;

    if (!ctx_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    for (i = 0; i < MAX_STREAMS && streams[i].live; i++)
        ;
    if (i == MAX_STREAMS)
        return CUDA_ERROR_OUT_OF_MEMORY;
    streams[i].live = 1;
    streams[i].flags = flags;
    *s = (CUstream)&streams[i];
    return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream s)
{
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    memset(s, 0, sizeof(streams[0]));
    return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream s)
{
    return ctx_current() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static CUresult fake_async(void *dst, const void *src, size_t n, const void *host, CUstream s)
{
    const char *fail = getenv("FAKE_CUDA_FAIL_DMA");
    int h = find_host(host);

    if (!ctx_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    if (fail && *fail)
        return (CUresult)atoi(fail);
    if (!s)
        dma_legacy++;
    else if (!(((unsigned *)s)[0] & CU_STREAM_NON_BLOCKING))
        dma_blocking++;
    if (h < 0 || n > hosts[h].size - (size_t)((const char *)host - (const char *)hosts[h].p))
        dma_pageable++;
    memcpy(dst, src, n);
    dma_calls++;
    dma_bytes += n;
    return CUDA_SUCCESS;
}

/* Synchronous copies and the rest of what tests/gpu/dmabuf_r610_checks.c calls, so that its
 * logic can be tried here (it settles nothing against a stand-in). */
CUresult cuMemcpyHtoD(CUdeviceptr d, const void *h, size_t n)
{
    if (find(d) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy((void *)(uintptr_t)d, h, n);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH(void *h, CUdeviceptr d, size_t n)
{
    if (find(d) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(h, (const void *)(uintptr_t)d, n);
    return CUDA_SUCCESS;
}

CUresult cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n)
{
    if (find(d) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    memset((void *)(uintptr_t)d, v, n);
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
    return ctx_current() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned *flags, int *active)
{
    if (d < 0 || d >= ndevs())
        return CUDA_ERROR_INVALID_DEVICE;
    *flags = 0;
    *active = refs[d] > 0;
    return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n, CUstream s)
{
    if (find(d) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    return fake_async((void *)(uintptr_t)d, h, n, h, s);
}

CUresult cuMemcpyDtoHAsync(void *h, CUdeviceptr d, size_t n, CUstream s)
{
    if (find(d) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    return fake_async(h, (const void *)(uintptr_t)d, n, h, s);
}

CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
    *e = (CUevent)&event_dummy;
    return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent e, CUstream s)
{
    return ctx_current() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuEventSynchronize(CUevent e)
{
    return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent e)
{
    return CUDA_SUCCESS;
}

/*
 * The stream-ordered allocator, and how often a call that waits for every kernel of the
 * device was made (cuMemFree): the _auto copies must never make one, since the program's own
 * kernel may be waiting for the very thread that would wait for it (dma_auto_client.c).
 * FAKE_CUDA_NO_ASYNC_ALLOC=1 makes the stream-ordered calls fail, as a device without
 * memory pools does.
 */
int fake_cuda_device_syncs(void) { return device_syncs; }

CUresult cuMemAllocAsync(CUdeviceptr *d, size_t size, CUstream s)
{
    if (getenv("FAKE_CUDA_NO_ASYNC_ALLOC"))
        return CUDA_ERROR_NOT_SUPPORTED;
    return cuMemAlloc(d, size);
}

CUresult cuMemFreeAsync(CUdeviceptr d, CUstream s)
{
    return free_alloc(d);
}

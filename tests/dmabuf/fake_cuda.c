// SPDX-License-Identifier: MIT
/*
 * fake_cuda.c - a stand-in libcuda.so.1 for testing the dma-buf backend where no GPU (or no
 * driver that maps dma-buf exports) exists: the backend's real code runs against it,
 * loaded by name through LD_LIBRARY_PATH exactly as the real driver would be.
 *
 * "Device memory" from cuMemAlloc is a memfd mapped into the process, so its device address
 * is also a host address the test can read directly. cuMemGetHandleForAddressRange exports
 * a dup of that memfd; like an fd of a real export it maps from the exported start, so this
 * stand-in exports only ranges that begin at an allocation's start (others get
 * CUDA_ERROR_INVALID_VALUE, which is how the test sees a pin fall through). The PCIE mapping
 * flag is refused with CUDA_ERROR_NOT_SUPPORTED, as the x86 driver does.
 *
 * Environment: FAKE_CUDA_VERSION (cuDriverGetVersion, default 13030), FAKE_CUDA_MMAP=refuse
 * (exports are pipes, whose mmap fails, as a driver that refuses CPU mappings). Exported for
 * the test: fake_cuda_exports() counts successful exports.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_ALLOCS 64

static struct { CUdeviceptr base; size_t size; int fd; } allocs[MAX_ALLOCS];
static int exports;
static int ctx_dummy;

int fake_cuda_exports(void)
{
    return exports;
}

CUresult cuInit(unsigned int flags)
{
    (void)flags;
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v)
{
    const char *e = getenv("FAKE_CUDA_VERSION");

    *v = e ? atoi(e) : 13030;
    return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult r, const char **s)
{
    *s = r == CUDA_ERROR_NOT_SUPPORTED ? "CUDA_ERROR_NOT_SUPPORTED" :
         r == CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE" : "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult r, const char **s)
{
    (void)r;
    *s = "fake driver";
    return CUDA_SUCCESS;
}

/* The current context: always the dummy, unless FAKE_CUDA_NO_CTX=1 (see the end of the file),
 * when a thread has one only between a push and its pop. */
static __thread int ctx_depth;

static int no_ctx_mode(void)
{
    const char *e = getenv("FAKE_CUDA_NO_CTX");

    return e && *e == '1';
}

static int ctx_current(void)
{
    return !no_ctx_mode() || ctx_depth > 0;
}

CUresult cuCtxGetCurrent(CUcontext *c)
{
    *c = ctx_current() ? (CUcontext)&ctx_dummy : NULL;
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext c)
{
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    ctx_depth++;
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext *c)
{
    if (no_ctx_mode() && ctx_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth > 0)
        ctx_depth--;
    *c = (CUcontext)&ctx_dummy;
    return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *d, int ordinal) { *d = ordinal; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
    (void)d;
    *c = (CUcontext)&ctx_dummy;
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr *d, size_t size)
{
    int i, fd;
    void *p;

    for (i = 0; i < MAX_ALLOCS && allocs[i].base; i++)
        ;
    if (i == MAX_ALLOCS || size == 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size = (size + 0xffff) & ~(size_t)0xffff;
    fd = memfd_create("fake-vram", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)size)) {
        if (fd >= 0)
            close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    /* 64 KiB aligned like GPU memory: over-map, then trim. */
    p = mmap(NULL, size + 0x10000, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    {
        uintptr_t a = ((uintptr_t)p + 0xffff) & ~(uintptr_t)0xffff;

        if (mmap((void *)a, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
            MAP_FAILED) {
            munmap(p, size + 0x10000);
            close(fd);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        if (a > (uintptr_t)p)
            munmap(p, a - (uintptr_t)p);
        munmap((void *)(a + size), (uintptr_t)p + size + 0x10000 - (a + size));
        allocs[i].base = (CUdeviceptr)a;
    }
    allocs[i].size = size;
    allocs[i].fd = fd;
    *d = allocs[i].base;
    return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr d)
{
    int i;

    for (i = 0; i < MAX_ALLOCS; i++) {
        if (allocs[i].base == d && d) {
            munmap((void *)(uintptr_t)d, allocs[i].size);
            close(allocs[i].fd);
            memset(&allocs[i], 0, sizeof(allocs[i]));
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static int find(CUdeviceptr p)
{
    int i;

    for (i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].base && p >= allocs[i].base && p - allocs[i].base < allocs[i].size)
            return i;
    return -1;
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

CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr d, size_t size,
                                       CUmemRangeHandleType type, unsigned long long flags)
{
    const char *mode = getenv("FAKE_CUDA_MMAP");
    int i = find(d), pfd[2];

    if (type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || (d & 4095) || (size & 4095) || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (i < 0 || d != allocs[i].base || size > allocs[i].size)
        return CUDA_ERROR_INVALID_VALUE;
    if (mode && strcmp(mode, "refuse") == 0) {
        if (pipe(pfd))
            return CUDA_ERROR_OUT_OF_MEMORY;
        close(pfd[1]);
        *(int *)handle = pfd[0];
    } else {
        *(int *)handle = dup(allocs[i].fd);
    }
    exports++;
    return CUDA_SUCCESS;
}

/* VMM entry points exist (the vulkan backend checks for them) but plain cuMemAlloc memory
 * has no allocation handle, as with the real driver. */
CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *h, void *addr)
{
    (void)h; (void)addr;
    return CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemRelease(CUmemGenericAllocationHandle h) { (void)h; return CUDA_ERROR_INVALID_VALUE; }
CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *p,
                                                CUmemGenericAllocationHandle h)
{
    (void)p; (void)h;
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *p,
                                       CUmemAllocationGranularity_flags o)
{
    (void)g; (void)p; (void)o;
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuMemExportToShareableHandle(void *s, CUmemGenericAllocationHandle h,
                                      CUmemAllocationHandleType t, unsigned long long f)
{
    (void)s; (void)h; (void)t; (void)f;
    return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d)
{
    (void)u; (void)d;
    return CUDA_ERROR_NOT_SUPPORTED;
}

/*
 * ---- what the copy engine of the _auto copies needs (src/copy_dma.c) ----
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

    (void)flags;
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
        *(int *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        if (!dev && !host)
            return CUDA_ERROR_INVALID_VALUE;
        /* FAKE_CUDA_OTHER_CTX=1: device memory of a context that is not the primary one */
        *(CUcontext *)data = dev && getenv("FAKE_CUDA_OTHER_CTX") ? (CUcontext)&event_dummy
                                                                   : (CUcontext)&ctx_dummy;
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
    (void)s;
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
    (void)flags;
    *e = (CUevent)&event_dummy;
    return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent e, CUstream s)
{
    (void)e; (void)s;
    return ctx_current() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuEventSynchronize(CUevent e)
{
    (void)e;
    return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent e)
{
    (void)e;
    return CUDA_SUCCESS;
}

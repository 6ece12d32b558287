// SPDX-License-Identifier: MIT
/*
 * fake_cuda_vmm.c - a stand-in libcuda.so.1 for testing where no GPU exists: the allocation
 * bridge (tests/bridge) and the vulkan backend with several GPUs (tests/multigpu, with
 * fake_vulkan.c). Plain cuMemAlloc, the VMM calls of vramio_alloc's pool and of the vulkan
 * backend (cuMemCreate, reserve, map, access, unmap, release, retain, address range,
 * properties, export to a POSIX fd and import of one), devices with UUIDs, per-thread context stacks over one
 * primary context per device, and cuGetProcAddress(_v2) answering from its own table as the
 * real driver does. "Device memory" is host memory (VMM handles are memfds named after their
 * GPU, fake_gpu.h, mapped where reserved), so a test can read and write it directly.
 *
 * Every thread starts with device 0's primary context current (as after cudaSetDevice(0)),
 * or none with FAKE_CUDA_NOCTX=1. Calls that need a context (cuMemAlloc, cuMemcpy*,
 * cuMemGetAddressRange) fail with CUDA_ERROR_INVALID_CONTEXT without one, as the real ones do.
 *
 * Environment: FAKE_CUDA_VMM=0 (cuMemCreate says CUDA_ERROR_NOT_SUPPORTED, as a device
 * without VMM), FAKE_CUDA_NOCTX=1, FAKE_CUDA_DEVICES=N (N devices, all peers, at most
 * FAKE_GPU_MAX), FAKE_CUDA_PEER_REFUSE=1 (cuMemSetAccess refuses more than one device),
 * FAKE_CUDA_VMM_REFUSE=D (cuMemCreate on device D alone says CUDA_ERROR_NOT_SUPPORTED),
 * FAKE_CUDA_VMM_OS_ERRORS=N (the first N cuMemCreate calls say CUDA_ERROR_OPERATING_SYSTEM),
 * FAKE_CUDA_NEW_ABI=NAME:VERSION (cuGetProcAddress gives another function for NAME from
 * VERSION on, as a driver with a new ABI of that name).
 * Exported for the tests: fake_access_devices() (devices of the last cuMemSetAccess),
 * fake_plain_allocs() (live cuMemAlloc allocations), fake_vmm_live() (live VMM handles),
 * fake_gpa_v2() (the driver's own cuGetProcAddress_v2), fake_exports() (successful
 * cuMemExportToShareableHandle calls), fake_imports() (cuMemImportFromShareableHandle's). Pointer attributes, the other copies and memsets and
 * the synchronizations (with their counters) are in fake_cuda_ptr.c.
 */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fake_gpu.h"

#define MAXN 4096
#define GRAN (2u << 20)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct { uintptr_t base; size_t size; int dev; } plain[MAXN];
static struct { int fd; size_t size; int refs; CUmemAllocationProp prop; } handles[MAXN]; /* index + 1 = handle */
static struct { uintptr_t va; size_t size; int h; } maps[MAXN];
static int n_plain, n_handles, n_access, n_exports, n_imports;

/* A context is the address of its device's primary-context record. */
static struct primary { int refs; } primaries[FAKE_GPU_MAX];
#define CTX_DEPTH 16
static __thread CUcontext ctx_stack[CTX_DEPTH];
static __thread int ctx_depth = -1; /* -1: this thread's stack is not set up yet */

int fake_plain_allocs(void) { return n_plain; }
int fake_vmm_live(void) { return n_handles; }
int fake_access_devices(void) { return n_access; }
int fake_exports(void) { return n_exports; }
int fake_imports(void) { return n_imports; }

static int env_is(const char *name, const char *v)
{
    const char *e = getenv(name);

    return e && strcmp(e, v) == 0;
}

CUresult cuInit(unsigned int f) { return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }
CUresult cuGetErrorName(CUresult r, const char **s) { *s = "CUDA_ERROR_FAKE"; return CUDA_SUCCESS; }
CUresult cuGetErrorString(CUresult r, const char **s) { *s = "fake driver"; return CUDA_SUCCESS; }
static int ndev(void)
{
    const char *e = getenv("FAKE_CUDA_DEVICES");
    int n = e ? atoi(e) : 1;

    return n < 0 ? 0 : n > FAKE_GPU_MAX ? FAKE_GPU_MAX : n;
}

CUresult cuDeviceGet(CUdevice *d, int o) { *d = o; return o >= 0 && o < ndev() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }
CUresult cuDeviceGetCount(int *n) { *n = ndev(); return CUDA_SUCCESS; }
CUresult cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer)
{
    *can = d != peer && d < ndev() && peer < ndev();
    return CUDA_SUCCESS;
}
CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d)
{
    if (!u || d < 0 || d >= ndev())
        return CUDA_ERROR_INVALID_DEVICE;
    fake_gpu_uuid(d, (unsigned char *)u->bytes);
    return CUDA_SUCCESS;
}

/* The device of a context we handed out, or -1. */
static int ctx_dev(CUcontext c)
{
    struct primary *p = (struct primary *)c;

    if (p < primaries || p >= primaries + ndev())
        return -1;
    return (int)(p - primaries);
}

static void ctx_thread_init(void)
{
    if (ctx_depth >= 0)
        return;
    ctx_depth = 0;
    if (!env_is("FAKE_CUDA_NOCTX", "1") && ndev() > 0)
        ctx_stack[ctx_depth++] = (CUcontext)&primaries[0];
}

static CUcontext ctx_current(void)
{
    ctx_thread_init();
    return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
}

CUresult cuCtxGetCurrent(CUcontext *c)
{
    *c = ctx_current();
    return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext c)
{
    ctx_thread_init();
    if (c && ctx_dev(c) < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!c) { /* unbinds the current one */
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
CUresult cuCtxGetDevice(CUdevice *d)
{
    CUcontext c = ctx_current();

    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    *d = ctx_dev(c);
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
    if (d < 0 || d >= ndev())
        return CUDA_ERROR_INVALID_DEVICE;
    ctx_thread_init();
    __atomic_add_fetch(&primaries[d].refs, 1, __ATOMIC_RELAXED);
    *c = (CUcontext)&primaries[d];
    return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice d)
{
    if (d < 0 || d >= ndev())
        return CUDA_ERROR_INVALID_DEVICE;
    __atomic_sub_fetch(&primaries[d].refs, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}
/* The device of the calling thread's current context, or -1 (for fake_cuda_ptr.c). */
int fake_current_device(void)
{
    CUcontext c = ctx_current();

    return c ? ctx_dev(c) : -1;
}

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED:
        *v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT:
        *v = 32;
        break;
    default:
        *v = 0;
    }
    return CUDA_SUCCESS;
}

/* ---- plain allocations (no allocation handle) -------------------------------------- */
CUresult cuMemAlloc_v2(CUdeviceptr *d, size_t size)
{
    void *p;
    int i;

    if (!ctx_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!d || !size || !(p = aligned_alloc(512, (size + 511) & ~(size_t)511)))
        return !d || !size ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    for (i = 0; i < MAXN && plain[i].base; i++)
        ;
    if (i == MAXN) {
        pthread_mutex_unlock(&lock);
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    plain[i].base = (uintptr_t)p;
    plain[i].size = size;
    plain[i].dev = fake_current_device();
    n_plain++;
    pthread_mutex_unlock(&lock);
    *d = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *d, size_t *pitch, size_t w, size_t h, unsigned int e)
{
    if (!pitch || !w || !h || (e != 4 && e != 8 && e != 16))
        return CUDA_ERROR_INVALID_VALUE;
    *pitch = (w + 511) & ~(size_t)511;
    return cuMemAlloc_v2(d, *pitch * h);
}

CUresult cuMemFree_v2(CUdeviceptr d)
{
    int i;

    if (!d)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    for (i = 0; i < MAXN; i++) {
        if (plain[i].base == (uintptr_t)d) {
            free((void *)plain[i].base);
            plain[i].base = 0;
            n_plain--;
            pthread_mutex_unlock(&lock);
            return CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&lock);
    return CUDA_ERROR_INVALID_VALUE;
}

/* ---- VMM ---------------------------------------------------------------------------- */
CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *p,
                                       CUmemAllocationGranularity_flags o)
{
    *g = GRAN;
    return CUDA_SUCCESS;
}

/* A new handle owning fd (closed here when no slot is free). */
static CUresult handle_new(int fd, size_t size, const CUmemAllocationProp *p,
                           CUmemGenericAllocationHandle *h)
{
    int i;

    pthread_mutex_lock(&lock);
    for (i = 0; i < MAXN && handles[i].refs; i++)
        ;
    if (i == MAXN) {
        pthread_mutex_unlock(&lock);
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    handles[i].fd = fd;
    handles[i].size = size;
    handles[i].refs = 1;
    handles[i].prop = *p;
    n_handles++;
    pthread_mutex_unlock(&lock);
    *h = (CUmemGenericAllocationHandle)(i + 1);
    return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *p,
                     unsigned long long f)
{
    char name[32];
    int fd;

    static int os_errors;
    const char *refuse = getenv("FAKE_CUDA_VMM_REFUSE"), *os = getenv("FAKE_CUDA_VMM_OS_ERRORS");

    if (env_is("FAKE_CUDA_VMM", "0") || (p && refuse && atoi(refuse) == p->location.id))
        return CUDA_ERROR_NOT_SUPPORTED;
    if (os && __atomic_add_fetch(&os_errors, 1, __ATOMIC_RELAXED) <= atoi(os))
        return CUDA_ERROR_OPERATING_SYSTEM;
    if (!size || size % GRAN || !p || p->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        p->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->location.id < 0 || p->location.id >= ndev())
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, sizeof(name), FAKE_GPU_MEMFD_PREFIX "%d", p->location.id);
    fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)size)) {
        if (fd >= 0)
            close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return handle_new(fd, size, p, h);
}

/* Index of a live handle (the lock held), or -1. */
static int handle_index(CUmemGenericAllocationHandle h)
{
    int i = (int)h - 1;

    return i >= 0 && i < MAXN && handles[i].refs ? i : -1;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *p,
                                                CUmemGenericAllocationHandle h)
{
    int i;

    pthread_mutex_lock(&lock);
    i = handle_index(h);
    if (i >= 0 && p)
        *p = handles[i].prop;
    pthread_mutex_unlock(&lock);
    return i >= 0 && p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A new descriptor of the allocation's memfd, as the real driver gives a new fd per export. */
CUresult cuMemExportToShareableHandle(void *out, CUmemGenericAllocationHandle h,
                                      CUmemAllocationHandleType t, unsigned long long f)
{
    int i, fd = -1;

    if (!out || f || t != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    i = handle_index(h);
    if (i >= 0 && (handles[i].prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        fd = dup(handles[i].fd);
    pthread_mutex_unlock(&lock);
    if (fd < 0)
        return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
    __atomic_add_fetch(&n_exports, 1, __ATOMIC_RELAXED);
    *(int *)out = fd;
    return CUDA_SUCCESS;
}

/* Another process's export (a memfd of this stand-in, sent over a socket): a new handle of
 * the same memory, on the GPU its memfd's name gives. */
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *h, void *shareable,
                                        CUmemAllocationHandleType t)
{
    int fd = (int)(intptr_t)shareable, gpu = 0, own;
    CUmemAllocationProp prop;
    char link[64], target[256];
    struct stat st;
    ssize_t n;
    CUresult r;

    if (!h || t != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || fstat(fd, &st) ||
        st.st_size <= 0 || st.st_size % GRAN)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, target, sizeof(target) - 1);
    if (n <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    target[n] = '\0';
    if (sscanf(target, "/memfd:" FAKE_GPU_MEMFD_PREFIX "%d", &gpu) != 1)
        return CUDA_ERROR_INVALID_VALUE;
    own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = gpu;
    r = handle_new(own, (size_t)st.st_size, &prop, h);
    if (r == CUDA_SUCCESS)
        __atomic_add_fetch(&n_imports, 1, __ATOMIC_RELAXED);
    return r;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
    int i = (int)h - 1;

    pthread_mutex_lock(&lock);
    if (i < 0 || i >= MAXN || !handles[i].refs) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (--handles[i].refs == 0) {
        close(handles[i].fd);
        n_handles--;
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
                             unsigned long long f)
{
    uintptr_t p, a;

    if (!align)
        align = GRAN;
    p = (uintptr_t)mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                        -1, 0);
    if ((void *)p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a = (p + align - 1) & ~(uintptr_t)(align - 1);
    if (a > p)
        munmap((void *)p, a - p);
    if (p + align > a)
        munmap((void *)(a + size), p + align - a);
    *ptr = (CUdeviceptr)a;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    return munmap((void *)(uintptr_t)ptr, size) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t off, CUmemGenericAllocationHandle h,
                  unsigned long long f)
{
    int i = (int)h - 1, m;

    pthread_mutex_lock(&lock);
    if (i < 0 || i >= MAXN || !handles[i].refs || off || size != handles[i].size) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (m = 0; m < MAXN && maps[m].va; m++)
        ;
    if (m == MAXN || mmap((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_FIXED, handles[i].fd, 0) == MAP_FAILED) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    maps[m].va = (uintptr_t)ptr;
    maps[m].size = size;
    maps[m].h = i;
    handles[i].refs++; /* a mapping holds the allocation, as in the real driver */
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *d, size_t n)
{
    if (!d || !n || (n > 1 && env_is("FAKE_CUDA_PEER_REFUSE", "1")))
        return CUDA_ERROR_INVALID_VALUE;
    n_access = (int)n;
    return CUDA_SUCCESS;
}

static int find_map(uintptr_t a)
{
    int m;

    for (m = 0; m < MAXN; m++)
        if (maps[m].va && a >= maps[m].va && a - maps[m].va < maps[m].size)
            return m;
    return -1;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    int m, h;

    pthread_mutex_lock(&lock);
    m = find_map((uintptr_t)ptr);
    if (m < 0 || maps[m].va != (uintptr_t)ptr || maps[m].size != size) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    h = maps[m].h;
    maps[m].va = 0;
    pthread_mutex_unlock(&lock);
    return cuMemRelease((CUmemGenericAllocationHandle)(h + 1));
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *h, void *addr)
{
    int m;

    pthread_mutex_lock(&lock);
    m = find_map((uintptr_t)addr);
    if (m >= 0) {
        handles[maps[m].h].refs++;
        *h = (CUmemGenericAllocationHandle)(maps[m].h + 1);
    }
    pthread_mutex_unlock(&lock);
    return m >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

int fake_alloc_of(uintptr_t a, uintptr_t *base, size_t *size, int *vmm, int *dev)
{
    int i, m, found = 0;

    pthread_mutex_lock(&lock);
    m = find_map(a);
    if (m >= 0) {
        *base = maps[m].va;
        *size = maps[m].size;
        *vmm = 1;
        *dev = handles[maps[m].h].prop.location.id;
        found = 1;
    }
    for (i = 0; !found && i < MAXN; i++) {
        if (plain[i].base && a >= plain[i].base && a - plain[i].base < plain[i].size) {
            *base = plain[i].base;
            *size = plain[i].size;
            *vmm = 0;
            *dev = plain[i].dev;
            found = 1;
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    int i, m;

    if (!ctx_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    m = find_map((uintptr_t)p);
    if (m >= 0) {
        if (base)
            *base = (CUdeviceptr)maps[m].va;
        if (size)
            *size = maps[m].size;
        pthread_mutex_unlock(&lock);
        return CUDA_SUCCESS;
    }
    for (i = 0; i < MAXN; i++) {
        if (plain[i].base && (uintptr_t)p >= plain[i].base && p - plain[i].base < plain[i].size) {
            if (base)
                *base = (CUdeviceptr)plain[i].base;
            if (size)
                *size = plain[i].size;
            pthread_mutex_unlock(&lock);
            return CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&lock);
    return CUDA_ERROR_NOT_FOUND;
}

/* Device memory is host memory here; the real copies need a context, and so do these. */
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *src, size_t n)
{
    if (!ctx_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    memcpy((void *)(uintptr_t)d, src, n);
    return CUDA_SUCCESS;
}

/* The per-thread-default-stream variant: what cuGetProcAddress hands out for "cuMemcpyHtoD"
 * under CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, as the real driver does. */
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr d, const void *src, size_t n)
{
    return cuMemcpyHtoD_v2(d, src, n);
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr d, size_t n)
{
    if (!ctx_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    memcpy(dst, (const void *)(uintptr_t)d, n);
    return CUDA_SUCCESS;
}

CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n)
{
    if (!ctx_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    memset((void *)(uintptr_t)d, v, n);
    return CUDA_SUCCESS;
}

/* Pinned host memory (the tools' cuMemcpy reference): plain host memory here. */
CUresult cuMemHostAlloc(void **p, size_t n, unsigned int f)
{
    *p = n ? aligned_alloc(4096, (n + 4095) & ~(size_t)4095) : NULL;
    return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemAllocHost_v2(void **p, size_t n) { return cuMemHostAlloc(p, n, 0); }
CUresult cuMemFreeHost(void *p) { free(p); return CUDA_SUCCESS; }
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned int f)
{
    *d = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    if (d < 0 || d >= ndev() || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "fake GPU %d", d);
    return CUDA_SUCCESS;
}
CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d) { *b = 64ull << 30; return CUDA_SUCCESS; }
CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice d)
{
    if (d < 0 || d >= ndev() || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(id, (size_t)len, "0000:%02x:00.0", 0x10 + d);
    return CUDA_SUCCESS;
}

/* ---- cuGetProcAddress: from a table, never through dlsym ----------------------------- */
CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *st);

/* The 4-argument ABI of CUDA 11, under its exported name (cuda.h renames the C name). */
CUresult fake_gpa_v1(const char *sym, void **pfn, int ver, cuuint64_t flags)
    __asm__("cuGetProcAddress");

/* A newer ABI of a name (FAKE_CUDA_NEW_ABI=name:version): what the driver hands out for it
 * from that version on. Never called. */
static CUresult fake_new_abi(void)
{
    return CUDA_ERROR_NOT_SUPPORTED;
}

static void *lookup(const char *sym, int ver, cuuint64_t flags)
{
    const char *abi = getenv("FAKE_CUDA_NEW_ABI"), *colon = abi ? strchr(abi, ':') : NULL;
    static const struct { const char *name; void *fn; } table[] = {
        { "cuInit", (void *)cuInit }, { "cuDriverGetVersion", (void *)cuDriverGetVersion },
        { "cuCtxGetDevice", (void *)cuCtxGetDevice },
        { "cuCtxSynchronize", (void *)cuCtxSynchronize },
        { "cuMemAlloc", (void *)cuMemAlloc_v2 }, { "cuMemFree", (void *)cuMemFree_v2 },
        { "cuMemAllocPitch", (void *)cuMemAllocPitch_v2 },
        { "cuMemGetAddressRange", (void *)cuMemGetAddressRange_v2 },
        { "cuPointerGetAttribute", (void *)cuPointerGetAttribute },
        { "cuPointerGetAttributes", (void *)cuPointerGetAttributes },
        { "cuPointerSetAttribute", (void *)cuPointerSetAttribute },
        { "cuMemcpyHtoD", (void *)cuMemcpyHtoD_v2 }, { "cuMemsetD8", (void *)cuMemsetD8_v2 },
        { "cuIpcGetMemHandle", (void *)cuIpcGetMemHandle },
        { "cuIpcOpenMemHandle", (void *)cuIpcOpenMemHandle },
        { "cuIpcCloseMemHandle", (void *)cuIpcCloseMemHandle },
    };
    size_t i;

    if (strcmp(sym, "cuGetProcAddress") == 0)
        return ver >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)fake_gpa_v1;
    if (colon && strlen(sym) == (size_t)(colon - abi) && !strncmp(sym, abi, strlen(sym)) &&
        ver >= atoi(colon + 1))
        return (void *)fake_new_abi;
    if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && !strcmp(sym, "cuMemcpyHtoD"))
        return (void *)cuMemcpyHtoD_v2_ptds;
    for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcmp(sym, table[i].name) == 0)
            return table[i].fn;
    return NULL;
}

CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *st)
{
    *pfn = lookup(sym, ver, flags);
    if (st)
        *st = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult fake_gpa_v1(const char *sym, void **pfn, int ver, cuuint64_t flags)
{
    return cuGetProcAddress_v2(sym, pfn, ver, flags, NULL);
}

void *fake_gpa_v2(void)
{
    return (void *)cuGetProcAddress_v2;
}

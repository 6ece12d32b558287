// SPDX-License-Identifier: MIT
/*
 * fake_cuda_vmm.c - a stand-in libcuda.so.1 for testing where no GPU exists: the allocation
 * bridge (tests/bridge) and the vulkan backend with several GPUs (tests/multigpu, with
 * fake_vulkan.c). On the base of the stand-ins (fake_cuda_base.c: devices, contexts, copies,
 * streams, pointer attributes), it adds plain cuMemAlloc, the VMM calls of vramio_alloc's pool
 * and of the vulkan backend (cuMemCreate, reserve, map, access, unmap, release, retain,
 * properties, export to a POSIX fd and import of one), devices with UUIDs that are all peers,
 * and cuGetProcAddress answering from its own table as the real driver does. "Device memory"
 * is host memory (VMM handles are memfds named after their GPU, fake_gpu.h, mapped where
 * reserved), so a test can read and write it directly. fake_cuda_ptr.c has the rest: the
 * pointer attribute calls of this driver alone, the other copies, legacy IPC, the counters of
 * the synchronizations; fake_cuda_pool.c the stream-ordered calls and pools, whose chunks are
 * this file's handles (fake_cuda_vmm.h), and stream capture. The VMM calls that the real
 * driver forbids in a host function fail there (CUDA_ERROR_NOT_PERMITTED) and are counted.
 *
 * Environment (besides the base's, fake_cuda_base.h): FAKE_CUDA_VERSION defaults to 13000;
 * FAKE_CUDA_VMM=0 (cuMemCreate says CUDA_ERROR_NOT_SUPPORTED and the device's VMM attribute 0,
 * as a device without VMM), FAKE_CUDA_COHERENT=1[:0...] (per device, as the dma-buf
 * stand-in: PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, a CPU-coherent GPU such as Grace's),
 * FAKE_CUDA_PEER_REFUSE=1 (cuMemSetAccess refuses more than one device),
 * FAKE_CUDA_VMM_REFUSE=D (cuMemCreate on device D alone says CUDA_ERROR_NOT_SUPPORTED),
 * FAKE_CUDA_VMM_OS_ERRORS=N (the first N cuMemCreate calls say CUDA_ERROR_OPERATING_SYSTEM),
 * FAKE_CUDA_VMM_FD_REFUSE=1 (cuMemCreate refuses a POSIX-fd handle type: CUDA_ERROR_NOT_SUPPORTED),
 * FAKE_CUDA_NEW_ABI=NAME:VERSION (cuGetProcAddress gives another function for NAME from
 * VERSION on, as a driver with a new ABI of that name), FAKE_CUDA_FORK_REFUSE=1 (in a child
 * forked from the process that loaded it, cuMemAlloc, cuMemCreate, cuMemMap and
 * cuMemImportFromShareableHandle say CUDA_ERROR_NOT_INITIALIZED, as the real driver refuses
 * CUDA there; fake_cuda_base.h), FAKE_CUDA_VRAM_BYTES=N (the GPU holds N bytes of VMM
 * allocations: a cuMemCreate that the live ones leave no room for says
 * CUDA_ERROR_OUT_OF_MEMORY), FAKE_CUDA_RETAIN_FIRST=1 (cuMemRetainAllocationHandle of an
 * address in VMM mappings side by side gives the first one's handle, as a driver that does
 * not describe each allocation of a reservation as its own). An export that finds no
 * descriptor left says CUDA_ERROR_OPERATING_SYSTEM, as the dma-buf stand-in's does.
 * Exported for the tests: fake_access_devices() (devices of the last cuMemSetAccess),
 * fake_plain_allocs() (live cuMemAlloc allocations), fake_vmm_live() (live VMM handles),
 * fake_gpa_v2() (the driver's own cuGetProcAddress_v2), fake_exports() (successful
 * cuMemExportToShareableHandle calls), fake_imports() (cuMemImportFromShareableHandle's).
 * Set by the tests: fake_import_hook (when not NULL, cuMemImportFromShareableHandle calls it
 * with the descriptor it was given before anything else: tests/bridge/fork_client.c holds the
 * importing thread there, its descriptor not yet taken by the driver, while another forks).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fake_cuda_vmm.h"

#define MAXN 4096
#define GRAN FAKE_GRAN

const int fake_default_version = 13000;
/* Allocation handles: index + 1 = handle; a mapping holds a reference, as in the real driver. */
static struct { int fd; size_t size; int refs; CUmemAllocationProp prop; } handles[MAXN];
static int n_handles, n_access, n_exports, n_imports;

int fake_plain_allocs(void) { return fake_range_count(0); }
int fake_vmm_live(void) { return n_handles; }
int fake_access_devices(void) { return n_access; }
int fake_exports(void) { return n_exports; }
int fake_imports(void) { return n_imports; }
void (*fake_import_hook)(int fd);

CUresult cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer)
{
    *can = d != peer && fake_dev_ok(d) && fake_dev_ok(peer);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d)
{
    if (!u || !fake_dev_ok(d))
        return CUDA_ERROR_INVALID_DEVICE;
    fake_gpu_uuid(d, (unsigned char *)u->bytes);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED:
        *v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
        *v = !fake_env_is("FAKE_CUDA_VMM", "0");
        break;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES:
        *v = fake_env_at("FAKE_CUDA_COHERENT", d, 0);
        break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT:
        *v = 32;
        break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
        *v = 1;
        break;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: /* fake_cuda_pool.c */
        *v = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        break;
    default:
        *v = 0;
    }
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    if (!fake_dev_ok(d) || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "fake GPU %d", d);
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d) { *b = 64ull << 30; return CUDA_SUCCESS; }

CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice d)
{
    if (!fake_dev_ok(d) || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(id, (size_t)len, "0000:%02x:00.0", 0x10 + d);
    return CUDA_SUCCESS;
}

/* ---- plain allocations (no allocation handle): 512-byte units of the C heap -------------- */
static size_t vram_used(void);

CUresult cuMemAlloc_v2(CUdeviceptr *d, size_t size)
{
    struct fake_range r = { .size = size, .span = (size + 511) & ~(size_t)511 };

    if (fake_child_refused())
        return CUDA_ERROR_NOT_INITIALIZED;
    r.dev = fake_current_device();
    if (r.dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!d || !size)
        return CUDA_ERROR_INVALID_VALUE;
    if (r.span < size) /* rounded up past SIZE_MAX: more than any GPU has */
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* The GPU's memory (FAKE_CUDA_VRAM_BYTES) as the VMM allocations leave it: plain ones are
     * not counted, but a request larger than what is left is refused, as the driver's is. */
    if (getenv("FAKE_CUDA_VRAM_BYTES") &&
        vram_used() + size > strtoull(getenv("FAKE_CUDA_VRAM_BYTES"), NULL, 0))
        return CUDA_ERROR_OUT_OF_MEMORY;
    r.base = (uintptr_t)aligned_alloc(512, r.span);
    if (!r.base)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return fake_add_plain(&r, d);
}

void fake_release_plain(const struct fake_range *r)
{
    free((void *)r->base);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *d, size_t *pitch, size_t w, size_t h, unsigned int e)
{
    if (!pitch || !w || !h || (e != 4 && e != 8 && e != 16))
        return CUDA_ERROR_INVALID_VALUE;
    *pitch = (w + 511) & ~(size_t)511;
    return cuMemAlloc_v2(d, *pitch * h);
}

/* Pinned host memory (the base's) as device memory: the same address. */
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned int f)
{
    *d = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}
/* ---- VMM ---------------------------------------------------------------------------- */
CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *p,
                                       CUmemAllocationGranularity_flags o)
{
    *g = GRAN;
    return CUDA_SUCCESS;
}

/* A new handle owning fd (closed here when no slot is free). */
CUresult fake_vmm_handle_new(int fd, size_t size, const CUmemAllocationProp *p,
                             CUmemGenericAllocationHandle *h)
{
    int i;

    fake_lock();
    for (i = 0; i < MAXN && handles[i].refs; i++)
        ;
    if (i == MAXN) {
        fake_unlock();
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    handles[i].fd = fd;
    handles[i].size = size;
    handles[i].refs = 1;
    handles[i].prop = *p;
    n_handles++;
    fake_unlock();
    *h = (CUmemGenericAllocationHandle)(i + 1);
    return CUDA_SUCCESS;
}

/* The bytes of the live allocations (imports of another process's included). */
static size_t vram_used(void)
{
    size_t n = 0;

    fake_lock();
    for (int i = 0; i < MAXN; i++)
        n += handles[i].refs ? handles[i].size : 0;
    fake_unlock();
    return n;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *p,
                     unsigned long long f)
{
    char name[32];
    int fd;

    static int os_errors;
    const char *refuse = getenv("FAKE_CUDA_VMM_REFUSE"), *os = getenv("FAKE_CUDA_VMM_OS_ERRORS");

    if (fake_child_refused())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (fake_forbidden_in_host_fn())
        return CUDA_ERROR_NOT_PERMITTED;
    if (fake_env_is("FAKE_CUDA_VMM", "0") || (p && refuse && atoi(refuse) == p->location.id))
        return CUDA_ERROR_NOT_SUPPORTED;
    /* A driver that cannot make POSIX-fd handles of this memory (FAKE_CUDA_VMM_FD_REFUSE=1). */
    if (p && (p->requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) &&
        fake_env_is("FAKE_CUDA_VMM_FD_REFUSE", "1"))
        return CUDA_ERROR_NOT_SUPPORTED;
    if (os && __atomic_add_fetch(&os_errors, 1, __ATOMIC_RELAXED) <= atoi(os))
        return CUDA_ERROR_OPERATING_SYSTEM;
    if (!size || size % GRAN || !p || p->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        p->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->location.id < 0 || p->location.id >= fake_ndev())
        return CUDA_ERROR_INVALID_DEVICE;
    if (getenv("FAKE_CUDA_VRAM_BYTES") &&
        vram_used() + size > strtoull(getenv("FAKE_CUDA_VRAM_BYTES"), NULL, 0))
        return CUDA_ERROR_OUT_OF_MEMORY;
    snprintf(name, sizeof(name), FAKE_GPU_MEMFD_PREFIX "%d", p->location.id);
    fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)size)) {
        if (fd >= 0)
            close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return fake_vmm_handle_new(fd, size, p, h);
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

    fake_lock();
    i = handle_index(h);
    if (i >= 0 && p)
        *p = handles[i].prop;
    fake_unlock();
    return i >= 0 && p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A new descriptor of the allocation's memfd, as the real driver gives a new fd per export. */
CUresult cuMemExportToShareableHandle(void *out, CUmemGenericAllocationHandle h,
                                      CUmemAllocationHandleType t, unsigned long long f)
{
    int i, fd = -1, err = 0;

    if (!out || f || t != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    i = handle_index(h);
    if (i >= 0 && (handles[i].prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        fd = dup(handles[i].fd), err = fd < 0 ? errno : 0;
    fake_unlock();
    if (err == EMFILE || err == ENFILE)
        return CUDA_ERROR_OPERATING_SYSTEM;
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
    int fd = (int)(intptr_t)shareable, gpu, own;
    CUmemAllocationProp prop;
    struct stat st;
    CUresult r;
    void (*hook)(int) = __atomic_load_n(&fake_import_hook, __ATOMIC_ACQUIRE);

    if (hook)
        hook(fd);
    if (fake_child_refused())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!h || t != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || fstat(fd, &st) ||
        st.st_size <= 0 || st.st_size % GRAN)
        return CUDA_ERROR_INVALID_VALUE;
    gpu = fake_gpu_of_fd(fd);
    if (gpu < 0)
        return CUDA_ERROR_INVALID_VALUE;
    own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = gpu;
    r = fake_vmm_handle_new(own, (size_t)st.st_size, &prop, h);
    if (r == CUDA_SUCCESS)
        __atomic_add_fetch(&n_imports, 1, __ATOMIC_RELAXED);
    return r;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
    int i = (int)h - 1;

    if (fake_forbidden_in_host_fn())
        return CUDA_ERROR_NOT_PERMITTED;
    fake_lock();
    if (i < 0 || i >= MAXN || !handles[i].refs) {
        fake_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (--handles[i].refs == 0) {
        close(handles[i].fd);
        n_handles--;
    }
    fake_unlock();
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
    if (fake_forbidden_in_host_fn())
        return CUDA_ERROR_NOT_PERMITTED;
    return munmap((void *)(uintptr_t)ptr, size) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* The record of the VMM mapping a lies in, or -1 (the lock held). */
static int find_map(uintptr_t a)
{
    int m = fake_range_find(a, 0);

    return m >= 0 && fake_range_at(m)->vmm == FAKE_VMM ? m : -1;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t off, CUmemGenericAllocationHandle h,
                  unsigned long long f)
{
    struct fake_range r = { .base = (uintptr_t)ptr, .size = size, .span = size, .vmm = FAKE_VMM,
                            .map_base = (uintptr_t)ptr, .map_size = size };
    int i = (int)h - 1, m = -1;

    if (fake_child_refused())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (fake_forbidden_in_host_fn())
        return CUDA_ERROR_NOT_PERMITTED;
    fake_lock();
    if (i < 0 || i >= MAXN || !handles[i].refs || off || size != handles[i].size) {
        fake_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    r.handle = i;
    r.dev = handles[i].prop.location.id;
    r.handle_types = handles[i].prop.requestedHandleTypes;
    if (mmap((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
             handles[i].fd, 0) != MAP_FAILED)
        m = fake_range_add(&r);
    if (m >= 0)
        handles[i].refs++; /* a mapping holds the allocation, as in the real driver */
    fake_unlock();
    return m >= 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *d, size_t n)
{
    if (!d || !n || (n > 1 && fake_env_is("FAKE_CUDA_PEER_REFUSE", "1")))
        return CUDA_ERROR_INVALID_VALUE;
    n_access = (int)n;
    return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    struct fake_range *r;
    int m, h;

    if (fake_forbidden_in_host_fn())
        return CUDA_ERROR_NOT_PERMITTED;
    fake_lock();
    m = find_map((uintptr_t)ptr);
    r = m >= 0 ? fake_range_at(m) : NULL;
    if (!r || r->base != (uintptr_t)ptr || r->size != size) {
        fake_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    h = r->handle;
    fake_range_del(m);
    fake_unlock();
    return cuMemRelease((CUmemGenericAllocationHandle)(h + 1));
}

/* The first of the VMM mappings side by side that end at mapping m (the lock held). */
static int first_of_run(int m)
{
    int before;

    while (fake_range_at(m)->base &&
           (before = find_map(fake_range_at(m)->base - 1)) >= 0 &&
           fake_range_at(before)->base + fake_range_at(before)->size == fake_range_at(m)->base)
        m = before;
    return m;
}

/* A VMM mapping's handle; a stream-ordered allocation's is its pool chunk's, unless
 * FAKE_CUDA_POOL_RETAIN=0 (a driver that does not give it: the answer for plain memory). */
CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *h, void *addr)
{
    int m, i = -1;

    fake_lock();
    m = fake_range_find((uintptr_t)addr, 0);
    if (m >= 0 && !(fake_range_at(m)->vmm == FAKE_VMM ||
                    (fake_range_at(m)->vmm == FAKE_POOLED &&
                     !fake_env_is("FAKE_CUDA_POOL_RETAIN", "0"))))
        m = -1;
    if (m >= 0 && fake_range_at(m)->vmm == FAKE_VMM && fake_env_is("FAKE_CUDA_RETAIN_FIRST", "1"))
        m = first_of_run(m);
    if (m >= 0) {
        i = fake_range_at(m)->handle;
        handles[i].refs++;
        *h = (CUmemGenericAllocationHandle)(i + 1);
    }
    fake_unlock();
    return m >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The per-thread-default-stream variant: what cuGetProcAddress hands out for "cuMemcpyHtoD"
 * under CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, as the real driver does. */
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr d, const void *src, size_t n)
{
    return cuMemcpyHtoD_v2(d, src, n);
}

/* ---- cuGetProcAddress: from a table, never through dlsym ----------------------------- */
/* The 4-argument ABI of CUDA 11, under its exported name (cuda.h renames the C name). */
CUresult fake_gpa_v1(const char *sym, void **pfn, int ver, cuuint64_t flags)
    __asm__("cuGetProcAddress");

/* A newer ABI of a name (FAKE_CUDA_NEW_ABI=name:version): what the driver hands out for it
 * from that version on. Never called. */
static CUresult fake_new_abi(void)
{
    return CUDA_ERROR_NOT_SUPPORTED;
}

static int new_abi(const char *sym, int ver)
{
    const char *abi = getenv("FAKE_CUDA_NEW_ABI"), *colon = abi ? strchr(abi, ':') : NULL;

    return colon && strlen(sym) == (size_t)(colon - abi) && !strncmp(sym, abi, strlen(sym)) &&
           ver >= atoi(colon + 1);
}

void *fake_proc_lookup(const char *sym, int ver, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *st)
{
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
        { "cuMemCreate", (void *)cuMemCreate },
        { "cuMemRelease", (void *)cuMemRelease },
        { "cuMemRetainAllocationHandle", (void *)cuMemRetainAllocationHandle },
        { "cuMemGetAllocationPropertiesFromHandle",
          (void *)cuMemGetAllocationPropertiesFromHandle },
    };
    size_t i;

    if (strcmp(sym, "cuGetProcAddress") == 0)
        return ver >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)fake_gpa_v1;
    if (new_abi(sym, ver))
        return (void *)fake_new_abi;
    if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && !strcmp(sym, "cuMemcpyHtoD"))
        return (void *)cuMemcpyHtoD_v2_ptds;
    for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcmp(sym, table[i].name) == 0)
            return table[i].fn;
    return fake_pool_lookup(sym, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0);
}

CUresult fake_gpa_v1(const char *sym, void **pfn, int ver, cuuint64_t flags)
{
    return cuGetProcAddress_v2(sym, pfn, ver, flags, NULL);
}

void *fake_gpa_v2(void)
{
    return (void *)cuGetProcAddress_v2;
}

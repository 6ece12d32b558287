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
 * Environment (besides the base's, fake_cuda_base.h): FAKE_CUDA_VERSION defaults to 13030;
 * FAKE_CUDA_DMABUF and FAKE_CUDA_COHERENT, colon-separated per device
 * (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, default 1, and
 * ..._PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, default 0); FAKE_CUDA_INTEGRATED=1 (see
 * above); FAKE_CUDA_MMAP=refuse (every export's mmap is refused); FAKE_CUDA_EXPORT_DELAY_US (the
 * export sleeps with its new fd open); FAKE_CUDA_NO_ASYNC_ALLOC=1 (the stream-ordered
 * allocator is missing, as on a device without memory pools); FAKE_CUDA_BAR_BYTES=N (BAR1 holds
 * N bytes of exports: one that the exports still open leave no room for says
 * CUDA_ERROR_OUT_OF_MEMORY, as when BAR1 is exhausted; an export is open while its descriptor
 * names the file it was given).
 * Exported for the tests: fake_cuda_exports() counts successful exports; fake_cuda_alloc_on()
 * allocates on a device; fake_cuda_refuse_mmap() makes one allocation's exports unmappable;
 * fake_cuda_retains() counts primary-context retains per device and fake_cuda_primary_refs()
 * the references held now; fake_cuda_inits() counts cuInit calls; fake_cuda_fail_allocs(n)
 * makes the next n cuMemAlloc calls fail with CUDA_ERROR_OUT_OF_MEMORY; fake_cuda_gpa_version()
 * is the version cuGetProcAddress was last asked for cuMemGetHandleForAddressRange at;
 * fake_cuda_dma_*() count the copy engine's asynchronous copies (fake_cuda_base.c) and
 * fake_cuda_device_syncs() the calls that wait for the whole device (cuMemFree): the _auto
 * copies must never make one, since the program's own kernel may be waiting for the very
 * thread that would wait for it (dma_auto_client.c); fake_cuda_piece() is for fake_mmap.c.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fake_cuda_base.h"

#define BLOCK ((size_t)1 << 20)   /* the unit of the layout */
#define ARENA ((size_t)8 << 30)

const int fake_default_version = 13030;
static uintptr_t arena, arena_next;
static int exports, gpa_version, fail_allocs;

int fake_cuda_exports(void) { return exports; }
int fake_cuda_retains(int dev) { return fake_primary_retains(dev); }
int fake_cuda_gpa_version(void) { return gpa_version; }
int fake_cuda_primary_refs(int dev) { return fake_primary_refs(dev); }
int fake_cuda_inits(void) { return fake_counts.inits; }
void fake_cuda_fail_allocs(int n) { fail_allocs = n; }
int fake_cuda_device_syncs(void) { return fake_counts.device_syncs; }
int fake_cuda_dma_calls(void) { return fake_counts.dma_calls; }
size_t fake_cuda_dma_bytes(void) { return fake_counts.dma_bytes; }
int fake_cuda_dma_legacy_stream(void) { return fake_counts.dma_legacy; }
int fake_cuda_dma_pageable(void) { return fake_counts.dma_pageable; }
int fake_cuda_dma_blocking_stream(void) { return fake_counts.dma_blocking; }

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    if (!fake_dev_ok(d))
        return CUDA_ERROR_INVALID_DEVICE;
    if (a == CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)
        *v = fake_env_at("FAKE_CUDA_DMABUF", d, 1);
    else if (a == CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES)
        *v = fake_env_at("FAKE_CUDA_COHERENT", d, 0);
    else
        *v = 0;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned *flags, int *active)
{
    if (!fake_dev_ok(d))
        return CUDA_ERROR_INVALID_DEVICE;
    *flags = 0;
    *active = fake_primary_refs(d) > 0;
    return CUDA_SUCCESS;
}

/* The next span bytes of the arena, mapped from a new memfd of that size (*fd). */
static uintptr_t arena_take(size_t span, int *fd)
{
    uintptr_t at;

    if (!arena) {
        void *p = mmap(NULL, ARENA + BLOCK, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

        if (p == MAP_FAILED)
            return 0;
        arena = arena_next = ((uintptr_t)p + BLOCK - 1) & ~(uintptr_t)(BLOCK - 1);
    }
    if (arena_next + span > arena + ARENA)
        return 0;
    *fd = memfd_create("fake-vram", MFD_CLOEXEC);
    if (*fd < 0 || ftruncate(*fd, (off_t)span) ||
        mmap((void *)arena_next, span, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, *fd, 0) ==
            MAP_FAILED) {
        if (*fd >= 0)
            close(*fd);
        return 0;
    }
    at = arena_next;
    arena_next += span;
    return at;
}

/* Allocate size bytes on device dev, in whole blocks of the arena. */
CUresult fake_cuda_alloc_on(int dev, CUdeviceptr *d, size_t size)
{
    struct fake_range r = { .dev = dev };

    if (size == 0 || !fake_dev_ok(dev))
        return CUDA_ERROR_OUT_OF_MEMORY;
    r.size = (size + 0xffff) & ~(size_t)0xffff;
    r.span = (r.size + BLOCK - 1) & ~(BLOCK - 1);
    r.base = arena_take(r.span, &r.fd);
    if (!r.base)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return fake_add_plain(&r, d);
}

/* Without a current context, on device 0. */
CUresult cuMemAlloc(CUdeviceptr *d, size_t size)
{
    int dev = fake_current_device();

    if (fail_allocs > 0) {
        fail_allocs--;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return fake_cuda_alloc_on(dev < 0 ? 0 : dev, d, size);
}

/* The blocks go back to PROT_NONE: freed, never reused. */
void fake_release_plain(const struct fake_range *r)
{
    mmap((void *)r->base, r->span, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    close(r->fd);
}

int fake_cuda_refuse_mmap(CUdeviceptr d)
{
    int i;

    fake_lock();
    i = fake_range_find((uintptr_t)d, 0);
    if (i >= 0)
        fake_range_at(i)->nommap = 1;
    fake_unlock();
    return i >= 0 ? 0 : -1;
}

/* For fake_mmap.c: the memfd behind device address va, the offset of va in it, and how many
 * bytes from there it holds. */
int fake_cuda_piece(CUdeviceptr va, int *fd, size_t *off, size_t *avail)
{
    struct fake_range *r;
    int i;

    fake_lock();
    i = fake_range_find((uintptr_t)va, 1);
    if (i >= 0) {
        r = fake_range_at(i);
        *fd = r->fd;
        *off = (size_t)(va - r->base);
        *avail = r->span - *off;
    }
    fake_unlock();
    return i >= 0 ? 0 : -1;
}

/* The exports given out, for FAKE_CUDA_BAR_BYTES: one is open while its descriptor names the
 * file it was given (the library closes it at unpin; the number may come back for another). */
#define MAX_EXPORTS 1024
static struct { int fd; dev_t dev; ino_t ino; size_t size; } given[MAX_EXPORTS];

static size_t exports_open_bytes(void)
{
    struct stat st;
    size_t n = 0;

    fake_lock();
    for (int i = 0; i < MAX_EXPORTS; i++)
        if (given[i].size && (fstat(given[i].fd, &st) || st.st_dev != given[i].dev ||
                              st.st_ino != given[i].ino))
            given[i].size = 0;
        else
            n += given[i].size;
    fake_unlock();
    return n;
}

static void export_given(int fd, size_t size)
{
    struct stat st;
    int i, free_at = -1;

    if (fstat(fd, &st))
        return;
    fake_lock();
    for (i = 0; i < MAX_EXPORTS; i++) {
        if (given[i].size && given[i].fd == fd)
            given[i].size = 0;          /* its number came back: that export is closed */
        if (!given[i].size && free_at < 0)
            free_at = i;
    }
    if (free_at >= 0)
        given[free_at] = (typeof(given[0])){ fd, st.st_dev, st.st_ino, size };
    fake_unlock();
}

/* A new descriptor for an export of size bytes: CUDA_ERROR_OPERATING_SYSTEM when the process
 * has none left, as the real driver says it. */
static CUresult export_fd(int fd, size_t size, int *out)
{
    int delay = fake_env_int("FAKE_CUDA_EXPORT_DELAY_US", 0);

    if (fd < 0)
        return errno == EMFILE || errno == ENFILE ? CUDA_ERROR_OPERATING_SYSTEM
                                                  : CUDA_ERROR_OUT_OF_MEMORY;
    if (delay > 0)
        usleep((useconds_t)delay);
    export_given(fd, size);
    *out = fd;
    exports++;
    return CUDA_SUCCESS;
}

/* Whether every block of [d, d + size) is live and of device dev (which code 580 gives for
 * another device's memory is not recorded: this one falls through), with *nommap set when
 * one of them may not be mapped, and *first the record d lies in; the lock held. */
static int range_exportable(CUdeviceptr d, size_t size, int dev, int *nommap,
                            struct fake_range *first)
{
    struct fake_range *r;
    uintptr_t p;
    int i;

    for (p = d; p < d + size; p = r->base + r->span) {
        i = fake_range_find(p, 1);
        if (i < 0)
            return 0;
        r = fake_range_at(i);
        if (r->dev != dev)
            return 0;
        if (p == d)
            *first = *r;
        *nommap |= r->nommap;
    }
    return 1;
}

/* An export that cannot be mmapped: a pipe. */
static CUresult export_pipe(size_t size, int *out)
{
    int pfd[2];

    if (pipe(pfd))
        return export_fd(-1, 0, out);
    close(pfd[1]);
    return export_fd(pfd[0], size, out);
}

CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr d, size_t size,
                                       CUmemRangeHandleType type, unsigned long long flags)
{
    int dev = fake_current_device(), nommap = fake_env_is("FAKE_CUDA_MMAP", "refuse"), ok, v;
    struct fake_range first = { 0 };
    char name[64];

    if (type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || (d & 4095) || (size & 4095) || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    fake_lock();
    ok = range_exportable(d, size, dev, &nommap, &first);
    fake_unlock();
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    if ((flags & CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE) &&
        !fake_env_at("FAKE_CUDA_COHERENT", dev, 0))
        return CUDA_ERROR_NOT_SUPPORTED;
    /* Drivers before 13.3 map exports of integrated GPUs only. */
    cuDriverGetVersion(&v);
    nommap |= v < 13030 && fake_env_int("FAKE_CUDA_INTEGRATED", 0) != 1;
    if (getenv("FAKE_CUDA_BAR_BYTES") &&
        exports_open_bytes() + size > strtoull(getenv("FAKE_CUDA_BAR_BYTES"), NULL, 0))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (nommap)
        return export_pipe(size, (int *)handle);
    if (d == first.base && size <= first.span)
        return export_fd(dup(first.fd), size, (int *)handle);
    if (!dlsym(RTLD_DEFAULT, "fake_mmap_interposed"))
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, sizeof(name), "fake-dmabuf:%llx:%zx", (unsigned long long)d, size);
    return export_fd(memfd_create(name, 0), size, (int *)handle);
}

/* cuGetProcAddress: only what the dma-buf backend resolves here, and only at versions this
 * driver has: from the entry point's (11.7) to the driver's own. */
void *fake_proc_lookup(const char *sym, int ver, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *st)
{
    int have = 0;

    if (strcmp(sym, "cuMemGetHandleForAddressRange") != 0)
        return NULL;
    cuDriverGetVersion(&have);
    gpa_version = ver;
    if (ver < 11070 || ver > have) {
        *st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        return NULL;
    }
    return (void *)cuMemGetHandleForAddressRange;
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

CUresult cuMemHostGetFlags(unsigned int *flags, void *p)
{
    if (!fake_host_pinned(p, 1))
        return CUDA_ERROR_INVALID_VALUE;
    *flags = 0;
    return CUDA_SUCCESS;
}

/* The stream-ordered allocator: cuMemFreeAsync frees without cuMemFree's wait. */
CUresult cuMemAllocAsync(CUdeviceptr *d, size_t size, CUstream s)
{
    if (getenv("FAKE_CUDA_NO_ASYNC_ALLOC"))
        return CUDA_ERROR_NOT_SUPPORTED;
    return cuMemAlloc(d, size);
}

CUresult cuMemFreeAsync(CUdeviceptr d, CUstream s)
{
    return fake_free_plain(d);
}

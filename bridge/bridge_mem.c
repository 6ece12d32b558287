/* SPDX-License-Identifier: MIT */
/*
 * bridge_mem.c - the bridge's replacements of the driver's allocation functions: device
 * memory comes from vramio_alloc's pool (CUDA VMM allocations with a POSIX-fd handle type),
 * which the vulkan backend can pin, map and copy with no kernel module.
 *
 * The bridge must never break a program: whenever the pool cannot serve a request (no
 * context current, no VMM support, out of memory in the pool) the driver's own function
 * serves it, and a failure that will not go away (VMM unsupported on a GPU) stops further
 * attempts on that GPU alone.
 * What cannot stay identical to cuMemAlloc memory is listed in README.md ("Unchanged CUDA
 * programs: vramio-run").
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bridge.h"
#include "vramio.h"

/* Per GPU: the pool failed for good there, the driver serves its allocations. Ordinals past
 * the table keep no switch (each request asks the pool, which answers at once). */
#define VB_MAX_DEVICES 1024
static atomic_uchar pool_off[VB_MAX_DEVICES];
static atomic_ulong n_pool, n_driver, n_freed;
static pthread_once_t pinnable_once = PTHREAD_ONCE_INIT;
static atomic_int unpinnable;          /* no backend could pin the pool's memory here */

__attribute__((constructor)) static void bridge_init(void)
{
    const char *log = getenv("VRAMIO_BRIDGE_LOG");

    vb_log_on = log && *log && strcmp(log, "0") != 0;
    /* Pinning this memory needs the vulkan backend: enable it, unless the user said. */
    setenv("VRAMIO_ENABLE_VULKAN", "1", 0);
}

__attribute__((destructor)) static void bridge_fini(void)
{
    struct vramio_pool_stats st;

    if (!vb_log_on)
        return;
    memset(&st, 0, sizeof(st));
    vramio_pool_stats(-1, &st);
    vb_log("at exit: %lu allocations from the pool, %lu from the driver, %lu freed to the "
           "pool (%lu in stream order); live %zu small + %zu large, %zu slabs (%zu cached)",
           atomic_load(&n_pool), atomic_load(&n_driver), atomic_load(&n_freed) + vb_async_freed(),
           vb_async_freed(), st.small_allocs, st.large_allocs, st.slabs, st.cached_slabs);
}

/* Errors after which the pool will never work on that GPU in this process: the driver lacks
 * the VMM calls, the GPU has no VMM or no POSIX-fd handles, or the pool has no such GPU (past
 * its table). Not EPERM: CUDA_ERROR_NOT_PERMITTED and CUDA_ERROR_OPERATING_SYSTEM map to it,
 * and the latter comes from passing conditions (out of descriptors) as well. */
static int pool_error_is_permanent(int rc)
{
    return rc == ENOSYS || rc == EOPNOTSUPP || rc == ENOTSUP || rc == ENODEV;
}

static int off_on(CUdevice dev)
{
    return dev >= 0 && dev < VB_MAX_DEVICES &&
           atomic_load_explicit(&pool_off[dev], memory_order_relaxed);
}

/* Turn the pool off on dev: 1 the first time. */
static int turn_off(CUdevice dev)
{
    return dev >= 0 && dev < VB_MAX_DEVICES && !atomic_exchange(&pool_off[dev], 1);
}

/* Whether the pool's memory can be pinned here at all, asked at the first allocation: the
 * question gdr_open asks (the vulkan backend's confirm: a Vulkan driver, a Vulkan device for
 * every GPU, a host-visible window, VMM), so that the pool serves exactly where gdr_open will
 * succeed. Where it cannot (also: no Vulkan loader, VRAMIO_ENABLE_VULKAN=0 from the user) the
 * pool would only add its costs (2 MiB slabs, a wait at every free, IPC through a socket),
 * and a client would get NULL from gdr_open anyway: the driver serves every allocation, as
 * without vramio-run, and the program is told once. The Vulkan instance is made here, not at
 * program start: the NVIDIA driver's exit handler would break forked children of programs
 * that never touch GPU memory. */
static void check_pinnable(void)
{
    static const char prefix[] = "cannot pin: ";
    char why[320];
    const char *w = why;

    if (vramio_backend_probe(VRAMIO_BACKEND_VULKAN, why, sizeof(why)) == 0)
        return;
    atomic_store(&unpinnable, 1);
    if (strncmp(w, prefix, sizeof(prefix) - 1) == 0)
        w += sizeof(prefix) - 1;
    fprintf(stderr, "vramio-run: the vulkan backend cannot pin this program's memory (%s): "
            "the CUDA driver serves every allocation, as without vramio-run\n", w);
}

int vb_pinnable(void)
{
    pthread_once(&pinnable_once, check_pinnable);
    return !atomic_load_explicit(&unpinnable, memory_order_relaxed);
}

/* size bytes from the pool on the current context's device: 1 when served. */
static int from_pool(const struct vr_cuda *t, size_t size, CUdeviceptr *dptr, const char *who)
{
    unsigned long long p = 0;
    CUcontext ctx = NULL;
    CUdevice dev;
    int rc;

    if (!t->cuCtxGetDevice || t->cuCtxGetDevice(&dev) != CUDA_SUCCESS || off_on(dev))
        return 0; /* without a context the driver's function gives the right error */
    if (!vb_pinnable())
        return 0;
    /* Blocks freed in stream order whose streams got there go back first (bridge_async.c);
     * and what the driver answers for cuMemAlloc memory is asked once, a context being
     * current here (bridge_vmm.c). */
    vb_async_drain();
    vb_vmm_learn();
    rc = vramio_alloc((int)dev, size, &p);
    if (rc) {
        if (pool_error_is_permanent(rc) && turn_off(dev))
            vb_log("the pool cannot work on GPU %d (%s): the driver serves its allocations",
                   (int)dev, vramio_last_error());
        vb_log("%s(%zu): not from the pool (%s), from the driver", who, size,
               vramio_strerror(rc));
        return 0;
    }
    *dptr = (CUdeviceptr)p;
    /* Its free waits for the work of this context, whichever is current then. */
    if (t->cuCtxGetCurrent)
        t->cuCtxGetCurrent(&ctx);
    vb_block_add(*dptr, ctx);
    atomic_fetch_add_explicit(&n_pool, 1, memory_order_relaxed);
    vb_log("%s(%zu) = 0x%llx from the pool (GPU %d)", who, size, p, (int)dev);
    return 1;
}

CUresult vb_mem_alloc(CUdeviceptr *dptr, size_t size)
{
    const struct vr_cuda *t = vb_real();

    if (!t || !t->cuMemAlloc)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dptr && size && from_pool(t, size, dptr, "cuMemAlloc"))
        return CUDA_SUCCESS;
    atomic_fetch_add_explicit(&n_driver, 1, memory_order_relaxed);
    return t->cuMemAlloc(dptr, size);
}

/* Rows padded to the texture pitch alignment, and to 512 bytes at least (what the driver's
 * cuMemAllocPitch gives on current GPUs): any pitch of that kind is valid for 2D copies. */
CUresult vb_mem_alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                            unsigned int elem)
{
    const struct vr_cuda *t = vb_real();
    size_t align = 512, p;
    CUdevice dev;
    int a = 0;

    if (!t || !t->cuMemAllocPitch)
        return CUDA_ERROR_NOT_INITIALIZED;
    /* Bad arguments: the driver's answer is the right one. */
    if (dptr && pitch && width && height && (elem == 4 || elem == 8 || elem == 16) &&
        t->cuCtxGetDevice && t->cuCtxGetDevice(&dev) == CUDA_SUCCESS) {
        if (t->cuDeviceGetAttribute &&
            t->cuDeviceGetAttribute(&a, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, dev) ==
                CUDA_SUCCESS && a > 512 && !(a & (a - 1)))
            align = (size_t)a;
        if (width <= SIZE_MAX - align) {
            p = (width + align - 1) & ~(align - 1);
            if (height <= SIZE_MAX / p && from_pool(t, p * height, dptr, "cuMemAllocPitch")) {
                *pitch = p;
                return CUDA_SUCCESS;
            }
        }
    }
    atomic_fetch_add_explicit(&n_driver, 1, memory_order_relaxed);
    return t->cuMemAllocPitch(dptr, pitch, width, height, elem);
}

/* Wait for the work of the context the block was allocated in (the current one when the
 * bridge did not record it), made current for the wait when another one is. */
static CUresult wait_for_block(const struct vr_cuda *t, CUdeviceptr dptr)
{
    CUcontext cur = NULL, ctx = NULL, popped;
    CUresult r;

    if (!t->cuCtxSynchronize || !t->cuCtxGetCurrent || !t->cuCtxPushCurrent ||
        !t->cuCtxPopCurrent)
        return CUDA_ERROR_NOT_INITIALIZED;
    t->cuCtxGetCurrent(&cur);
    if (!vb_block_ctx(dptr, &ctx) || !ctx)
        ctx = cur;
    if (!ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx == cur)
        return t->cuCtxSynchronize();
    r = t->cuCtxPushCurrent(ctx);
    if (r != CUDA_SUCCESS)
        return r;
    r = t->cuCtxSynchronize();
    t->cuCtxPopCurrent(&popped);
    return r;
}

CUresult vb_mem_free(CUdeviceptr dptr)
{
    const struct vr_cuda *t = vb_real();
    unsigned long long base = 0;
    CUresult r;

    if (!t || !t->cuMemFree)
        return CUDA_ERROR_NOT_INITIALIZED;
    vb_async_drain();
    /* Freed with cuMemFreeAsync already, its stream not there yet: a freed pointer. */
    if (dptr && vb_async_pending(dptr))
        return CUDA_ERROR_INVALID_VALUE;
    if (dptr && vramio_alloc_range(dptr, &base, NULL) == 0 && base == dptr) {
        /* cuMemFree waits for the work that may still use the memory; the pool hands it
         * out again at once, so wait here as the driver would. When the wait fails (no
         * context, a context gone, a stream capture in progress) the block stays allocated
         * and the caller gets the error, as from the driver's cuMemFree. */
        r = wait_for_block(t, dptr);
        if (r != CUDA_SUCCESS) {
            vb_log("cuMemFree(0x%llx): waiting for its context failed (error %d): not freed",
                   (unsigned long long)dptr, (int)r);
            return r;
        }
        vb_block_forget(dptr);
        if (vramio_free(dptr) == 0) {
            atomic_fetch_add_explicit(&n_freed, 1, memory_order_relaxed);
            vb_log("cuMemFree(0x%llx) to the pool", (unsigned long long)dptr);
            return CUDA_SUCCESS;
        }
    }
    return t->cuMemFree(dptr);
}

/* A pool block's own range, as for memory of its own size from cuMemAlloc. */
CUresult vb_mem_get_address_range(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    const struct vr_cuda *t = vb_real();
    unsigned long long base = 0;
    size_t size = 0;
    int rc;

    if (!t || !t->cuMemGetAddressRange)
        return CUDA_ERROR_NOT_INITIALIZED;
    rc = vramio_alloc_range(dptr, &base, &size);
    /* A freed block: the driver's answer for a freed allocation, not the slab's range. */
    if (rc == EFAULT)
        return CUDA_ERROR_NOT_FOUND;
    /* Else a block opened from an IPC handle: its own range, not its slab's
     * (bridge_ipc_open.c); a place in its slab outside the blocks opened is no allocation. */
    if (rc) {
        rc = vb_ipc_range(dptr, &base, &size, NULL);
        if (rc == VB_IPC_UNOPENED)
            return CUDA_ERROR_NOT_FOUND;
        if (rc != 1)
            return t->cuMemGetAddressRange(pbase, psize, dptr);
    }
    if (pbase)
        *pbase = (CUdeviceptr)base;
    if (psize)
        *psize = size;
    return CUDA_SUCCESS;
}

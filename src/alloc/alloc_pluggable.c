/* SPDX-License-Identifier: MIT */
/*
 * alloc_pluggable.c - vramio_alloc behind the allocator interface that PyTorch's
 * CUDAPluggableAllocator calls (and python/vramio hands to CuPy).
 *
 * Those callers free a tensor's memory as soon as its last use is queued, not when that work
 * has run, and vramio_free hands the memory out again at once. So the free first waits for
 * every stream of the block's own GPU (its primary context, made current for the wait
 * whatever context the caller has, or none): the stream it was allocated on, and any other
 * stream that still uses it (PyTorch's record_stream, NCCL's side streams: the pluggable
 * interface never reports those). When that wait fails the block is not freed: memory that
 * may still be in use is leaked, with a warning, rather than handed out again.
 */
#include <stdint.h>
#include "alloc.h"
#include "process/cuda_ctx.h"
#include "cuda_loader.h"
#include "core/export.h"
#include "vramio.h"

VR_EXPORT void *vramio_pluggable_alloc(ssize_t size, int device, void *stream)
{
    unsigned long long p = 0;

    /* stream: the memory is usable from any stream at once */
    if (size <= 0)
        return NULL;
    if (vramio_alloc(device, (size_t)size, &p))
        return NULL;
    return (void *)(uintptr_t)p;
}

VR_EXPORT void vramio_pluggable_free(void *ptr, ssize_t size, int device, void *stream)
{
    const struct vr_cuda *cu = vr_cuda_load(NULL, 0);
    unsigned long long p = (unsigned long long)(uintptr_t)ptr;
    struct vr_cuda_ctx_guard guard;
    char why[VR_REASON_LEN];
    int gpu, rc;
    CUresult r;

    /* device: the pool knows the block's GPU */
    /* stream: every stream of that GPU is waited for */
    if (!ptr)
        return;
    gpu = vr_alloc_gpu(p);
    if (gpu < 0) {
        vr_warn("vramio_pluggable_free: %p is not vramio_alloc memory", ptr);
        return;
    }
    if (!cu || !cu->cuCtxSynchronize) {
        vr_warn("vramio_pluggable_free: no CUDA driver to wait for GPU %d; %p is not freed",
                gpu, ptr);
        return;
    }
    rc = vr_cuda_ctx_enter_device(cu, gpu, NULL, &guard, why, sizeof(why));
    if (rc) {
        vr_warn("vramio_pluggable_free: %s; %p is not freed", why, ptr);
        return;
    }
    r = cu->cuCtxSynchronize();
    vr_cuda_ctx_leave(cu, &guard);
    if (r != CUDA_SUCCESS) {
        vr_warn("vramio_pluggable_free: waiting for GPU %d failed (%s); %p is not freed", gpu,
                vr_cuda_errstr(r), ptr);
        return;
    }
    if (vramio_free(p))
        vr_warn("vramio_pluggable_free: %p is not vramio_alloc memory", ptr);
}

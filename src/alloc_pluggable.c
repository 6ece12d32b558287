/* SPDX-License-Identifier: MIT */
/*
 * alloc_pluggable.c - vramio_alloc behind the allocator interface that PyTorch's
 * CUDAPluggableAllocator calls (and python/vramio hands to CuPy).
 *
 * Those callers free a tensor's memory as soon as its last use is queued on a stream, not
 * when that work has run: the memory may be handed out again at once (vramio_free does not
 * wait), so the free first waits for the stream, which keeps a later user from seeing the
 * earlier kernel's writes.
 */
#include <stdint.h>
#include "core.h"
#include "cuda_ctx.h"
#include "cuda_loader.h"
#include "vramio.h"

VR_EXPORT void *vramio_pluggable_alloc(ssize_t size, int device, void *stream)
{
    unsigned long long p = 0;

    (void)stream; /* the memory is usable from any stream at once */
    if (size <= 0)
        return NULL;
    if (vramio_alloc(device, (size_t)size, &p))
        return NULL;
    return (void *)(uintptr_t)p;
}

VR_EXPORT void vramio_pluggable_free(void *ptr, ssize_t size, int device, void *stream)
{
    const struct vr_cuda *cu = vr_cuda_load(NULL, 0);
    struct vr_cuda_ctx_guard guard;
    char why[VR_REASON_LEN];
    CUresult r;

    (void)size;
    if (!ptr)
        return;
    if (cu && cu->cuStreamSynchronize &&
        vr_cuda_ctx_enter(cu, device < 0 ? 0 : device, &guard, why, sizeof(why)) == 0) {
        r = cu->cuStreamSynchronize((CUstream)stream);
        vr_cuda_ctx_leave(cu, &guard);
        if (r != CUDA_SUCCESS)
            vr_warn("vramio_pluggable_free: waiting for stream %p failed (%s); freeing %p "
                    "anyway", stream, vr_cuda_errstr(r), ptr);
    }
    if (vramio_free((unsigned long long)(uintptr_t)ptr))
        vr_warn("vramio_pluggable_free: %p is not vramio_alloc memory", ptr);
}

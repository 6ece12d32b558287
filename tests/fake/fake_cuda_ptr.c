// SPDX-License-Identifier: MIT
/*
 * fake_cuda_ptr.c - the second half of the stand-in libcuda.so.1 of fake_cuda_vmm.c: the
 * pointer attribute calls the dma-buf stand-in has not (several at once, SYNC_MEMOPS set), the
 * copies and memsets the bridge watches beyond the base's, legacy IPC, and the counters of the
 * base's synchronizations and copies under the names the bridge's tests know.
 *
 * SYNC_MEMOPS is settable on plain memory only (CUDA_ERROR_NOT_SUPPORTED on VMM memory, as the
 * H200's driver says). Legacy IPC: VMM memory is not capable (cuIpcGetMemHandle says
 * CUDA_ERROR_INVALID_VALUE, as the real one); this stand-in makes no handles of its own
 * (CUDA_ERROR_NOT_SUPPORTED on plain memory), so cuIpcOpenMemHandle and cuIpcCloseMemHandle
 * refuse whatever they are given.
 * Exported for the tests: fake_syncs() (cuCtxSynchronize calls), fake_syncs_on(dev) (those
 * made in a context of dev), fake_stream_syncs_on(dev), fake_legacy_syncs() (of the legacy
 * stream), fake_async_copies() (the copy engine's copies).
 */
#include <string.h>
#include "fake_cuda_base.h"

int fake_syncs(void) { return __atomic_load_n(&fake_counts.syncs, __ATOMIC_RELAXED); }
int fake_legacy_syncs(void) { return __atomic_load_n(&fake_counts.legacy_syncs, __ATOMIC_RELAXED); }
int fake_async_copies(void) { return __atomic_load_n(&fake_counts.dma_calls, __ATOMIC_RELAXED); }
int fake_syncs_on(int dev)
{
    return dev >= 0 && dev < FAKE_GPU_MAX ? fake_counts.syncs_on[dev] : 0;
}
int fake_stream_syncs_on(int dev)
{
    return dev >= 0 && dev < FAKE_GPU_MAX ? fake_counts.stream_syncs_on[dev] : 0;
}

/*
 * Several at once. CONTEXT of VMM memory (cuMemCreate's, a pool's) is NULL here, with the
 * call's success, as the real driver answers: UCX's memory-type check asks for CONTEXT with
 * three others in one call and, on an H100 (driver 580), typed the bridge's blocks as
 * stream-ordered or virtual memory for the NULL it got, while the single call of this
 * stand-in refuses CONTEXT of VMM memory.
 */
CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *a, void **data,
                                CUdeviceptr p)
{
    struct fake_range range;
    unsigned int i;
    CUresult r;

    if (!a || !data)
        return CUDA_ERROR_INVALID_VALUE;
    for (i = 0; i < n; i++) {
        if (!data[i])
            continue;
        if (a[i] == CU_POINTER_ATTRIBUTE_CONTEXT && fake_range_of((uintptr_t)p, &range) &&
            range.vmm) {
            *(CUcontext *)data[i] = NULL;
            continue;
        }
        if ((r = cuPointerGetAttribute(data[i], a[i], p)) != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

CUresult cuPointerSetAttribute(const void *v, CUpointer_attribute a, CUdeviceptr p)
{
    struct fake_range *r;
    CUresult res = CUDA_ERROR_INVALID_VALUE;
    int i;

    if (!v || a != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
        return CUDA_ERROR_INVALID_VALUE;
    fake_lock();
    i = fake_range_find((uintptr_t)p, 0);
    r = i >= 0 ? fake_range_at(i) : NULL;
    if (r && r->vmm)
        res = CUDA_ERROR_NOT_SUPPORTED;
    else if (r) {
        r->sync_memops = *(const unsigned int *)v != 0;
        res = CUDA_SUCCESS;
    }
    fake_unlock();
    return res;
}

/* Device memory is host memory here; the copies need a context, as the real ones do. */
#define NEED_CTX() \
    do { if (fake_current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT; } while (0)

CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n)
{
    NEED_CTX();
    memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n)
{
    return cuMemcpy(d, s, n);
}

/* n elements of w bytes, each a copy of v. */
static CUresult fill(CUdeviceptr d, const void *v, size_t w, size_t n)
{
    size_t i;

    NEED_CTX();
    for (i = 0; i < n; i++)
        memcpy((char *)(uintptr_t)d + w * i, v, w);
    return CUDA_SUCCESS;
}

CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) { return fill(d, &v, 2, n); }
CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n) { return fill(d, &v, 4, n); }

/* ---- legacy IPC: refused (see the top) ------------------------------------------------- */
CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p)
{
    struct fake_range r;

    if (!h || !fake_range_of((uintptr_t)p, &r) || r.vmm)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned int flags)
{
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr p)
{
    return CUDA_ERROR_INVALID_VALUE;
}

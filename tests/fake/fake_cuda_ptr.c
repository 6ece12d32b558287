// SPDX-License-Identifier: MIT
/*
 * fake_cuda_ptr.c - the second half of the stand-in libcuda.so.1 (with fake_cuda_vmm.c):
 * pointer attributes, the copies and memsets the bridge watches, and the synchronizations,
 * counted per device so that a test can tell which GPU a free waited for.
 *
 * Pointer attributes answer as the H200's driver does (tests/gpu/bridge/driver_probe.c):
 * the range and buffer id of the whole allocation (a VMM mapping, or a plain allocation),
 * SYNC_MEMOPS settable on plain memory only (CUDA_ERROR_NOT_SUPPORTED on VMM memory).
 * Legacy IPC: VMM memory is not capable (cuIpcGetMemHandle says CUDA_ERROR_INVALID_VALUE, as
 * the real one); this stand-in makes no handles of its own (CUDA_ERROR_NOT_SUPPORTED on plain
 * memory), so cuIpcOpenMemHandle and cuIpcCloseMemHandle refuse whatever they are given.
 * FAKE_CUDA_SYNC_ERROR=N: cuCtxSynchronize and cuStreamSynchronize fail with CUresult N.
 * Exported for the tests: fake_syncs() (cuCtxSynchronize calls), fake_syncs_on(dev) (those
 * made in a context of dev), fake_stream_syncs_on(dev), fake_legacy_syncs() (of the legacy
 * stream), fake_async_copies() (the copy engine's copies).
 */
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fake_gpu.h"

int fake_current_device(void);
int fake_alloc_of(uintptr_t a, uintptr_t *base, size_t *size, int *vmm, int *dev);

static int n_syncs, n_legacy, syncs_on[FAKE_GPU_MAX], stream_syncs_on[FAKE_GPU_MAX];
#define MAX_SYNC 256
static uintptr_t sync_memops[MAX_SYNC]; /* plain allocations with SYNC_MEMOPS set */

int fake_syncs(void) { return __atomic_load_n(&n_syncs, __ATOMIC_RELAXED); }
int fake_legacy_syncs(void) { return __atomic_load_n(&n_legacy, __ATOMIC_RELAXED); }
int fake_syncs_on(int dev) { return dev >= 0 && dev < FAKE_GPU_MAX ? syncs_on[dev] : 0; }
int fake_stream_syncs_on(int dev)
{
    return dev >= 0 && dev < FAKE_GPU_MAX ? stream_syncs_on[dev] : 0;
}

static CUresult sync_error(void)
{
    const char *e = getenv("FAKE_CUDA_SYNC_ERROR");

    return e && *e ? (CUresult)atoi(e) : CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
    int dev = fake_current_device();

    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (sync_error())
        return sync_error();
    __atomic_add_fetch(&n_syncs, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&syncs_on[dev], 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream s)
{
    int dev = fake_current_device();

    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (sync_error())
        return sync_error();
    if (s == CU_STREAM_LEGACY)
        __atomic_add_fetch(&n_legacy, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&stream_syncs_on[dev], 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

static int sync_slot(uintptr_t base, int add)
{
    int i, free_slot = -1;

    for (i = 0; i < MAX_SYNC; i++) {
        if (sync_memops[i] == base)
            return i;
        if (!sync_memops[i] && free_slot < 0)
            free_slot = i;
    }
    if (add && free_slot >= 0)
        sync_memops[free_slot] = base;
    return add ? free_slot : -1;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr p)
{
    uintptr_t base;
    size_t size;
    int vmm, dev;

    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fake_alloc_of((uintptr_t)p, &base, &size, &vmm, &dev))
        return CUDA_ERROR_INVALID_VALUE;
    switch (a) {
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = (CUdeviceptr)base;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = size;
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: /* one per allocation: its start will do */
        *(unsigned long long *)data = (unsigned long long)base;
        break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        *(unsigned int *)data = !vmm && sync_slot(base, 0) >= 0;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = dev;
        break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        *(int *)data = !vmm;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = CU_MEMORYTYPE_DEVICE;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *a, void **data,
                                CUdeviceptr p)
{
    unsigned int i;
    CUresult r;

    if (!a || !data)
        return CUDA_ERROR_INVALID_VALUE;
    for (i = 0; i < n; i++)
        if (data[i] && (r = cuPointerGetAttribute(data[i], a[i], p)) != CUDA_SUCCESS)
            return r;
    return CUDA_SUCCESS;
}

CUresult cuPointerSetAttribute(const void *v, CUpointer_attribute a, CUdeviceptr p)
{
    uintptr_t base;
    size_t size;
    int vmm, dev, i;

    if (!v || a != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS ||
        !fake_alloc_of((uintptr_t)p, &base, &size, &vmm, &dev))
        return CUDA_ERROR_INVALID_VALUE;
    if (vmm)
        return CUDA_ERROR_NOT_SUPPORTED;
    i = sync_slot(base, 1);
    if (i < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!*(const unsigned int *)v)
        sync_memops[i] = 0;
    return CUDA_SUCCESS;
}

/* Device memory is host memory here; the copies need a context, as the real ones do. */
#define NEED_CTX() do { if (fake_current_device() < 0) return CUDA_ERROR_INVALID_CONTEXT; } while (0)

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

/* ---- the copy engine's calls (src/dma/): streams and events are tokens, the
 * asynchronous copies are done at once, and counted -------------------------------------- */
static int n_async;
static char stream_token, event_token;

int fake_async_copies(void) { return __atomic_load_n(&n_async, __ATOMIC_RELAXED); }

CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
    *s = (CUstream)&stream_token;
    return CUDA_SUCCESS;
}
CUresult cuStreamDestroy_v2(CUstream s) { return CUDA_SUCCESS; }
CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
    *e = (CUevent)&event_token;
    return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent e, CUstream s) { return CUDA_SUCCESS; }
CUresult cuEventSynchronize(CUevent e) { return CUDA_SUCCESS; }
CUresult cuEventDestroy_v2(CUevent e) { return CUDA_SUCCESS; }

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, CUstream s)
{
    NEED_CTX();
    memcpy((void *)(uintptr_t)d, h, n);
    __atomic_add_fetch(&n_async, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, CUstream s)
{
    NEED_CTX();
    memcpy(h, (const void *)(uintptr_t)d, n);
    __atomic_add_fetch(&n_async, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

/* ---- legacy IPC: refused (see the top) ------------------------------------------------- */
CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p)
{
    uintptr_t base;
    size_t size;
    int vmm, dev;

    if (!h || !fake_alloc_of((uintptr_t)p, &base, &size, &vmm, &dev) || vmm)
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

/* SPDX-License-Identifier: MIT */
/*
 * dma_transfer.c - the move of an _auto copy (vr_dma_move): the engine or the BAR, then the
 * fence. One copy through the GPU's copy engine is waited for before it returns
 * (cuStreamSynchronize / cuEventSynchronize), on the device's private stream and in its
 * primary context, pushed for the call and popped after it so that the calling thread's
 * current context (or its lack of one) is as it was. From or to the caller's buffer directly
 * when it is page-locked CUDA host memory, else through the device's two pinned bounce
 * buffers, the CPU filling (or draining) one while the engine moves the other.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "arch/fence.h"
#include "nocancel.h"         /* util/: calls that are no cancellation points */
#include "copy/copy.h"
#include "dma.h"
#include "core/export.h"

static int cu_fail(CUresult r, const char *fn, const char *what)
{
    int err = vr_cuda_errno(r);

    return vr_fail_err(err ? err : EIO, "%s: %s failed: %s", fn, what, vr_cuda_errstr(r));
}

static int pinned_at(const struct vr_cuda *cu, const void *p)
{
    unsigned mt = 0, flags = 0;

    if (cu->cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                  (CUdeviceptr)(uintptr_t)p) == CUDA_SUCCESS)
        return mt == CU_MEMORYTYPE_HOST;
    return cu->cuMemHostGetFlags && cu->cuMemHostGetFlags(&flags, (void *)p) == CUDA_SUCCESS;
}

/*
 * Checked at both ends. The answer for the last range is kept per thread: programs copy from
 * the same buffers again and again, and the two driver queries cost about as much as a small
 * copy-engine transfer's setup. A stale answer is harmless: pageable memory handed to the
 * async copy is still copied correctly (the driver stages it), and pinned memory taken for
 * pageable only goes through the bounce buffers.
 */
int vr_dma_host_pinned(const struct vr_cuda *cu, const void *p, size_t n)
{
    static __thread const void *last_p;
    static __thread size_t last_n;
    static __thread int last;

    if (p != last_p || n != last_n) {
        last = pinned_at(cu, p) && pinned_at(cu, (const unsigned char *)p + n - 1);
        last_p = p;
        last_n = n;
    }
    return last;
}

CUresult vr_dma_engine(const struct vr_cuda *cu, struct dma_dev *d, int dir, uint64_t dev,
                       void *host, size_t n)
{
    return dir == DIR_WRITE ? cu->cuMemcpyHtoDAsync((CUdeviceptr)dev, host, n, d->stream)
                            : cu->cuMemcpyDtoHAsync(host, (CUdeviceptr)dev, n, d->stream);
}

/* Chunks through the two bounce buffers. Writes fill one buffer while
 * the engine sends the other; reads drain one while the engine fills the other. */
CUresult vr_dma_bounced(const struct vr_cuda *cu, struct dma_dev *d, int dir, uint64_t dev,
                        unsigned char *host, size_t n)
{
    size_t nchunks = (n + BOUNCE_BYTES - 1) / BOUNCE_BYTES, i;
    CUresult r = CUDA_SUCCESS;

#define CHUNK_OFF(i) ((i) * (size_t)BOUNCE_BYTES)
#define CHUNK_LEN(i) (n - CHUNK_OFF(i) < BOUNCE_BYTES ? n - CHUNK_OFF(i) : BOUNCE_BYTES)
    if (dir == DIR_WRITE) {
        for (i = 0; i < nchunks && r == CUDA_SUCCESS; i++) {
            unsigned char *b = d->bounce[i & 1];

            if (i >= 2)
                r = cu->cuEventSynchronize(d->done[i & 1]);
            if (r != CUDA_SUCCESS)
                break;
            memcpy(b, host + CHUNK_OFF(i), CHUNK_LEN(i));
            r = vr_dma_engine(cu, d, dir, dev + CHUNK_OFF(i), b, CHUNK_LEN(i));
            if (r == CUDA_SUCCESS)
                r = cu->cuEventRecord(d->done[i & 1], d->stream);
        }
        return r;
    }
    for (i = 0; i < 2 && i < nchunks && r == CUDA_SUCCESS; i++) {
        r = vr_dma_engine(cu, d, dir, dev + CHUNK_OFF(i), d->bounce[i], CHUNK_LEN(i));
        if (r == CUDA_SUCCESS)
            r = cu->cuEventRecord(d->done[i], d->stream);
    }
    for (i = 0; i < nchunks && r == CUDA_SUCCESS; i++) {
        unsigned char *b = d->bounce[i & 1];

        r = cu->cuEventSynchronize(d->done[i & 1]);
        if (r != CUDA_SUCCESS)
            break;
        memcpy(host + CHUNK_OFF(i), b, CHUNK_LEN(i));
        if (i + 2 < nchunks) {
            r = vr_dma_engine(cu, d, dir, dev + CHUNK_OFF(i + 2), b, CHUNK_LEN(i + 2));
            if (r == CUDA_SUCCESS)
                r = cu->cuEventRecord(d->done[i & 1], d->stream);
        }
    }
    return r;
#undef CHUNK_LEN
#undef CHUNK_OFF
}

/* One synchronous copy-engine copy, in d's context (pushed unless it is current already): 0,
 * the errno recorded for fn, or -1 when the driver says the device range is not memory it
 * knows (CUDA_ERROR_INVALID_VALUE: freed by the program under a persistent pin, whose mapping
 * still holds the pages), for the caller to copy through the mapping instead, as
 * gdr_copy_*_mapping would. */
static int engine_copy(const struct vr_cuda *cu, struct dma_dev *d, int dir, uint64_t dev,
                void *host, size_t n, const char *fn)
{
    CUcontext popped, cur = NULL;
    CUresult r = CUDA_SUCCESS, r2;
    const char *what = dir == DIR_WRITE ? "cuMemcpyHtoDAsync" : "cuMemcpyDtoHAsync";
    int bounce, gone, push = cu->cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != d->ctx;

    if (push && (r = cu->cuCtxPushCurrent(d->ctx)) != CUDA_SUCCESS)
        return cu_fail(r, fn, "cuCtxPushCurrent");
    bounce = !vr_dma_host_pinned(cu, host, n);
    if (bounce) {
        pthread_mutex_lock(&d->bounce_lock);
        r = vr_dma_bounced(cu, d, dir, dev, host, n);
    } else {
        r = vr_dma_engine(cu, d, dir, dev, host, n);
    }
    gone = r == CUDA_ERROR_INVALID_VALUE;
    /* Even after a failure: nothing of this copy may still be running when we return. */
    r2 = cu->cuStreamSynchronize(d->stream);
    if (bounce)
        pthread_mutex_unlock(&d->bounce_lock);
    if (r == CUDA_SUCCESS && r2 != CUDA_SUCCESS) {
        r = r2;
        what = "cuStreamSynchronize";
    }
    if (push)
        cu->cuCtxPopCurrent(&popped);
    if (gone)
        return -1;
    return r == CUDA_SUCCESS ? 0 : cu_fail(r, fn, what);
}

int vr_dma_move(const struct vr_dma_way *w, int dir, const struct vr_dma_range *r,
                unsigned char *map, unsigned char *host, size_t n, int nocancel, const char *fn)
{
    size_t done = w->done, x = w->d ? atomic_load(&w->d->crossover[dir]) : 0;
    int rc = 0;

    /* Pageable memory crosses later (engine_copy asks the same, remembered, question). */
    if (x && n - done >= x && !vr_dma_host_pinned(w->cu, host + done, n - done))
        x = atomic_load(&w->d->pageable_x[dir]);
    if (x && n - done >= x)
        rc = engine_copy(w->cu, w->d, dir, r->dev_addr + done, host + done, n - done, fn);
    /* The caller's cancellation state back before the BAR's copy: that takes no lock, and it
     * and the fences below must be the call's last acts (copy/copy.h), no call after them. */
    vr_nocancel_end(nocancel);
    if (!(x && n - done >= x) || rc < 0) {     /* the BAR's part, or all of it (engine_copy) */
        rc = 0;
        if (done < n && dir == DIR_WRITE)
            vr_copy_to_mapping(r->type, map + done, host + done, n - done);
        else if (done < n)
            vr_copy_from_mapping(r->type, host + done, map + done, n - done);
    }
    /* The engine's copy, the measurement's BAR writes and the BAR's copy alike (copy/copy.h:
     * what a copy ends with while mappings of several types are live). */
    if (r->mixed)
        vr_full_fence();
    return rc;
}

/* SPDX-License-Identifier: MIT */
/*
 * bridge_async.c - cuMemFreeAsync (cudaFreeAsync) of a bridged block: the block goes back to
 * vramio_alloc's pool in stream order, as the driver frees memory it made when the stream
 * gets there. Every other pointer is the driver's business, passed on unchanged.
 *
 * How: a host function launched on the stream (cuLaunchHostFunc) marks the block's record
 * "reached" when the stream gets there; it makes no CUDA call (the driver forbids them in a
 * host function, and returning a block may destroy its slab: cuMemUnmap, cuMemRelease). The
 * block itself goes back to the pool on a thread of the program, at the bridge's next
 * allocation or free (vb_async_drain): until then it is neither the program's (a second free
 * of it is refused with CUDA_ERROR_INVALID_VALUE, the driver's answer for a freed pointer)
 * nor reusable. A stream that never gets there (a context destroyed) keeps the block
 * allocated: never handed out while work may still use it.
 *
 * During a stream capture the call is passed to the driver as it is. A free captured into a
 * graph must free a graph allocation (the driver's rule), so for cuMemAlloc memory the driver
 * answers with an error and invalidates the capture; for the block it gives the same answer
 * (an address it did not allocate), and the block stays allocated. A host function captured
 * instead would return the block at every launch of the graph: a double free from the second.
 *
 * The per-thread-stream variant (cuMemFreeAsync_ptsz, the runtime's under
 * --default-stream per-thread) reads stream 0 as CU_STREAM_PER_THREAD.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include "bridge.h"
#include "vramio.h"

#define NBUCKETS 1024u

/* A block freed with cuMemFreeAsync, until it is back in the pool. */
struct pend {
    struct pend *next;
    CUdeviceptr base;
    atomic_int reached;        /* set by the host function: its stream got there */
};

static struct pend *buckets[NBUCKETS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int n_pending, n_reached;
static atomic_ulong n_freed_async;

static void lock_take(void) { pthread_mutex_lock(&lock); }
static void lock_drop(void) { pthread_mutex_unlock(&lock); }

/* A fork in another thread's critical section must not leave the child's lock held
 * (bridge_fork.c). The child keeps the records: its stream never gets to a host function of
 * the parent's, so those blocks stay allocated there, as the parent's pool keeps them. */
void vb_async_fork(enum vb_fork_phase phase)
{
    vb_fork_lock(&lock, phase);
}

static struct pend **slot(CUdeviceptr base)
{
    uint64_t k = (uint64_t)base >> 9;

    return &buckets[(k * 0x9e3779b97f4a7c15ull) >> 54 & (NBUCKETS - 1)];
}

/* Runs on the driver's thread when the stream reaches the free: no CUDA call, no lock. */
static void reached(void *arg)
{
    struct pend *p = arg;

    atomic_fetch_add(&n_reached, 1);   /* first: a drain that sees the mark finds it counted */
    atomic_store(&p->reached, 1);
}

void vb_async_drain(void)
{
    struct pend *done = NULL, **pp, *p;
    unsigned i;

    if (!atomic_load_explicit(&n_reached, memory_order_acquire))
        return;
    lock_take();
    for (i = 0; i < NBUCKETS; i++) {
        for (pp = &buckets[i]; (p = *pp) != NULL;) {
            if (atomic_load(&p->reached)) {
                *pp = p->next;
                p->next = done;
                done = p;
                atomic_fetch_sub(&n_reached, 1);
                atomic_fetch_sub(&n_pending, 1);
            } else {
                pp = &p->next;
            }
        }
    }
    lock_drop();
    while ((p = done) != NULL) {
        done = p->next;
        vb_block_forget(p->base);
        if (vramio_free(p->base) == 0)
            atomic_fetch_add_explicit(&n_freed_async, 1, memory_order_relaxed);
        vb_log("cuMemFreeAsync(0x%llx): back in the pool", (unsigned long long)p->base);
        free(p);
    }
}

int vb_async_pending(CUdeviceptr base)
{
    struct pend *p;

    if (!atomic_load_explicit(&n_pending, memory_order_acquire))
        return 0;
    lock_take();
    for (p = *slot(base); p && p->base != base; p = p->next)
        ;
    lock_drop();
    return p != NULL;
}

unsigned long vb_async_freed(void)
{
    return atomic_load(&n_freed_async);
}

static void unlink_pend(struct pend *x)
{
    struct pend **pp;

    lock_take();
    for (pp = slot(x->base); *pp && *pp != x; pp = &(*pp)->next)
        ;
    if (*pp) {
        *pp = x->next;
        atomic_fetch_sub(&n_pending, 1);
    }
    lock_drop();
}

/* dptr freed on stream (hs: the same stream by its explicit handle); drv: the driver's
 * function of the variant the program called. */
static CUresult free_async(CUdeviceptr dptr, CUstream stream, CUstream hs,
                           CUresult (*drv)(CUdeviceptr, CUstream))
{
    const struct vr_cuda *t = vb_real();
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    unsigned long long base = 0;
    struct pend *p, *q;
    CUresult r;

    vb_async_drain();
    if (!dptr || vramio_alloc_range(dptr, &base, NULL) != 0 || base != dptr)
        return drv(dptr, stream);
    if (!t->cuLaunchHostFunc || !t->cuStreamIsCapturing ||
        t->cuStreamIsCapturing(hs, &cap) != CUDA_SUCCESS || cap != CU_STREAM_CAPTURE_STATUS_NONE) {
        vb_log("cuMemFreeAsync(0x%llx) during a stream capture: the driver's answer, the block "
               "stays allocated", (unsigned long long)dptr);
        return drv(dptr, stream);
    }
    p = calloc(1, sizeof(*p));
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    p->base = dptr;
    lock_take();
    for (q = *slot(dptr); q && q->base != dptr; q = q->next)
        ;
    if (!q) {
        p->next = *slot(dptr);
        *slot(dptr) = p;
        atomic_fetch_add(&n_pending, 1);
    }
    lock_drop();
    if (q) { /* freed already, its stream not there yet (checked and recorded at once) */
        free(p);
        return CUDA_ERROR_INVALID_VALUE;
    }
    r = t->cuLaunchHostFunc(hs, reached, p);
    if (r != CUDA_SUCCESS) {
        /* Not in stream order: the block stays the program's, and the program gets why. */
        unlink_pend(p);
        free(p);
        vb_log("cuMemFreeAsync(0x%llx): cuLaunchHostFunc failed (error %d): not freed",
               (unsigned long long)dptr, (int)r);
        return r;
    }
    vb_log("cuMemFreeAsync(0x%llx) to the pool when its stream gets there",
           (unsigned long long)dptr);
    return CUDA_SUCCESS;
}

CUresult vb_mem_free_async(CUdeviceptr dptr, CUstream stream)
{
    const struct vr_cuda *t = vb_real();

    if (!t || !t->cuMemFreeAsync)
        return CUDA_ERROR_NOT_INITIALIZED;
    return free_async(dptr, stream, stream, t->cuMemFreeAsync);
}

CUresult vb_mem_free_async_ptsz(CUdeviceptr dptr, CUstream stream)
{
    CUresult (*drv)(CUdeviceptr, CUstream) =
        (CUresult (*)(CUdeviceptr, CUstream))vb_real_ptsz("cuMemFreeAsync", 11020);

    if (!drv)
        return CUDA_ERROR_NOT_INITIALIZED;
    return free_async(dptr, stream, stream ? stream : CU_STREAM_PER_THREAD, drv);
}

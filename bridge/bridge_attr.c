/* SPDX-License-Identifier: MIT */
/*
 * bridge_attr.c - pool blocks answer like cuMemAlloc allocations where a program can tell.
 *
 * A block lies inside a VMM allocation (a shared 2 MiB slab, or one of its own), so the
 * driver describes the VMM allocation: its range, one buffer id for every block of a slab, and
 * it refuses CU_POINTER_ATTRIBUTE_SYNC_MEMOPS (CUDA_ERROR_NOT_SUPPORTED), which GDRCopy's
 * users set on every buffer they pin. Here the bridge answers for its blocks: RANGE_START_ADDR
 * and RANGE_SIZE are the block's (as cuMemGetAddressRange says), BUFFER_ID is the block's own
 * (bridge_block_id.c), SYNC_MEMOPS can be set and reads back 1, IS_LEGACY_CUDA_IPC_CAPABLE is
 * 1 where the bridge makes the block's IPC handle (bridge_ipc.c: all but a block of more than
 * 240 chunks), and CONTEXT is the context that allocated the block.
 * A block opened from such a handle in another process answers RANGE_START_ADDR and
 * RANGE_SIZE as its own too, and CONTEXT the context it was opened in (bridge_ipc_open.c),
 * as the driver answers for an opened cuMemAlloc allocation. MEMPOOL_HANDLE
 * of stream-ordered memory that the bridge's pool served for the default pool answers the
 * default pool (bridge_mempool.c). Every other attribute is the driver's answer.
 *
 * What SYNC_MEMOPS promises, measured on an H200 (tests/gpu/bridge/driver_probe.c): on plain
 * cuMemAlloc memory a pageable cuMemcpyHtoD, a cuMemsetD8 and a cuMemcpyDtoD all return with
 * the operation still in flight on the legacy stream; with SYNC_MEMOPS set none does. VMM
 * memory behaves as plain memory without it. So the synchronous copies and memsets of the
 * driver API that touch a block with SYNC_MEMOPS set wait for the legacy stream before they
 * return, as the driver would; with no such block in the process they cost one atomic load.
 *
 * The records live from the bridge's allocation of a block to its free; a block the bridge
 * did not hand out (vramio_alloc called by the program) gets one at its first attribute call.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include "bridge.h"
#include "vramio.h"

#define NBUCKETS 4096u

struct rec {
    struct rec *next;
    CUdeviceptr base;
    CUcontext ctx;
    unsigned long long id;
    int sync_memops;
};

static struct rec *buckets[NBUCKETS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int n_sync;              /* records with SYNC_MEMOPS set */

static void lock_take(void) { pthread_mutex_lock(&lock); }
static void lock_drop(void) { pthread_mutex_unlock(&lock); }

/* A fork in another thread's critical section must not leave the child's lock held
 * (bridge_fork.c). The child keeps the records: its pool keeps the parent's blocks. Both
 * sides make the ids of their new blocks with new keys (bridge_block_id.c says why). */
void vb_block_fork(enum vb_fork_phase phase)
{
    if (phase != VB_FORK_PREPARE)
        vb_block_id_forked(); /* the lock held since the prepare phase */
    vb_fork_lock(&lock, phase);
}

static struct rec **slot(CUdeviceptr base)
{
    uint64_t k = (uint64_t)base >> 8;

    return &buckets[(k * 0x9e3779b97f4a7c15ull) >> 52 & (NBUCKETS - 1)];
}

/* The record of base (the lock held), or NULL. */
static struct rec *find(CUdeviceptr base)
{
    struct rec *r;

    for (r = *slot(base); r; r = r->next)
        if (r->base == base)
            return r;
    return NULL;
}

/* The record of base, made when missing (the lock held); NULL only without memory. */
static struct rec *get(CUdeviceptr base, CUcontext ctx)
{
    struct rec *r = find(base);

    if (r)
        return r;
    r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->base = base;
    r->ctx = ctx;
    r->id = vb_block_id_next();
    r->next = *slot(base);
    *slot(base) = r;
    return r;
}

static void unlink_rec(CUdeviceptr base)
{
    struct rec **pp = slot(base), *r;

    while ((r = *pp) && r->base != base)
        pp = &r->next;
    if (!r)
        return;
    *pp = r->next;
    if (r->sync_memops)
        atomic_fetch_sub(&n_sync, 1);
    free(r);
}

void vb_block_add(CUdeviceptr base, CUcontext ctx)
{
    lock_take();
    unlink_rec(base); /* a stale record (the block was freed with vramio_free) goes */
    get(base, ctx);
    lock_drop();
}

void vb_block_forget(CUdeviceptr base)
{
    lock_take();
    unlink_rec(base);
    lock_drop();
}

int vb_block_ctx(CUdeviceptr base, CUcontext *ctx)
{
    struct rec *r;

    lock_take();
    r = find(base);
    if (r)
        *ctx = r->ctx;
    lock_drop();
    return r != NULL;
}

int vb_block_id(CUdeviceptr base, int make, unsigned long long *id)
{
    struct rec *r;

    lock_take();
    r = make ? get(base, NULL) : find(base);
    if (r)
        *id = r->id;
    lock_drop();
    return r != NULL;
}

/* The pool block holding ptr: 1 with its start and size; 0 when the pool does not know ptr;
 * FREED when ptr lies in a freed block of a slab the pool still holds. */
#define FREED (-1)
static int block_of(CUdeviceptr ptr, CUdeviceptr *base, size_t *size)
{
    unsigned long long b = 0;
    size_t s = 0;
    int rc = ptr ? vramio_alloc_range(ptr, &b, &s) : EINVAL;

    if (rc)
        return rc == EFAULT ? FREED : 0;
    *base = (CUdeviceptr)b;
    *size = s;
    return 1;
}

/* The attributes of a block opened from an IPC handle (bridge_ipc_open.c) that differ from
 * the driver's for the slab's mapping: the range is the block's, as cuMemGetAddressRange
 * says, and CONTEXT the one it was opened in, as for an opened cuMemAlloc allocation (the
 * driver's NULL for the mapping would make UCX take it for stream-ordered memory, as it did
 * the blocks themselves: see answer()). 1 when a is one of them and ptr such a block. */
static int opened_answer(CUpointer_attribute a, void *data, CUdeviceptr ptr)
{
    CUdeviceptr base;
    CUcontext ctx = NULL;
    size_t size;

    if ((a != CU_POINTER_ATTRIBUTE_RANGE_START_ADDR && a != CU_POINTER_ATTRIBUTE_RANGE_SIZE &&
         a != CU_POINTER_ATTRIBUTE_CONTEXT) ||
        vb_ipc_range(ptr, &base, &size, &ctx) != 1)
        return 0;
    if (a == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)
        *(CUdeviceptr *)data = base;
    else if (a == CU_POINTER_ATTRIBUTE_RANGE_SIZE)
        *(size_t *)data = size;
    else if (ctx)
        *(CUcontext *)data = ctx;
    else
        return 0;               /* opened with no context current: the driver's answer */
    return 1;
}

/* The address to ask the driver about for ptr: a freed block would get the driver's answer
 * for the live slab around it (success, the slab's range) where cuMemGetAddressRange says
 * CUDA_ERROR_NOT_FOUND; NULL, an address that nothing is allocated at, gets what the driver
 * says of a freed allocation. */
static CUdeviceptr driver_view(CUdeviceptr ptr, int where)
{
    return where == FREED ? 0 : ptr;
}

/* Our answer for attribute a of the block at base: 1 when it is ours to give. */
static int answer(CUpointer_attribute a, void *data, CUdeviceptr base, size_t size)
{
    struct rec *r;
    int ok = 1;

    switch (a) {
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = base;
        return 1;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = size;
        return 1;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        /* 1 where cuIpcGetMemHandle makes the bridge's handle (bridge_ipc.c). A block of
         * more chunks than one answer carries gets the driver's refusal for VMM memory there,
         * and the driver's answer here (0): UCX's cuda_ipc, told 1, asks for a handle and
         * fails the registration, where told 0 it leaves the memory to other transports. */
        if (!vb_ipc_block_has_handle(base, size))
            return 0;
        *(int *)data = 1;
        return 1;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        /* The allocating context, as for cuMemAlloc memory. The driver's answer for the VMM
         * allocation under the block is NULL, which UCX reads as stream-ordered or virtual
         * memory ("cuda-managed": no gdr_copy, every message staged through host memory). */
        lock_take();
        r = find(base);
        if (!r || !r->ctx)
            ok = 0;
        else
            *(CUcontext *)data = r->ctx;
        lock_drop();
        return ok;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        lock_take();
        r = get(base, NULL);
        if (!r)
            ok = 0;
        else if (a == CU_POINTER_ATTRIBUTE_BUFFER_ID)
            *(unsigned long long *)data = r->id;
        else /* the driver writes an unsigned int: 1 or 0 */
            *(unsigned int *)data = r->sync_memops ? 1u : 0u;
        lock_drop();
        return ok;
    default:
        return 0;
    }
}

CUresult vb_pointer_get_attribute(void *data, CUpointer_attribute attr, CUdeviceptr ptr)
{
    const struct vr_cuda *t = vb_real();
    CUdeviceptr base;
    size_t size;
    CUresult r;
    int where;

    if (!t || !t->cuPointerGetAttribute)
        return CUDA_ERROR_NOT_INITIALIZED;
    where = block_of(ptr, &base, &size);
    if (data && where == 1 && answer(attr, data, base, size))
        return CUDA_SUCCESS;
    if (data && !where && opened_answer(attr, data, ptr))
        return CUDA_SUCCESS;
    r = t->cuPointerGetAttribute(data, attr, driver_view(ptr, where));
    if (r == CUDA_SUCCESS && data && attr == CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE)
        *(CUmemoryPool *)data = vb_mempool_program_view(*(CUmemoryPool *)data);
    return r;
}

CUresult vb_pointer_get_attributes(unsigned int n, CUpointer_attribute *attrs, void **data,
                                   CUdeviceptr ptr)
{
    const struct vr_cuda *t = vb_real();
    CUdeviceptr base = 0;
    size_t size = 0;     /* set when block_of finds a block (where == 1) */
    unsigned int i;
    CUresult r;
    int where;

    if (!t || !t->cuPointerGetAttributes)
        return CUDA_ERROR_NOT_INITIALIZED;
    /* The driver checks the arguments and fills in every attribute; ours replace its. */
    where = block_of(ptr, &base, &size);
    r = t->cuPointerGetAttributes(n, attrs, data, driver_view(ptr, where));
    if (r != CUDA_SUCCESS || !attrs || !data)
        return r;
    /* Stream-ordered memory of the pool that the bridge serves the default pool from: the
     * default pool, as the program knows it (bridge_mempool.c). */
    for (i = 0; i < n; i++)
        if (data[i] && attrs[i] == CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE)
            *(CUmemoryPool *)data[i] = vb_mempool_program_view(*(CUmemoryPool *)data[i]);
    if (where == FREED)
        return r;
    for (i = 0; i < n; i++)
        if (data[i] && where == 1)
            answer(attrs[i], data[i], base, size);
        else if (data[i])
            opened_answer(attrs[i], data[i], ptr);
    return CUDA_SUCCESS;
}

CUresult vb_pointer_set_attribute(const void *value, CUpointer_attribute attr, CUdeviceptr ptr)
{
    const struct vr_cuda *t = vb_real();
    CUdeviceptr base;
    size_t size;
    struct rec *r;
    int on, where;

    if (!t || !t->cuPointerSetAttribute)
        return CUDA_ERROR_NOT_INITIALIZED;
    where = block_of(ptr, &base, &size);
    if (attr != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS || !value || where != 1)
        return t->cuPointerSetAttribute(value, attr, driver_view(ptr, where));
    on = *(const unsigned int *)value != 0;
    lock_take();
    r = get(base, NULL);
    if (r && r->sync_memops != on) {
        r->sync_memops = on;
        atomic_fetch_add(&n_sync, on ? 1 : -1);
    }
    lock_drop();
    vb_log("cuPointerSetAttribute(SYNC_MEMOPS, 0x%llx) = %d", (unsigned long long)ptr, on);
    return r ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* Whether d lies in a block with SYNC_MEMOPS set. */
static int sync_block(CUdeviceptr d)
{
    CUdeviceptr base;
    size_t size;
    struct rec *r;
    int on = 0;

    if (block_of(d, &base, &size) != 1)
        return 0;
    lock_take();
    r = find(base);
    on = r && r->sync_memops;
    lock_drop();
    return on;
}

/* After a synchronous memory operation on the legacy stream: wait for it when it touched a
 * block with SYNC_MEMOPS set. */
static CUresult settle(CUresult r, CUdeviceptr a, CUdeviceptr b)
{
    const struct vr_cuda *t = vb_real();

    if (r != CUDA_SUCCESS || !atomic_load_explicit(&n_sync, memory_order_relaxed) ||
        !(sync_block(a) || (b && sync_block(b))))
        return r;
    return t->cuStreamSynchronize(CU_STREAM_LEGACY);
}

#define VB_REAL_OR_FAIL(fn) \
    const struct vr_cuda *t = vb_real(); \
    if (!t || !t->fn || !t->cuStreamSynchronize) \
        return CUDA_ERROR_NOT_INITIALIZED;

CUresult vb_memcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    VB_REAL_OR_FAIL(cuMemcpy)
    return settle(t->cuMemcpy(dst, src, n), dst, src);
}

CUresult vb_memcpy_htod(CUdeviceptr dst, const void *src, size_t n)
{
    VB_REAL_OR_FAIL(cuMemcpyHtoD)
    return settle(t->cuMemcpyHtoD(dst, src, n), dst, 0);
}

CUresult vb_memcpy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    VB_REAL_OR_FAIL(cuMemcpyDtoD)
    return settle(t->cuMemcpyDtoD(dst, src, n), dst, src);
}

CUresult vb_memset_d8(CUdeviceptr dst, unsigned char v, size_t n)
{
    VB_REAL_OR_FAIL(cuMemsetD8)
    return settle(t->cuMemsetD8(dst, v, n), dst, 0);
}

CUresult vb_memset_d16(CUdeviceptr dst, unsigned short v, size_t n)
{
    VB_REAL_OR_FAIL(cuMemsetD16)
    return settle(t->cuMemsetD16(dst, v, n), dst, 0);
}

CUresult vb_memset_d32(CUdeviceptr dst, unsigned int v, size_t n)
{
    VB_REAL_OR_FAIL(cuMemsetD32)
    return settle(t->cuMemsetD32(dst, v, n), dst, 0);
}

/* SPDX-License-Identifier: MIT */
/*
 * bridge_ipc.c - CUDA IPC handles (cuIpcGetMemHandle) for pool blocks, as the driver gives
 * them for cuMemAlloc memory, and the exporter's side of opening them elsewhere.
 *
 * Why: cuMemAlloc memory is legacy-IPC capable, and programs rely on it: PyTorch shares CUDA
 * tensors between processes with it, and UCX's cuda_ipc transport moves rendezvous data with
 * it. A pool block lies in a VMM allocation (a slab), which the driver's legacy IPC refuses;
 * and UCX's other route for VMM memory (the allocation's POSIX fd, mapped from its start for
 * the length cuMemGetAddressRange gives) cannot describe a block inside a slab. So the bridge
 * says IS_LEGACY_CUDA_IPC_CAPABLE for its blocks (bridge_attr.c) and makes the handles itself
 * (bridge_ipc.h: the exporting process, the slab, the block and the block's identity).
 * Opening one (bridge_ipc_open.c) asks the exporter (bridge_ipc_server.c) whether the block
 * is still the one the handle names, which is answered here: the slab must be the one
 * exported (address, size, the driver's BUFFER_ID) and still there, the block live in it at
 * the handle's offset, with its size and identity. The slab's POSIX fd goes with the answer
 * when the opener has not mapped the slab yet. Every other handle is the driver's business.
 *
 * A large block that the pool made of chunks (alloc.c) is its own slab: the handle names its
 * reservation (bridge_ipc.h, VB_IPC_MAGIC_CHUNKS), and the answer carries one POSIX fd per
 * chunk with the chunk size, the chunks found as the driver describes them (each its own
 * allocation, one after the other from the block's start), so the opener maps them side by
 * side as the pool did.
 *
 * A handle opened in a process that does not run under vramio-run reaches the real driver,
 * which refuses it with an error (CUDA_ERROR_INVALID_VALUE): a program sees a clean failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bridge_ipc.h"
#include "nocancel.h"   /* util/: calls that are no cancellation points */
#include "vramio.h"

/* ---- the exporting side ---------------------------------------------------------------- */

/* Slabs this process has handed out handles for, with the context to check them in. */
struct exported {
    struct exported *next;
    struct vb_ipc_req slab;
    CUcontext ctx;
    int chunked;             /* a pool block of chunks, its own slab */
};
static struct exported *exports;
static unsigned n_exports;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void lock_take(void) { pthread_mutex_lock(&lock); }
static void lock_drop(void) { pthread_mutex_unlock(&lock); }

/* bridge_fork.c. The child keeps the records: it keeps the parent's slabs, and its own server
 * (started at its first export) answers only the handles it makes itself. */
void vb_ipc_export_fork(enum vb_fork_phase phase)
{
    vb_fork_lock(&lock, phase);
}

/* The link to the record of slab_id, *link NULL when there is none (the lock held). */
static struct exported **exported_link(uint64_t slab_id)
{
    struct exported **pp = &exports;

    while (*pp && (*pp)->slab.id != slab_id)
        pp = &(*pp)->next;
    return pp;
}

static void forget_locked(struct exported **pp)
{
    struct exported *e = *pp;

    *pp = e->next;
    free(e);
    n_exports--;
}

/* Whether a slab is still the one its handle named: same address, size and id (ctx pushed).
 * A block of chunks: the pool's block at its address, of its size, and the driver's BUFFER_ID
 * of its first chunk, whose own range the driver answers there (a chunk, not the block). */
static int same_slab(const struct vr_cuda *t, const struct vb_ipc_req *slab, int chunked)
{
    unsigned long long id = 0, pbase = 0;
    CUdeviceptr base = 0;
    size_t size = 0, psize = 0;

    if (t->cuMemGetAddressRange(&base, &size, (CUdeviceptr)slab->base) != CUDA_SUCCESS ||
        base != slab->base ||
        t->cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                 (CUdeviceptr)slab->base) != CUDA_SUCCESS || id != slab->id)
        return 0;
    if (!chunked)
        return size == slab->size;
    return size < slab->size && !vramio_alloc_range(slab->base, &pbase, &psize) &&
           pbase == slab->base && psize == slab->size;
}

static int still_there(const struct vr_cuda *t, const struct vb_ipc_req *slab, CUcontext ctx,
                       int chunked)
{
    CUcontext popped;
    int same;

    if (!ctx || t->cuCtxPushCurrent(ctx) != CUDA_SUCCESS)
        return 0;
    same = same_slab(t, slab, chunked);
    t->cuCtxPopCurrent(&popped);
    return same;
}

/* Past this many slabs remembered, those freed since are forgotten (at the next export). */
#define PRUNE_AT 256u
static unsigned prune_at = PRUNE_AT;

/* Forget the slabs that are gone (the lock held): each is checked in its own context. */
static void prune_locked(const struct vr_cuda *t)
{
    struct exported **pp = &exports;

    while (*pp) {
        if (still_there(t, &(*pp)->slab, (*pp)->ctx, (*pp)->chunked))
            pp = &(*pp)->next;
        else
            forget_locked(pp);
    }
    prune_at = n_exports + PRUNE_AT; /* amortized: a full walk per PRUNE_AT new slabs */
}

static int remember(const struct vb_ipc_req *slab, CUcontext ctx, int chunked)
{
    struct exported *e;

    lock_take();
    e = *exported_link(slab->id);
    if (!e && n_exports >= prune_at)
        prune_locked(vb_real());
    if (!e && (e = calloc(1, sizeof(*e)))) {
        n_exports++;
        e->slab = *slab;
        e->ctx = ctx;
        e->chunked = chunked;
        e->next = exports;
        exports = e;
    }
    lock_drop();
    return e ? 0 : ENOMEM;
}

/* Whether the block req names is live, with the size and identity the handle gave it
 * (req's slab is the exported one, still there: checked before). */
static int block_still_there(const struct vb_ipc_req *req)
{
    unsigned long long base = 0, id = 0;
    size_t size = 0;

    return !vramio_alloc_range(req->base + req->offset, &base, &size) &&
           base == req->base + req->offset && size == req->bsize &&
           vb_block_id((CUdeviceptr)base, 0, &id) && id == req->block_id;
}

/* A new POSIX fd of the allocation at a, listed (see bridge_ipc_server.c): 0 or ENOENT/EIO. */
static int export_one(const struct vr_cuda *t, CUdeviceptr a, int *fd)
{
    CUmemGenericAllocationHandle h;
    CUresult r;

    if (t->cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)a) != CUDA_SUCCESS)
        return ENOENT;
    /* Made and listed in one hold of the lock that a fork takes: a fork by another thread
     * finds the fd not made yet or listed, and its child closes it (bridge_ipc_server.c).
     * Close-on-exec too (the driver's may come without it): a program that another thread
     * starts with posix_spawn or system(), which run no fork handlers, does not get it
     * (except from within the driver's call itself, which no user space code can close). */
    vb_ipc_fds_take();
    r = t->cuMemExportToShareableHandle(fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (r == CUDA_SUCCESS) {
        fcntl(*fd, F_SETFD, FD_CLOEXEC);
        if (vb_ipc_fd_list_locked(*fd)) {
            *fd = -1;
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    vb_ipc_fds_drop();
    t->cuMemRelease(h);
    return r == CUDA_SUCCESS ? 0 : EIO;
}

/* One fd per chunk of the block of chunks req names, in out (ctx pushed): the chunks as the
 * driver describes them, one after the other from the block's start, all of one size but the
 * last (the pool's layout; any other is refused). */
static int export_chunks(const struct vr_cuda *t, const struct vb_ipc_req *req,
                         struct vb_ipc_fds *out)
{
    CUdeviceptr at = (CUdeviceptr)req->base, end = at + req->size, cb = 0;
    size_t cs = 0;
    int rc = 0;

    out->chunk = 0;
    while (at < end && !rc) {
        if (t->cuMemGetAddressRange(&cb, &cs, at) != CUDA_SUCCESS || cb != at || !cs ||
            cs > end - at || (out->chunk && cs != out->chunk && at + cs != end) ||
            (out->chunk && cs > out->chunk) || out->n == VB_IPC_MAX_CHUNKS) {
            rc = out->n == VB_IPC_MAX_CHUNKS ? E2BIG : ENOENT;
            break;
        }
        if (!out->chunk)
            out->chunk = cs;
        rc = export_one(t, at, &out->fd[out->n]);
        if (!rc)
            out->n++;
        at += cs;
    }
    if (!rc && out->n < 2)
        rc = ENOENT;
    if (rc)
        while (out->n)
            vb_ipc_fd_close(out->fd[--out->n]);
    return rc;
}

static int export_chunks_in(const struct vr_cuda *t, const struct vb_ipc_req *req, CUcontext ctx,
                            struct vb_ipc_fds *out)
{
    CUcontext popped;
    int rc;

    if (t->cuCtxPushCurrent(ctx) != CUDA_SUCCESS)
        return ENOENT;
    rc = export_chunks(t, req, out);
    t->cuCtxPopCurrent(&popped);
    return rc;
}

/* The server's question: whether req's block is still there (0 or ENOENT) and, when req
 * wants them, new POSIX fds of its slab (one) or of its chunks in *out. */
static int export_fd(const struct vb_ipc_req *req, struct vb_ipc_fds *out)
{
    const struct vr_cuda *t = vb_real();
    struct exported *e;
    CUcontext ctx = NULL;
    int chunked = (req->flags & VB_IPC_CHUNKS) != 0, rc;

    if (!t)
        return ENODEV;
    if (!req->size || !req->bsize || req->offset >= req->size ||
        req->bsize > req->size - req->offset)
        return EINVAL;
    lock_take();
    e = *exported_link(req->id);
    /* A slab is asked about as it was exported: a block of chunks with VB_IPC_CHUNKS. */
    if (e && e->slab.base == req->base && e->slab.size == req->size && e->chunked == chunked)
        ctx = e->ctx;
    lock_drop();
    if (!ctx)
        return ENOENT;
    if (!still_there(t, req, ctx, chunked)) {
        struct exported **pp;

        lock_take(); /* freed since: forget it */
        pp = exported_link(req->id);
        if (*pp)
            forget_locked(pp);
        lock_drop();
        return ENOENT;
    }
    if (!block_still_there(req)) {
        vb_log("ipc: block 0x%llx for a peer: not the block of its handle (freed since)",
               (unsigned long long)(req->base + req->offset));
        return ENOENT;
    }
    if (!(req->flags & VB_IPC_WANT_FD))
        return 0;
    rc = chunked ? export_chunks_in(t, req, ctx, out) : export_one(t, (CUdeviceptr)req->base,
                                                                   &out->fd[0]);
    if (!rc && !chunked)
        out->n = 1;
    vb_log("ipc: %s 0x%llx for a peer: %s", chunked ? "block of chunks" : "slab",
           (unsigned long long)req->base,
           rc ? "export failed" : chunked ? "fds sent" : "fd sent");
    return rc;
}

/* The slab a handle names for the block [bbase, bbase + bsize): the driver's allocation
 * around it, or, for a block the pool made of chunks (the driver's allocation at its start
 * is smaller than the block), the block itself; *chunks: how many chunks of the first one's
 * size it takes (1 for a slab). */
static CUresult slab_of(const struct vr_cuda *t, CUdeviceptr bbase, size_t bsize,
                        struct vb_ipc_req *slab, int *chunked, size_t *chunks)
{
    unsigned long long id = 0;
    CUdeviceptr sbase = 0;
    size_t ssize = 0;
    CUresult r;

    r = t->cuMemGetAddressRange(&sbase, &ssize, bbase);
    if (r == CUDA_SUCCESS)
        r = t->cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, sbase);
    if (r != CUDA_SUCCESS)
        return r;
    *chunked = sbase == bbase && ssize < bsize;
    *chunks = *chunked ? (bsize + ssize - 1) / ssize : 1;
    memset(slab, 0, sizeof(*slab));
    slab->base = sbase;
    slab->id = id;
    slab->size = *chunked ? bsize : ssize;
    return CUDA_SUCCESS;
}

/* Whether a handle's fields describe slab (none fails this, VMM sizes being whole 2 MiB) and
 * one answer carries its chunks (VB_IPC_MAX_CHUNKS: 240 GiB at the default chunk size). */
static int describable(const struct vb_ipc_req *slab, size_t chunks)
{
    return !(slab->size % VB_IPC_UNIT) && slab->size / VB_IPC_UNIT <= UINT32_MAX &&
           chunks <= VB_IPC_MAX_CHUNKS;
}

int vb_ipc_block_has_handle(CUdeviceptr bbase, size_t bsize)
{
    const struct vr_cuda *t = vb_real();
    struct vb_ipc_req slab;
    size_t chunks = 1;
    int chunked = 0;

    return t && t->cuIpcGetMemHandle &&
           slab_of(t, bbase, bsize, &slab, &chunked, &chunks) == CUDA_SUCCESS &&
           describable(&slab, chunks);
}

static CUresult get_handle(CUipcMemHandle *out, CUdeviceptr dptr)
{
    const struct vr_cuda *t = vb_real();
    unsigned long long bbase = 0, block_id = 0;
    struct vb_ipc_handle h;
    struct vb_ipc_req slab;
    size_t bsize = 0, chunks = 1;
    CUcontext ctx = NULL;
    uint64_t nonce;
    int chunked = 0;
    CUresult r;

    if (!t || !t->cuIpcGetMemHandle)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!out || !dptr || vramio_alloc_range(dptr, &bbase, &bsize))
        return t->cuIpcGetMemHandle(out, dptr);
    r = slab_of(t, (CUdeviceptr)bbase, bsize, &slab, &chunked, &chunks);
    if (r == CUDA_SUCCESS)
        r = t->cuCtxGetCurrent(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    /* Otherwise the driver's answer for VMM memory, not a handle no open takes (and the
     * block's IS_LEGACY_CUDA_IPC_CAPABLE says 0: vb_ipc_block_has_handle). */
    if (!describable(&slab, chunks)) {
        vb_log("ipc: block 0x%llx (%zu bytes, %zu chunks): no handle of the bridge's", bbase,
               bsize, chunks);
        return t->cuIpcGetMemHandle(out, dptr);
    }
    if (!vb_block_id((CUdeviceptr)bbase, 1, &block_id))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (vb_ipc_server_start(export_fd, &nonce) || remember(&slab, ctx, chunked))
        return CUDA_ERROR_OPERATING_SYSTEM;
    memset(&h, 0, sizeof(h));
    h.magic = chunked ? VB_IPC_MAGIC_CHUNKS : VB_IPC_MAGIC;
    h.pid = (uint32_t)getpid();
    h.uid = (uint32_t)geteuid();
    h.nonce = nonce;
    h.slab_base = slab.base;
    h.slab_id = slab.id;
    h.slab_units = (uint32_t)(slab.size / VB_IPC_UNIT);
    h.block_id = block_id;
    h.offset = bbase - slab.base;
    h.size = bsize;
    memcpy(out, &h, sizeof(h));
    vb_log("ipc: handle of block 0x%llx (%zu bytes, %s 0x%llx + %llu)", bbase, bsize,
           chunked ? "its own chunks at" : "slab", (unsigned long long)slab.base,
           (unsigned long long)h.offset);
    return CUDA_SUCCESS;
}

/* The first handle starts the server (its lock held across a socket's bind, a close and a log
 * line, all cancellation points): cancelled there, the thread would keep the lock from every
 * later handle and from fork's handler (util/nocancel.h). */
CUresult vb_ipc_get_mem_handle(CUipcMemHandle *out, CUdeviceptr dptr)
{
    return VR_NOCANCEL(get_handle(out, dptr));
}

/* SPDX-License-Identifier: MIT */
/*
 * bridge_ipc.c - CUDA IPC handles (cuIpcGetMemHandle, cuIpcOpenMemHandle, cuIpcCloseMemHandle)
 * for pool blocks, as the driver gives them for cuMemAlloc memory.
 *
 * Why: cuMemAlloc memory is legacy-IPC capable, and programs rely on it: PyTorch shares CUDA
 * tensors between processes with it, and UCX's cuda_ipc transport moves rendezvous data with
 * it. A pool block lies in a VMM allocation (a slab), which the driver's legacy IPC refuses;
 * and UCX's other route for VMM memory (the allocation's POSIX fd, mapped from its start for
 * the length cuMemGetAddressRange gives) cannot describe a block inside a slab. So the bridge
 * says IS_LEGACY_CUDA_IPC_CAPABLE for its blocks (bridge_attr.c) and makes the handles itself:
 * a handle names the exporting process, the slab (its address and the driver's BUFFER_ID for
 * it, which a later slab at the same address does not share) and the block within it. Opening
 * one fetches the slab's POSIX fd from the exporter (bridge_ipc_server.c), maps the whole slab
 * once per device and returns the block's address in it; each open counts, as the driver's
 * do, and the last close unmaps. Every other handle and pointer is the driver's business.
 *
 * The mapping holds the slab's memory: a block freed by its owner while another process has
 * it open stays readable there (the driver calls that undefined; here it is safe).
 * A handle opened in a process that does not run under vramio-run reaches the real driver,
 * which refuses it with an error (CUDA_ERROR_INVALID_VALUE): a program sees a clean failure.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bridge.h"
#include "vramio.h"

#define VB_IPC_MAGIC 0x56524950u /* "VRIP" */

/* The handle's bytes (CUipcMemHandle's 64). */
struct handle {
    uint32_t magic;
    uint32_t pid;       /* the exporting process */
    uint64_t nonce;     /* its server's (bridge_ipc_server.c) */
    struct vb_ipc_req slab; /* the slab there: what its server is asked for */
    uint64_t offset;    /* the block, from the slab's start */
    uint64_t size;
    uint32_t uid;       /* the exporter's user: its socket's name */
    uint32_t pad;
};
_Static_assert(sizeof(struct handle) == sizeof(CUipcMemHandle), "a handle fills CUipcMemHandle");

/* ---- the exporting side ---------------------------------------------------------------- */

/* Slabs this process has handed out handles for, with the context to check them in. */
struct exported {
    struct exported *next;
    struct vb_ipc_req slab;
    CUcontext ctx;
};
static struct exported *exports;
static unsigned n_exports;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void lock_take(void) { pthread_mutex_lock(&lock); }
static void lock_drop(void) { pthread_mutex_unlock(&lock); }
static void fork_register(void) { pthread_atfork(lock_take, lock_drop, lock_drop); }

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

/* Whether a slab is still the one its handle named: same address, size and id. */
static int still_there(const struct vr_cuda *t, const struct vb_ipc_req *slab, CUcontext ctx)
{
    unsigned long long id = 0;
    CUdeviceptr base = 0;
    size_t size = 0;
    CUcontext popped;
    int same;

    if (!ctx || t->cuCtxPushCurrent(ctx) != CUDA_SUCCESS)
        return 0;
    same = t->cuMemGetAddressRange(&base, &size, (CUdeviceptr)slab->base) == CUDA_SUCCESS &&
           base == slab->base && size == slab->size &&
           t->cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                    (CUdeviceptr)slab->base) == CUDA_SUCCESS &&
           id == slab->id;
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
        if (still_there(t, &(*pp)->slab, (*pp)->ctx))
            pp = &(*pp)->next;
        else
            forget_locked(pp);
    }
    prune_at = n_exports + PRUNE_AT; /* amortized: a full walk per PRUNE_AT new slabs */
}

static int remember(const struct vb_ipc_req *slab, CUcontext ctx)
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
        e->next = exports;
        exports = e;
    }
    lock_drop();
    return e ? 0 : ENOMEM;
}

/* The server's question: a new POSIX fd of the slab req names, or a positive errno. */
static int export_fd(const struct vb_ipc_req *req, int *fd)
{
    const struct vr_cuda *t = vb_real();
    CUmemGenericAllocationHandle h;
    struct exported *e;
    CUcontext ctx = NULL;
    CUresult r;

    if (!t)
        return ENODEV;
    lock_take();
    e = *exported_link(req->id);
    if (e && e->slab.base == req->base && e->slab.size == req->size)
        ctx = e->ctx;
    lock_drop();
    if (!ctx)
        return ENOENT;
    if (!still_there(t, req, ctx)) {
        struct exported **pp;

        lock_take(); /* freed since: forget it */
        pp = exported_link(req->id);
        if (*pp)
            forget_locked(pp);
        lock_drop();
        return ENOENT;
    }
    if (t->cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)req->base) != CUDA_SUCCESS)
        return ENOENT;
    r = t->cuMemExportToShareableHandle(fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    t->cuMemRelease(h);
    vb_log("ipc: slab 0x%llx for a peer: %s", (unsigned long long)req->base,
           r == CUDA_SUCCESS ? "fd sent" : "export failed");
    return r == CUDA_SUCCESS ? 0 : EIO;
}

CUresult vb_ipc_get_mem_handle(CUipcMemHandle *out, CUdeviceptr dptr)
{
    const struct vr_cuda *t = vb_real();
    unsigned long long bbase = 0, id = 0;
    struct handle h;
    CUdeviceptr slab = 0;
    size_t bsize = 0, slab_size = 0;
    CUcontext ctx = NULL;
    uint64_t nonce;
    CUresult r;

    if (!t || !t->cuIpcGetMemHandle)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!out || !dptr || vramio_alloc_range(dptr, &bbase, &bsize))
        return t->cuIpcGetMemHandle(out, dptr);
    r = t->cuMemGetAddressRange(&slab, &slab_size, (CUdeviceptr)bbase);
    if (r == CUDA_SUCCESS)
        r = t->cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, slab);
    if (r == CUDA_SUCCESS)
        r = t->cuCtxGetCurrent(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    memset(&h, 0, sizeof(h));
    h.slab.base = slab;
    h.slab.id = id;
    h.slab.size = slab_size;
    pthread_once(&fork_once, fork_register);
    if (vb_ipc_server_start(export_fd, &nonce) || remember(&h.slab, ctx))
        return CUDA_ERROR_OPERATING_SYSTEM;
    h.magic = VB_IPC_MAGIC;
    h.pid = (uint32_t)getpid();
    h.uid = (uint32_t)geteuid();
    h.nonce = nonce;
    h.offset = bbase - slab;
    h.size = bsize;
    memcpy(out, &h, sizeof(h));
    vb_log("ipc: handle of block 0x%llx (%zu bytes, slab 0x%llx + %llu)", bbase, bsize,
           (unsigned long long)slab, (unsigned long long)h.offset);
    return CUDA_SUCCESS;
}

/* ---- the importing side ---------------------------------------------------------------- */

struct opened {              /* a block opened through a handle, with its open count */
    uint64_t offset;
    unsigned refs;
};

/* A slab of another process, mapped on one device. */
struct import {
    struct import *next;
    uint32_t pid;
    uint64_t nonce;
    struct vb_ipc_req slab;
    CUdevice dev;
    CUdeviceptr va;
    struct opened *blocks;
    unsigned nblocks, cap;
};
static struct import *imports;
/* Held across an open's request and mapping, so that two threads opening handles of one slab
 * map it once. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;

static struct import *import_find(const struct handle *h, CUdevice dev)
{
    struct import *m;

    for (m = imports; m; m = m->next)
        if (m->pid == h->pid && m->nonce == h->nonce && m->slab.id == h->slab.id &&
            m->dev == dev)
            return m;
    return NULL;
}

/* Count one more open of the block at offset: 0 or ENOMEM. */
static int import_count(struct import *m, uint64_t offset)
{
    struct opened *b;
    unsigned i;

    for (i = 0; i < m->nblocks; i++)
        if (m->blocks[i].offset == offset) {
            m->blocks[i].refs++;
            return 0;
        }
    if (m->nblocks == m->cap) {
        unsigned cap = m->cap ? 2 * m->cap : 4;

        b = realloc(m->blocks, cap * sizeof(*b));
        if (!b)
            return ENOMEM;
        m->blocks = b;
        m->cap = cap;
    }
    m->blocks[m->nblocks].offset = offset;
    m->blocks[m->nblocks++].refs = 1;
    return 0;
}

static void slab_unmap(const struct vr_cuda *t, CUdeviceptr va, size_t size)
{
    t->cuMemUnmap(va, size);
    t->cuMemAddressFree(va, size);
}

/* Map the slab h names on device dev, from a POSIX fd its exporter sends. */
static CUresult import_map(const struct vr_cuda *t, const struct handle *h, CUdevice dev,
                           CUdeviceptr *va)
{
    CUmemAccessDesc access;
    CUmemGenericAllocationHandle mh;
    CUdeviceptr p = 0;
    CUresult r;
    int fd = -1, rc;

    rc = vb_ipc_fetch(h->uid, h->pid, h->nonce, &h->slab, &fd);
    if (rc) {
        vb_log("ipc: no fd from process %u: %s", h->pid, strerror(rc));
        return CUDA_ERROR_INVALID_VALUE;
    }
    r = t->cuMemImportFromShareableHandle(&mh, (void *)(uintptr_t)fd,
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    close(fd);
    if (r != CUDA_SUCCESS)
        return r;
    r = t->cuMemAddressReserve(&p, h->slab.size, 0, 0, 0);
    if (r == CUDA_SUCCESS) {
        r = t->cuMemMap(p, h->slab.size, 0, mh, 0);
        if (r == CUDA_SUCCESS) {
            memset(&access, 0, sizeof(access));
            access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            access.location.id = dev;
            access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
            r = t->cuMemSetAccess(p, h->slab.size, &access, 1);
            if (r != CUDA_SUCCESS)
                t->cuMemUnmap(p, h->slab.size);
        }
        if (r != CUDA_SUCCESS)
            t->cuMemAddressFree(p, h->slab.size);
    }
    t->cuMemRelease(mh); /* the mapping holds the memory */
    if (r == CUDA_SUCCESS)
        *va = p;
    return r;
}

/* One more open of the block at offset, its address in *pdptr (the lock held). An import
 * whose first count fails stays mapped with no opens: the next open of its slab uses it. */
static CUresult opened_at(struct import *m, uint64_t offset, CUdeviceptr *pdptr)
{
    if (import_count(m, offset))
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pdptr = m->va + offset;
    return CUDA_SUCCESS;
}

static int ours(const struct handle *h)
{
    uint64_t n = h->slab.size;

    return h->magic == VB_IPC_MAGIC && n && h->size && h->offset < n && h->size <= n - h->offset;
}

CUresult vb_ipc_open_mem_handle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int flags)
{
    const struct vr_cuda *t = vb_real();
    struct import *m;
    struct handle h;
    CUdeviceptr va = 0;
    CUdevice dev;
    CUresult r;

    if (!t || !t->cuIpcOpenMemHandle)
        return CUDA_ERROR_NOT_INITIALIZED;
    memcpy(&h, &handle, sizeof(h));
    if (!ours(&h))
        return t->cuIpcOpenMemHandle(pdptr, handle, flags);
    if (!pdptr || (flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
        return CUDA_ERROR_INVALID_VALUE;
    if (vb_ipc_is_self(h.pid, h.nonce))
        return CUDA_ERROR_INVALID_CONTEXT; /* as the driver: not in the exporting process */
    r = t->cuCtxGetDevice(&dev);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&open_lock);
    lock_take(); /* found and counted under one hold: a close cannot free it in between */
    m = import_find(&h, dev);
    if (m)
        r = opened_at(m, h.offset, pdptr);
    lock_drop();
    if (!m) {
        r = import_map(t, &h, dev, &va);
        if (r == CUDA_SUCCESS && !(m = calloc(1, sizeof(*m)))) {
            slab_unmap(t, va, h.slab.size);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
        if (m) {
            m->pid = h.pid;
            m->nonce = h.nonce;
            m->slab = h.slab;
            m->dev = dev;
            m->va = va;
            lock_take();
            m->next = imports;
            imports = m;
            r = opened_at(m, h.offset, pdptr);
            lock_drop();
        }
    }
    pthread_mutex_unlock(&open_lock);
    vb_log("ipc: open of process %u's block (slab + %llu) = %d", h.pid,
           (unsigned long long)h.offset, (int)r);
    return r;
}

CUresult vb_ipc_close_mem_handle(CUdeviceptr dptr)
{
    const struct vr_cuda *t = vb_real();
    struct import *m, **pp;
    unsigned i, live = 0;
    int found = 0;

    if (!t || !t->cuIpcCloseMemHandle)
        return CUDA_ERROR_NOT_INITIALIZED;
    lock_take();
    for (pp = &imports; (m = *pp); pp = &m->next) {
        if (dptr < m->va || dptr - m->va >= m->slab.size)
            continue;
        for (i = 0; i < m->nblocks; i++) {
            if (!found && m->blocks[i].refs && m->va + m->blocks[i].offset == dptr) {
                m->blocks[i].refs--;
                found = 1;
            }
            live += m->blocks[i].refs;
        }
        if (found)
            break;
        live = 0;
    }
    if (found && !live)
        *pp = m->next; /* the last open of this slab: unmap it below */
    lock_drop();
    if (!found)
        return t->cuIpcCloseMemHandle(dptr);
    if (!live) {
        slab_unmap(t, m->va, m->slab.size);
        free(m->blocks);
        free(m);
    }
    return CUDA_SUCCESS;
}

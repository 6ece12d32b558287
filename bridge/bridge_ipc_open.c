/* SPDX-License-Identifier: MIT */
/*
 * bridge_ipc_open.c - the opening side of the bridge's CUDA IPC handles (bridge_ipc.h):
 * cuIpcOpenMemHandle and cuIpcCloseMemHandle of them, and what cuMemGetAddressRange and
 * the pointer attributes say of an opened block (vb_ipc_range): its own range, and the context
 * it was opened in, as the driver answers for an opened cuMemAlloc allocation.
 *
 * Opening a handle asks its exporter (bridge_ipc_server.c) whether the block is still the
 * one the handle names, and for the slab's POSIX fd when the slab is not mapped here yet on
 * this device: each slab is mapped whole, once per device, and the block's address in it is
 * returned. Each open counts, as the driver's do, and the last close of a slab's blocks
 * unmaps it. A block already open here counts again without asking (the driver finds it in
 * its own table too).
 *
 * The exporter may be another user, and a handle is only its word (issue 38: one valid
 * handle, then the same with a huge slab size and any offset, made a root opener return an
 * address in its own memory). So a handle finds an existing mapping only when it names the
 * same process, slab (address, BUFFER_ID, size) and device; the block returned must lie in
 * what was mapped here; any handle with the bridge's magic that fails this is refused with
 * CUDA_ERROR_INVALID_VALUE, as the driver refuses a bad handle.
 *
 * The mapping holds the slab's memory: a block freed by its owner while another process has
 * it open stays readable there (the driver calls that undefined; here it is safe).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bridge_ipc.h"
#include "nocancel.h"   /* util/: calls that are no cancellation points */

struct opened {              /* a block opened through a handle, with its open count */
    uint64_t offset, size, id;
    unsigned refs;
    CUcontext ctx;           /* current at its first open: its CONTEXT (bridge_attr.c) */
};

/* A slab of another process, mapped on one device. */
struct import {
    struct import *next;
    uint32_t pid, uid;
    uint64_t nonce;
    struct vb_ipc_req slab;  /* base, id and size: the slab as its handles name it */
    CUdevice dev;
    CUdeviceptr va;          /* where it is mapped here, for slab.size bytes */
    struct opened *blocks;
    unsigned nblocks, cap;
};
static struct import *imports;
static atomic_uint n_imports; /* cuMemGetAddressRange looks no further while 0 */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Held across an open's request and mapping, so that two threads opening handles of one slab
 * map it once. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;

static void lock_take(void) { pthread_mutex_lock(&lock); }
static void lock_drop(void) { pthread_mutex_unlock(&lock); }

/*
 * bridge_fork.c. A fork takes the lock of the list, so that the child finds it whole, but not
 * open_lock: that one is held while the exporter answers, and a fork must not wait for
 * another process (up to the socket's timeouts). In the child, where the thread that held it
 * is gone with its open, open_lock is made fresh: otherwise the child's first open would
 * wait for ever, where the driver's own would fail cleanly.
 * The child forgets the slabs mapped here: they are mappings of the parent's CUDA context,
 * which the child cannot use. Its open of a handle asks the exporter and the driver again (a
 * new import), whose answer it gets, as it gets the driver's without vramio-run; not the
 * parent's address.
 * Nothing is unmapped: the driver of a forked child is not called from a fork handler.
 */
void vb_ipc_open_fork(enum vb_fork_phase phase)
{
    struct import *m;

    vb_fork_lock(&lock, phase);
    if (phase != VB_FORK_CHILD)
        return;
    pthread_mutex_init(&open_lock, NULL);
    while ((m = imports)) {
        imports = m->next;
        free(m->blocks);
        free(m);
    }
    atomic_store(&n_imports, 0);
}

/* The mapping of the slab h names on dev (the lock held), or NULL. */
static struct import *import_find(const struct vb_ipc_handle *h, CUdevice dev)
{
    uint64_t size = (uint64_t)h->slab_units * VB_IPC_UNIT;
    struct import *m;

    for (m = imports; m; m = m->next)
        if (m->pid == h->pid && m->uid == h->uid && m->nonce == h->nonce &&
            m->slab.base == h->slab_base && m->slab.id == h->slab_id && m->slab.size == size &&
            m->dev == dev)
            return m;
    return NULL;
}

/* The open record of h's block in m (the lock held), or NULL. */
static struct opened *block_find(struct import *m, const struct vb_ipc_handle *h)
{
    unsigned i;

    for (i = 0; i < m->nblocks; i++)
        if (m->blocks[i].offset == h->offset && m->blocks[i].size == h->size &&
            m->blocks[i].id == h->block_id)
            return &m->blocks[i];
    return NULL;
}

/* One more open of h's block in m, its address in *pdptr (the lock held): CUDA_SUCCESS,
 * CUDA_ERROR_INVALID_VALUE for a block outside what was mapped, or CUDA_ERROR_OUT_OF_MEMORY.
 * An import whose first count fails stays mapped with no opens: the next open of its slab
 * uses it. */
static CUresult opened_at(struct import *m, const struct vb_ipc_handle *h, CUcontext ctx,
                          CUdeviceptr *pdptr)
{
    struct opened *b = block_find(m, h);

    /* Bounded by the mapping itself, whatever the handle claimed. */
    if (!h->size || h->offset >= m->slab.size || h->size > m->slab.size - h->offset)
        return CUDA_ERROR_INVALID_VALUE;
    if (!b) {
        if (m->nblocks == m->cap) {
            unsigned cap = m->cap ? 2 * m->cap : 4;

            b = realloc(m->blocks, cap * sizeof(*b));
            if (!b)
                return CUDA_ERROR_OUT_OF_MEMORY;
            m->blocks = b;
            m->cap = cap;
        }
        b = &m->blocks[m->nblocks++];
        b->offset = h->offset;
        b->size = h->size;
        b->id = h->block_id;
        b->refs = 0;
        b->ctx = ctx;
    }
    b->refs++;
    *pdptr = m->va + h->offset;
    return CUDA_SUCCESS;
}

static void slab_unmap(const struct vr_cuda *t, CUdeviceptr va, size_t size)
{
    t->cuMemUnmap(va, size);
    t->cuMemAddressFree(va, size);
}

/* Map the slab of size bytes from fd (vb_ipc_fetch's, listed: unlisted and closed here) on
 * device dev. */
static CUresult import_map(const struct vr_cuda *t, int fd, size_t size, CUdevice dev,
                           CUdeviceptr *va)
{
    CUmemAccessDesc access;
    CUmemGenericAllocationHandle mh;
    CUdeviceptr p = 0;
    CUresult r;

    r = t->cuMemImportFromShareableHandle(&mh, (void *)(uintptr_t)fd,
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    vb_ipc_fd_close(fd);
    if (r != CUDA_SUCCESS)
        return r;
    r = t->cuMemAddressReserve(&p, size, 0, 0, 0);
    if (r == CUDA_SUCCESS) {
        /* The driver maps no more than the allocation holds: the slab is that size. */
        r = t->cuMemMap(p, size, 0, mh, 0);
        if (r == CUDA_SUCCESS) {
            memset(&access, 0, sizeof(access));
            access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            access.location.id = dev;
            access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
            r = t->cuMemSetAccess(p, size, &access, 1);
            if (r != CUDA_SUCCESS)
                t->cuMemUnmap(p, size);
        }
        if (r != CUDA_SUCCESS)
            t->cuMemAddressFree(p, size);
    }
    t->cuMemRelease(mh); /* the mapping holds the memory */
    if (r == CUDA_SUCCESS)
        *va = p;
    return r;
}

/* Ask h's exporter about its block (and for the slab's fd with want): 0 or errno. */
static int ask(const struct vb_ipc_handle *h, int want, int *fd)
{
    struct vb_ipc_req req;
    int rc;

    vb_ipc_request_of(h, want ? VB_IPC_WANT_FD : 0, &req);
    rc = vb_ipc_fetch(h->uid, h->pid, h->nonce, &req, fd);
    if (rc)
        vb_log("ipc: process %u refused the block (slab 0x%llx + %llu): %s", h->pid,
               (unsigned long long)h->slab_base, (unsigned long long)h->offset, strerror(rc));
    return rc;
}

/* Unlink m (the lock held): its mapping is unmapped after the lock is dropped. */
static void import_unlink(struct import *m)
{
    struct import **pp = &imports;

    while (*pp != m)
        pp = &(*pp)->next;
    *pp = m->next;
    atomic_fetch_sub(&n_imports, 1);
}

static void import_free(const struct vr_cuda *t, struct import *m)
{
    slab_unmap(t, m->va, m->slab.size);
    free(m->blocks);
    free(m);
}

/* A new mapping of h's slab from fd (closed here), linked, with h's block counted. */
static CUresult import_new(const struct vr_cuda *t, const struct vb_ipc_handle *h, int fd,
                           CUdevice dev, CUcontext ctx, CUdeviceptr *pdptr)
{
    size_t size = (size_t)h->slab_units * VB_IPC_UNIT;
    struct import *m;
    CUdeviceptr va = 0;
    CUresult r = import_map(t, fd, size, dev, &va);

    if (r != CUDA_SUCCESS)
        return r;
    m = calloc(1, sizeof(*m));
    if (!m) {
        slab_unmap(t, va, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->pid = h->pid;
    m->uid = h->uid;
    m->nonce = h->nonce;
    vb_ipc_request_of(h, 0, &m->slab);
    m->dev = dev;
    m->va = va;
    lock_take();
    m->next = imports;
    imports = m;
    atomic_fetch_add(&n_imports, 1);
    r = opened_at(m, h, ctx, pdptr);
    if (r != CUDA_SUCCESS)
        import_unlink(m); /* no open holds it (open_lock: no other open found it) */
    lock_drop();
    if (r != CUDA_SUCCESS)
        import_free(t, m);
    return r;
}

/* One more open of h's block on dev (open_lock held). */
static CUresult open_locked(const struct vr_cuda *t, const struct vb_ipc_handle *h,
                            CUdevice dev, CUcontext ctx, CUdeviceptr *pdptr)
{
    struct import *m;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    int round, known, fd = -1;

    /* Two rounds at most: a close may unmap the slab while its exporter is asked (closes do
     * not wait on open_lock), and then the second round asks for the fd. */
    for (round = 0; round < 2; round++) {
        lock_take(); /* found and counted under one hold: a close cannot free it in between */
        m = import_find(h, dev);
        known = m && block_find(m, h);
        if (known)
            r = opened_at(m, h, ctx, pdptr);
        lock_drop();
        if (known)
            return r; /* open here already: counted again */
        if (ask(h, !m, &fd))
            return CUDA_ERROR_INVALID_VALUE;
        if (!m)
            return import_new(t, h, fd, dev, ctx, pdptr);
        lock_take();
        m = import_find(h, dev);
        if (m)
            r = opened_at(m, h, ctx, pdptr);
        lock_drop();
        if (m)
            return r;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult open_handle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int flags)
{
    const struct vr_cuda *t = vb_real();
    struct vb_ipc_handle h;
    CUcontext ctx = NULL;
    CUdevice dev;
    CUresult r;

    if (!t || !t->cuIpcOpenMemHandle)
        return CUDA_ERROR_NOT_INITIALIZED;
    memcpy(&h, &handle, sizeof(h));
    if (h.magic != VB_IPC_MAGIC)
        return t->cuIpcOpenMemHandle(pdptr, handle, flags);
    if (!vb_ipc_handle_sane(&h) || !pdptr ||
        (flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
        return CUDA_ERROR_INVALID_VALUE;
    if (vb_ipc_is_self(h.pid, h.nonce))
        return CUDA_ERROR_INVALID_CONTEXT; /* as the driver: not in the exporting process */
    r = t->cuCtxGetDevice(&dev);
    if (r == CUDA_SUCCESS && t->cuCtxGetCurrent)
        r = t->cuCtxGetCurrent(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&open_lock);
    r = open_locked(t, &h, dev, ctx, pdptr);
    pthread_mutex_unlock(&open_lock);
    vb_log("ipc: open of process %u's block (slab + %llu) = %d", h.pid,
           (unsigned long long)h.offset, (int)r);
    return r;
}

/* The import whose mapping holds ptr (the lock held), or NULL. */
static struct import *import_at(CUdeviceptr ptr)
{
    struct import *m;

    for (m = imports; m; m = m->next)
        if (ptr >= m->va && ptr - m->va < m->slab.size)
            return m;
    return NULL;
}

static CUresult close_handle(CUdeviceptr dptr)
{
    const struct vr_cuda *t = vb_real();
    struct import *m;
    unsigned i, live = 0;

    if (!t || !t->cuIpcCloseMemHandle)
        return CUDA_ERROR_NOT_INITIALIZED;
    lock_take();
    m = import_at(dptr);
    /* The last opened of the blocks at dptr: blocks at one address (one freed in the exporter
     * and another allocated in its place, both opened here) close in the reverse order. */
    for (i = m ? m->nblocks : 0; i > 0 && m->va + m->blocks[i - 1].offset != dptr; i--)
        ;
    if (!i) {
        lock_drop();
        return t->cuIpcCloseMemHandle(dptr); /* not an open block: the driver's answer */
    }
    i--;
    if (--m->blocks[i].refs == 0) { /* its record goes; the others keep their order */
        m->nblocks--;
        memmove(&m->blocks[i], &m->blocks[i + 1], (m->nblocks - i) * sizeof(m->blocks[0]));
    }
    for (i = 0; i < m->nblocks; i++)
        live += m->blocks[i].refs;
    if (!live)
        import_unlink(m); /* the last open of this slab: unmap it below */
    lock_drop();
    if (!live)
        import_free(t, m);
    return CUDA_SUCCESS;
}

/* An open holds open_lock while it waits for the exporter (connect, poll, close: cancellation
 * points): cancelled there, the thread would keep the lock from every later open in this
 * process. A close unmaps and frees the last open's import: cancelled part-way, it would leave
 * that half freed. Both run to their end (util/nocancel.h). */
CUresult vb_ipc_open_mem_handle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int flags)
{
    return VR_NOCANCEL(open_handle(pdptr, handle, flags));
}

CUresult vb_ipc_close_mem_handle(CUdeviceptr dptr)
{
    return VR_NOCANCEL(close_handle(dptr));
}

int vb_ipc_range(CUdeviceptr ptr, CUdeviceptr *base, size_t *size, CUcontext *ctx)
{
    struct import *m;
    unsigned i;
    int where = 0;

    if (!atomic_load_explicit(&n_imports, memory_order_relaxed))
        return 0;
    lock_take();
    m = import_at(ptr);
    if (m)
        where = VB_IPC_UNOPENED;
    for (i = m ? m->nblocks : 0; i-- > 0;) /* the last opened first, as a close finds them */
        if (ptr - m->va >= m->blocks[i].offset &&
            ptr - m->va - m->blocks[i].offset < m->blocks[i].size) {
            *base = m->va + m->blocks[i].offset;
            *size = m->blocks[i].size;
            if (ctx)
                *ctx = m->blocks[i].ctx;
            where = 1;
            break;
        }
    lock_drop();
    return where;
}

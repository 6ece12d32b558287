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
 *
 * A block the exporter's pool made of chunks (bridge_ipc.h, VB_IPC_MAGIC_CHUNKS) comes as one
 * fd per chunk with the chunk size: a reservation of the slab's size (what the handle names)
 * is made here and each chunk mapped at its place in it, the driver refusing a chunk claimed
 * larger than its allocation; an answer whose chunks do not fill the reservation exactly is
 * refused. So the block returned still lies in memory mapped here, every byte of it.
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
    unsigned nchunks;        /* of a block of chunks (their size: chunk), else 0 */
    uint64_t chunk;
    struct opened *blocks;
    unsigned nblocks, cap;
};
static struct import *imports;
static atomic_uint n_imports; /* cuMemGetAddressRange looks no further while 0 */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The exporters being asked: an open holds its exporter (process, user, nonce) across the
 * request and the mapping, so that two threads opening handles of one slab map it once; the
 * others of that exporter wait (asked, under lock). Per exporter, not one lock for all: an
 * exporter that never answers (another user's, whose handle a daemon was sent) held every
 * open of the process for the socket's timeout, the other users' handles too. Each record
 * lives on its opener's stack while linked. */
struct asking {
    struct asking *next;
    uint32_t pid, uid;
    uint64_t nonce;
};
static struct asking *askings;
static pthread_cond_t asked = PTHREAD_COND_INITIALIZER;

static void lock_take(void) { pthread_mutex_lock(&lock); }
static void lock_drop(void) { pthread_mutex_unlock(&lock); }

/*
 * bridge_fork.c. A fork takes the lock of the list, so that the child finds it whole; an open
 * waiting for its exporter holds no lock (its exporter is marked in askings), and a fork must
 * not wait for another process (up to the socket's timeouts). In the child, where the threads
 * asking are gone with their opens, askings is emptied and asked made fresh: otherwise the
 * child's first open of such an exporter would wait for ever, where the driver's own would
 * fail cleanly.
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
    askings = NULL;
    pthread_cond_init(&asked, NULL);
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
            m->dev == dev && (m->nchunks != 0) == vb_ipc_handle_chunked(h))
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

/* The size of chunk i of n chunks of chunk bytes that fill size bytes. */
static size_t piece_size(uint64_t chunk, unsigned i, unsigned n, size_t size)
{
    return i + 1 < n ? (size_t)chunk : size - (size_t)chunk * (n - 1);
}

/* Unmap the slab at va of size bytes (its first mapped chunks of chunk bytes, or the slab
 * whole when nchunks is 0) and free the reservation. */
static void slab_unmap(const struct vr_cuda *t, CUdeviceptr va, size_t size, unsigned nchunks,
                       uint64_t chunk, unsigned mapped)
{
    unsigned i;

    if (!nchunks)
        t->cuMemUnmap(va, size);
    for (i = 0; i < mapped; i++)
        t->cuMemUnmap(va + (CUdeviceptr)(chunk * i), piece_size(chunk, i, nchunks, size));
    t->cuMemAddressFree(va, size);
}

/* Import fd (vb_ipc_fetch's, listed: unlisted and closed here) and map size bytes of it at p
 * (reserved) for device dev. */
static CUresult map_fd_at(const struct vr_cuda *t, int fd, CUdeviceptr p, size_t size,
                          CUdevice dev)
{
    CUmemAccessDesc access;
    CUmemGenericAllocationHandle mh;
    CUresult r;

    r = t->cuMemImportFromShareableHandle(&mh, (void *)(uintptr_t)fd,
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    vb_ipc_fd_close(fd);
    if (r != CUDA_SUCCESS)
        return r;
    /* The driver maps no more than the allocation holds. */
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
    t->cuMemRelease(mh); /* the mapping holds the memory */
    return r;
}

/* Map the slab of size bytes from fd (vb_ipc_fetch's, listed: unlisted and closed here) on
 * device dev. */
static CUresult import_map(const struct vr_cuda *t, int fd, size_t size, CUdevice dev,
                           CUdeviceptr *va)
{
    CUdeviceptr p = 0;
    CUresult r;

    r = t->cuMemAddressReserve(&p, size, 0, 0, 0);
    if (r != CUDA_SUCCESS) {
        vb_ipc_fd_close(fd);
        return r;
    }
    /* The slab is the size of the allocation the exporter sent. */
    r = map_fd_at(t, fd, p, size, dev);
    if (r != CUDA_SUCCESS)
        t->cuMemAddressFree(p, size);
    else
        *va = p;
    return r;
}

/* Whether f's chunks fill size bytes exactly: all of f->chunk bytes but the last, which holds
 * the rest (at least one byte, at most a chunk). */
static int chunks_fill(const struct vb_ipc_fds *f, size_t size)
{
    uint64_t before;

    if (f->n < 2 || f->n > VB_IPC_MAX_CHUNKS || !f->chunk || f->chunk >= size)
        return 0;
    before = f->chunk * (f->n - 1); /* no overflow: chunk < size, n <= VB_IPC_MAX_CHUNKS */
    return before / (f->n - 1) == f->chunk && before < size && size - before <= f->chunk;
}

/* Map the block of chunks of size bytes from f's fds (listed: unlisted and closed here), side
 * by side in one reservation at *va, on device dev. */
static CUresult import_map_chunks(const struct vr_cuda *t, struct vb_ipc_fds *f, size_t size,
                                  CUdevice dev, CUdeviceptr *va)
{
    CUdeviceptr p = 0;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    unsigned i = 0, mapped = 0;

    if (chunks_fill(f, size))
        r = t->cuMemAddressReserve(&p, size, 0, 0, 0);
    while (r == CUDA_SUCCESS && i < f->n) {
        r = map_fd_at(t, f->fd[i], p + (CUdeviceptr)(f->chunk * i),
                      piece_size(f->chunk, i, f->n, size), dev);
        i++; /* its fd is closed, mapped or not */
        if (r == CUDA_SUCCESS)
            mapped = i;
    }
    if (r != CUDA_SUCCESS) {
        while (i < f->n)
            vb_ipc_fd_close(f->fd[i++]);
        if (p)
            slab_unmap(t, p, size, f->n, f->chunk, mapped);
        return r;
    }
    *va = p;
    return CUDA_SUCCESS;
}

/* Ask h's exporter about its block (and, with want, for the slab's fd, or its chunks' fds
 * for a block of chunks, in *f): 0 or errno. */
static int ask(const struct vb_ipc_handle *h, int want, struct vb_ipc_fds *f)
{
    struct vb_ipc_req req;
    int rc;

    f->n = 0;
    vb_ipc_request_of(h, want ? VB_IPC_WANT_FD : 0, &req);
    if (vb_ipc_handle_chunked(h)) {
        rc = vb_ipc_fetch_chunks(h->uid, h->pid, h->nonce, &req, f);
    } else {
        rc = vb_ipc_fetch(h->uid, h->pid, h->nonce, &req, &f->fd[0]);
        f->n = !rc && want;
    }
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
    slab_unmap(t, m->va, m->slab.size, m->nchunks, m->chunk, m->nchunks);
    free(m->blocks);
    free(m);
}

/* A new mapping of h's slab from f's fds (closed here), linked, with h's block counted. */
static CUresult import_new(const struct vr_cuda *t, const struct vb_ipc_handle *h,
                           struct vb_ipc_fds *f, CUdevice dev, CUcontext ctx, CUdeviceptr *pdptr)
{
    size_t size = (size_t)h->slab_units * VB_IPC_UNIT;
    unsigned nchunks = vb_ipc_handle_chunked(h) ? f->n : 0;
    struct import *m;
    CUdeviceptr va = 0;
    CUresult r = nchunks ? import_map_chunks(t, f, size, dev, &va) :
                           import_map(t, f->fd[0], size, dev, &va);

    if (r != CUDA_SUCCESS)
        return r;
    m = calloc(1, sizeof(*m));
    if (!m) {
        slab_unmap(t, va, size, nchunks, f->chunk, nchunks);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->nchunks = nchunks;
    m->chunk = f->chunk;
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
        import_unlink(m); /* no open holds it (its exporter held: no other open found it) */
    lock_drop();
    if (r != CUDA_SUCCESS)
        import_free(t, m);
    return r;
}

/* One more open of h's block on dev (its exporter held: ask_begin), with room for the
 * exporter's fds in f. */
static CUresult open_rounds(const struct vr_cuda *t, const struct vb_ipc_handle *h,
                            CUdevice dev, CUcontext ctx, struct vb_ipc_fds *f,
                            CUdeviceptr *pdptr)
{
    struct import *m;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    int round, known;

    /* Two rounds at most: a close may unmap the slab while its exporter is asked (closes do
     * not wait for its exporter's opens), and then the second round asks for the fd. */
    for (round = 0; round < 2; round++) {
        lock_take(); /* found and counted under one hold: a close cannot free it in between */
        m = import_find(h, dev);
        known = m && block_find(m, h);
        if (known)
            r = opened_at(m, h, ctx, pdptr);
        lock_drop();
        if (known)
            return r; /* open here already: counted again */
        if (ask(h, !m, f))
            return CUDA_ERROR_INVALID_VALUE;
        if (!m)
            return import_new(t, h, f, dev, ctx, pdptr);
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

/* The same, with that room from the heap. */
static CUresult open_held(const struct vr_cuda *t, const struct vb_ipc_handle *h,
                            CUdevice dev, CUcontext ctx, CUdeviceptr *pdptr)
{
    struct vb_ipc_fds *f = malloc(sizeof(*f)); /* a kilobyte: not on the program's stack */
    CUresult r;

    if (!f)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = open_rounds(t, h, dev, ctx, f, pdptr);
    free(f);
    return r;
}

/* Hold h's exporter for this open (a, on the caller's stack), once no other open holds it. */
static void ask_begin(const struct vb_ipc_handle *h, struct asking *a)
{
    struct asking *o;

    a->pid = h->pid;
    a->uid = h->uid;
    a->nonce = h->nonce;
    lock_take();
    for (;;) {
        for (o = askings; o; o = o->next)
            if (o->pid == a->pid && o->uid == a->uid && o->nonce == a->nonce)
                break;
        if (!o)
            break;
        pthread_cond_wait(&asked, &lock);
    }
    a->next = askings;
    askings = a;
    lock_drop();
}

static void ask_end(struct asking *a)
{
    struct asking **pp;

    lock_take();
    for (pp = &askings; *pp && *pp != a; pp = &(*pp)->next)
        ;
    if (*pp)
        *pp = a->next;
    pthread_cond_broadcast(&asked);
    lock_drop();
}

static CUresult open_handle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int flags)
{
    struct asking a;
    const struct vr_cuda *t = vb_real();
    struct vb_ipc_handle h;
    CUcontext ctx = NULL;
    CUdevice dev;
    CUresult r;

    if (!t || !t->cuIpcOpenMemHandle)
        return CUDA_ERROR_NOT_INITIALIZED;
    memcpy(&h, &handle, sizeof(h));
    if (h.magic != VB_IPC_MAGIC && h.magic != VB_IPC_MAGIC_CHUNKS)
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
    ask_begin(&h, &a);
    r = open_held(t, &h, dev, ctx, pdptr);
    ask_end(&a);
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

/* An open holds its exporter while it waits for it (connect, poll, close, and the wait for
 * another open of that exporter: cancellation points): cancelled there, the thread would keep
 * it from every later open of that exporter in this process. A close unmaps and frees the
 * last open's import: cancelled part-way, it would leave that half freed. Both run to their
 * end (util/nocancel.h). */
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

/* SPDX-License-Identifier: MIT */
/*
 * bridge_ipc.h - the bytes of the bridge's CUDA IPC handle (CUipcMemHandle's 64), made by
 * bridge_ipc.c in the exporting process and read by bridge_ipc_open.c in the opening one,
 * and what a handle must hold to be read at all.
 *
 * A handle names the exporting process (pid, its user, its IPC server's nonce), the slab
 * (its address there, the driver's BUFFER_ID for it, its size) and the block in it (offset,
 * size, and the block's own identity, new for each allocation: a handle of a block freed
 * since names no live block, even when another lies in its place). The identity is the one
 * field that another process of the exporter's user cannot learn or guess unless sent the
 * handle (bridge_block_id.c). Every field is the exporter's word, and the exporter may be
 * another user: the opener bounds what it returns by what it mapped itself, never by what the
 * handle claims.
 *
 * A pool block made of chunks (alloc.c: several VMM allocations side by side in one
 * reservation) has a handle of its own magic, VB_IPC_MAGIC_CHUNKS, with the same fields: its
 * slab is the block's reservation (its address, the driver's BUFFER_ID of its first chunk, its
 * size), the block at offset 0 of it. Its opener asks with VB_IPC_CHUNKS and maps one fd per
 * chunk side by side in a reservation of the slab's size: again what it returns is bounded
 * by that reservation, every byte of which it mapped itself.
 */
#ifndef VRAMIO_BRIDGE_IPC_H
#define VRAMIO_BRIDGE_IPC_H

#include <stdint.h>
#include <string.h>
#include "bridge.h"

/* "VRI2": the second layout (the first, "VRIP", had no block identity; its handles go to
 * the driver, which refuses them). */
#define VB_IPC_MAGIC 0x56524932u
/* "VRC2": a handle of a block of chunks. */
#define VB_IPC_MAGIC_CHUNKS 0x56524332u
/* The slab's size travels in these units: 32 bits of them reach 16 TiB, and VMM sizes are
 * whole multiples of the allocation granularity (2 MiB on NVIDIA's GPUs). */
#define VB_IPC_UNIT 4096u

struct vb_ipc_handle {
    uint32_t magic;
    uint32_t pid;        /* the exporting process */
    uint64_t nonce;      /* its server's (bridge_ipc_server.c) */
    uint64_t slab_base;  /* the slab there: its address, */
    uint64_t slab_id;    /* the driver's BUFFER_ID for it */
    uint64_t block_id;   /* the block: its identity (vb_block_id), */
    uint64_t offset;     /* from the slab's start, */
    uint64_t size;       /* its size (as cuMemGetAddressRange says there) */
    uint32_t uid;        /* the exporter's user: its socket's name */
    uint32_t slab_units; /* the slab's size / VB_IPC_UNIT */
};
_Static_assert(sizeof(struct vb_ipc_handle) == sizeof(CUipcMemHandle),
               "a handle fills CUipcMemHandle");

/* A handle that is the bridge's (its magic) and consistent: a process, a slab, a block of
 * at least one byte wholly inside it. The opener still bounds the block by its mapping. */
static inline int vb_ipc_handle_sane(const struct vb_ipc_handle *h)
{
    uint64_t n = (uint64_t)h->slab_units * VB_IPC_UNIT;

    return h->pid && h->slab_units && h->size && h->offset < n && h->size <= n - h->offset;
}

/* Whether h names a block of chunks (else a block in a slab). */
static inline int vb_ipc_handle_chunked(const struct vb_ipc_handle *h)
{
    return h->magic == VB_IPC_MAGIC_CHUNKS;
}

/* The request that asks the exporter about h's block (flags: VB_IPC_WANT_FD or 0;
 * VB_IPC_CHUNKS is added for a block of chunks). */
static inline void vb_ipc_request_of(const struct vb_ipc_handle *h, uint32_t flags,
                                     struct vb_ipc_req *req)
{
    memset(req, 0, sizeof(*req));
    req->base = h->slab_base;
    req->id = h->slab_id;
    req->size = (uint64_t)h->slab_units * VB_IPC_UNIT;
    req->offset = h->offset;
    req->bsize = h->size;
    req->block_id = h->block_id;
    req->flags = flags | (vb_ipc_handle_chunked(h) ? VB_IPC_CHUNKS : 0);
}

#endif /* VRAMIO_BRIDGE_IPC_H */

/* SPDX-License-Identifier: MIT */
/*
 * slab_pool.h - carving small device allocations out of larger slabs, for one GPU.
 *
 * Pure bookkeeping over addresses: where slabs come from (CUDA VMM allocations in alloc.c,
 * host memory in the unit tests) is the caller's business, through vr_slab_ops. So the whole
 * policy (size classes, alignment, reuse, the bounded cache of empty slabs, thread safety) is
 * tested on machines without a GPU.
 *
 * Requests up to small_max bytes are rounded up to a size class (multiples of 512 bytes: the
 * alignment of cudaMalloc's memory on current GPUs, which linear textures need on some of them,
 * kept by every block since every class is a multiple of 512) and carved from slabs of
 * slab_size bytes, each slab serving one class at a time.
 * Larger requests get a slab of their own, rounded up to slab_size. Every slab starts at a
 * multiple of slab_size, so the slab of any address is found by masking it. An emptied slab
 * stays cached for reuse by any class while the cache holds at most cache_bytes; beyond that
 * it is destroyed. One mutex per pool (or one the caller shares between pools); slabs are
 * made and destroyed outside it.
 *
 * A large slab may be made of several pieces side by side (alloc.c's chunked allocations:
 * several VMM allocations in one reservation), each of which the driver describes as its own;
 * the pool keeps such slabs in an address-ordered table too, so that any address in them
 * finds the whole slab without asking the driver where the piece under it starts.
 */
#ifndef VRAMIO_SLAB_POOL_H
#define VRAMIO_SLAB_POOL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct vr_slab_ops {
    /* Make size bytes of device memory starting at a multiple of the pool's slab_size: the
     * start in *base, anything the caller needs to undo it in *cookie, and in *pieces how many
     * pieces side by side it is made of (1 when left alone). 0 or a positive errno (ENOMEM
     * makes the pool release its cached slabs and try once more). */
    int (*create)(void *ctx, size_t size, uint64_t *base, void **cookie, unsigned *pieces);
    /* Undo a create: its base, size, cookie and pieces as create gave them. */
    void (*destroy)(void *ctx, uint64_t base, size_t size, void *cookie, unsigned pieces);
};

#define VR_POOL_MIN_ALIGN 512u
#define VR_POOL_CLASSES   32

struct vr_slab;

struct vr_pool {
    pthread_mutex_t *lock;       /* own_lock, or the caller's */
    pthread_mutex_t own_lock;
    const struct vr_slab_ops *ops;
    void *ctx;
    size_t slab_size;            /* a power of two */
    unsigned slab_shift;
    size_t small_max;            /* largest request carved from a shared slab */
    size_t cache_max;            /* bytes of empty slabs kept */
    unsigned nclasses;
    size_t class_size[VR_POOL_CLASSES];
    struct vr_slab *partial[VR_POOL_CLASSES];   /* slabs of a class with a free block */
    struct vr_slab *empty;                      /* cached empty slabs */
    struct vr_slab **bucket;                    /* every slab, by base >> slab_shift */
    size_t nbuckets, nslabs;
    struct vr_slab **split;                     /* slabs of several pieces, by base */
    size_t nsplit, split_cap;
    /* Statistics, under the lock. */
    size_t carved_slabs, cached_slabs, small_live, small_bytes, large_live, large_bytes;
};

struct vr_pool_stats {
    size_t slabs;         /* slabs for small requests, cached ones included */
    size_t cached_slabs;  /* of those, empty ones kept for reuse */
    size_t slab_bytes;    /* bytes of those slabs */
    size_t small_allocs;  /* live small allocations */
    size_t small_bytes;   /* their bytes, rounded to their classes */
    size_t large_allocs;  /* live allocations with a slab of their own */
    size_t large_bytes;   /* their bytes, rounded to slab_size */
};

/* slab_size: a power of two, at least 2 * VR_POOL_MIN_ALIGN; small_max is lowered to
 * slab_size / 2 when larger (a shared slab holds at least two blocks). lock: a mutex that the
 * caller owns (several pools may share it, e.g. to protect it across fork), or NULL for one
 * of the pool's own. 0 or EINVAL/ENOMEM. */
int vr_pool_init(struct vr_pool *p, const struct vr_slab_ops *ops, void *ctx, size_t slab_size,
                 size_t small_max, size_t cache_max, pthread_mutex_t *lock);

/* size bytes at *addr: 0, EINVAL (size 0 or too large), or the errno of ops->create. */
int vr_pool_alloc(struct vr_pool *p, size_t size, uint64_t *addr);

/* Give back an address that vr_pool_alloc returned: 0, or EINVAL for any other address
 * (inside a block, freed already, never ours) with nothing changed. */
int vr_pool_free(struct vr_pool *p, uint64_t addr);

/* The live allocation holding addr (its start and its rounded size): 0 or ENOENT. An
 * allocation of its own is found from an address in its first slab_size bytes only, unless
 * it is made of several pieces: then from any address in it. */
int vr_pool_find(struct vr_pool *p, uint64_t addr, uint64_t *base, size_t *size);

/* Whether addr lies in one of the pool's slabs (live, cached or partly used), even outside
 * every live block; an allocation of its own counts from its first slab_size bytes only
 * (from any address when it is made of several pieces). */
int vr_pool_owns(struct vr_pool *p, uint64_t addr);

/* Destroy the cached empty slabs; returns how many. */
size_t vr_pool_trim(struct vr_pool *p);

void vr_pool_get_stats(struct vr_pool *p, struct vr_pool_stats *st);

#endif /* VRAMIO_SLAB_POOL_H */

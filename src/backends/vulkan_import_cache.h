/* SPDX-License-Identifier: MIT */
/*
 * vulkan_import_cache.h - the vulkan backend's table of imported CUDA allocations.
 *
 * One Vulkan import (and one CPU mapping) per CUDA allocation, shared by every pin inside it
 * and released with the last. Pure bookkeeping: it knows nothing of CUDA or Vulkan, so it is
 * unit-tested on machines without a GPU. Thread-safe: the first thread to pin an allocation
 * creates a pending entry and does the (slow) import outside the lock; other threads pinning
 * the same allocation wait for it instead of importing twice, and pins of other allocations
 * are not held up. The last release leaves the entry in the table while its import is
 * released (outside the lock, slow too): a thread pinning the allocation then waits for it to
 * be gone before it imports again, so that one allocation is never imported twice at once.
 */
#ifndef VRAMIO_VK_IMPORT_CACHE_H
#define VRAMIO_VK_IMPORT_CACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* What identifies an allocation: its retained CUDA handle (which we keep referenced, so the
 * value cannot be reused while the entry lives) and where it is mapped. */
struct vr_import_key {
    uint64_t handle;   /* CUmemGenericAllocationHandle */
    uint64_t base;     /* device VA of the mapping */
    uint64_t size;     /* bytes */
};

enum vr_import_state {
    VR_IMPORT_PENDING,   /* being imported */
    VR_IMPORT_READY,     /* imported, shared by its references */
    VR_IMPORT_FAILED,    /* the import failed; out of the table */
    VR_IMPORT_RELEASING, /* no reference left; its import is being released */
};

struct vr_import {
    struct vr_import_key key;
    unsigned refs;              /* pins, plus threads waiting or importing */
    enum vr_import_state state;
    int err;                    /* of a failed import */
    /* Filled by the importing thread before vr_icache_publish(): */
    uint64_t mem;               /* VkDeviceMemory */
    void *cpu;                  /* CPU mapping of the whole allocation */
    int device;                 /* CUDA device ordinal */
    const void *owner;          /* the backend's per-device state that made the import */
    struct vr_import *next;     /* hash chain */
};

#define VR_ICACHE_BUCKETS 64

struct vr_icache {
    pthread_mutex_t lock;
    pthread_cond_t done;        /* a pending import finished */
    struct vr_import *bucket[VR_ICACHE_BUCKETS];
    size_t count;               /* entries in the table */
};

void vr_icache_init(struct vr_icache *c);
void vr_icache_destroy(struct vr_icache *c);

/*
 * Find the entry of key and take a reference. When none exists, a pending entry is made,
 * *created is set to 1, and the caller must import, fill mem/cpu and call
 * vr_icache_publish(). When another thread is importing it, this waits for the outcome.
 * 0, ENOMEM, or the errno of another thread's failed import of the same allocation.
 */
int vr_icache_acquire(struct vr_icache *c, const struct vr_import_key *key,
                      struct vr_import **entry, int *created);

/* End the import of a pending entry. err 0: the entry becomes ready. Otherwise it leaves the
 * table, waiters get err, and the creator's reference is dropped (the entry is freed when
 * no waiter holds it). */
void vr_icache_publish(struct vr_icache *c, struct vr_import *e, int err);

/* Drop a reference to a ready entry. Returns 1 when it was the last: the caller releases its
 * import, then calls vr_icache_retire() and free()s it. Until then the entry stays in the
 * table (VR_IMPORT_RELEASING) and threads acquiring its allocation wait: an import made then
 * would map the allocation a second time while the first mapping still holds its BAR space. */
int vr_icache_release(struct vr_icache *c, struct vr_import *e);

/* The import of an entry whose last reference vr_icache_release() dropped is released: the
 * entry leaves the table and those waiting to acquire its allocation go on, to import it
 * afresh. */
void vr_icache_retire(struct vr_icache *c, struct vr_import *e);

/* Unlink and return every entry still in the table, as a list through next (for close,
 * after all pins are gone and their imports retired this is empty). */
struct vr_import *vr_icache_take_all(struct vr_icache *c);

/* 1 when [va, va+len) lies inside [base, base+bsize), else 0 (no overflow on any input): a
 * pin's GPU pages inside the allocation that an entry imports. */
int vr_range_inside(uint64_t va, uint64_t len, uint64_t base, uint64_t bsize);

#endif /* VRAMIO_VK_IMPORT_CACHE_H */

/* SPDX-License-Identifier: MIT */
/* vulkan_import_cache.c - shared, reference-counted imports of CUDA allocations (see the
 * header). */
#include "vulkan_import_cache.h"

#include <errno.h>
#include <stdlib.h>

void vr_icache_init(struct vr_icache *c)
{
    size_t i;

    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->done, NULL);
    for (i = 0; i < VR_ICACHE_BUCKETS; i++)
        c->bucket[i] = NULL;
    c->count = 0;
}

void vr_icache_destroy(struct vr_icache *c)
{
    pthread_cond_destroy(&c->done);
    pthread_mutex_destroy(&c->lock);
}

static size_t bucket_of(const struct vr_import_key *k)
{
    /* Handles and bases are both 2 MiB-aligned-ish pointers: mix the high bits down. */
    uint64_t x = k->handle ^ (k->base >> 21) ^ (k->size << 11);

    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 32;
    return (size_t)(x % VR_ICACHE_BUCKETS);
}

static int same_key(const struct vr_import_key *a, const struct vr_import_key *b)
{
    return a->handle == b->handle && a->base == b->base && a->size == b->size;
}

static void unlink_locked(struct vr_icache *c, struct vr_import *e)
{
    struct vr_import **p = &c->bucket[bucket_of(&e->key)];

    while (*p && *p != e)
        p = &(*p)->next;
    if (*p) {
        *p = e->next;
        e->next = NULL;
        c->count--;
    }
}

int vr_icache_acquire(struct vr_icache *c, const struct vr_import_key *key,
                      struct vr_import **entry, int *created)
{
    struct vr_import *e;
    int err;

    *created = 0;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        for (e = c->bucket[bucket_of(key)]; e; e = e->next)
            if (same_key(&e->key, key))
                break;
        if (!e || e->state != VR_IMPORT_RELEASING)
            break;
        /* Its last pin let go and its import is being released outside the lock: wait until
         * it has left the table (and may be freed: look it up again, never touch it). */
        pthread_cond_wait(&c->done, &c->lock);
    }
    if (!e) {
        e = calloc(1, sizeof(*e));
        if (!e) {
            pthread_mutex_unlock(&c->lock);
            return ENOMEM;
        }
        e->key = *key;
        e->refs = 1;
        e->state = VR_IMPORT_PENDING;
        e->next = c->bucket[bucket_of(key)];
        c->bucket[bucket_of(key)] = e;
        c->count++;
        *created = 1;
        *entry = e;
        pthread_mutex_unlock(&c->lock);
        return 0;
    }
    e->refs++;
    while (e->state == VR_IMPORT_PENDING)
        pthread_cond_wait(&c->done, &c->lock);
    if (e->state == VR_IMPORT_READY) {
        *entry = e;
        pthread_mutex_unlock(&c->lock);
        return 0;
    }
    /* The import failed in another thread (the entry is no longer in the table). */
    err = e->err;
    if (--e->refs == 0)
        free(e);
    pthread_mutex_unlock(&c->lock);
    return err;
}

void vr_icache_publish(struct vr_icache *c, struct vr_import *e, int err)
{
    pthread_mutex_lock(&c->lock);
    if (err == 0) {
        e->state = VR_IMPORT_READY;
    } else {
        e->state = VR_IMPORT_FAILED;
        e->err = err;
        unlink_locked(c, e);
        if (--e->refs == 0)
            free(e);
    }
    pthread_cond_broadcast(&c->done);
    pthread_mutex_unlock(&c->lock);
}

int vr_icache_release(struct vr_icache *c, struct vr_import *e)
{
    int last;

    pthread_mutex_lock(&c->lock);
    last = --e->refs == 0;
    if (last)
        e->state = VR_IMPORT_RELEASING; /* no one may take it now; it stays until retired */
    pthread_mutex_unlock(&c->lock);
    return last;
}

void vr_icache_retire(struct vr_icache *c, struct vr_import *e)
{
    pthread_mutex_lock(&c->lock);
    unlink_locked(c, e);
    pthread_cond_broadcast(&c->done);
    pthread_mutex_unlock(&c->lock);
}

struct vr_import *vr_icache_take_all(struct vr_icache *c)
{
    struct vr_import *list = NULL, *e;
    size_t i;

    pthread_mutex_lock(&c->lock);
    for (i = 0; i < VR_ICACHE_BUCKETS; i++) {
        while ((e = c->bucket[i]) != NULL) {
            c->bucket[i] = e->next;
            e->next = list;
            list = e;
        }
    }
    c->count = 0;
    pthread_mutex_unlock(&c->lock);
    return list;
}

int vr_range_inside(uint64_t va, uint64_t len, uint64_t base, uint64_t bsize)
{
    if (va < base || len > bsize)
        return 0;
    return va - base <= bsize - len;
}

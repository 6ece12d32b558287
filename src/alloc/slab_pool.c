/* SPDX-License-Identifier: MIT */
/* slab_pool.c - size classes, slabs and their bitmaps, the empty-slab cache (see the header). */
#include "slab_pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CLS_OWN   (-1)   /* a large allocation's slab of its own */
#define CLS_EMPTY (-2)   /* an empty shared slab, in the cache */

struct vr_slab {
    uint64_t base;
    size_t span;
    void *cookie;
    unsigned pieces;                /* side by side, as create made them */
    int cls;
    uint32_t nblocks, nused, nwords, hint;
    struct vr_slab *hnext;          /* hash chain */
    struct vr_slab *prev, *next;    /* its class's partial list, or the cache */
    uint64_t used[];                /* one bit per block; bits past nblocks stay set */
};

static void list_push(struct vr_slab **head, struct vr_slab *s)
{
    s->prev = NULL;
    s->next = *head;
    if (*head)
        (*head)->prev = s;
    *head = s;
}

static void list_del(struct vr_slab **head, struct vr_slab *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else if (*head == s)
        *head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

static size_t hash_of(const struct vr_pool *p, uint64_t key)
{
    key *= 0x9e3779b97f4a7c15ull;
    return (size_t)(key >> 32) & (p->nbuckets - 1);
}

static struct vr_slab *lookup(const struct vr_pool *p, uint64_t addr)
{
    uint64_t key = addr >> p->slab_shift;
    struct vr_slab *s;

    for (s = p->bucket[hash_of(p, key)]; s; s = s->hnext)
        if (s->base >> p->slab_shift == key)
            return s;
    return NULL;
}

/* Keep chains short; when the larger table cannot be had, the old one still works. */
static void hash_grow(struct vr_pool *p)
{
    size_t old_n = p->nbuckets, i;
    struct vr_slab **old = p->bucket, **nb = calloc(old_n * 2, sizeof(*nb));
    struct vr_slab *s, *next;

    if (!nb)
        return;
    p->bucket = nb;
    p->nbuckets = old_n * 2;
    for (i = 0; i < old_n; i++) {
        for (s = old[i]; s; s = next) {
            size_t h = hash_of(p, s->base >> p->slab_shift);

            next = s->hnext;
            s->hnext = nb[h];
            nb[h] = s;
        }
    }
    free(old);
}

static void hash_add(struct vr_pool *p, struct vr_slab *s)
{
    size_t h;

    if (p->nslabs >= p->nbuckets * 2)
        hash_grow(p);
    h = hash_of(p, s->base >> p->slab_shift);
    s->hnext = p->bucket[h];
    p->bucket[h] = s;
    p->nslabs++;
}

static void hash_del(struct vr_pool *p, struct vr_slab *s)
{
    struct vr_slab **pp = &p->bucket[hash_of(p, s->base >> p->slab_shift)];

    while (*pp && *pp != s)
        pp = &(*pp)->hnext;
    if (*pp) {
        *pp = s->hnext;
        p->nslabs--;
    }
    s->hnext = NULL;
}

/* The index in the table of split slabs of the first whose base is above addr (the lock held). */
static size_t split_after(const struct vr_pool *p, uint64_t addr)
{
    size_t lo = 0, hi = p->nsplit;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (p->split[mid]->base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* List a slab of several pieces by its base (the lock held): 0 or ENOMEM. */
static int split_add(struct vr_pool *p, struct vr_slab *s)
{
    size_t i;

    if (p->nsplit == p->split_cap) {
        size_t cap = p->split_cap ? 2 * p->split_cap : 16;
        struct vr_slab **t = realloc(p->split, cap * sizeof(*t));

        if (!t)
            return ENOMEM;
        p->split = t;
        p->split_cap = cap;
    }
    i = split_after(p, s->base);
    memmove(&p->split[i + 1], &p->split[i], (p->nsplit - i) * sizeof(*p->split));
    p->split[i] = s;
    p->nsplit++;
    return 0;
}

static void split_del(struct vr_pool *p, struct vr_slab *s)
{
    size_t i = split_after(p, s->base);

    if (i && p->split[i - 1] == s) {
        memmove(&p->split[i - 1], &p->split[i], (p->nsplit - i) * sizeof(*p->split));
        p->nsplit--;
    }
}

/* The slab holding addr (the lock held): by its first slab_size bytes, or anywhere in one of
 * several pieces (the driver would answer the piece's own range there, not the slab's). */
static struct vr_slab *lookup_any(const struct vr_pool *p, uint64_t addr)
{
    struct vr_slab *s = lookup(p, addr);
    size_t i;

    if (s || !p->nsplit)
        return s;
    i = split_after(p, addr);
    s = i ? p->split[i - 1] : NULL;
    return s && addr - s->base < s->span ? s : NULL;
}

int vr_pool_init(struct vr_pool *p, const struct vr_slab_ops *ops, void *ctx, size_t slab_size,
                 size_t small_max, size_t cache_max, pthread_mutex_t *lock)
{
    size_t s;
    unsigned n = 0;

    memset(p, 0, sizeof(*p));
    if (!ops || !ops->create || !ops->destroy || slab_size < 2 * VR_POOL_MIN_ALIGN ||
        (slab_size & (slab_size - 1)))
        return EINVAL;
    if (small_max > slab_size / 2)
        small_max = slab_size / 2;
    /* Classes 512, 1 Ki, 1.5 Ki, 2 Ki, 3 Ki, 4 Ki, ...: beyond 1 KiB at most a third of a
     * block is lost to rounding, and every class is a multiple of 512, so every block is
     * aligned. */
    for (s = VR_POOL_MIN_ALIGN; s <= small_max && n < VR_POOL_CLASSES; s *= 2) {
        p->class_size[n++] = s;
        if (s >= 2 * VR_POOL_MIN_ALIGN && s + s / 2 <= small_max && n < VR_POOL_CLASSES)
            p->class_size[n++] = s + s / 2;
    }
    if (n == 0)
        return EINVAL;
    p->nclasses = n;
    p->small_max = p->class_size[n - 1];
    p->ops = ops;
    p->ctx = ctx;
    p->slab_size = slab_size;
    while (((size_t)1 << p->slab_shift) < slab_size)
        p->slab_shift++;
    p->cache_max = cache_max;
    p->nbuckets = 64;
    p->bucket = calloc(p->nbuckets, sizeof(*p->bucket));
    if (!p->bucket)
        return ENOMEM;
    if (lock) {
        p->lock = lock;
    } else {
        pthread_mutex_init(&p->own_lock, NULL);
        p->lock = &p->own_lock;
    }
    return 0;
}

static void slab_destroy(struct vr_pool *p, struct vr_slab *s)
{
    p->ops->destroy(p->ctx, s->base, s->span, s->cookie, s->pieces);
    free(s);
}

/* Make a slab of span bytes (outside the lock); shared slabs get a bitmap. */
static int slab_new(struct vr_pool *p, size_t span, int shared, struct vr_slab **out)
{
    uint32_t words = shared ? (uint32_t)((span / VR_POOL_MIN_ALIGN + 63) / 64) : 0;
    struct vr_slab *s = calloc(1, sizeof(*s) + words * sizeof(uint64_t));
    int rc;

    if (!s)
        return ENOMEM;
    s->pieces = 1;
    rc = p->ops->create(p->ctx, span, &s->base, &s->cookie, &s->pieces);
    if (rc == ENOMEM && vr_pool_trim(p) > 0)
        rc = p->ops->create(p->ctx, span, &s->base, &s->cookie, &s->pieces);
    if (rc) {
        free(s);
        return rc;
    }
    s->span = span;
    if (s->base & (p->slab_size - 1)) { /* the address lookup relies on the alignment */
        slab_destroy(p, s);
        return EIO;
    }
    s->cls = CLS_OWN;
    *out = s;
    return 0;
}

/* Prepare an empty shared slab for class c. */
static void carve(struct vr_pool *p, struct vr_slab *s, unsigned c)
{
    uint32_t n = (uint32_t)(s->span / p->class_size[c]), words = (n + 63) / 64;

    s->cls = (int)c;
    s->nblocks = n;
    s->nused = 0;
    s->nwords = words;
    s->hint = 0;
    memset(s->used, 0, words * sizeof(uint64_t));
    if (n % 64)
        s->used[words - 1] = ~0ull << (n % 64);
}

static uint32_t take_block(struct vr_slab *s)
{
    uint32_t w = s->hint, i;

    for (i = 0; i < s->nwords; i++, w = (w + 1 == s->nwords) ? 0 : w + 1)
        if (~s->used[w])
            break;
    s->hint = w;
    i = (uint32_t)__builtin_ctzll(~s->used[w]);
    s->used[w] |= 1ull << i;
    s->nused++;
    return w * 64 + i;
}

static int alloc_large(struct vr_pool *p, size_t size, uint64_t *addr)
{
    struct vr_slab *s;
    size_t span;
    int rc;

    if (size > SIZE_MAX - (p->slab_size - 1))
        return EINVAL;
    span = (size + p->slab_size - 1) & ~(p->slab_size - 1);
    rc = slab_new(p, span, 0, &s);
    if (rc)
        return rc;
    pthread_mutex_lock(p->lock);
    if (s->pieces > 1 && split_add(p, s)) {
        pthread_mutex_unlock(p->lock);
        slab_destroy(p, s);
        return ENOMEM;
    }
    hash_add(p, s);
    p->large_live++;
    p->large_bytes += span;
    pthread_mutex_unlock(p->lock);
    *addr = s->base;
    return 0;
}

int vr_pool_alloc(struct vr_pool *p, size_t size, uint64_t *addr)
{
    struct vr_slab *s, *fresh = NULL;
    unsigned c;
    int rc;

    if (size == 0)
        return EINVAL;
    if (size > p->small_max)
        return alloc_large(p, size, addr);
    for (c = 0; p->class_size[c] < size; c++)
        ;
    pthread_mutex_lock(p->lock);
    while (!(s = p->partial[c])) {
        if (p->empty) {
            s = p->empty;
            list_del(&p->empty, s);
            p->cached_slabs--;
        } else if (fresh) {
            s = fresh;
            fresh = NULL;
            hash_add(p, s);
            p->carved_slabs++;
        } else {
            /* Made without the lock; by the time it exists another thread may have freed
             * room, and then the new slab goes to the cache below. */
            pthread_mutex_unlock(p->lock);
            rc = slab_new(p, p->slab_size, 1, &fresh);
            if (rc)
                return rc;
            pthread_mutex_lock(p->lock);
            continue;
        }
        carve(p, s, c);
        list_push(&p->partial[c], s);
    }
    *addr = s->base + (uint64_t)take_block(s) * p->class_size[c];
    if (s->nused == s->nblocks)
        list_del(&p->partial[c], s);
    p->small_live++;
    p->small_bytes += p->class_size[c];
    if (fresh && (p->cached_slabs + 1) * p->slab_size <= p->cache_max) {
        hash_add(p, fresh);
        p->carved_slabs++;
        fresh->cls = CLS_EMPTY;
        list_push(&p->empty, fresh);
        p->cached_slabs++;
        fresh = NULL;
    }
    pthread_mutex_unlock(p->lock);
    if (fresh)
        slab_destroy(p, fresh);
    return 0;
}

/* The block index of addr in a shared slab when addr starts a live block, else -1. */
static long live_block(const struct vr_pool *p, const struct vr_slab *s, uint64_t addr, int exact)
{
    size_t cs = p->class_size[s->cls];
    uint64_t off = addr - s->base, i = off / cs;

    if ((exact && off % cs) || i >= s->nblocks || !(s->used[i / 64] & (1ull << (i % 64))))
        return -1;
    return (long)i;
}

int vr_pool_free(struct vr_pool *p, uint64_t addr)
{
    struct vr_slab *s, *gone = NULL;
    long i = -1;

    pthread_mutex_lock(p->lock);
    s = lookup(p, addr);
    if (!s || s->cls == CLS_EMPTY || (s->cls == CLS_OWN && addr != s->base) ||
        (s->cls >= 0 && (i = live_block(p, s, addr, 1)) < 0)) {
        pthread_mutex_unlock(p->lock);
        return EINVAL;
    }
    if (s->cls == CLS_OWN) {
        hash_del(p, s);
        if (s->pieces > 1)
            split_del(p, s);
        p->large_live--;
        p->large_bytes -= s->span;
        gone = s;
    } else {
        unsigned c = (unsigned)s->cls;

        s->used[i / 64] &= ~(1ull << (i % 64));
        s->hint = (uint32_t)(i / 64);
        if (s->nused-- == s->nblocks)
            list_push(&p->partial[c], s);
        p->small_live--;
        p->small_bytes -= p->class_size[c];
        if (s->nused == 0) {
            list_del(&p->partial[c], s);
            if ((p->cached_slabs + 1) * p->slab_size <= p->cache_max) {
                s->cls = CLS_EMPTY;
                list_push(&p->empty, s);
                p->cached_slabs++;
            } else {
                hash_del(p, s);
                p->carved_slabs--;
                gone = s;
            }
        }
    }
    pthread_mutex_unlock(p->lock);
    if (gone)
        slab_destroy(p, gone);
    return 0;
}

int vr_pool_find(struct vr_pool *p, uint64_t addr, uint64_t *base, size_t *size)
{
    struct vr_slab *s;
    int rc = ENOENT;
    long i = -1;

    pthread_mutex_lock(p->lock);
    s = lookup_any(p, addr);
    if (s && s->cls == CLS_OWN && addr - s->base < s->span) {
        *base = s->base;
        *size = s->span;
        rc = 0;
    } else if (s && s->cls >= 0 && (i = live_block(p, s, addr, 0)) >= 0) {
        *size = p->class_size[s->cls];
        *base = s->base + (uint64_t)i * *size;
        rc = 0;
    }
    pthread_mutex_unlock(p->lock);
    return rc;
}

int vr_pool_owns(struct vr_pool *p, uint64_t addr)
{
    int owned;

    pthread_mutex_lock(p->lock);
    owned = lookup_any(p, addr) != NULL;
    pthread_mutex_unlock(p->lock);
    return owned;
}

size_t vr_pool_trim(struct vr_pool *p)
{
    struct vr_slab *list, *s;
    size_t n = 0;

    pthread_mutex_lock(p->lock);
    list = p->empty;
    p->empty = NULL;
    for (s = list; s; s = s->next) {
        hash_del(p, s);
        p->carved_slabs--;
        p->cached_slabs--;
    }
    pthread_mutex_unlock(p->lock);
    while ((s = list) != NULL) {
        list = s->next;
        slab_destroy(p, s);
        n++;
    }
    return n;
}

void vr_pool_get_stats(struct vr_pool *p, struct vr_pool_stats *st)
{
    pthread_mutex_lock(p->lock);
    st->slabs = p->carved_slabs;
    st->cached_slabs = p->cached_slabs;
    st->slab_bytes = p->carved_slabs * p->slab_size;
    st->small_allocs = p->small_live;
    st->small_bytes = p->small_bytes;
    st->large_allocs = p->large_live;
    st->large_bytes = p->large_bytes;
    pthread_mutex_unlock(p->lock);
}

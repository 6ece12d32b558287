/* SPDX-License-Identifier: MIT */
/*
 * handles.c - the token tables behind gdr_mh_t and gdr_t (see handles.h for the encoding).
 *
 * Freed slots go to the tail of a FIFO queue and new slots come from its head, so a slot is
 * reused only after every other free slot: a stale token needs 2^23 reuses of one slot before
 * its generation could come round again.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "handles.h"
#include "process/fork.h"

#define VR_NO_SLOT UINT32_MAX

struct vr_table vr_pins = { .lock = PTHREAD_MUTEX_INITIALIZER, .free_head = VR_NO_SLOT,
                            .free_tail = VR_NO_SLOT, .tag = VR_TAG_PIN };
struct vr_table vr_gdrs = { .lock = PTHREAD_MUTEX_INITIALIZER, .free_head = VR_NO_SLOT,
                            .free_tail = VR_NO_SLOT, .tag = VR_TAG_GDR };

static _Atomic pid_t self_pid;     /* 0 until asked; cleared in a forked child */

static uint32_t slot_gen(const struct vr_slot *s)
{
    return (uint32_t)(atomic_load_explicit(&s->ver, memory_order_acquire) >> 32);
}

/*
 * Writers hold the slot lock; the sequence half of ver makes the copy path retry (seqlock).
 * The fields are stored with release (and read with acquire), instead of fences, which
 * ThreadSanitizer cannot follow: a reader that sees a new field value therefore also sees the
 * odd sequence stored before it, and retries.
 */
static void slot_write_begin(struct vr_slot *s)
{
    uint64_t v = atomic_load_explicit(&s->ver, memory_order_relaxed);

    atomic_store_explicit(&s->ver, v + 1, memory_order_relaxed);
}

/*
 * The census of live mappings: 20 bits of count per mapping type (WC, CACHING, DEVICE) and
 * VR_MAPS_MIXED, set while more than one type is live. One word, updated by compare-and-swap,
 * so the flag always agrees with the counts it was computed from, however map and unmap calls
 * of different pins interleave.
 */
_Atomic uint64_t vr_map_census;

static uint64_t census_field(int type)
{
    return 1ULL << (20 * (type - 1));
}

static void census_move(int from, int to)   /* types; 0 (none) or outside 1..3 is not counted */
{
    uint64_t old = atomic_load_explicit(&vr_map_census, memory_order_relaxed), new;
    int live, t;

    do {
        new = old & ~VR_MAPS_MIXED;
        if (from >= 1 && from <= 3)
            new -= census_field(from);
        if (to >= 1 && to <= 3)
            new += census_field(to);
        for (live = 0, t = 1; t <= 3; t++)
            live += ((new / census_field(t)) & 0xfffff) != 0;
        if (live > 1)
            new |= VR_MAPS_MIXED;
    } while (!atomic_compare_exchange_weak_explicit(&vr_map_census, &old, new,
                                                    memory_order_acq_rel, memory_order_relaxed));
}

static void slot_write_fields(struct vr_slot *s, uintptr_t base, size_t len, int type)
{
    /* Writers hold the slot lock, so the old fields are stable here. */
    int was = atomic_load_explicit(&s->map_base, memory_order_relaxed) ?
              atomic_load_explicit(&s->map_type, memory_order_relaxed) : 0;

    if (was != (base ? type : 0))
        census_move(was, base ? type : 0);
    atomic_store_explicit(&s->map_base, base, memory_order_release);
    atomic_store_explicit(&s->map_len, len, memory_order_release);
    atomic_store_explicit(&s->map_type, type, memory_order_release);
}

static void slot_write_end(struct vr_slot *s, uint32_t gen)
{
    uint64_t v = atomic_load_explicit(&s->ver, memory_order_relaxed);

    atomic_store_explicit(&s->ver, ((uint64_t)gen << 32) | (uint32_t)(v + 1),
                          memory_order_release);
}

int vr_pin_mapping(unsigned long token, struct vr_mapping *m)
{
    int rc;

    while ((rc = vr_pin_mapping_try(token, m)) == EAGAIN)
        ;   /* a writer is between its two stores of ver: a few instructions */
    return rc;
}

struct vr_slot *vr_slot_at(struct vr_table *t, uint32_t index)
{
    struct vr_slot *chunk;

    if (index > VR_TOKEN_FIELD_MASK)
        return NULL;
    chunk = atomic_load_explicit(&t->chunks[index >> VR_CHUNK_SHIFT], memory_order_acquire);
    return chunk ? &chunk[index & (VR_CHUNK_SLOTS - 1)] : NULL;
}

static int add_chunk(struct vr_table *t, uint32_t first)
{
    struct vr_slot *chunk;
    uint32_t i;

    /* Aligned as the type says (handles.h): calloc promises only 16 bytes. */
    if (posix_memalign((void **)&chunk, _Alignof(struct vr_slot), VR_CHUNK_SLOTS * sizeof(*chunk)))
        return ENOMEM;
    memset(chunk, 0, VR_CHUNK_SLOTS * sizeof(*chunk));
    for (i = 0; i < VR_CHUNK_SLOTS; i++) {
        pthread_mutex_init(&chunk[i].lock, NULL);
        pthread_cond_init(&chunk[i].idle, NULL);
        chunk[i].next_free = VR_NO_SLOT;
        chunk[i].index = first + i;
    }
    atomic_store_explicit(&t->chunks[first >> VR_CHUNK_SHIFT], chunk, memory_order_release);
    return 0;
}

/* The next slot index to use, under the table lock. */
static int take_index(struct vr_table *t, uint32_t *index)
{
    struct vr_slot *s;
    int rc;

    if (t->free_head != VR_NO_SLOT && (t->nfree > 64 || t->nslots > VR_TOKEN_FIELD_MASK)) {
        *index = t->free_head;
        s = vr_slot_at(t, *index);
        t->free_head = s->next_free;
        if (t->free_head == VR_NO_SLOT)
            t->free_tail = VR_NO_SLOT;
        t->nfree--;
        return 0;
    }
    if (t->nslots > VR_TOKEN_FIELD_MASK)
        return ENOSPC;
    if ((t->nslots & (VR_CHUNK_SLOTS - 1)) == 0) {
        rc = add_chunk(t, t->nslots);
        if (rc)
            return rc;
    }
    *index = t->nslots++;
    return 0;
}

/*
 * In the child only the forking thread exists: locks and references held by other threads of
 * the parent would never be released, and a seqlock left odd would make the copy path spin.
 * The two table locks are fork.c's (held through every fork, fresh in the child before this
 * runs), so the tables' shape is whole here; the slots' locks are made fresh below.
 * Mappings of GPU memory are not inherited (gdrdrv refuses to copy them), so the copy path of
 * the child must not see the parent's: a copy through an inherited handle is EINVAL, not a
 * SIGSEGV.
 */
static void reset_table_in_child(struct vr_table *t)
{
    struct vr_slot *s;
    uint32_t i;

    for (i = 0; i < t->nslots; i++) {
        s = vr_slot_at(t, i);
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->idle, NULL);
        s->refs = 0;
        if (atomic_load_explicit(&s->ver, memory_order_relaxed) & 1)
            atomic_fetch_add_explicit(&s->ver, 1, memory_order_relaxed);
        if (atomic_load_explicit(&s->map_base, memory_order_relaxed))
            vr_slot_set_mapping(s, NULL, 0, 0);
    }
}

static void tables_fork_child(void)
{
    atomic_store_explicit(&self_pid, 0, memory_order_relaxed);
    reset_table_in_child(&vr_pins);
    reset_table_in_child(&vr_gdrs);
    /* Every mapping is gone here, including one a thread of the parent was publishing. */
    atomic_store_explicit(&vr_map_census, 0, memory_order_relaxed);
}

/*
 * On fork.c's table when the library is loaded, before any thread can be inside it (fork.h).
 * Handlers registered at the first gdr_open, by a thread that did it during another thread's
 * fork, would be skipped in that fork's child: the child would keep the table lock the thread
 * held (its gdr_open or pin hangs) and its parent's cached pid (it takes its parent's gdr_t
 * for its own). tests/unit/wb_fork_first_use.c forks at those moments.
 */
__attribute__((constructor)) static void tables_fork_register(void)
{
    vr_fork_protect_mutex(&vr_gdrs.lock);
    vr_fork_protect_mutex(&vr_pins.lock);
    vr_fork_on_child(tables_fork_child);
}

pid_t vr_self_pid(void)
{
    pid_t pid = atomic_load_explicit(&self_pid, memory_order_relaxed);

    if (!pid) {
        pid = getpid();
        atomic_store_explicit(&self_pid, pid, memory_order_relaxed);
    }
    return pid;
}

int vr_slot_alloc(struct vr_table *t, void *obj, unsigned long owner, unsigned long *token)
{
    struct vr_slot *s;
    uint32_t index, gen;
    int rc;

    pthread_mutex_lock(&t->lock);
    rc = take_index(t, &index);
    pthread_mutex_unlock(&t->lock);
    if (rc)
        return rc;

    s = vr_slot_at(t, index);
    pthread_mutex_lock(&s->lock);
    s->obj = obj;
    s->owner = owner;
    s->refs = 0;
    s->closing = 0;
    s->next_free = VR_NO_SLOT;
    gen = slot_gen(s) + 1; /* even (free) -> odd (live) */
    slot_write_begin(s);
    slot_write_fields(s, 0, 0, 0);
    slot_write_end(s, gen);
    pthread_mutex_unlock(&s->lock);

    *token = ((unsigned long)t->tag << VR_TOKEN_TAG_SHIFT) |
             ((unsigned long)(gen & VR_TOKEN_FIELD_MASK) << VR_TOKEN_GEN_SHIFT) | index;
    return 0;
}

/* Whether a token of t names the (locked or not) slot s as it is now. */
static int token_matches(const struct vr_table *t, const struct vr_slot *s, unsigned long token)
{
    uint32_t gen = (uint32_t)(token >> VR_TOKEN_GEN_SHIFT) & VR_TOKEN_FIELD_MASK;

    return (token >> VR_TOKEN_TAG_SHIFT) == t->tag && (gen & 1) &&
           (slot_gen(s) & VR_TOKEN_FIELD_MASK) == gen;
}

struct vr_slot *vr_slot_lock(struct vr_table *t, unsigned long token)
{
    struct vr_slot *s;

    if ((token >> VR_TOKEN_TAG_SHIFT) != t->tag)
        return NULL;
    s = vr_slot_at(t, (uint32_t)(token & VR_TOKEN_FIELD_MASK));
    if (!s)
        return NULL;
    pthread_mutex_lock(&s->lock);
    if (!token_matches(t, s, token)) {
        pthread_mutex_unlock(&s->lock);
        return NULL;
    }
    return s;
}

void vr_slot_unlock(struct vr_slot *s)
{
    pthread_mutex_unlock(&s->lock);
}

void vr_slot_set_mapping(struct vr_slot *s, void *base, size_t len, int type)
{
    slot_write_begin(s);
    slot_write_fields(s, (uintptr_t)base, base ? len : 0, base ? type : 0);
    slot_write_end(s, slot_gen(s));
}

void vr_slot_free_locked(struct vr_table *t, struct vr_slot *s)
{
    uint32_t index = s->index;

    slot_write_begin(s);
    slot_write_fields(s, 0, 0, 0);
    slot_write_end(s, slot_gen(s) + 1); /* odd (live) -> even (free): every token goes stale */
    /*
     * Only then the object: a fork by another thread in between leaves the child this slot,
     * and the child must find it free, not live and naming nothing (wb_fork_slot_free.c).
     */
    s->obj = NULL;
    s->owner = 0;
    s->closing = 0;
    pthread_mutex_unlock(&s->lock);

    pthread_mutex_lock(&t->lock);
    if (t->free_tail == VR_NO_SLOT)
        t->free_head = index;
    else
        vr_slot_at(t, t->free_tail)->next_free = index;
    t->free_tail = index;
    t->nfree++;
    pthread_mutex_unlock(&t->lock);
}

static void foreach_slot(struct vr_table *t, int any, unsigned long owner,
                         void (*fn)(struct vr_slot *s, void *arg), void *arg)
{
    struct vr_slot *s;
    uint32_t i, n;

    pthread_mutex_lock(&t->lock);
    n = t->nslots;
    pthread_mutex_unlock(&t->lock);
    for (i = 0; i < n; i++) {
        s = vr_slot_at(t, i);
        pthread_mutex_lock(&s->lock);
        if ((slot_gen(s) & 1) && (any || s->owner == owner))
            fn(s, arg);
        else
            pthread_mutex_unlock(&s->lock);
    }
}

void vr_slot_foreach_owned(struct vr_table *t, unsigned long owner,
                           void (*fn)(struct vr_slot *s, void *arg), void *arg)
{
    foreach_slot(t, 0, owner, fn, arg);
}

void vr_slot_foreach(struct vr_table *t, void (*fn)(struct vr_slot *s, void *arg), void *arg)
{
    foreach_slot(t, 1, 0, fn, arg);
}


/* SPDX-License-Identifier: MIT */
/*
 * handles.h - validated, thread-safe tables of opaque tokens (pin handles and gdr_t values).
 *
 * A token is  tag (16 bits) | generation (24 bits) | slot index (24 bits).  The tag differs per
 * table, so zero, small integers, pointers and a token of the other table never decode; the
 * generation is odd while a slot is live and is bumped on every allocation and free, so a
 * stale token never matches. Slots live in chunks that are never freed: looking up any index
 * is memory-safe, and a slot's mutex stays valid after the object it named is gone.
 *
 * Each slot carries a seqlock (`ver` = generation << 32 | sequence) that guards the mapping
 * fields read by the copy fast path without any lock; everything else in a slot is protected
 * by the slot's mutex.
 */
#ifndef VRAMIO_HANDLES_H
#define VRAMIO_HANDLES_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VR_TOKEN_TAG_SHIFT  48
#define VR_TOKEN_GEN_SHIFT  24
#define VR_TOKEN_FIELD_MASK 0xffffffu
#define VR_CHUNK_SHIFT      10
#define VR_CHUNK_SLOTS      (1u << VR_CHUNK_SHIFT)
#define VR_MAX_CHUNKS       ((VR_TOKEN_FIELD_MASK + 1) >> VR_CHUNK_SHIFT)

#define VR_TAG_PIN 0x6d68u /* "mh" */
#define VR_TAG_GDR 0x6764u /* "gd" */
_Static_assert(VR_TOKEN_GEN_SHIFT < 32, "vr_pin_mapping_try moves the generation up to ver's");

/* 64-byte aligned (handles.c allocates the chunks so), so that the four fields the copy path
 * reads share one cache line in every slot; unaligned, 3 slots in 8 had them on two. */
struct __attribute__((aligned(64))) vr_slot {
    /* Read by the lock-free copy path (published through ver). */
    _Atomic uint64_t ver;          /* generation << 32 | seqlock sequence (odd: being written) */
    _Atomic uintptr_t map_base;    /* CPU mapping of a pin, 0 when unmapped */
    _Atomic size_t map_len;
    _Atomic int map_type;          /* gdr_mapping_type_t */
    /* Under lock. */
    pthread_mutex_t lock;
    pthread_cond_t idle;           /* broadcast when refs drops to 0 while closing */
    void *obj;                     /* what the token names (owned by the caller of the table) */
    unsigned long owner;           /* for a pin: the token of the gdr_t that made it */
    int refs;                      /* calls in progress that hold the object alive */
    int closing;                   /* no new references are handed out */
    uint32_t next_free;            /* free queue link (under the table lock) */
    uint32_t index;                /* this slot's index (constant) */
};

struct vr_table {
    _Atomic(struct vr_slot *) chunks[VR_MAX_CHUNKS];
    pthread_mutex_t lock;          /* allocation and the free queue */
    uint32_t nslots;               /* slots ever handed out (indices below it are initialised) */
    uint32_t free_head, free_tail, nfree;
    uint16_t tag;
};

extern struct vr_table vr_pins;    /* pin handles (gdr_mh_t.h) */
extern struct vr_table vr_gdrs;    /* gdr_t values */

/* Allocate a slot naming obj; the token is returned in *token. 0, ENOMEM or ENOSPC. */
int vr_slot_alloc(struct vr_table *t, void *obj, unsigned long owner, unsigned long *token);

/* The slot of a live token, locked; NULL (EINVAL) for anything else. */
struct vr_slot *vr_slot_lock(struct vr_table *t, unsigned long token);
void vr_slot_unlock(struct vr_slot *s);

/* Retire a locked slot: every token of it becomes stale; the slot is unlocked on return. */
void vr_slot_free_locked(struct vr_table *t, struct vr_slot *s);

/* Publish (or clear, with base NULL) the mapping of a locked pin slot for the copy path. */
void vr_slot_set_mapping(struct vr_slot *s, void *base, size_t len, int type);

/* Call fn on every live slot of t whose owner is owner, with the slot locked; fn must unlock
 * it (directly or through vr_slot_free_locked). */
void vr_slot_foreach_owned(struct vr_table *t, unsigned long owner,
                           void (*fn)(struct vr_slot *s, void *arg), void *arg);
/* The same for every live slot of t, whatever its owner. */
void vr_slot_foreach(struct vr_table *t, void (*fn)(struct vr_slot *s, void *arg), void *arg);

/* This process's id, without a system call (cached; the table's fork handler clears it in a
 * child): what the fork checks compare owners against. */
pid_t vr_self_pid(void);

/* A slot by index, or NULL when its chunk does not exist: for a caller that holds the index
 * of a slot it allocated (instance.c keeps its gdr_t's slot from gdr_open on; handles.c walks
 * its tables with it; wb_handles sets a slot's generation by index). No token check. */
struct vr_slot *vr_slot_at(struct vr_table *t, uint32_t index);

/*
 * Whether mappings of more than one type (WC, CACHING, DEVICE) are live in this process,
 * counted over every pin (handles.c keeps the census as mappings are published and cleared).
 * The copy path then ends each copy with a full fence, as upstream GDRCopy does: the same GPU
 * buffer may be reached through two of them in turn, and neither type's own ordering covers
 * the other's accesses.
 */
#define VR_MAPS_MIXED (1ULL << 63)
extern _Atomic uint64_t vr_map_census __attribute__((visibility("hidden")));

static inline int vr_mappings_mixed(void)
{
    return (atomic_load_explicit(&vr_map_census, memory_order_relaxed) & VR_MAPS_MIXED) != 0;
}

struct vr_mapping {
    uintptr_t base;
    size_t len;
    int type;
};

/*
 * The mapping of a pin handle, without taking a lock: the copy path's one lookup. 0 with *m
 * filled when the token names a live pin whose slot no writer held while it was read; EINVAL
 * when the token does not name a live pin; EAGAIN when a writer held the slot (a few
 * instructions; vr_pin_mapping, in handles.c, asks again until the answer is 0 or EINVAL).
 * Straight-line code, no call and no loop, so that a caller needs no stack frame: the tag and
 * the live bit of the token in one test, then the generation and the even sequence of ver in
 * one test. The mapping may be cleared right after this returns; a copy that races with
 * gdr_unmap of the same handle is the caller's bug, as it would be with munmap.
 */
static inline int vr_pin_mapping_try(unsigned long token, struct vr_mapping *m)
{
    const uint64_t tag_live = (0xffffULL << VR_TOKEN_TAG_SHIFT) | (1ULL << VR_TOKEN_GEN_SHIFT);
    const uint64_t pin_live = ((uint64_t)VR_TAG_PIN << VR_TOKEN_TAG_SHIFT) |
                              (1ULL << VR_TOKEN_GEN_SHIFT);
    /* ver holds the generation at bits 32..55: the token's, moved there. */
    const uint64_t ver_gen = (uint64_t)VR_TOKEN_FIELD_MASK << 32;
    const uint64_t want = ((uint64_t)token << (32 - VR_TOKEN_GEN_SHIFT)) & ver_gen;
    uint32_t index = (uint32_t)(token & VR_TOKEN_FIELD_MASK);
    struct vr_slot *chunk, *s;
    uint64_t v;

    if ((token & tag_live) != pin_live)
        return EINVAL;
    chunk = atomic_load_explicit(&vr_pins.chunks[index >> VR_CHUNK_SHIFT], memory_order_acquire);
    if (!chunk)
        return EINVAL;
    s = &chunk[index & (VR_CHUNK_SLOTS - 1)];
    v = atomic_load_explicit(&s->ver, memory_order_acquire);
    if ((v ^ want) & (ver_gen | 1))
        return (v ^ want) & ver_gen ? EINVAL : EAGAIN;
    /* Acquire loads (plain loads on x86, ldar on arm64) keep the re-read of ver after them;
     * see slot_write_fields in handles.c for the writer's side. */
    m->base = atomic_load_explicit(&s->map_base, memory_order_acquire);
    m->len = atomic_load_explicit(&s->map_len, memory_order_acquire);
    m->type = atomic_load_explicit(&s->map_type, memory_order_acquire);
    return atomic_load_explicit(&s->ver, memory_order_relaxed) != v ? EAGAIN : 0;
}

/* vr_pin_mapping_try until a writer lets go: 0 or EINVAL (for the paths that are not the
 * copy's straight one: its slow path, the _auto crossover query). */
int vr_pin_mapping(unsigned long token, struct vr_mapping *m);

/* [p, p+n) inside the mapping m (never true while unmapped: len is 0 and base 0, so any p
 * gives off > 0 = len, or p = 0 and then n > 0 = len). A p below base wraps off around to more
 * than any len, so two comparisons cover both ends. */
static inline int vr_in_mapping(const struct vr_mapping *m, const void *p, size_t n)
{
    uintptr_t off = (uintptr_t)p - m->base;

    return off <= m->len && n <= m->len - off;
}

/*
 * The copy path's lookup and checks, in one place (gdrapi.c, the straight path of both copies):
 * 1 with *m filled when token names a live pin whose slot no writer held (vr_pin_mapping_try),
 * [map, map+n) lies inside its mapping, there is a host buffer and at least one byte, and
 * mappings of one type only are live; else 0, and the caller's slow path says why, or copies
 * and ends with the full fence of mixed mappings. Straight-line code, no call.
 */
static inline int vr_copy_lookup(unsigned long token, const void *map, const void *host,
                                 size_t n, struct vr_mapping *m)
{
    if (vr_pin_mapping_try(token, m) != 0)
        return 0;
    return vr_in_mapping(m, map, n) && host && n && !vr_mappings_mixed();
}

#endif /* VRAMIO_HANDLES_H */

/* SPDX-License-Identifier: MIT */
/*
 * wb_handles.c - white-box test of the token tables (src/core/handles.c): allocation, lookup and
 * free from 16 threads, rejection of stale and made-up tokens, generation wraparound, the
 * lock-free mapping read against a concurrent writer, the copy entry points on a mapping of
 * ordinary memory (and their refusal of tokens one field off a live one), and fork while other threads use the table. Built also under TSan.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "t.h"
#include "gdrapi.h"
#include "vramio.h"
#include "core/handles.h"
#include "wb/hooks.h"

#define NTHREADS 16
#define ITERS    3000
#define KEEP     32   /* stale tokens each thread re-checks */

static _Atomic int errors;
static char obj_marks[NTHREADS];

static void *churn(void *arg)
{
    long id = (long)arg;
    unsigned long stale[KEEP] = { 0 }, tok;
    struct vr_slot *s;
    struct vr_mapping m;
    int i, k;

    for (i = 0; i < ITERS; i++) {
        if (vr_slot_alloc(&vr_pins, &obj_marks[id], (unsigned long)id + 1, &tok) != 0) {
            errors++;
            continue;
        }
        s = vr_slot_lock(&vr_pins, tok);
        if (!s || s->obj != &obj_marks[id] || s->owner != (unsigned long)id + 1)
            errors++;
        if (s) {
            vr_slot_set_mapping(s, &obj_marks[id], (size_t)id + 1, (int)(id % 3) + 1);
            vr_slot_unlock(s);
        }
        if (vr_pin_mapping(tok, &m) != 0 || m.base != (uintptr_t)&obj_marks[id] ||
            m.len != (size_t)id + 1 || m.type != (int)(id % 3) + 1)
            errors++;
        for (k = 0; k < KEEP; k++) {
            if (stale[k] && (vr_slot_lock(&vr_pins, stale[k]) || vr_pin_mapping(stale[k], &m) == 0))
                errors++;
            if (stale[k] == tok)
                errors++; /* a live token equal to an old one: reuse confusion */
        }
        s = vr_slot_lock(&vr_pins, tok);
        if (!s) {
            errors++;
            continue;
        }
        vr_slot_free_locked(&vr_pins, s);
        stale[i % KEEP] = tok;
        if (vr_slot_lock(&vr_pins, tok) || vr_pin_mapping(tok, &m) == 0)
            errors++;
    }
    return NULL;
}

static void test_threads(void)
{
    pthread_t t[NTHREADS];
    long i;

    for (i = 0; i < NTHREADS; i++)
        pthread_create(&t[i], NULL, churn, (void *)i);
    for (i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    t_check(errors == 0, "threads_alloc_lookup_free", "%d inconsistencies", (int)errors);
}

static void test_made_up_tokens(void)
{
    static const unsigned long vals[] = {
        0, 1, 2, 0xffff, 0xffffffffUL, ~0UL, 0x8000000000000000UL,
        ((unsigned long)VR_TAG_PIN << 48),                  /* gen 0: never live */
        ((unsigned long)VR_TAG_PIN << 48) | (2UL << 24) | 1, /* even gen: never live */
        ((unsigned long)VR_TAG_PIN << 48) | (1UL << 24) | 0xffffff, /* no such chunk */
        ((unsigned long)VR_TAG_GDR << 48) | (1UL << 24),    /* other table's tag */
    };
    struct vr_mapping m;
    unsigned i, bad = 0, r;

    for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
        if (vr_slot_lock(&vr_pins, vals[i]) || vr_pin_mapping(vals[i], &m) != EINVAL)
            bad++;
    srand(1234);
    for (i = 0; i < 100000; i++) {
        unsigned long v = ((unsigned long)VR_TAG_PIN << 48) |
                          ((unsigned long)(rand() & 0xffffff) << 24) | (unsigned)(rand() & 0xffffff);
        r = (unsigned)vr_pin_mapping(v, &m);
        if (r != 0 && r != EINVAL)
            bad++;
    }
    t_check(bad == 0, "made_up_tokens_rejected", "%u values accepted or odd errors", bad);
}

/* Retire n fresh slots, so that the free queue is long enough to be reused from. */
static unsigned long fill_queue(unsigned long *toks, int n)
{
    struct vr_slot *s;
    int i;

    for (i = 0; i < n; i++)
        vr_slot_alloc(&vr_pins, NULL, 0, &toks[i]);
    for (i = 0; i < n; i++) {
        s = vr_slot_lock(&vr_pins, toks[i]);
        if (s)
            vr_slot_free_locked(&vr_pins, s);
    }
    return toks[0];
}

static void test_stale_and_wraparound(void)
{
    enum { N = 200 };
    static unsigned long toks[N];
    unsigned long first, tok, seen[8];
    uint32_t index, gen;
    struct vr_slot *s;
    int i, cyc, bad = 0, nseen = 0;

    /* Reuse: after cycling through the queue the same slot comes back with a new token. */
    first = fill_queue(toks, N);
    index = (uint32_t)(first & VR_TOKEN_FIELD_MASK);
    for (cyc = 0; cyc < 3; cyc++) {
        for (i = 0; i < 2 * N; i++) {
            vr_slot_alloc(&vr_pins, NULL, 0, &tok);
            if ((uint32_t)(tok & VR_TOKEN_FIELD_MASK) == index && nseen < 8)
                seen[nseen++] = tok;
            s = vr_slot_lock(&vr_pins, tok);
            vr_slot_free_locked(&vr_pins, s);
        }
    }
    t_check(nseen >= 2 && seen[0] != first && seen[1] != seen[0], "slot_reused_with_new_token",
            "slot %u came back %d times", index, nseen);
    t_check(!vr_slot_lock(&vr_pins, first), "stale_generation_rejected", "old token accepted");

    /* Wraparound: put the slot's generation just below 2^24 and 2^32, then cycle it. */
    for (i = 0; i < 2; i++) {
        uint32_t start = i == 0 ? 0x00fffffcu : 0xfffffffcu; /* even: free */
        unsigned long olds[4];
        int n = 0;

        s = vr_slot_at(&vr_pins, index);
        pthread_mutex_lock(&s->lock);
        atomic_store(&s->ver, (uint64_t)start << 32);
        pthread_mutex_unlock(&s->lock);
        for (cyc = 0; cyc < 4 * N && n < 4; cyc++) {
            vr_slot_alloc(&vr_pins, NULL, 0, &tok);
            if ((uint32_t)(tok & VR_TOKEN_FIELD_MASK) == index) {
                gen = (uint32_t)(tok >> VR_TOKEN_GEN_SHIFT) & VR_TOKEN_FIELD_MASK;
                if (tok == 0 || (tok >> VR_TOKEN_TAG_SHIFT) != VR_TAG_PIN || !(gen & 1))
                    bad++;
                for (int k = 0; k < n; k++)
                    if (olds[k] == tok || vr_slot_lock(&vr_pins, olds[k]))
                        bad++;
                olds[n++] = tok;
            }
            s = vr_slot_lock(&vr_pins, tok);
            if (!s)
                bad++;
            else
                vr_slot_free_locked(&vr_pins, s);
        }
        if (n < 3)
            bad += 100;
    }
    t_check(bad == 0, "generation_wraparound", "%d problems", bad);
}

/* A writer flips a slot between two mappings and unmapped; readers must see whole states. */
static _Atomic int stop;
static unsigned long flip_tok;
static char area_a[64], area_b[4096];

static void *flipper(void *arg)
{
    struct vr_slot *s;
    unsigned i = 0;

    while (!atomic_load(&stop)) {
        s = vr_slot_lock(&vr_pins, flip_tok);
        if (!s)
            break;
        if (i % 3 == 0)
            vr_slot_set_mapping(s, area_a, sizeof(area_a), GDR_MAPPING_TYPE_WC);
        else if (i % 3 == 1)
            vr_slot_set_mapping(s, area_b, sizeof(area_b), GDR_MAPPING_TYPE_CACHING);
        else
            vr_slot_set_mapping(s, NULL, 0, 0);
        vr_slot_unlock(s);
        i++;
    }
    return NULL;
}

static void *reader(void *arg)
{
    struct vr_mapping m;
    int i;

    for (i = 0; i < 200000; i++) {
        if (vr_pin_mapping(flip_tok, &m) != 0) {
            errors++;
            continue;
        }
        if (!((m.base == 0 && m.len == 0 && m.type == 0) ||
              (m.base == (uintptr_t)area_a && m.len == sizeof(area_a) && m.type == GDR_MAPPING_TYPE_WC) ||
              (m.base == (uintptr_t)area_b && m.len == sizeof(area_b) && m.type == GDR_MAPPING_TYPE_CACHING)))
            errors++;
    }
    return NULL;
}

static void test_seqlock(void)
{
    pthread_t w, r[4];
    int i;

    errors = 0;
    vr_slot_alloc(&vr_pins, NULL, 0, &flip_tok);
    pthread_create(&w, NULL, flipper, NULL);
    for (i = 0; i < 4; i++)
        pthread_create(&r[i], NULL, reader, NULL);
    for (i = 0; i < 4; i++)
        pthread_join(r[i], NULL);
    atomic_store(&stop, 1);
    pthread_join(w, NULL);
    t_check(errors == 0, "lockfree_read_consistent", "%d torn or failed reads", (int)errors);
    vr_handles_test_remove(flip_tok);
}

static void test_copy_entry_points(void)
{
    static char dev[256] __attribute__((aligned(64)));
    char host[16] = "0123456789abcde", back[16] = { 0 };
    unsigned long tok;
    gdr_mh_t mh;

    t_check(vr_handles_test_insert(dev, sizeof(dev), GDR_MAPPING_TYPE_WC, &tok) == 0,
            "test_insert", "failed");
    mh.h = tok;
    t_check(gdr_copy_to_mapping(mh, dev + 8, host, 16) == 0 && memcmp(dev + 8, host, 16) == 0,
            "copy_to_mapping", "data not there");
    t_check(gdr_copy_from_mapping(mh, back, dev + 8, 16) == 0 && memcmp(back, host, 16) == 0,
            "copy_from_mapping", "data not back");
    t_check(gdr_copy_to_mapping(mh, dev + 250, host, 8) == EINVAL &&
            gdr_copy_to_mapping(mh, (void *)((uintptr_t)dev - 1), host, 2) == EINVAL &&
            gdr_copy_from_mapping(mh, back, dev + 256, 1) == EINVAL &&
            gdr_copy_to_mapping(mh, dev, host, ~(size_t)0) == EINVAL &&
            gdr_copy_to_mapping(mh, (void *)~(uintptr_t)0, host, 2) == EINVAL,
            "copy_outside_mapping_einval", "accepted");
    t_check(gdr_copy_to_mapping(mh, dev + 248, host, 8) == 0 &&
            gdr_copy_from_mapping(mh, back, dev, 16) == 0,
            "copy_at_edges", "refused");
    t_check(gdr_copy_to_mapping(mh, NULL, NULL, 0) == 0, "copy_size_0_noop", "not 0");
    t_check(vr_handles_test_remove(tok) == 0, "test_remove", "failed");
    t_check(gdr_copy_to_mapping(mh, dev + 8, host, 8) == EINVAL &&
            gdr_copy_to_mapping(mh, dev + 8, host, 0) == EINVAL, "copy_after_remove_einval",
            "a removed handle was used");
}

/* A test mapping is a whole pin to the library: the _auto copies above their floor (4 KiB),
 * which look up the pin's GPU range, take it as a pin the copy engine cannot reach and copy
 * through the mapping. */
static void test_auto_copy_of_test_mapping(void)
{
    static char dev[1 << 16] __attribute__((aligned(64)));
    static char host[1 << 15], back[1 << 15];
    unsigned long tok;
    gdr_mh_t mh;

    memset(host, 0x5a, sizeof(host));
    if (!t_check(vr_handles_test_insert(dev, sizeof(dev), GDR_MAPPING_TYPE_WC, &tok) == 0,
                 "auto_test_insert", "failed"))
        return;
    mh.h = tok;
    t_check(vramio_copy_to_mapping_auto(mh, dev, host, sizeof(host)) == 0 &&
            vramio_copy_from_mapping_auto(mh, back, dev, sizeof(back)) == 0 &&
            memcmp(back, host, sizeof(host)) == 0, "auto_copy_through_test_mapping", "%s",
            vramio_last_error());
    vr_handles_test_remove(tok);
}

/*
 * The copy's inline handle check (handles.h, vr_pin_mapping_try) against tokens that name a
 * live, mapped slot in all but one field: the slot's previous generation (a stale handle whose
 * slot now holds another pin), the other table's tag, another live generation. Each must be
 * refused with nothing written, for each shape of the small-write path and the general one;
 * the live token itself must work. A check that let any of them through would copy into
 * another pin's mapping: an unmapped slot alone would not show it (its range is empty).
 */
static void test_copy_rejects_aliases(void)
{
    static unsigned char area[4096] __attribute__((aligned(64)));
    static const size_t sizes[] = { 1, 2, 4, 8, 32, 64, 256, 3, 300 };
    unsigned char host[512];
    unsigned long old = 0, cur = 0, tok, bad_tok[3];
    int found = 0, bad = 0, i;
    size_t k, j;

    memset(host, 0x77, sizeof(host));
    /* A slot retired, then handed out again: insert and remove until the queue comes round. */
    t_check(vr_handles_test_insert(area, sizeof(area), GDR_MAPPING_TYPE_WC, &old) == 0 &&
            vr_handles_test_remove(old) == 0, "alias_setup", "insert/remove failed");
    for (i = 0; i < 1000000 && !found; i++) {
        if (vr_handles_test_insert(area, sizeof(area), GDR_MAPPING_TYPE_WC, &tok) != 0)
            break;
        if ((tok & VR_TOKEN_FIELD_MASK) == (old & VR_TOKEN_FIELD_MASK)) {
            cur = tok;
            found = 1;
        } else {
            vr_handles_test_remove(tok);
        }
    }
    t_check(found && cur != old, "alias_slot_reused", "the slot did not come round (%d inserts)", i);
    if (!found)
        return;
    bad_tok[0] = old;
    bad_tok[1] = (cur & ~(0xffffUL << VR_TOKEN_TAG_SHIFT)) |
                 ((unsigned long)VR_TAG_GDR << VR_TOKEN_TAG_SHIFT);
    bad_tok[2] = cur ^ (2UL << VR_TOKEN_GEN_SHIFT);     /* another odd generation */
    for (k = 0; k < sizeof(bad_tok) / sizeof(bad_tok[0]); k++)
        for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
            gdr_mh_t mh = { bad_tok[k] };

            memset(area, 0, sizeof(area));
            if (gdr_copy_to_mapping(mh, area, host, sizes[j]) != EINVAL || area[0] != 0)
                bad++;
        }
    t_check(bad == 0, "copy_alias_tokens_einval", "%d of 27 copies through a wrong token ran", bad);
    bad = 0;
    for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
        gdr_mh_t mh = { cur };

        memset(area, 0, sizeof(area));
        if (gdr_copy_to_mapping(mh, area, host, sizes[j]) != 0 || memcmp(area, host, sizes[j]))
            bad++;
    }
    t_check(bad == 0, "copy_live_token_works", "%d of 9 sizes failed", bad);
    vr_handles_test_remove(cur);
}

/* fork while other threads allocate and free: the child must be able to use the table. */
static void *background(void *arg)
{
    unsigned long tok;
    struct vr_slot *s;

    while (!atomic_load(&stop)) {
        if (vr_slot_alloc(&vr_gdrs, NULL, 0, &tok) == 0 && (s = vr_slot_lock(&vr_gdrs, tok)))
            vr_slot_free_locked(&vr_gdrs, s);
    }
    return NULL;
}

static void test_fork(void)
{
    pthread_t t[3];
    int i, k, status, bad = 0;
    pid_t pid;

    atomic_store(&stop, 0);
    for (i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, background, NULL);
    for (k = 0; k < 20; k++) {
        usleep(1000);
        pid = fork();
        if (pid == 0) {
            unsigned long tok;
            struct vr_slot *s;

            alarm(20); /* a deadlock fails the test instead of hanging it */
            for (i = 0; i < 1000; i++) {
                if (vr_slot_alloc(&vr_gdrs, NULL, 0, &tok) || !(s = vr_slot_lock(&vr_gdrs, tok)))
                    _exit(1);
                vr_slot_free_locked(&vr_gdrs, s);
            }
            _exit(0);
        }
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            bad++;
    }
    atomic_store(&stop, 1);
    for (i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    t_check(bad == 0, "fork_child_uses_table", "%d of 20 children failed or hung", bad);
}

int main(void)
{
    test_threads();
    test_made_up_tokens();
    test_stale_and_wraparound();
    test_seqlock();
    test_copy_entry_points();
    test_auto_copy_of_test_mapping();
    test_copy_rejects_aliases();
    test_fork();
    return t_status();
}

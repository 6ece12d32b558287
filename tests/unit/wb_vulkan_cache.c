// SPDX-License-Identifier: MIT
/*
 * wb_vulkan_cache.c - the vulkan backend's pure logic, without a GPU: the GPU-page range
 * arithmetic of a pin, the import cache (one import per allocation, shared by pins, released
 * with the last; concurrent pins of one allocation import it once; a failed import reaches
 * every waiter; a pin racing the last unpin shares the import or waits until it is gone),
 * the choice of Vulkan memory type and the VkResult -> errno mapping.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gdrapi.h"
#include "t.h"
#include "core/core.h"
#include "backends/vulkan_device.h"
#include "backends/vulkan_import_cache.h"
#include "backends/vulkan_loader.h"
#include "wb/hooks.h"

static void test_page_range(void)
{
    uint64_t va = 0, len = 0;
    int rc;

    rc = vr_gpu_page_range(0x7f0000012345ull, 1000, &va, &len);
    t_check(rc == 0 && va == 0x7f0000010000ull && len == GPU_PAGE_SIZE, "wb_vulkan/range_unaligned_small",
             "rc %d va %#llx len %llu", rc, (unsigned long long)va, (unsigned long long)len);
    rc = vr_gpu_page_range(0x7f000001fff0ull, 0x20, &va, &len);
    t_check(rc == 0 && va == 0x7f0000010000ull && len == 2 * GPU_PAGE_SIZE, "wb_vulkan/range_crosses_page",
             "rc %d va %#llx len %llu", rc, (unsigned long long)va, (unsigned long long)len);
    rc = vr_gpu_page_range(0x200000, 0x200000, &va, &len);
    t_check(rc == 0 && va == 0x200000 && len == 0x200000, "wb_vulkan/range_aligned_exact",
             "rc %d va %#llx len %llu", rc, (unsigned long long)va, (unsigned long long)len);
    rc = vr_gpu_page_range(0x1000, 0, &va, &len);
    t_check(rc == EINVAL, "wb_vulkan/range_size_zero", "rc %d", rc);
    rc = vr_gpu_page_range(UINT64_MAX - 10, 100, &va, &len);
    t_check(rc == EINVAL, "wb_vulkan/range_wraps", "rc %d", rc);
    rc = vr_gpu_page_range(UINT64_MAX - 0x8000, 0x100, &va, &len);
    t_check(rc == EINVAL, "wb_vulkan/range_end_is_2_64", "rc %d", rc);

    t_check(vr_range_inside(0x200000, 0x10000, 0x200000, 0x200000), "wb_vulkan/inside_start", "no");
    t_check(vr_range_inside(0x3f0000, 0x10000, 0x200000, 0x200000), "wb_vulkan/inside_end", "no");
    t_check(!vr_range_inside(0x3f0000, 0x20000, 0x200000, 0x200000), "wb_vulkan/outside_past_end", "yes");
    t_check(!vr_range_inside(0x1f0000, 0x10000, 0x200000, 0x200000), "wb_vulkan/outside_before", "yes");
    t_check(!vr_range_inside(UINT64_MAX - 0xffff, 0x10000, 0, UINT64_MAX), "wb_vulkan/inside_no_overflow",
             "wrapped");
}

static void test_cache_basic(void)
{
    struct vr_icache c;
    struct vr_import_key a = { .handle = 0x1000, .base = 0x7f0000000000ull, .size = 0x200000 };
    struct vr_import_key b = a;
    struct vr_import *e1, *e2, *e3;
    int created = -1, rc;

    vr_icache_init(&c);
    rc = vr_icache_acquire(&c, &a, &e1, &created);
    t_check(rc == 0 && created == 1 && e1->state == VR_IMPORT_PENDING, "wb_vulkan/first_pin_imports",
             "rc %d created %d", rc, created);
    e1->cpu = (void *)0x1234;
    vr_icache_publish(&c, e1, 0);
    rc = vr_icache_acquire(&c, &a, &e2, &created);
    t_check(rc == 0 && created == 0 && e2 == e1 && e2->refs == 2, "wb_vulkan/second_pin_shares",
             "rc %d created %d same %d refs %u", rc, created, e2 == e1, e2->refs);
    b.base += 0x200000; /* same handle mapped elsewhere: another import */
    rc = vr_icache_acquire(&c, &b, &e3, &created);
    t_check(rc == 0 && created == 1 && e3 != e1 && vr_icache_count(&c) == 2,
             "wb_vulkan/other_mapping_other_import", "rc %d created %d count %zu", rc, created,
             vr_icache_count(&c));
    vr_icache_publish(&c, e3, 0);
    t_check(vr_icache_release(&c, e1) == 0 && vr_icache_count(&c) == 2, "wb_vulkan/release_not_last",
             "count %zu", vr_icache_count(&c));
    rc = vr_icache_release(&c, e2);
    t_check(rc == 1 && e2->state == VR_IMPORT_RELEASING && vr_icache_count(&c) == 2,
            "wb_vulkan/release_last_stays_until_retired", "rc %d state %d count %zu", rc,
            (int)e2->state, vr_icache_count(&c));
    vr_icache_retire(&c, e2);
    t_check(vr_icache_count(&c) == 1, "wb_vulkan/release_last_removes", "count %zu",
            vr_icache_count(&c));
    free(e2);
    rc = vr_icache_acquire(&c, &a, &e1, &created);
    t_check(rc == 0 && created == 1, "wb_vulkan/reimport_after_last_release", "rc %d created %d", rc,
             created);
    vr_icache_publish(&c, e1, EIO);
    t_check(vr_icache_count(&c) == 1, "wb_vulkan/failed_import_leaves_table", "count %zu",
             vr_icache_count(&c));
    e1 = vr_icache_take_all(&c);
    t_check(e1 == e3 && e1->next == NULL && vr_icache_count(&c) == 0, "wb_vulkan/take_all",
             "list %p e3 %p", (void *)e1, (void *)e3);
    free(e3);
    vr_icache_destroy(&c);
}

/* Many threads pin the same allocations at once. First all 16 race for one new allocation
 * (started together by a barrier, the import is slow): exactly one imports, the others get its
 * published import. Then, while those references hold the imports alive, 16 threads pin and
 * unpin inside them thousands of times: none imports again, all see the published mapping. */
#define NTHREADS 16
#define NALLOCS 4
#define ROUNDS 2000

static struct vr_icache tcache;
static pthread_barrier_t start_line;
static atomic_int creators, bad;
static struct vr_import *held[NTHREADS];

static struct vr_import_key key_of(int k)
{
    return (struct vr_import_key){ .handle = 0x100 + (uint64_t)k, .base = (uint64_t)k << 30,
                                   .size = 0x200000 };
}

static void *race_thread(void *arg)
{
    int i = (int)(uintptr_t)arg, created = 0;
    struct vr_import_key key = key_of(0);

    pthread_barrier_wait(&start_line);
    if (vr_icache_acquire(&tcache, &key, &held[i], &created)) {
        atomic_fetch_add(&bad, 1);
        return NULL;
    }
    if (created) {
        atomic_fetch_add(&creators, 1);
        usleep(20000); /* a slow import: the others must wait for it */
        held[i]->cpu = (void *)0x1000;
        vr_icache_publish(&tcache, held[i], 0);
    } else if (held[i]->cpu != (void *)0x1000) {
        atomic_fetch_add(&bad, 1);
    }
    return NULL;
}

static void *pin_thread(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    int i;

    for (i = 0; i < ROUNDS; i++) {
        int k = (int)(rand_r(&seed) % NALLOCS), created;
        struct vr_import_key key = key_of(k);
        struct vr_import *e;

        if (vr_icache_acquire(&tcache, &key, &e, &created) || created ||
            e->cpu != (void *)(uintptr_t)(0x1000 * (k + 1)))
            atomic_fetch_add(&bad, 1);
        if (vr_icache_release(&tcache, e))
            atomic_fetch_add(&bad, 1); /* the held reference should keep it */
    }
    return NULL;
}

static void test_cache_threads(void)
{
    struct vr_import *e, *keep[NALLOCS];
    pthread_t t[NTHREADS];
    int i, created, last = 0;

    vr_icache_init(&tcache);
    pthread_barrier_init(&start_line, NULL, NTHREADS);
    for (i = 0; i < NTHREADS; i++)
        pthread_create(&t[i], NULL, race_thread, (void *)(uintptr_t)i);
    for (i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start_line);
    t_check(atomic_load(&creators) == 1 && atomic_load(&bad) == 0 && vr_icache_count(&tcache) == 1,
             "wb_vulkan/threads_race_import_once", "creators %d bad %d entries %zu", atomic_load(&creators),
             atomic_load(&bad), vr_icache_count(&tcache));

    keep[0] = held[0];
    for (i = 1; i < NALLOCS; i++) {
        struct vr_import_key key = key_of(i);

        vr_icache_acquire(&tcache, &key, &keep[i], &created);
        keep[i]->cpu = (void *)(uintptr_t)(0x1000 * (i + 1));
        vr_icache_publish(&tcache, keep[i], 0);
    }
    for (i = 0; i < NTHREADS; i++)
        pthread_create(&t[i], NULL, pin_thread, (void *)(uintptr_t)(i + 1));
    for (i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    t_check(atomic_load(&bad) == 0 && vr_icache_count(&tcache) == NALLOCS,
             "wb_vulkan/threads_share_imports", "bad %d entries %zu", atomic_load(&bad),
             vr_icache_count(&tcache));

    /* Drop every reference: 16 on allocation 0 (the race), one on each other. */
    for (i = 0; i < NTHREADS; i++)
        if (vr_icache_release(&tcache, held[i])) {
            last++;
            vr_icache_retire(&tcache, held[i]);
        }
    for (i = 1; i < NALLOCS; i++)
        if (vr_icache_release(&tcache, keep[i])) {
            last++;
            vr_icache_retire(&tcache, keep[i]);
        }
    t_check(last == NALLOCS && vr_icache_count(&tcache) == 0, "wb_vulkan/threads_last_release_frees",
             "last %d entries %zu", last, vr_icache_count(&tcache));
    free(held[0]);
    for (i = 1; i < NALLOCS; i++)
        free(keep[i]);
    e = vr_icache_take_all(&tcache);
    t_check(e == NULL, "wb_vulkan/threads_table_empty", "an entry was left");
    vr_icache_destroy(&tcache);
}

/* A failed import reaches threads that were waiting for it. */
static struct vr_icache fcache;
static const struct vr_import_key fkey = { .handle = 7, .base = 0x40000000, .size = 0x200000 };

static void *waiter(void *arg)
{
    struct vr_import *e;
    int created = 0;
    int rc = vr_icache_acquire(&fcache, &fkey, &e, &created);

    *(int *)arg = created ? -1 : rc;
    return NULL;
}

static void test_cache_failure_wakes_waiters(void)
{
    struct vr_import *e;
    pthread_t t[4];
    int rcs[4], created, i, ok = 1;

    vr_icache_init(&fcache);
    vr_icache_acquire(&fcache, &fkey, &e, &created);
    for (i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, waiter, &rcs[i]);
    usleep(20000); /* let them block on the pending entry */
    vr_icache_publish(&fcache, e, ENOMEM);
    for (i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        /* A thread that came after the failure made a new entry (-1): also correct. */
        ok &= rcs[i] == ENOMEM || rcs[i] == -1;
    }
    t_check(ok, "wb_vulkan/failed_import_reaches_waiters", "rcs %d %d %d %d", rcs[0], rcs[1], rcs[2], rcs[3]);
    for (e = vr_icache_take_all(&fcache); e;) {
        struct vr_import *n = e->next;
        free(e);
        e = n;
    }
    vr_icache_destroy(&fcache);
}

/*
 * The last release of an import racing a new acquire of the same allocation: a pin made while
 * the allocation's last other pin is unpinned. Each round the unpin thread drops the only
 * reference to a ready import and, when that was the last, releases the import as
 * vulkan_unpin does, slowly (the Vulkan and CUDA calls take time); meanwhile two pin threads
 * acquire the allocation, import it when they made the entry, hold it a moment and release it.
 * A pin must either share the live import (which then outlives the unpin's release) or import
 * afresh once the old import is gone: never get an import being released or released, never
 * make a second live import of the allocation (it would map the allocation twice), and every
 * import is released once. In a quarter of the rounds each import a pin makes fails: a pin
 * then gets that error or the import it shared, never a failed entry.
 * Every wait is bounded: a round that does not end in RR_WAIT_S is a hang, reported as such.
 */
#define RR_ROUNDS 3000
#define RR_PINS   2
#define RR_WAIT_S 5
#define RR_LIVE   ((void *)0x1000)  /* cpu of a live fake import */
#define RR_DYING  ((void *)0xd1e)   /* ... of one being released */
#define RR_DEAD   ((void *)0xdead)  /* ... of one released: a late user finds this */

static struct vr_icache rcache;
static const struct vr_import_key rkey = { .handle = 9, .base = 0x80000000, .size = 0x200000 };
static sem_t r_go[RR_PINS + 1], r_done;
static atomic_int r_abandon;        /* main gave up on a hung round: the threads stop */
static atomic_int r_live;           /* imports of rkey made and not yet released */
static atomic_int r_imports, r_releases, r_twice, r_dead_use, r_bad_release, r_bad_result;
static atomic_int r_tearing;        /* an import is being released now */
static atomic_int r_first_bad = -1; /* the first round that went wrong */
static atomic_uint_fast64_t r_serial;
/* Released entries are kept, not freed, until the end: a pin handed one late reads RR_DEAD
 * there (not reused memory), and no new entry can take the address of the round's first. */
static struct vr_import *r_graves[RR_ROUNDS * (RR_PINS + 1)];
static atomic_int r_ngraves;
/* The round, written by main before it posts r_go: */
static int r_round, r_fail;
/* The round's first pin, made by the unpin thread before main starts the race: */
static struct vr_import *r_first;   /* the import the unpin releases */
static int r_setup_rc, r_setup_created;
static struct r_pin_result {
    int rc, created, shared, during;
} r_res[RR_PINS];

static void r_bad(atomic_int *what)
{
    int none = -1;

    atomic_fetch_add(what, 1);
    atomic_compare_exchange_strong(&r_first_bad, &none, r_round);
}

/* A random pause of a few hundred ns to a few us, or a yield, so that the three threads meet
 * in every order. */
static void r_jitter(unsigned *seed)
{
    unsigned r = (unsigned)rand_r(seed) % 8, n;

    if (r < 2)
        return;
    if (r < 4) {
        sched_yield();
        return;
    }
    for (n = (unsigned)rand_r(seed) % 4000; n; n--)
        __asm__ volatile("" ::: "memory");
}

/* The gate: WB_WRAP in tests/tests.mk sends every pthread_mutex_unlock of this program (the
 * cache's included) here. A thread inside vr_icache_release pauses once it has left the
 * cache's lock: between its dropping a reference and its caller's release of the import,
 * where an acquirer must find the entry shared or dying, never free to take (a cache that
 * decided outside the lock would hand it out there, in a window too short to hit unwidened). */
static __thread unsigned *r_in_release; /* the releasing thread's seed, else NULL */

int __real_pthread_mutex_unlock(pthread_mutex_t *m);
int __wrap_pthread_mutex_unlock(pthread_mutex_t *m);
int __wrap_pthread_mutex_unlock(pthread_mutex_t *m)
{
    int rc = __real_pthread_mutex_unlock(m);

    if (r_in_release && m == &rcache.lock) {
        if (rand_r(r_in_release) % 2)
            usleep(20);
        else
            r_jitter(r_in_release);
    }
    return rc;
}

/* What vulkan_unpin does after the last release: free the import. Marked dying at once and
 * dead at the end, with the time of the Vulkan and CUDA calls between (a yield or a sleep):
 * the window in which a pin must not be given this import, nor import the allocation again. */
static void r_release_import(struct vr_import *e, unsigned *seed)
{
    if (e->cpu != RR_LIVE || e->mem == 0) {
        /* Released twice (already among the graves), or never imported. The caller still
         * retires it, as vulkan_unpin would: the pins waiting for it go on. */
        r_bad(&r_bad_release);
        vr_icache_retire(&rcache, e);
        return;
    }
    e->cpu = RR_DYING;
    atomic_store(&r_tearing, 1);
    if (rand_r(seed) % 2)
        usleep(20);
    else
        r_jitter(seed);
    e->cpu = RR_DEAD;
    e->mem = 0;
    atomic_fetch_sub(&r_live, 1);
    atomic_fetch_add(&r_releases, 1);
    atomic_store(&r_tearing, 0);
    vr_icache_retire(&rcache, e);
    r_graves[atomic_fetch_add(&r_ngraves, 1)] = e;
}

/* Drop a reference as vulkan_unpin does, held at the gate; the last releases the import. */
static void r_unpin(struct vr_import *e, unsigned *seed)
{
    int last;

    r_in_release = seed;
    last = vr_icache_release(&rcache, e);
    r_in_release = NULL;
    if (last)
        r_release_import(e, seed);
}

/* What import_allocation does, in the thread that made the entry: 0 or the round's error. */
static int r_import(struct vr_import *e, unsigned *seed)
{
    if (atomic_fetch_add(&r_live, 1) != 0)
        r_bad(&r_twice);
    r_jitter(seed); /* a slow import: the other pin waits for it */
    if (r_fail) {
        atomic_fetch_sub(&r_live, 1);
        return EIO;
    }
    e->mem = atomic_fetch_add(&r_serial, 1) + 1;
    e->cpu = RR_LIVE;
    atomic_fetch_add(&r_imports, 1);
    return 0;
}

/* Each round in two steps, each started by main: make the allocation's one pin (its import
 * never fails), then drop it. Main's own waits are all bounded, so a cache that hangs even
 * the first acquire of a round is a failure, not a hung test. */
static void *r_unpin_thread(void *arg)
{
    unsigned seed = 7;
    int i;

    for (i = 0; i < RR_ROUNDS; i++) {
        if (t_sem_wait(&r_go[RR_PINS], 2 * RR_WAIT_S) || atomic_load(&r_abandon))
            break;
        r_first = NULL;
        r_setup_rc = vr_icache_acquire(&rcache, &rkey, &r_first, &r_setup_created);
        if (r_setup_rc == 0 && r_setup_created)
            vr_icache_publish(&rcache, r_first, r_import(r_first, &seed));
        sem_post(&r_done);
        if (t_sem_wait(&r_go[RR_PINS], 2 * RR_WAIT_S) || atomic_load(&r_abandon))
            break;
        r_jitter(&seed);
        r_unpin(r_first, &seed);
        sem_post(&r_done);
    }
    return NULL;
}

static void *r_pin_thread(void *arg)
{
    int me = (int)(uintptr_t)arg, i;
    unsigned seed = 100 + (unsigned)me;

    for (i = 0; i < RR_ROUNDS; i++) {
        struct r_pin_result *res = &r_res[me];
        struct vr_import *e = NULL;
        uint64_t mem;

        if (t_sem_wait(&r_go[me], 2 * RR_WAIT_S) || atomic_load(&r_abandon))
            break;
        r_jitter(&seed);
        res->during = atomic_load(&r_tearing);
        res->rc = vr_icache_acquire(&rcache, &rkey, &e, &res->created);
        if (res->rc == 0 && res->created) {
            res->rc = r_import(e, &seed);
            vr_icache_publish(&rcache, e, res->rc);
        }
        res->shared = res->rc == 0 && e == r_first;
        if (res->rc == 0 && !e) {
            r_bad(&r_dead_use); /* success without an entry (one that failed or went) */
        } else if (res->rc == 0) {
            /* Ours until we let go: live now, and still the same import after a while. */
            if (e->state != VR_IMPORT_READY || e->cpu != RR_LIVE || e->mem == 0)
                r_bad(&r_dead_use);
            mem = e->mem;
            r_jitter(&seed);
            if (e->cpu != RR_LIVE || e->mem != mem)
                r_bad(&r_dead_use);
            r_unpin(e, &seed);
        }
        sem_post(&r_done);
    }
    return NULL;
}

/* Wait for n threads to end their step of the round: 0, or -1 after RR_WAIT_S. */
static int r_wait_done(int n)
{
    while (n--)
        if (t_sem_wait(&r_done, RR_WAIT_S))
            return -1;
    return 0;
}

static void test_cache_last_release_race(void)
{
    pthread_t t[RR_PINS + 1];
    int i, k, leak = 0, bad_rc = 0, shared = 0, fresh = 0, failed = 0, during = 0;
    const char *stop = NULL;
    struct timespec t0, t1;

    vr_icache_init(&rcache);
    sem_init(&r_done, 0, 0);
    for (i = 0; i <= RR_PINS; i++)
        sem_init(&r_go[i], 0, 0);
    for (i = 0; i < RR_PINS; i++)
        pthread_create(&t[i], NULL, r_pin_thread, (void *)(uintptr_t)i);
    pthread_create(&t[RR_PINS], NULL, r_unpin_thread, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (r_round = 0; r_round < RR_ROUNDS; r_round++) {
        r_fail = 0;
        sem_post(&r_go[RR_PINS]);
        if (r_wait_done(1)) {
            stop = "its first pin did not come back: it hangs in the cache";
            break;
        }
        if (r_setup_rc || !r_setup_created) {
            stop = "its first pin found the allocation still in the table, or failed";
            break;
        }
        r_fail = r_round % 4 == 3;
        for (i = 0; i <= RR_PINS; i++)
            sem_post(&r_go[i]);
        if (r_wait_done(RR_PINS + 1)) {
            stop = "a thread did not come back: it hangs in the cache";
            break;
        }
        /* Every reference is dropped: no entry, no import may be left. */
        if (vr_icache_count(&rcache) != 0 || atomic_load(&r_live) != 0) {
            leak++;
            r_bad(&r_bad_release);
        }
        for (k = 0; k < RR_PINS; k++) {
            struct r_pin_result *res = &r_res[k];

            /* 0 with the import it shared or made; the round's error only where imports fail,
             * and there 0 only with the import it shared. */
            if (res->rc == 0 ? r_fail && !res->shared : res->rc != EIO || !r_fail) {
                bad_rc++;
                r_bad(&r_bad_result);
            }
            shared += res->rc == 0 && res->shared;
            fresh += res->rc == 0 && res->created;
            failed += res->rc == EIO;
            during += res->during;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    t_check(!stop, "wb_vulkan/last_release_race_rounds_end", "round %d: %s", r_round, stop);
    if (stop)
        atomic_store(&r_abandon, 1);
    else
        for (i = 0; i <= RR_PINS; i++)
            pthread_join(t[i], NULL);
    t_check(atomic_load(&r_twice) == 0, "wb_vulkan/last_release_race_one_import",
            "%d times a pin imported the allocation while another import of it was live "
            "(first bad round %d)", atomic_load(&r_twice), atomic_load(&r_first_bad));
    t_check(atomic_load(&r_dead_use) == 0, "wb_vulkan/last_release_race_no_dead_import",
            "%d times a pin was given an import being released, released or failed, or none "
            "(first bad round %d)", atomic_load(&r_dead_use), atomic_load(&r_first_bad));
    t_check(bad_rc == 0, "wb_vulkan/last_release_race_failure_reaches_pins",
            "%d pins got neither the import they shared nor the round's error (first bad "
            "round %d)", bad_rc, atomic_load(&r_first_bad));
    if (stop)
        return; /* a thread may be stuck in the cache: leave it all as it is */
    t_check(atomic_load(&r_bad_release) == 0 && atomic_load(&r_imports) == atomic_load(&r_releases),
            "wb_vulkan/last_release_race_released_once",
            "imports %d releases %d, %d released twice, %d rounds left an entry or import "
            "(first bad round %d)", atomic_load(&r_imports), atomic_load(&r_releases),
            atomic_load(&r_bad_release) - leak, leak, atomic_load(&r_first_bad));
    /* The race must have happened: pins shared the import being dropped, imported afresh,
     * came while an import was being released, and saw imports fail. */
    t_check(shared > 0 && fresh > 0 && during > 0 && failed > 0,
            "wb_vulkan/last_release_race_happened", "shared %d fresh %d during %d failed %d",
            shared, fresh, during, failed);
    printf("# last_release_race: %d rounds in %.2f s: %d pins shared the live import, %d "
           "imported afresh, %d came during a release, %d got a failed import\n", RR_ROUNDS,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, shared,
           fresh, during, failed);
    for (i = 0; i < atomic_load(&r_ngraves); i++)
        free(r_graves[i]);
    for (i = 0; i <= RR_PINS; i++)
        sem_destroy(&r_go[i]);
    sem_destroy(&r_done);
    vr_icache_destroy(&rcache);
}

static void test_memtype(void)
{
    VkPhysicalDeviceMemoryProperties mp;
    const VkMemoryPropertyFlags dl = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
        hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
        hc = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;

    memset(&mp, 0, sizeof(mp));
    mp.memoryHeapCount = 3;
    mp.memoryHeaps[0].size = 140ull << 30; /* VRAM, all of it behind a large BAR1 */
    mp.memoryHeaps[1].size = 64ull << 30;  /* system memory */
    mp.memoryHeaps[2].size = 256ull << 20; /* a small BAR window */
    mp.memoryTypeCount = 5;
    mp.memoryTypes[0] = (VkMemoryType){ dl, 0 };
    mp.memoryTypes[1] = (VkMemoryType){ hv, 1 };
    mp.memoryTypes[2] = (VkMemoryType){ hv | hc, 1 };
    mp.memoryTypes[3] = (VkMemoryType){ dl | hv, 2 };
    mp.memoryTypes[4] = (VkMemoryType){ dl | hv, 0 };
    t_check(vr_vk_pick_memtype(&mp) == 4, "wb_vulkan/memtype_largest_bar_heap", "picked %d",
             vr_vk_pick_memtype(&mp));
    mp.memoryTypeCount = 4;
    t_check(vr_vk_pick_memtype(&mp) == 3, "wb_vulkan/memtype_small_bar", "picked %d",
             vr_vk_pick_memtype(&mp));
    mp.memoryTypes[3] = (VkMemoryType){ dl | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, 2 };
    t_check(vr_vk_pick_memtype(&mp) == -1, "wb_vulkan/memtype_none_without_coherent", "picked %d",
             vr_vk_pick_memtype(&mp));
    mp.memoryTypes[3] = (VkMemoryType){ dl | hv | hc, 0 };
    t_check(vr_vk_pick_memtype(&mp) == 3, "wb_vulkan/memtype_cached_if_only", "picked %d",
             vr_vk_pick_memtype(&mp));
}

/* The BAR1 rule of gdr_open's check: a window of half the GPU's memory or more serves (the
 * driver keeps a little of BAR1), a 256 MiB window on a GPU without resizable BAR does not. */
static void test_window(void)
{
    const uint64_t gib = 1ull << 30;

    t_check(vr_vk_window_enough(256 * gib, 141 * gib), "wb_vulkan/window_large_bar1",
            "H200's 256 GiB BAR1 refused");
    t_check(vr_vk_window_enough(80 * gib - (32ull << 20), 80 * gib),
            "wb_vulkan/window_bar1_the_memory_less_a_little", "refused");
    t_check(vr_vk_window_enough(8 * gib, 16 * gib), "wb_vulkan/window_half", "refused");
    t_check(!vr_vk_window_enough(256ull << 20, 16 * gib), "wb_vulkan/window_256mib_refused",
            "a 256 MiB window accepted for 16 GiB");
    t_check(!vr_vk_window_enough(8 * gib - 1, 16 * gib), "wb_vulkan/window_below_half_refused",
            "accepted");
    t_check(vr_vk_window_enough(256ull << 20, 0), "wb_vulkan/window_memory_unknown_accepted",
            "refused");
}

static void test_vk_errors(void)
{
    t_check(vr_vk_errno(VK_SUCCESS) == 0, "wb_vulkan/vkerr_success", "%d", vr_vk_errno(VK_SUCCESS));
    t_check(vr_vk_errno(VK_ERROR_OUT_OF_DEVICE_MEMORY) == ENOMEM, "wb_vulkan/vkerr_oom", "%d",
             vr_vk_errno(VK_ERROR_OUT_OF_DEVICE_MEMORY));
    t_check(vr_vk_errno(VK_ERROR_INVALID_EXTERNAL_HANDLE) == EINVAL, "wb_vulkan/vkerr_bad_handle", "%d",
             vr_vk_errno(VK_ERROR_INVALID_EXTERNAL_HANDLE));
    t_check(vr_vk_errno(VK_ERROR_INCOMPATIBLE_DRIVER) == ENODEV, "wb_vulkan/vkerr_no_driver", "%d",
             vr_vk_errno(VK_ERROR_INCOMPATIBLE_DRIVER));
    t_check(vr_vk_errno((VkResult)-12345) == EIO, "wb_vulkan/vkerr_unknown", "%d",
             vr_vk_errno((VkResult)-12345));
    t_check(strcmp(vr_vk_result_name(VK_ERROR_INVALID_EXTERNAL_HANDLE),
                    "VK_ERROR_INVALID_EXTERNAL_HANDLE") == 0, "wb_vulkan/vkerr_name", "%s",
             vr_vk_result_name(VK_ERROR_INVALID_EXTERNAL_HANDLE));
    t_check(strstr(vr_vk_result_name((VkResult)-12345), "-12345") != NULL, "wb_vulkan/vkerr_name_unknown",
             "%s", vr_vk_result_name((VkResult)-12345));
}

int main(void)
{
    test_page_range();
    test_cache_basic();
    test_cache_threads();
    test_cache_failure_wakes_waiters();
    test_cache_last_release_race();
    test_memtype();
    test_window();
    test_vk_errors();
    return t_status();
}

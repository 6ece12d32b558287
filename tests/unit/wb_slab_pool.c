// SPDX-License-Identifier: MIT
/*
 * wb_slab_pool.c - the small-allocation pool behind vramio_alloc (src/alloc/slab_pool.c)
 * without a GPU: slabs are host memory, so every block can be written and checked. Size
 * classes and 512-byte alignment, blocks that never overlap, reuse of freed blocks and
 * emptied slabs, the bounded cache, allocations of their own, clean EINVAL for every address
 * that is not a live allocation, ENOMEM recovery by dropping the cache, and 8 threads at once
 * (also run under ThreadSanitizer by 'make check').
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "alloc/slab_pool.h"

struct fake {
    atomic_int creates, destroys, live;
    int max_live;        /* creates beyond this many live slabs fail with ENOMEM (0: no limit) */
    int fail_with;       /* the next create fails with this errno (0: none) */
    int misalign;        /* the next create returns an address off the slab alignment */
    size_t align;
    size_t piece;        /* large slabs say they are pieces of this many bytes (0: one) */
    atomic_uint last_pieces; /* what the last destroy was given (destroys run concurrently) */
};

static int fake_create(void *ctx, size_t size, uint64_t *base, void **cookie, unsigned *pieces)
{
    struct fake *f = ctx;
    void *m;

    if (f->fail_with) {
        int e = f->fail_with;

        f->fail_with = 0;
        return e;
    }
    if (f->max_live && atomic_load(&f->live) >= f->max_live)
        return ENOMEM;
    m = aligned_alloc(f->align, size + (f->misalign ? f->align : 0));
    if (!m)
        return ENOMEM;
    *cookie = m;
    *base = (uint64_t)(uintptr_t)m + (f->misalign ? 256 : 0);
    if (f->misalign)
        f->misalign = 0;
    if (f->piece && size > f->piece)
        *pieces = (unsigned)((size + f->piece - 1) / f->piece);
    atomic_fetch_add(&f->creates, 1);
    atomic_fetch_add(&f->live, 1);
    return 0;
}

static void fake_destroy(void *ctx, uint64_t base, size_t size, void *cookie, unsigned pieces)
{
    struct fake *f = ctx;

    free(cookie);
    atomic_store(&f->last_pieces, pieces);
    atomic_fetch_add(&f->destroys, 1);
    atomic_fetch_sub(&f->live, 1);
}

static const struct vr_slab_ops fake_ops = { fake_create, fake_destroy };

/*
 * The end of a test's pool: the library keeps its pools for the life of the process and has
 * no such call. Every block is freed by then (a block left is the failure of the test that
 * made it, reported there); the cached slabs go through the pool's own trim, then the table
 * and the lock that vr_pool_init made.
 */
static void pool_end(struct vr_pool *p)
{
    vr_pool_trim(p);
    free(p->bucket);
    p->bucket = NULL;
    if (p->lock == &p->own_lock)
        pthread_mutex_destroy(&p->own_lock);
}

#define SLAB (64u * 1024)

static void test_init(void)
{
    struct vr_pool p;
    struct fake f = { .align = SLAB };
    int rc;

    rc = vr_pool_init(&p, &fake_ops, &f, 3000, 1024, 0, NULL);
    t_check(rc == EINVAL, "pool/init_slab_not_power_of_two", "rc %d", rc);
    rc = vr_pool_init(&p, &fake_ops, &f, 256, 1024, 0, NULL);
    t_check(rc == EINVAL, "pool/init_slab_too_small", "rc %d", rc);
    rc = vr_pool_init(&p, NULL, &f, SLAB, 1024, 0, NULL);
    t_check(rc == EINVAL, "pool/init_no_ops", "rc %d", rc);
    rc = vr_pool_init(&p, &fake_ops, &f, 2u << 20, 1u << 20, 0, NULL);
    t_check(rc == 0 && p.small_max == (1u << 20) && p.class_size[0] == 512 &&
            p.class_size[2] == 1536 && p.class_size[p.nclasses - 1] == (1u << 20),
            "pool/init_classes_512_to_1MiB", "rc %d small_max %zu classes %u", rc, p.small_max,
            p.nclasses);
    if (rc == 0)
        pool_end(&p);
    rc = vr_pool_init(&p, &fake_ops, &f, SLAB, 1u << 20, 0, NULL);
    t_check(rc == 0 && p.small_max == SLAB / 2, "pool/init_small_max_capped_at_half_slab",
            "rc %d small_max %zu", rc, p.small_max);
    if (rc == 0)
        pool_end(&p);
}

/* Fill a block with a tag, check it later: overlapping blocks would overwrite each other. */
static void fill(uint64_t a, size_t n, unsigned tag)
{
    memset((void *)(uintptr_t)a, (int)(tag & 0xff), n);
}

static int intact(uint64_t a, size_t n, unsigned tag)
{
    const unsigned char *c = (const unsigned char *)(uintptr_t)a;
    size_t i;

    for (i = 0; i < n; i++)
        if (c[i] != (tag & 0xff))
            return 0;
    return 1;
}

#define NBLK 600

static void test_carving(void)
{
    static uint64_t addr[NBLK];
    static size_t len[NBLK];
    struct vr_pool p;
    struct fake f = { .align = SLAB };
    struct vr_pool_stats st;
    int bad_align = 0, bad_find = 0, overlap = 0, i;
    unsigned seed = 7;

    if (vr_pool_init(&p, &fake_ops, &f, SLAB, 1u << 20, 4 * SLAB, NULL)) {
        t_check(0, "pool/carving", "init failed");
        return;
    }
    for (i = 0; i < NBLK; i++) {
        uint64_t b = 0;
        size_t s = 0;

        len[i] = 1 + (size_t)(rand_r(&seed) % (i % 3 ? 3000 : SLAB / 2));
        if (vr_pool_alloc(&p, len[i], &addr[i])) {
            t_check(0, "pool/carving_alloc", "block %d of %zu bytes failed", i, len[i]);
            pool_end(&p);
            return;
        }
        bad_align += (addr[i] % VR_POOL_MIN_ALIGN) != 0;
        if (vr_pool_find(&p, addr[i] + len[i] - 1, &b, &s) || b != addr[i] || s < len[i] ||
            s > len[i] + len[i] / 2 + VR_POOL_MIN_ALIGN)
            bad_find++;
        fill(addr[i], len[i], (unsigned)i);
    }
    for (i = 0; i < NBLK; i++)
        overlap += !intact(addr[i], len[i], (unsigned)i);
    t_check(bad_align == 0, "pool/every_block_512_aligned", "%d misaligned", bad_align);
    t_check(bad_find == 0, "pool/find_gives_block_and_its_class", "%d wrong", bad_find);
    t_check(overlap == 0, "pool/blocks_never_overlap", "%d blocks overwritten", overlap);
    vr_pool_get_stats(&p, &st);
    t_check(st.small_allocs == NBLK && st.large_allocs == 0 && st.slabs == (size_t)f.creates,
            "pool/stats_count_live_blocks", "small %zu large %zu slabs %zu creates %d",
            st.small_allocs, st.large_allocs, st.slabs, f.creates);
    for (i = 0; i < NBLK; i++)
        if (vr_pool_free(&p, addr[i]))
            break;
    vr_pool_get_stats(&p, &st);
    t_check(i == NBLK && st.small_allocs == 0 && st.small_bytes == 0 && st.cached_slabs <= 4 &&
            st.slabs == st.cached_slabs && f.live == (int)st.cached_slabs,
            "pool/all_freed_only_cache_left", "freed %d small %zu cached %zu slabs %zu live %d",
            i, st.small_allocs, st.cached_slabs, st.slabs, f.live);
    t_check(vr_pool_trim(&p) == st.cached_slabs && f.live == 0, "pool/trim_releases_cache",
            "live %d", f.live);
    pool_end(&p);
}

static void test_reuse_and_errors(void)
{
    struct vr_pool p;
    struct fake f = { .align = SLAB };
    struct vr_pool_stats st;
    uint64_t a = 0, b = 0, c = 0, big = 0, base = 0;
    size_t size = 0;
    int n0;

    if (vr_pool_init(&p, &fake_ops, &f, SLAB, SLAB / 2, SLAB, NULL)) {
        t_check(0, "pool/reuse", "init failed");
        return;
    }
    vr_pool_alloc(&p, 100, &a);
    vr_pool_free(&p, a);
    vr_pool_alloc(&p, 200, &b);
    t_check(a && a == b, "pool/freed_block_reused", "a %#llx b %#llx", (unsigned long long)a,
            (unsigned long long)b);
    vr_pool_free(&p, b);
    vr_pool_get_stats(&p, &st);
    t_check(st.cached_slabs == 1 && f.live == 1, "pool/emptied_slab_cached", "cached %zu live %d",
            st.cached_slabs, f.live);
    n0 = f.creates;
    vr_pool_alloc(&p, 5000, &c); /* another class: the cached slab is carved again */
    t_check(f.creates == n0 && (c & ~(uint64_t)(SLAB - 1)) == (a & ~(uint64_t)(SLAB - 1)),
            "pool/cached_slab_serves_other_class", "creates %d -> %d", n0, f.creates);

    t_check(vr_pool_free(&p, c + 256) == EINVAL, "pool/free_inside_block_einval", "accepted");
    t_check(vr_pool_free(&p, 0x1234000) == EINVAL, "pool/free_foreign_einval", "accepted");
    t_check(vr_pool_free(&p, 0) == EINVAL, "pool/free_null_einval", "accepted");
    t_check(vr_pool_free(&p, c + 8192) == EINVAL, "pool/free_unused_block_einval", "accepted");
    t_check(vr_pool_find(&p, c + 8192, &base, &size) == ENOENT, "pool/find_unused_block_enoent",
            "found");
    t_check(vr_pool_free(&p, c) == 0 && vr_pool_free(&p, c) == EINVAL, "pool/double_free_einval",
            "second free accepted");
    t_check(vr_pool_free(&p, c & ~(uint64_t)(SLAB - 1)) == EINVAL, "pool/free_cached_slab_einval",
            "accepted");
    t_check(vr_pool_alloc(&p, 0, &a) == EINVAL, "pool/alloc_zero_einval", "accepted");
    t_check(vr_pool_alloc(&p, SIZE_MAX - 10, &a) == EINVAL, "pool/alloc_huge_einval", "accepted");

    n0 = f.creates;
    vr_pool_alloc(&p, 3 * SLAB + 1, &big);
    vr_pool_get_stats(&p, &st);
    t_check(big && f.creates == n0 + 1 && st.large_allocs == 1 && st.large_bytes == 4 * SLAB,
            "pool/large_gets_own_rounded_slab", "creates %d large %zu bytes %zu", f.creates - n0,
            st.large_allocs, st.large_bytes);
    t_check(vr_pool_find(&p, big + 100, &base, &size) == 0 && base == big && size == 4 * SLAB,
            "pool/find_inside_large", "base %#llx size %zu", (unsigned long long)base, size);
    t_check(vr_pool_free(&p, big + SLAB) == EINVAL, "pool/free_inside_large_einval", "accepted");
    n0 = f.destroys;
    t_check(vr_pool_free(&p, big) == 0 && f.destroys == n0 + 1, "pool/large_freed_at_once",
            "destroys %d", f.destroys - n0);
    pool_end(&p);
    t_check(f.live == 0 && f.creates == f.destroys, "pool/end_releases_everything",
            "live %d", f.live);
}

static void test_cache_bound_and_failures(void)
{
    uint64_t a[40];
    struct vr_pool p;
    struct fake f = { .align = SLAB };
    struct vr_pool_stats st;
    int i, rc;

    if (vr_pool_init(&p, &fake_ops, &f, SLAB, SLAB / 2, 2 * SLAB, NULL)) {
        t_check(0, "pool/cache_bound", "init failed");
        return;
    }
    for (i = 0; i < 40; i++) /* two blocks per slab: 20 slabs */
        vr_pool_alloc(&p, SLAB / 2, &a[i]);
    for (i = 0; i < 40; i++)
        vr_pool_free(&p, a[i]);
    vr_pool_get_stats(&p, &st);
    t_check(st.cached_slabs == 2 && f.live == 2, "pool/cache_bounded", "cached %zu live %d",
            st.cached_slabs, f.live);

    /* Out of device memory: the cache is released and the create tried once more. */
    f.max_live = 2;
    for (i = 0; i < 3; i++)
        a[i] = 0;
    rc = vr_pool_alloc(&p, 3 * SLAB, &a[0]);
    vr_pool_get_stats(&p, &st);
    t_check(rc == 0 && st.cached_slabs == 0, "pool/enomem_drops_cache_and_retries",
            "rc %d cached %zu", rc, st.cached_slabs);
    f.max_live = 1;
    rc = vr_pool_alloc(&p, 100, &a[1]);
    t_check(rc == ENOMEM, "pool/enomem_reported", "rc %d", rc);
    f.max_live = 0;
    f.fail_with = EPERM;
    rc = vr_pool_alloc(&p, 100, &a[1]);
    t_check(rc == EPERM, "pool/create_error_passed_on", "rc %d", rc);
    f.misalign = 1;
    rc = vr_pool_alloc(&p, 100, &a[1]);
    t_check(rc == EIO && f.live == 1, "pool/misaligned_slab_refused", "rc %d live %d", rc, f.live);
    vr_pool_free(&p, a[0]);
    pool_end(&p);
    t_check(f.live == 0, "pool/nothing_left", "live %d", f.live);
}

/* ---- many threads: random sizes, every block checked before it is freed ---------------- */
#define THREADS 8
#define OPS     20000
#define SLOTS   64

static struct vr_pool tpool;
static pthread_mutex_t tlock = PTHREAD_MUTEX_INITIALIZER; /* the caller's lock, as alloc.c's */
static atomic_int thread_errors;

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;
    uint64_t addr[SLOTS] = { 0 };
    size_t len[SLOTS] = { 0 };
    unsigned tag = (unsigned)(uintptr_t)arg * 1000;
    unsigned tags[SLOTS] = { 0 };
    int i;

    for (i = 0; i < OPS; i++) {
        int k = rand_r(&seed) % SLOTS;

        if (addr[k]) {
            if (!intact(addr[k], len[k], tags[k]) || vr_pool_free(&tpool, addr[k]))
                atomic_fetch_add(&thread_errors, 1);
            addr[k] = 0;
        } else {
            /* Mostly small, a few of their own (larger than small_max). */
            len[k] = rand_r(&seed) % 50 ? 1 + (size_t)(rand_r(&seed) % 4096) :
                     SLAB + (size_t)(rand_r(&seed) % SLAB);
            if (vr_pool_alloc(&tpool, len[k], &addr[k]) || addr[k] % VR_POOL_MIN_ALIGN) {
                atomic_fetch_add(&thread_errors, 1);
                addr[k] = 0;
                continue;
            }
            tags[k] = ++tag;
            fill(addr[k], len[k], tags[k]);
        }
    }
    for (i = 0; i < SLOTS; i++)
        if (addr[i] && (!intact(addr[i], len[i], tags[i]) || vr_pool_free(&tpool, addr[i])))
            atomic_fetch_add(&thread_errors, 1);
    return NULL;
}

static void test_threads(void)
{
    pthread_t t[THREADS];
    struct fake f = { .align = SLAB };
    struct vr_pool_stats st;
    int i, started = 0;

    if (vr_pool_init(&tpool, &fake_ops, &f, SLAB, SLAB / 2, 8 * SLAB, &tlock)) {
        t_check(0, "pool/threads", "init failed");
        return;
    }
    for (i = 0; i < THREADS; i++)
        started += pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)) == 0;
    for (i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    vr_pool_get_stats(&tpool, &st);
    t_check(started == THREADS && thread_errors == 0 && st.small_allocs == 0 &&
            st.large_allocs == 0 && st.cached_slabs <= 8 && st.slabs == st.cached_slabs,
            "pool/threads_8_random_alloc_free_checked", "threads %d errors %d small %zu large %zu "
            "cached %zu slabs %zu", started, thread_errors, st.small_allocs, st.large_allocs,
            st.cached_slabs, st.slabs);
    vr_pool_trim(&tpool);
    t_check(f.live == 0 && f.creates == f.destroys, "pool/threads_no_slab_leaked",
            "live %d creates %d destroys %d", f.live, f.creates, f.destroys);
    pool_end(&tpool);
}

/* A large slab made of pieces side by side (alloc.c's chunks): found whole from any address
 * in it, deep pieces included, never freed from inside, gone whole at its free; a slab of one
 * piece keeps the old rule (found from its first SLAB bytes only, the driver tells the rest). */
static void test_pieces(void)
{
    uint64_t big = 0, one = 0, base = 0, probe;
    size_t size = 0;
    struct vr_pool p;
    struct fake f = { .align = SLAB, .piece = 2 * SLAB };
    int ok = 1;

    t_check(vr_pool_init(&p, &fake_ops, &f, SLAB, SLAB / 2, 0, NULL) == 0 &&
            vr_pool_alloc(&p, 7 * SLAB, &big) == 0 && vr_pool_alloc(&p, 2 * SLAB, &one) == 0,
            "pieces/alloc", "failed");
    for (probe = big; ok && probe < big + 7 * SLAB; probe += SLAB / 4)
        ok = vr_pool_find(&p, probe, &base, &size) == 0 && base == big && size == 7 * SLAB &&
              vr_pool_owns(&p, probe);
    t_check(ok, "pieces/found_whole_from_every_address", "at +%#llx: base %#llx size %zu",
            (unsigned long long)(probe - SLAB / 4 - big), (unsigned long long)(base - big), size);
    t_check(vr_pool_find(&p, big + 7 * SLAB, &base, &size) == ENOENT || base != big,
            "pieces/not_past_its_end", "found from its end");
    t_check(vr_pool_find(&p, one + SLAB + 8, &base, &size) == ENOENT,
            "pieces/one_piece_found_from_its_first_slab_only", "found deep");
    t_check(vr_pool_free(&p, big + 2 * SLAB) == EINVAL && vr_pool_free(&p, big + 5 * SLAB) == EINVAL,
            "pieces/free_from_a_piece_einval", "accepted");
    t_check(vr_pool_free(&p, big) == 0 && f.last_pieces == 4, "pieces/destroy_told_its_pieces",
            "destroy got %u pieces", f.last_pieces);
    t_check(vr_pool_find(&p, big + 5 * SLAB, &base, &size) == ENOENT &&
            !vr_pool_owns(&p, big + 5 * SLAB), "pieces/freed_found_nowhere", "still found");
    t_check(vr_pool_free(&p, one) == 0 && f.last_pieces == 1, "pieces/one_piece_told_one",
            "destroy got %u pieces", f.last_pieces);
    pool_end(&p);
    free(p.split);
    t_check(f.live == 0, "pieces/no_slab_leaked", "live %d", f.live);
}

int main(void)
{
    test_init();
    test_carving();
    test_reuse_and_errors();
    test_cache_bound_and_failures();
    test_pieces();
    test_threads();
    return t_status();
}

/* SPDX-License-Identifier: MIT */
/*
 * wb_core.c - white-box test of the core's dispatch and locking (gdrapi.c, instance.c, pin.c) with three
 * fake backends defined here, so that it runs, also under TSan, on a machine without a GPU.
 * The fakes are handed to the instance as its backend table (vr_instance_open, what gdr_open
 * does with the real ones), and everything after that goes through the public gdr_* calls.
 *
 * Checks: the pin is offered in priority order, ENOTSUP falls through, another error is final,
 * all-declined returns the first error with every reason; gdr_close releases pins, mappings
 * and contexts; a slow pin holds up neither copies nor other pins' calls; 16 threads pin, map,
 * copy, unmap and unpin on one gdr_t while others probe their handles and one instance is
 * closed under its users; nothing leaks.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "t.h"
#include "core/core.h"
#include "process/fork.h"

/* Fake "GPU" address ranges: A serves [A_BASE, +RANGE), B serves [B_BASE, +RANGE), B fails
 * finally on [FAIL_BASE, +RANGE), A pins [SLOW_BASE, +RANGE) slowly. */
#define RANGE     (1UL << 32)
#define A_BASE    (1UL << 40)
#define SLOW_BASE (A_BASE + RANGE / 2)
#define B_BASE    (2UL << 40)
#define FAIL_BASE (3UL << 40)
#define PAGE      65536UL

struct fake_pin {
    uint64_t va, size;
};

static _Atomic int live_pins, live_maps, live_ctx, c_consulted, slow_in_pin;
static _Atomic int backend_ops; /* every op on a pin or context, for the fork checks */

static int in(uint64_t a, uint64_t base)
{
    return a >= base && a < base + RANGE;
}

static int fake_probe(char *why, size_t len) { snprintf(why, len, "fake"); return 0; }
static int fake_open(void **ctx, char *why, size_t len)
{
    *ctx = NULL;
    live_ctx++;
    return 0;
}
static void fake_close(void *ctx) { live_ctx--; }

static int make_pin(const struct vr_pin_req *req, void **pin, struct vr_pin_info *info)
{
    struct fake_pin *p = malloc(sizeof(*p));
    int b;

    backend_ops++;
    if (!p)
        return ENOMEM;
    p->va = req->va;                 /* the core hands whole GPU pages */
    p->size = req->len;
    /* B measures nothing, like the user-space backends: the core times its pins. */
    b = in(p->va, B_BASE);
    *info = (struct vr_pin_info){ .va = p->va, .mapped_size = p->size, .page_size = PAGE,
                                  .tm_cycles = b ? 0 : 1, .cycles_per_ms = b ? 0 : 1000 };
    *pin = p;
    live_pins++;
    return 0;
}

static int a_pin(void *ctx, const struct vr_pin_req *req, void **pin, struct vr_pin_info *info,
                 char *why, size_t len)
{
    if (in(req->addr, SLOW_BASE)) {
        slow_in_pin = 1;
        usleep(200000);
        slow_in_pin = 0;
    } else if (!in(req->addr, A_BASE)) {
        snprintf(why, len, "A does not serve %#llx", (unsigned long long)req->addr);
        return ENOTSUP;
    }
    return make_pin(req, pin, info);
}

static int b_pin(void *ctx, const struct vr_pin_req *req, void **pin, struct vr_pin_info *info,
                 char *why, size_t len)
{
    if (in(req->addr, FAIL_BASE)) {
        snprintf(why, len, "B owns it but failed");
        return EIO;
    }
    if (!in(req->addr, B_BASE)) {
        snprintf(why, len, "B does not serve it");
        return ENOTSUP;
    }
    return make_pin(req, pin, info);
}

static int c_pin(void *ctx, const struct vr_pin_req *req, void **pin, struct vr_pin_info *info,
                 char *why, size_t len)
{
    c_consulted++;
    snprintf(why, len, "C serves nothing");
    return ENOTSUP;
}

static int fake_unpin(void *ctx, void *pin)
{
    backend_ops++;
    free(pin);
    live_pins--;
    return 0;
}

static int fake_map(void *ctx, void *pin, size_t size, gdr_mapping_type_t want, void **ptr,
                    gdr_mapping_type_t *granted, char *why, size_t len)
{
    void *p;

    backend_ops++;
    if (want == GDR_MAPPING_TYPE_DEVICE) {
        snprintf(why, len, "this fake platform has no device mappings");
        return EINVAL; /* a type this "platform" cannot grant */
    }
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return ENOMEM;
    vr_fork_dontfork(p, size); /* as the user-space backends mark theirs */
    *ptr = p;
    *granted = want == GDR_MAPPING_TYPE_NONE ? GDR_MAPPING_TYPE_WC : want;
    live_maps++;
    return 0;
}

static int fake_unmap(void *ctx, void *pin, void *ptr, size_t size)
{
    backend_ops++;
    live_maps--;
    return munmap(ptr, size) ? errno : 0;
}

static _Atomic int slow_cb, slow_in_cb;

/* With slow_cb set, the call holds the pin's lock in the core for 200 ms. */
static int fake_cb(void *ctx, void *pin, int *flag)
{
    backend_ops++;
    if (slow_cb) {
        slow_in_cb = 1;
        usleep(200000);
        slow_in_cb = 0;
    }
    *flag = 0;
    return 0;
}
static int fake_attr(void *ctx, gdr_attr_t a, int *v)
{
    backend_ops++;
    *v = a == 1;
    return 0;
}

static int fake_version(void *ctx, int *ma, int *mi)
{
    backend_ops++;
    *ma = 2;
    *mi = 6;
    return 0;
}

#define FAKE(ID, NAME, PIN) { .id = ID, .name = NAME, .probe = fake_probe, .open = fake_open, \
    .close = fake_close, .pin = PIN, .unpin = fake_unpin, .map = fake_map, .unmap = fake_unmap, \
    .callback_flag = fake_cb, .get_attr = fake_attr, .driver_version = fake_version }
static const struct vr_backend_ops fake_a = FAKE(VRAMIO_BACKEND_GDRDRV, "fakeA", a_pin);
static const struct vr_backend_ops fake_b = FAKE(VRAMIO_BACKEND_DMABUF, "fakeB", b_pin);
static const struct vr_backend_ops fake_c = FAKE(VRAMIO_BACKEND_VULKAN, "fakeC", c_pin);

/* A gdr_t served by the fakes: the instance opened from their table, as gdr_open opens one
 * from the real backends'. */
static gdr_t fake_open_gdr(void)
{
    static const struct vr_backend_ops *const table[VRAMIO_BACKEND_COUNT] = {
        [VRAMIO_BACKEND_GDRDRV] = &fake_a, [VRAMIO_BACKEND_DMABUF] = &fake_b,
        [VRAMIO_BACKEND_VULKAN] = &fake_c,
    };
    struct vr_gdr *gdr;

    return vr_instance_open(table, &gdr) ? NULL : (gdr_t)(uintptr_t)gdr->token;
}

/* The core rounds a pin to whole GPU pages once for every backend, and refuses a range whose
 * last page would end past the address space before any backend sees it. */
static void test_rounding(gdr_t g)
{
    gdr_info_v2_t info;
    gdr_mh_t mh;
    int ops, rc;

    rc = gdr_pin_buffer_v2(g, A_BASE + PAGE + 100, PAGE, 0, &mh);
    t_check(rc == 0 && gdr_get_info_v2(g, mh, &info) == 0 && info.va == A_BASE + PAGE &&
            info.mapped_size == 2 * PAGE, "core_rounds_to_gpu_pages", "rc %d va %#llx size %llu",
            rc, (unsigned long long)info.va, (unsigned long long)info.mapped_size);
    if (rc == 0)
        gdr_unpin_buffer(g, mh);
    memset(&info, 0, sizeof(info));
    rc = gdr_pin_buffer_v2(g, B_BASE, PAGE, 0, &mh);
    if (rc == 0)
        rc = gdr_get_info_v2(g, mh, &info);
    t_check(rc == 0 && info.tm_cycles > 0 && info.cycles_per_ms > 0, "core_times_pin_for_backend",
            "rc %d tm %llu rate %u", rc, (unsigned long long)info.tm_cycles, info.cycles_per_ms);
    if (rc == 0)
        gdr_unpin_buffer(g, mh);
    ops = backend_ops;
    rc = gdr_pin_buffer_v2(g, (unsigned long)(UINT64_MAX - 0x8000), 0x100, 0, &mh);
    t_check(rc == EINVAL && backend_ops == ops && mh.h == 0, "core_refuses_wrap_in_gpu_pages",
            "rc %d, %d backend ops", rc, (int)(backend_ops - ops));
}

static void test_dispatch(void)
{
    gdr_t g = fake_open_gdr();
    vramio_backend_t be = VRAMIO_BACKEND_NONE;
    gdr_mh_t mh;
    const char *e;
    int rc;

    t_check(gdr_pin_buffer_v2(g, A_BASE + 100, 1000, 0, &mh) == 0 &&
            vramio_handle_backend(g, mh, &be) == 0 && be == VRAMIO_BACKEND_GDRDRV,
            "first_backend_serves", "backend %d", (int)be);
    gdr_unpin_buffer(g, mh);
    t_check(gdr_pin_buffer_v2(g, B_BASE, PAGE, 0, &mh) == 0 &&
            vramio_handle_backend(g, mh, &be) == 0 && be == VRAMIO_BACKEND_DMABUF,
            "enotsup_falls_through", "backend %d", (int)be);
    gdr_unpin_buffer(g, mh);
    c_consulted = 0;
    rc = gdr_pin_buffer_v2(g, FAIL_BASE, PAGE, 0, &mh);
    t_check(rc == EIO && c_consulted == 0 && mh.h == 0, "other_error_is_final",
            "rc %d, C consulted %d times", rc, (int)c_consulted);
    rc = gdr_pin_buffer_v2(g, 5UL << 40, PAGE, 0, &mh);
    e = vramio_last_error();
    t_check(rc == ENOTSUP && strstr(e, "fakeA") && strstr(e, "fakeB") && strstr(e, "fakeC") &&
            strstr(e, "C serves nothing"), "all_decline_first_error_and_reasons",
            "rc %d, '%s'", rc, e);
    t_check(vramio_get_backend(g, &be) == 0 && be == VRAMIO_BACKEND_GDRDRV, "get_backend_first",
            "%d", (int)be);
    test_rounding(g);
    t_check(gdr_close(g) == 0 && live_ctx == 0, "close_closes_contexts", "%d left", (int)live_ctx);
}

static void test_map_rules_and_close(void)
{
    gdr_t g = fake_open_gdr();
    gdr_mh_t mh[6];
    gdr_info_t info;
    void *ptr = NULL, *p2;
    int i, ok = 1;
    char buf[64] = "payload";

    t_check(gdr_pin_buffer(g, A_BASE + 5, 3 * PAGE, 0, 0, &mh[0]) == 0 &&
            gdr_get_info_v2(g, mh[0], &info) == 0 && info.va == A_BASE &&
            info.mapped_size == 4 * PAGE && info.cycles_per_ms == 1000 && !info.mapped,
            "info_from_backend", "va %#llx size %llu", (unsigned long long)info.va,
            (unsigned long long)info.mapped_size);
    t_check(gdr_map_v2(g, mh[0], &ptr, PAGE, GDR_MAP_FLAG_REQ_DEVICE_MAPPING) == EINVAL &&
            strstr(vramio_last_error(), "no device mappings") &&
            gdr_get_info_v2(g, mh[0], &info) == 0 && !info.mapped, "ungrantable_type_einval",
            "accepted, left mapped, or the backend's reason lost: '%s'", vramio_last_error());
    t_check(gdr_map_v2(g, mh[0], &ptr, 4 * PAGE, GDR_MAP_FLAG_REQ_CACHE_MAPPING) == 0 &&
            gdr_get_info_v2(g, mh[0], &info) == 0 && info.mapped &&
            info.mapping_type == GDR_MAPPING_TYPE_CACHING && !info.wc_mapping,
            "requested_type_reported", "type %d", info.mapping_type);
    t_check(gdr_map(g, mh[0], &p2, PAGE) == EAGAIN, "map_twice_eagain", "%s", vramio_last_error());
    t_check(gdr_copy_to_mapping(mh[0], (char *)ptr + 4 * PAGE - 64, buf, 64) == 0 &&
            memcmp((char *)ptr + 4 * PAGE - 64, buf, 64) == 0, "copy_last_bytes", "%s", vramio_last_error());
    t_check(gdr_copy_to_mapping(mh[0], (char *)ptr + 4 * PAGE - 63, buf, 64) == EINVAL,
            "copy_past_end_einval", "%s", vramio_last_error());
    t_check(gdr_copy_to_mapping(mh[0], (char *)ptr - 1, buf, 8) == EINVAL &&
                gdr_copy_from_mapping(mh[0], buf, (char *)ptr - 64, 64) == EINVAL &&
                gdr_copy_from_mapping(mh[0], buf, (char *)ptr + 8, SIZE_MAX) == EINVAL &&
                gdr_copy_from_mapping(mh[0], buf, (char *)ptr + 4 * PAGE, 64) == EINVAL,
            "copy_outside_either_end_einval", "%s", vramio_last_error());
    for (i = 1; i < 6; i++) {
        ok &= gdr_pin_buffer_v2(g, A_BASE + (uint64_t)i * 4 * PAGE, PAGE, 0, &mh[i]) == 0;
        if (i % 2)
            ok &= gdr_map(g, mh[i], &p2, PAGE) == 0;
    }
    t_check(ok && live_pins == 6 && live_maps == 4, "held", "pins %d maps %d", (int)live_pins,
            (int)live_maps);
    t_check(gdr_close(g) == 0 && live_pins == 0 && live_maps == 0 && live_ctx == 0,
            "close_releases_everything", "pins %d maps %d ctx %d", (int)live_pins,
            (int)live_maps, (int)live_ctx);
    t_check(gdr_copy_to_mapping(mh[0], ptr, buf, 8) == EINVAL, "copy_after_close_einval", "%s", vramio_last_error());
}

/* A pin that takes 200 ms must not hold up copies or calls on other pins of the same gdr_t. */
struct slow_arg {
    gdr_t g;
    gdr_mh_t mh;   /* for slow_flag_reader */
    int rc;
};

static void *slow_flag_reader(void *arg)
{
    struct slow_arg *a = arg;
    int flag;

    a->rc = gdr_get_callback_flag(a->g, a->mh, &flag);
    return NULL;
}

static void *slow_pinner(void *arg)
{
    struct slow_arg *a = arg;
    gdr_mh_t mh;

    a->rc = gdr_pin_buffer_v2(a->g, SLOW_BASE, PAGE, 0, &mh);
    if (a->rc == 0)
        gdr_unpin_buffer(a->g, mh);
    return NULL;
}

static void test_slow_pin(void)
{
    gdr_t g = fake_open_gdr();
    struct slow_arg a = { .g = g, .rc = -1 };
    char buf[64] = { 0 };
    gdr_info_t info;
    gdr_mh_t mh, mh2;
    pthread_t t;
    void *ptr;
    int i, ok = 1, during;

    gdr_pin_buffer_v2(g, A_BASE, PAGE, 0, &mh);
    gdr_map(g, mh, &ptr, PAGE);
    pthread_create(&t, NULL, slow_pinner, &a);
    while (!slow_in_pin)
        usleep(100);
    for (i = 0; i < 1000; i++)
        ok &= gdr_copy_to_mapping(mh, ptr, buf, sizeof(buf)) == 0 &&
              gdr_get_info_v2(g, mh, &info) == 0;
    ok &= gdr_pin_buffer_v2(g, A_BASE + PAGE, PAGE, 0, &mh2) == 0 && gdr_unpin_buffer(g, mh2) == 0;
    during = slow_in_pin;
    pthread_join(t, NULL);
    t_check(ok && during, "slow_pin_blocks_nothing", "calls %s; slow pin %s while they ran",
            ok ? "ok" : "failed", during ? "in progress" : "already over");
    t_check(a.rc == 0, "slow_pin_completes", "rc %d", a.rc);

    /* Copies take no lock: they go on while another call holds this very pin's lock. */
    a = (struct slow_arg){ .g = g, .mh = mh, .rc = -1 };
    slow_cb = 1;
    pthread_create(&t, NULL, slow_flag_reader, &a);
    while (!slow_in_cb)
        usleep(100);
    for (i = 0, ok = 1; i < 1000; i++)
        ok &= gdr_copy_to_mapping(mh, ptr, buf, sizeof(buf)) == 0;
    during = slow_in_cb;
    pthread_join(t, NULL);
    slow_cb = 0;
    t_check(ok && during && a.rc == 0, "copies_take_no_pin_lock",
            "copies %s; the locked call %s while they ran", ok ? "ok" : "failed",
            during ? "in progress" : "already over");
    gdr_close(g);
}

/* 16 threads on one gdr_t: 12 do full cycles on their own pins, 4 probe everybody's handles. */
#define NT 16
#define NW 12
static gdr_t shared;
static _Atomic unsigned long published[NW];
static _Atomic int thread_errors;

static void *cycler(void *arg)
{
    long id = (long)arg;
    char pat[128], back[128];
    gdr_mh_t mh;
    void *ptr;
    int i;

    memset(pat, (int)id, sizeof(pat));
    for (i = 0; i < 300; i++) {
        if (gdr_pin_buffer_v2(shared, A_BASE + (uint64_t)id * PAGE * 4, 2 * PAGE, 0, &mh) ||
            gdr_map(shared, mh, &ptr, 2 * PAGE)) {
            thread_errors++;
            continue;
        }
        published[id] = mh.h;
        if (gdr_copy_to_mapping(mh, (char *)ptr + PAGE, pat, sizeof(pat)) ||
            gdr_copy_from_mapping(mh, back, (char *)ptr + PAGE, sizeof(back)) ||
            memcmp(pat, back, sizeof(pat)))
            thread_errors++;
        if (i % 2 && gdr_unmap(shared, mh, ptr, 2 * PAGE))
            thread_errors++;
        if (gdr_unpin_buffer(shared, mh)) /* unmaps first when still mapped */
            thread_errors++;
    }
    return NULL;
}

static void *prober(void *arg)
{
    char buf[128];
    gdr_info_t info;
    gdr_mh_t mh;
    int i, rc, flag;

    for (i = 0; i < 6000; i++) {
        mh.h = published[i % NW];
        rc = gdr_get_info_v2(shared, mh, &info);
        if (rc != 0 && rc != EINVAL)
            thread_errors++;
        rc = gdr_get_callback_flag(shared, mh, &flag);
        if (rc != 0 && rc != EINVAL)
            thread_errors++;
        /* Copy through a handle without knowing its mapping: must be refused. */
        if (gdr_copy_from_mapping(mh, buf, buf + 64, 64) != EINVAL)
            thread_errors++;
    }
    return NULL;
}

static void test_threads(void)
{
    pthread_t t[NT];
    long i;

    shared = fake_open_gdr();
    for (i = 0; i < NT; i++)
        pthread_create(&t[i], NULL, i < NW ? cycler : prober, (void *)i);
    for (i = 0; i < NT; i++)
        pthread_join(t[i], NULL);
    t_check(thread_errors == 0, "threads_one_gdr", "%d errors", (int)thread_errors);
    t_check(live_pins == 0 && live_maps == 0, "threads_no_leak", "pins %d maps %d",
            (int)live_pins, (int)live_maps);
    gdr_close(shared);
}

/* Close an instance while 8 threads pin, map and unpin through it. */
static _Atomic int close_bad;

static void *close_user(void *arg)
{
    long id = (long)arg;
    gdr_mh_t mh;
    void *ptr;
    int rc;

    for (;;) {
        rc = gdr_pin_buffer_v2(shared, A_BASE + (uint64_t)id * PAGE, PAGE, 0, &mh);
        if (rc == EINVAL)
            return NULL; /* closed */
        if (rc)
            close_bad++;
        rc = gdr_map(shared, mh, &ptr, PAGE);
        if (rc && rc != EINVAL)
            close_bad++;
        rc = gdr_unpin_buffer(shared, mh);
        if (rc && rc != EINVAL)
            close_bad++;
    }
}

static void test_close_race(void)
{
    pthread_t t[8];
    long i;

    shared = fake_open_gdr();
    for (i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, close_user, (void *)i);
    usleep(50000);
    t_check(gdr_close(shared) == 0, "close_under_users", "%s", vramio_last_error());
    for (i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    t_check(close_bad == 0 && live_pins == 0 && live_maps == 0 && live_ctx == 0,
            "close_race_clean", "bad %d pins %d maps %d ctx %d", (int)close_bad, (int)live_pins,
            (int)live_maps, (int)live_ctx);
}

/*
 * A child of fork(): the parent's gdr_t and pins are refused with EACCES before any backend
 * op runs (the fakes count every op), the parent's mapping faults there (the fake marks it
 * MADV_DONTFORK as the real user-space backends do), copies through inherited handles are
 * EINVAL, gdr_close of the inherited instance is 0 and releases nothing of the parent's, and
 * the child can open, pin, map and use its own. How the child ends (exit, _exit, return from
 * a function that exits) must not matter.
 */
enum child_end { END_EXIT, END_UNDERSCORE_EXIT };

#define PARENT_MARK "parent's data, not the child's"

/* 1 when the child reads the parent's data at ptr. A fault is the expected answer; but the
 * address is a hole in the child, where its own allocator (TSan's, say) may map something
 * else, so other bytes there also prove that the parent's mapping was not inherited. */
static int parent_data_visible(const char *ptr)
{
    return t_touch_faults(ptr) == 0 && memcmp(ptr, PARENT_MARK, sizeof(PARENT_MARK)) == 0;
}

static int child_checks(gdr_t g, gdr_mh_t mh, void *ptr)
{
    char buf[64] = "x";
    gdr_info_t info;
    gdr_mh_t mine;
    vramio_backend_t be;
    void *p2 = NULL;
    int v, ma, mi, bad = 0, ops_before = backend_ops;
    gdr_t own;

    bad += (gdr_get_info_v2(g, mh, &info) != EACCES) << 0;
    bad += (strstr(vramio_last_error(), "forked") == NULL) << 1;
    bad += (gdr_map(g, mh, &p2, PAGE) != EACCES) << 2;
    bad += (gdr_unmap(g, mh, ptr, PAGE) != EACCES) << 3;
    bad += (gdr_unpin_buffer(g, mh) != EACCES) << 4;
    bad += (gdr_pin_buffer_v2(g, A_BASE + 8 * PAGE, PAGE, 0, &mine) != EACCES) << 5;
    bad += (gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &v) != EACCES ||
            gdr_driver_get_version(g, &ma, &mi) != EACCES || vramio_get_backend(g, &be) != EACCES)
           << 6;
    bad += (gdr_copy_to_mapping(mh, ptr, buf, 8) != EINVAL) << 7;
    bad += parent_data_visible(ptr) << 8;    /* not inherited: the child faults */
    bad += (gdr_close(g) != 0) << 9;
    bad += (backend_ops != ops_before) << 10; /* no backend code ran on the parent's objects */
    bad += (gdr_get_info_v2(g, mh, &info) != EACCES) << 11;
    own = fake_open_gdr();
    bad += (gdr_pin_buffer_v2(own, A_BASE, PAGE, 0, &mine) != 0 ||
            gdr_map(own, mine, &p2, PAGE) != 0 || gdr_copy_to_mapping(mine, p2, buf, 8) != 0 ||
            gdr_unmap(own, mine, p2, PAGE) != 0 || gdr_unpin_buffer(own, mine) != 0 ||
            gdr_close(own) != 0) << 12;
    return bad;
}

static void fork_case(enum child_end end, const char *how)
{
    char name[64], keeps[64], clean[64];
    int waited;
    gdr_t g = fake_open_gdr();
    char buf[64] = "x";
    gdr_info_t info;
    gdr_mh_t mh;
    void *ptr;
    int status = -1;
    pid_t pid;

    snprintf(name, sizeof(name), "fork_child_refused_%s", how);
    snprintf(keeps, sizeof(keeps), "fork_parent_keeps_mapping_%s", how);
    snprintf(clean, sizeof(clean), "fork_parent_close_clean_%s", how);
    gdr_pin_buffer_v2(g, A_BASE, PAGE, 0, &mh);
    gdr_map(g, mh, &ptr, PAGE);
    memcpy(ptr, PARENT_MARK, sizeof(PARENT_MARK));
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        int bad;

        alarm(20);
        bad = child_checks(g, mh, ptr);
        if (bad)
            fprintf(stderr, "# child: failed checks mask %#x\n", (unsigned)bad);
        if (end == END_EXIT)
            exit(bad ? 1 : 0);
        _exit(bad ? 1 : 0);
    }
    waited = t_wait_bounded(pid, &status, 30);
    t_check(waited == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, name,
            "child %s, status %#x (bit mask of failed checks in the exit code: 1)",
            waited ? "hung and was killed" : "ended", (unsigned)status);
    t_check(gdr_copy_to_mapping(mh, ptr, buf, 8) == 0 && gdr_get_info_v2(g, mh, &info) == 0 &&
          info.mapped && t_touch_faults(ptr) == 0, keeps, "%s",
            vramio_last_error());
    t_check(gdr_close(g) == 0 && live_pins == 0 && live_maps == 0, clean, "pins %d maps %d",
            (int)live_pins, (int)live_maps);
}

static void test_fork_child(void)
{
    fork_case(END_EXIT, "exit");
    fork_case(END_UNDERSCORE_EXIT, "_exit");
}

/* gdr_unmap with a pointer or size that is not the mapping's (DPDK passes the device
 * address): the handle's own mapping is released, 0 is returned and a warning names the
 * expected pointer and size; a handle that is not mapped still gets EINVAL. */
static void test_lenient_unmap(void)
{
    gdr_t g = fake_open_gdr();
    gdr_info_t info;
    gdr_mh_t mh;
    void *ptr = NULL;
    int maps;

    gdr_pin_buffer_v2(g, A_BASE, 2 * PAGE, 0, &mh);
    gdr_map(g, mh, &ptr, 2 * PAGE);
    maps = live_maps;
    t_check(gdr_unmap(g, mh, (void *)(uintptr_t)A_BASE, 2 * PAGE) == 0 && live_maps == maps - 1 &&
            gdr_get_info_v2(g, mh, &info) == 0 && !info.mapped, "unmap_wrong_pointer_releases",
            "maps %d -> %d", maps, (int)live_maps);
    t_check(gdr_unmap(g, mh, ptr, 2 * PAGE) == EINVAL, "unmap_unmapped_einval", "%s",
            vramio_last_error());
    gdr_map(g, mh, &ptr, 2 * PAGE);
    t_check(gdr_unmap(g, mh, ptr, PAGE) == 0 && live_maps == maps - 1, "unmap_wrong_size_releases",
            "maps %d", (int)live_maps);
    t_check(gdr_unmap(g, mh, ptr, 2 * PAGE) == EINVAL, "unmap_twice_einval", "%s",
            vramio_last_error());
    t_check(gdr_unpin_buffer(g, mh) == 0 && gdr_close(g) == 0 && live_maps == 0 && live_pins == 0,
            "unmap_lenient_clean", "maps %d pins %d", (int)live_maps, (int)live_pins);
}

/*
 * A thread cancelled inside gdr_close while it waits for a slow call on the same gdr_t (the
 * wait is a condition wait, a cancellation point) must not leave the instance's lock held: the
 * slow call, the closer and every later call would hang. The library's calls are no
 * cancellation points; the close completes and a pending cancel acts after it returns.
 */
static _Atomic int closer_rc = -1;

static void *cancelled_closer(void *arg)
{
    closer_rc = gdr_close((gdr_t)arg);
    return NULL;
}

static void *second_closer(void *arg)
{
    *(int *)arg = gdr_close(shared);
    return NULL;
}

static void test_cancelled_close(void)
{
    struct slow_arg a;
    pthread_t pinner, closer, again;
    int rc2 = -1, pinner_done, closer_done, again_done;

    shared = fake_open_gdr();
    a = (struct slow_arg){ .g = shared, .rc = -1 };
    pthread_create(&pinner, NULL, slow_pinner, &a);
    while (!slow_in_pin)
        usleep(100);
    pthread_create(&closer, NULL, cancelled_closer, shared);
    usleep(50000); /* the closer is waiting for the pin's 200 ms to end */
    pthread_cancel(closer);
    pinner_done = t_join_within(pinner, 3000, NULL) == 0;
    closer_done = t_join_within(closer, 3000, NULL) == 0;
    pthread_create(&again, NULL, second_closer, &rc2);
    again_done = t_join_within(again, 3000, NULL) == 0;
    t_check(pinner_done && closer_done && again_done, "cancelled_close_leaves_no_lock",
            "within 3 s: the slow pin %s, the cancelled closer %s, a later gdr_close %s",
            pinner_done ? "returned" : "hung", closer_done ? "ended" : "hung",
            again_done ? "returned" : "hung");
    if (!(pinner_done && closer_done && again_done))
        return; /* threads left blocked: nothing more can be asked of this instance */
    t_check(closer_rc == 0 && rc2 == EINVAL && live_pins == 0 && live_ctx == 0,
            "cancelled_close_completes", "close %d, later close %d, pins %d, contexts %d",
            (int)closer_rc, rc2, (int)live_pins, (int)live_ctx);
}

int main(void)
{
    test_dispatch();
    test_fork_child();
    test_lenient_unmap();
    test_map_rules_and_close();
    test_slow_pin();
    test_threads();
    test_close_race();
    test_cancelled_close();
    return t_status();
}

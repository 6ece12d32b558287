/* SPDX-License-Identifier: MIT */
/*
 * core_test.c - the library core's promises on real pins, run inside the QEMU guest (gdrdrv
 * and the emulated p2p provider loaded; run by tests/kernel/guest/init.sh). Black-box: public
 * headers, plus the provider's control device to make "GPU" memory, read it back and count
 * live pins.
 *
 * Covers what the host tests cannot reach without a backend: map/unmap/unpin state rules,
 * copy bounds, stale and foreign handles after real pins, the legacy 40-byte gdr_get_info,
 * gdr_close releasing everything, and many threads pinning, copying and closing at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "emu.h"
#include "legacy_info.h"
#include "race.h"
#include "t.h"
#include "vramio.h"


#define SZ (256 * 1024UL)

/* Every call that takes the handle answers EINVAL: it is stale or foreign to g. */
static int all_einval(gdr_t g, gdr_mh_t mh, void *some_ptr)
{
    gdr_info_t info;
    struct t_info_v1 info1;
    vramio_backend_t be;
    void *va;
    int flag;

    return gdr_get_info_v2(g, mh, &info) == EINVAL && t_get_info_v1(g, mh, &info1) == EINVAL &&
           gdr_get_callback_flag(g, mh, &flag) == EINVAL && gdr_map(g, mh, &va, SZ) == EINVAL &&
           gdr_unmap(g, mh, some_ptr, SZ) == EINVAL && vramio_handle_backend(g, mh, &be) == EINVAL &&
           gdr_unpin_buffer(g, mh) == EINVAL;
}

/* A child of fork() does not inherit the mapping: a copy through the parent's handle is EINVAL
 * there, not a SIGSEGV; the parent's gdr_t is refused with EACCES; touching the address
 * faults. The child leaves through exit() once and _exit() once. */
static void fork_child_copy(gdr_t g, gdr_mh_t mh, char *p)
{
    char buf[8] = { 0 };
    gdr_info_t info;
    int status, through_exit, bad;
    pid_t pid;

    for (through_exit = 0; through_exit < 2; through_exit++) {
        status = -1;
        fflush(NULL);
        pid = fork();
        if (pid == 0) {
            alarm(20);
            bad = (gdr_copy_to_mapping(mh, p, buf, 8) != EINVAL ||
                   gdr_copy_from_mapping(mh, buf, p, 8) != EINVAL) |
                  (gdr_get_info_v2(g, mh, &info) != EACCES) << 1 |
                  (t_touch_faults(p) == 0) << 2;
            if (through_exit)
                exit(bad);
            _exit(bad);
        }
        bad = t_wait_bounded(pid, &status, 30);
        t_check(bad == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                through_exit ? "fork_child_copy_einval_exit" : "fork_child_copy_einval__exit",
                "child %s, status %#x (exit code bits: 1 copy, 2 not refused, 4 read the "
                "mapping)", bad ? "hung" : "ended", (unsigned)status);
    }
}

static void lifecycle(gdr_t g, uint64_t dva)
{
    char pat[4096], back[4096];
    unsigned char legacy[48];
    gdr_mh_t mh = { 0 }, other;
    gdr_info_t info;
    vramio_backend_t be;
    void *ptr = NULL, *ptr2 = NULL;
    char *p;

    t_pattern(pat, sizeof(pat), 7);
    if (!t_check(gdr_pin_buffer_v2(g, dva, SZ, 0, &mh) == 0 && mh.h != 0, "pin", "%s",
                 vramio_last_error()))
        return;
    t_check(gdr_get_info_v2(g, mh, &info) == 0 && info.va == dva && info.mapped_size == SZ &&
            !info.mapped && info.mapping_type == GDR_MAPPING_TYPE_NONE && info.page_size > 0,
            "info_before_map", "va %#llx size %llu mapped %u type %d", (unsigned long long)info.va,
            (unsigned long long)info.mapped_size, info.mapped, info.mapping_type);
    t_check(vramio_handle_backend(g, mh, &be) == 0 && be == VRAMIO_BACKEND_GDRDRV,
            "handle_backend_gdrdrv", "backend %d", (int)be);
    t_check(gdr_map(g, mh, &ptr, SZ + 65536) == EINVAL, "map_larger_than_pin_einval", "accepted");
    t_check(gdr_map_v2(g, mh, &ptr, SZ, 4) == EINVAL, "map_bad_flags_einval", "accepted");
    if (!t_check(gdr_map(g, mh, &ptr, SZ) == 0 && ptr, "map", "%s", vramio_last_error()))
        goto unpin;
    t_check(gdr_map(g, mh, &ptr2, SZ) == EAGAIN, "map_twice_eagain", "not EAGAIN");
    t_check(gdr_get_info_v2(g, mh, &info) == 0 && info.mapped &&
            info.mapping_type > GDR_MAPPING_TYPE_NONE && info.mapping_type < GDR_MAPPING_TYPE_MAX &&
            info.wc_mapping == (info.mapping_type == GDR_MAPPING_TYPE_WC),
            "info_after_map", "mapped %u type %d wc %u", info.mapped, info.mapping_type,
            info.wc_mapping);
    memset(legacy, 0xee, sizeof(legacy));
    t_check(t_get_info_v1(g, mh, (struct t_info_v1 *)legacy) == 0 &&
          ((struct t_info_v1 *)legacy)->va == dva && legacy[40] == 0xee && legacy[47] == 0xee,
            "legacy_info_fills_40_bytes", "va or bytes 40..47 changed");

    p = ptr;
    t_check(gdr_copy_to_mapping(mh, p + 4096, pat, sizeof(pat)) == 0 &&
            emu_read(dva + 4096, back, sizeof(back)) == 0 && memcmp(back, pat, sizeof(pat)) == 0,
            "copy_to_reaches_memory", "data differs");
    memset(back, 0, sizeof(back));
    t_check(gdr_copy_from_mapping(mh, back, p + 4096, sizeof(back)) == 0 &&
            memcmp(back, pat, sizeof(pat)) == 0, "copy_from_reads_memory", "data differs");
    t_check(gdr_copy_to_mapping(mh, p + SZ - 4, pat, 8) == EINVAL &&
            gdr_copy_from_mapping(mh, back, p - 8, 8) == EINVAL &&
            gdr_copy_to_mapping(mh, p + SZ, pat, 1) == EINVAL, "copy_outside_mapping_einval",
            "accepted");
    t_check(gdr_copy_to_mapping(mh, p + SZ - 8, pat, 8) == 0 && gdr_copy_to_mapping(mh, p, pat, 0) == 0,
            "copy_edges", "refused");

    fork_child_copy(g, mh, p);
    /* As upstream (DPDK passes the device address): a pointer or size that is not the
     * mapping's releases the handle's own mapping, with a warning, and returns 0. */
    t_check(gdr_unmap(g, mh, p + 4096, SZ) == 0 && gdr_get_info_v2(g, mh, &info) == 0 &&
            !info.mapped, "unmap_not_the_mapping_releases", "%s", vramio_last_error());
    t_check(gdr_map(g, mh, &ptr, SZ) == 0 && gdr_unmap(g, mh, ptr, SZ / 2) == 0,
            "unmap_wrong_size_releases", "%s", vramio_last_error());
    t_check(gdr_map(g, mh, &ptr, SZ) == 0, "map_again_after_lenient_unmap", "%s",
            vramio_last_error());
    p = (char *)ptr + (dva - info.va);
    t_check(gdr_unmap(g, mh, ptr, SZ) == 0, "unmap", "%s", vramio_last_error());
    t_check(gdr_unmap(g, mh, ptr, SZ) == EINVAL, "unmap_twice_einval", "accepted");
    t_check(gdr_copy_to_mapping(mh, p, pat, 8) == EINVAL, "copy_after_unmap_einval", "accepted");
    t_check(gdr_map(g, mh, &ptr, SZ) == 0, "map_again_after_unmap", "%s", vramio_last_error());

unpin:
    other = mh;
    t_check(gdr_unpin_buffer(g, mh) == 0, "unpin_while_mapped", "%s", vramio_last_error());
    t_check(all_einval(g, other, ptr) && gdr_copy_to_mapping(other, ptr, pat, 8) == EINVAL &&
            gdr_copy_from_mapping(other, back, ptr, 0) == EINVAL, "stale_handle_every_call_einval",
            "a call accepted the stale handle");
}

static void foreign_and_close(gdr_t g, uint64_t dva, uint64_t base)
{
    gdr_t g2 = gdr_open();
    gdr_mh_t mh[4], m2;
    void *ptr[4];
    int i, ok = 1;

    if (!t_check(g2 != NULL, "second_instance", "%s", vramio_last_error()))
        return;
    ok = gdr_pin_buffer(g2, dva, SZ, 0, 0, &m2) == 0;
    t_check(ok && all_einval(g, m2, NULL), "foreign_handle_einval", "g accepted g2's handle");
    for (i = 0; i < 4; i++) {
        ok &= gdr_pin_buffer_v2(g2, dva + (uint64_t)i * 65536, 65536, 0, &mh[i]) == 0;
        if (i % 2 == 0)
            ok &= gdr_map(g2, mh[i], &ptr[i], 65536) == 0;
    }
    t_check(ok && emu_live_pins() > base, "pins_held", "pins failed: %s", vramio_last_error());
    t_check(gdr_close(g2) == 0, "close_with_pins_and_mappings", "%s", vramio_last_error());
    t_check(emu_live_pins() == base, "close_released_every_pin", "live pins %llu, base %llu",
          (unsigned long long)emu_live_pins(), (unsigned long long)base);
    t_check(all_einval(g2, mh[0], ptr[0]) && gdr_copy_to_mapping(mh[0], ptr[0], &ok, 4) == EINVAL,
            "closed_instance_and_handles_einval", "accepted");
}

/* Threads pin, map, copy, check, unmap and unpin their own pieces of one allocation. */
struct worker {
    gdr_t g;
    uint64_t dva;
    int id, errors;
    char why[256];
};

static void worker_failed(struct worker *w, const char *step)
{
    if (w->errors++ == 0)
        snprintf(w->why, sizeof(w->why), "thread %d: %s: %s", w->id, step, vramio_last_error());
}

static void *pin_worker(void *arg)
{
    struct worker *w = arg;
    char pat[256], back[256];
    size_t off = 128 + (size_t)w->id * sizeof(pat); /* threads share pages, not bytes */
    gdr_mh_t mh;
    void *ptr;
    int i;

    t_pattern(pat, sizeof(pat), (uint32_t)w->id);
    for (i = 0; i < 40; i++) {
        if (gdr_pin_buffer_v2(w->g, w->dva, 65536, 0, &mh) != 0) {
            worker_failed(w, "pin");
            continue;
        }
        if (gdr_map(w->g, mh, &ptr, 65536) != 0)
            worker_failed(w, "map");
        else if (gdr_copy_to_mapping(mh, (char *)ptr + off, pat, sizeof(pat)) != 0 ||
                 gdr_copy_from_mapping(mh, back, (char *)ptr + off, sizeof(back)) != 0)
            worker_failed(w, "copy");
        else if (memcmp(back, pat, sizeof(pat)) != 0)
            worker_failed(w, "data read back differs");
        else if (gdr_unmap(w->g, mh, ptr, 65536) != 0)
            worker_failed(w, "unmap");
        if (gdr_unpin_buffer(w->g, mh) != 0)
            worker_failed(w, "unpin");
        if (!all_einval(w->g, mh, ptr))
            worker_failed(w, "stale handle accepted");
    }
    return NULL;
}

static void threads(gdr_t g, uint64_t dva, uint64_t base)
{
    enum { N = 8 };
    struct worker w[N];
    pthread_t t[N];
    const char *first = "";
    int i, errors = 0;

    for (i = 0; i < N; i++) {
        w[i] = (struct worker){ .g = g, .dva = dva + (uint64_t)(i % 4) * 65536, .id = i };
        pthread_create(&t[i], NULL, pin_worker, &w[i]);
    }
    for (i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        if (w[i].errors && !errors)
            first = w[i].why;
        errors += w[i].errors;
    }
    t_check(errors == 0, "threads_pin_map_copy_unpin", "%d failures, first: %s", errors, first);
    t_check(emu_live_pins() == base, "threads_no_leak", "live pins %llu, base %llu",
          (unsigned long long)emu_live_pins(), (unsigned long long)base);
}

/*
 * gdr_close while other threads are pinning through the same instance. The racers pin and
 * unpin until the close refuses them (EINVAL), and the close comes once each has pinned, so
 * it lands while they pin however slow the machine; both are bounded (RACE_WAIT_S).
 */
static _Atomic int racers_bad, racers_started, racers_closed;

static void *close_racer(void *arg)
{
    struct worker *w = arg;
    double end = race_now() + RACE_WAIT_S;
    gdr_mh_t mh;
    int i, rc;

    for (i = 0; race_now() < end; i++) {
        rc = gdr_pin_buffer_v2(w->g, w->dva, 65536, 0, &mh);
        if (rc == EINVAL) {
            racers_closed++;            /* still pinning when the close came */
            break;
        }
        if (rc != 0) {
            racers_bad++;
            break;
        }
        if (i == 0)
            racers_started++;
        rc = gdr_unpin_buffer(w->g, mh);
        if (rc != 0 && rc != EINVAL) /* EINVAL: gdr_close released it first */
            racers_bad++;
    }
    return NULL;
}

static void close_race(uint64_t dva, uint64_t base)
{
    enum { N = 4 };
    struct worker w[N];
    pthread_t t[N];
    gdr_t g = gdr_open();
    int i;

    if (!t_check(g != NULL, "close_race_open", "%s", vramio_last_error()))
        return;
    for (i = 0; i < N; i++) {
        w[i] = (struct worker){ .g = g, .dva = dva + (uint64_t)i * 65536, .id = i };
        pthread_create(&t[i], NULL, close_racer, &w[i]);
    }
    for (double end = race_now() + RACE_WAIT_S; racers_started + racers_bad < N && race_now() < end;)
        race_sleep_ms(1);
    t_check(gdr_close(g) == 0, "close_while_pinning", "%s", vramio_last_error());
    for (i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    printf("# gdr_close came while %d of %d racers were pinning\n", (int)racers_closed, N);
    t_check(racers_bad == 0, "racers_get_results_or_einval", "%d unexpected codes",
            (int)racers_bad);
    t_check(racers_closed > 0, "close_came_while_pinning",
            "no racer was still pinning when gdr_close came (%d had started)",
            (int)racers_started);
    t_check(emu_live_pins() == base, "close_race_no_leak", "live pins %llu, base %llu",
          (unsigned long long)emu_live_pins(), (unsigned long long)base);
}

static void boundary(gdr_t g, uint64_t dva)
{
    static char host[65536];
    gdr_mh_t mh;
    int major = -1, minor = -1, v = -1;

    t_check(gdr_pin_buffer_v2(g, dva, SZ, 2, &mh) == EINVAL, "live_pin_unknown_flags_einval", "%s", vramio_last_error());
    t_check(gdr_pin_buffer_v2(g, dva, 0, 0, &mh) == EINVAL, "live_pin_size_0_einval", "%s", vramio_last_error());
    t_check(gdr_pin_buffer_v2(g, ~0UL - 4095, 65536, 0, &mh) == EINVAL, "live_pin_wrap_einval", "%s", vramio_last_error());
    t_check(gdr_pin_buffer_v2(g, (unsigned long)host, sizeof(host), 0, &mh) != 0 && mh.h == 0 &&
            vramio_last_error()[0], "host_memory_refused_with_reason", "rc or reason missing");
    t_check(gdr_get_attribute(g, GDR_ATTR_MAX, &v) == EINVAL, "live_unknown_attr_einval", "%s", vramio_last_error());
    t_check(gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &v) == 0 && (v == 0 || v == 1),
            "persistent_attr", "v %d", v);
    t_check(gdr_driver_get_version(g, &major, &minor) == 0 && major == 2 && minor >= 0,
            "driver_version", "%d.%d", major, minor);
}

int main(int argc, char **argv)
{
    uint64_t dva = 0, base;
    gdr_t g;

    if (emu_fd() < 0) {
        printf("no emulated provider (/dev/nvp2p_emu): run inside the QEMU guest\n");
        return 77;
    }
    if (emu_alloc(SZ, 1, 0, &dva) != 0) {
        t_fail("emu_alloc", "cannot allocate emulated GPU memory");
        return 1;
    }
    base = emu_live_pins();
    g = gdr_open();
    if (!t_check(g != NULL, "open", "%s", vramio_last_error()))
        return 1;
    lifecycle(g, dva);
    t_check(emu_live_pins() == base, "lifecycle_no_leak", "live pins %llu, base %llu",
          (unsigned long long)emu_live_pins(), (unsigned long long)base);
    boundary(g, dva);
    foreign_and_close(g, dva, base);
    threads(g, dva, base);
    close_race(dva, base);
    t_check(gdr_close(g) == 0 && gdr_close(g) == EINVAL, "close_then_stale", "%s", vramio_last_error());
    emu_free(dva);
    return t_status();
}

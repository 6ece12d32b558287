// SPDX-License-Identifier: MIT
/*
 * callback_test.c - the provider frees GPU memory under live pins, through the real library
 * (static). Non-persistent mode (use_persistent_mapping=0): the free callback sets the
 * callback flag and a later access raises SIGBUS; unmap/unpin after it are clean; an unpin
 * racing the callback waits for it (put_pages); a process exiting while its callback is due
 * leaks nothing; no PTE survives a free while another thread keeps faulting pages in.
 * Persistent mode: the same FREE leaves the flag clear and the pages valid until unpin.
 *   callback_test                    persistent-mode expectations
 *   callback_test --nonpersistent    callback expectations
 *   callback_test --stress           FREE racing unmap/unpin, 40 rounds (run last by /init)
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gdrapi.h>

#include "t.h"
#include "emu.h"
#include "race.h"

#define GPU_PAGE 65536ULL

/* ---- the provider frees the memory under a pin ------------------------------------------ */
/* In a child (the access may kill it): pin, map, FREE, report the flag, then touch. */
static void test_free_under_pin(int nonpersistent)
{
    uint64_t base = emu_live_pins(), cbs = emu_callbacks_fired();
    int pfd[2], flag = -1, rc;
    pid_t pid;

    if (pipe(pfd)) {
        t_fail("free_under_pin", "pipe");
        return;
    }
    pid = fork();
    if (pid == 0) {
        uint64_t va;
        gdr_t g = gdr_open();
        gdr_mh_t mh;
        void *map;
        int f = -1;
        unsigned char before[64], after[64];

        if (!g || emu_alloc(2 * GPU_PAGE, 1, 0, &va) || gdr_pin_buffer_v2(g, va, 2 * GPU_PAGE, 0, &mh) ||
            gdr_map(g, mh, &map, 2 * GPU_PAGE))
            _exit(20);
        gdr_copy_from_mapping(mh, before, map, sizeof(before));
        if (emu_free(va))
            _exit(21);
        if (gdr_get_callback_flag(g, mh, &f))
            _exit(22);
        if (write(pfd[1], &f, sizeof(f)) != sizeof(f))
            _exit(23);
        signal(SIGBUS, SIG_DFL);
        memcpy(after, (void *)map, sizeof(after));    /* SIGBUS when the pages are gone */
        _exit(memcmp(before, after, sizeof(after)) ? 24 : 0);
    }
    close(pfd[1]);
    if (read(pfd[0], &flag, sizeof(flag)) != sizeof(flag))
        flag = -1;
    close(pfd[0]);
    rc = t_wait_child(pid, 60);
    if (nonpersistent) {
        t_check(flag == 1, "free_sets_callback_flag", "flag %d (child status %d)", flag, rc);
        t_check(rc == 128 + SIGBUS, "access_after_free_sigbus", "child status %d (want SIGBUS)", rc);
        t_check(emu_callbacks_fired() == cbs + 1, "callback_fired_once", "callbacks %llu -> %llu",
                (unsigned long long)cbs, (unsigned long long)emu_callbacks_fired());
    } else {
        t_check(flag == 0, "persistent_free_no_flag", "flag %d (child status %d)", flag, rc);
        t_check(rc == 0, "persistent_pages_stay_valid", "child status %d (want 0: same data)", rc);
    }
    t_check(emu_live_pins() == base, "free_under_pin_no_leak", "live pins %llu (was %llu)",
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
}

/* After the callback, the owner unmaps and unpins normally: no error, no double release. */
static void test_unpin_after_callback(void)
{
    uint64_t va = 0, base = emu_live_pins();
    gdr_t g = gdr_open();
    gdr_mh_t mh;
    void *map;
    int flag = -1, a, b;

    if (!g || emu_alloc(2 * GPU_PAGE, 1, 0, &va) || gdr_pin_buffer_v2(g, va, 2 * GPU_PAGE, 0, &mh) ||
        gdr_map(g, mh, &map, 2 * GPU_PAGE)) {
        t_fail("unpin_after_callback", "setup failed");
        if (g)
            gdr_close(g);
        return;
    }
    emu_free(va);
    gdr_get_callback_flag(g, mh, &flag);
    a = gdr_unmap(g, mh, map, 2 * GPU_PAGE);
    b = gdr_unpin_buffer(g, mh);
    t_check(flag == 1 && !a && !b && emu_live_pins() == base, "unpin_after_callback",
            "flag %d unmap %d unpin %d live pins %llu (was %llu)", flag, a, b,
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    gdr_close(g);
}

/*
 * Unpin racing a slow callback: put_pages must wait for it; nothing leaks or deadlocks. FREE
 * holds the callback at the provider's gate (marked running, not called) until the unpin is
 * seen waiting for it in put_pages, or has returned (race.h).
 */
struct racer {
    uint64_t va;
    int ret;
};

static void *free_thread(void *arg)
{
    struct racer *r = arg;

    r->ret = emu_free(r->va);
    return NULL;
}

struct unpinner {
    gdr_t g;
    gdr_mh_t mh;
    int ret;
};

static void *unpin_thread(void *arg)
{
    struct unpinner *u = arg;

    u->ret = gdr_unpin_buffer(u->g, u->mh);
    return NULL;
}

/* The unpin, in tu once FREE holds the callback: what was seen, or NULL if it got stuck. */
static const char *unpin_while_held(struct unpinner *u, struct race_thread *tu)
{
    int b;

    if (race_wait_stopped(NVP2P_EMU_GATE_CB, 1) || race_thread_start(tu, -1, unpin_thread, u))
        return NULL;
    b = race_thread_blocked(tu, "nvidia_p2p");
    return b == RACE_BLOCKED ? "waited for it in put_pages" : b == RACE_DONE ? "returned" : NULL;
}

static void test_unpin_races_callback(void)
{
    struct racer r = { 0 };
    struct unpinner u = { 0 };
    uint64_t base = emu_live_pins(), cbs = emu_callbacks_fired();
    gdr_t g = gdr_open();
    void *map;
    pthread_t th;
    struct race_thread tu = { 0 };
    const char *seen = NULL;
    int a;

    if (!g || emu_alloc(2 * GPU_PAGE, 1, 0, &r.va) || gdr_pin_buffer_v2(g, r.va, 2 * GPU_PAGE, 0, &u.mh) ||
        gdr_map(g, u.mh, &map, 2 * GPU_PAGE) || emu_gate(NVP2P_EMU_GATE_CB) ||
        pthread_create(&th, NULL, free_thread, &r)) {
        t_fail("unpin_races_callback", "setup failed");
        emu_gate(0);
        if (g)
            gdr_close(g);
        return;
    }
    u.g = g;
    a = gdr_unmap(g, u.mh, map, 2 * GPU_PAGE);
    seen = unpin_while_held(&u, &tu);
    emu_gate(0);                        /* whatever happened: the callback goes on */
    if (!tu.started)
        u.ret = gdr_unpin_buffer(g, u.mh);
    else if (race_thread_join(&tu, 2 * RACE_WAIT_S))
        seen = NULL;
    pthread_join(th, NULL);
    if (seen)
        printf("# the unpin came while FREE held the callback, and %s\n", seen);
    t_check(seen && !r.ret && !a && !u.ret && emu_live_pins() == base &&
            emu_callbacks_fired() == cbs + 1, "unpin_races_callback",
            "%s; free %d unmap %d unpin %d live pins %llu (was %llu) callbacks +%llu",
            seen ? "came while the callback was held" :
            "FREE's callback never held at the gate, or the unpin neither waited nor returned",
            r.ret, a, u.ret, (unsigned long long)emu_live_pins(), (unsigned long long)base,
            (unsigned long long)(emu_callbacks_fired() - cbs));
    gdr_close(g);
}

/* FREE and unmap/unpin racing, many times with shifting timing: no crash, leak or deadlock. */
static void test_free_unpin_stress(void)
{
    uint64_t base = emu_live_pins();
    gdr_t g = gdr_open();
    int rounds = 40, done = 0;

    if (!g) {
        t_fail("free_unpin_stress", "gdr_open failed");
        return;
    }
    for (int i = 0; i < rounds; i++) {
        struct racer r = { 0 };
        gdr_mh_t mh;
        void *map;
        pthread_t th;
        struct timespec ts = { 0, (i % 8) * 250 * 1000 };

        if (emu_alloc(2 * GPU_PAGE, i % 3, 0, &r.va))
            break;
        if (gdr_pin_buffer_v2(g, r.va, 2 * GPU_PAGE, 0, &mh) || gdr_map(g, mh, &map, 2 * GPU_PAGE)) {
            emu_free(r.va);
            break;
        }
        pthread_create(&th, NULL, free_thread, &r);
        nanosleep(&ts, NULL);
        gdr_unmap(g, mh, map, 2 * GPU_PAGE);
        gdr_unpin_buffer(g, mh);
        pthread_join(th, NULL);
        done++;
    }
    gdr_close(g);
    t_check(done == rounds && emu_live_pins() == base, "free_unpin_stress", "%d of %d rounds, live pins %llu (was %llu)",
            done, rounds, (unsigned long long)emu_live_pins(), (unsigned long long)base);
}

/*
 * A process exits (its fd released) while the free callback of its pin is due: FREE holds
 * the callback at the gate until the exiting child is seen blocked (its release waiting in
 * put_pages) or gone.
 */
static void test_exit_races_callback(void)
{
    uint64_t base = emu_live_pins(), cbs = emu_callbacks_fired();
    struct racer r = { 0 };
    int ready[2], go[2], rc, b = RACE_TIMEOUT;
    char c = 0, why[256] = "";
    double t0, t1 = 0;
    pthread_t th;
    pid_t pid;

    if (emu_alloc(2 * GPU_PAGE, 1, 0, &r.va) || pipe(ready) || pipe(go)) {
        t_fail("exit_races_callback", "setup failed");
        return;
    }
    pid = fork();
    if (pid == 0) {
        gdr_t g = gdr_open();
        gdr_mh_t mh;
        void *map;

        if (!g || gdr_pin_buffer_v2(g, r.va, 2 * GPU_PAGE, 0, &mh) || gdr_map(g, mh, &map, 2 * GPU_PAGE))
            _exit(1);
        if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
            _exit(2);
        _exit(0);                      /* pins and mapping released by exit */
    }
    if (read(ready[0], &c, 1) != 1 || emu_gate(NVP2P_EMU_GATE_CB) ||
        pthread_create(&th, NULL, free_thread, &r)) {
        t_fail("exit_races_callback", "child did not pin, or gate or thread");
        emu_gate(0);
        kill(pid, SIGKILL);
        t_wait_child(pid, 60);
        emu_free(r.va);
        return;
    }
    t0 = race_now();
    if (race_wait_stopped(NVP2P_EMU_GATE_CB, 1))
        snprintf(why, sizeof(why), "FREE did not stop at the gate in %d s", RACE_WAIT_S);
    else if (t1 = race_now(), write(go[1], "g", 1) != 1)
        snprintf(why, sizeof(why), "the go to the child failed");
    else if ((b = race_wait_blocked(pid, pid, NULL, "nvidia_p2p")) == RACE_TIMEOUT)
        race_describe(pid, pid, why, sizeof(why), "FREE stopped at the gate after %.1f s; "
                      "the child neither blocked in nvidia_p2p nor exited in %.1f s",
                      t1 - t0, race_now() - t1);
    emu_gate(0);                        /* whatever happened: the callback goes on */
    rc = t_wait_child(pid, 60);
    pthread_join(th, NULL);
    if (b != RACE_TIMEOUT)
        printf("# the child exited while FREE held the callback, and %s\n",
               b == RACE_BLOCKED ? "its release waited for it in put_pages" : "was gone first");
    t_check(b != RACE_TIMEOUT && rc == 0 && !r.ret && emu_live_pins() == base &&
            emu_callbacks_fired() == cbs + 1, "exit_races_callback",
            "%s; child %d free %d live pins %llu (was %llu) callbacks +%llu",
            b != RACE_TIMEOUT ? "exited while the callback was held" : why,
            rc, r.ret, (unsigned long long)emu_live_pins(), (unsigned long long)base,
            (unsigned long long)(emu_callbacks_fired() - cbs));
    close(ready[0]); close(ready[1]); close(go[0]); close(go[1]);
}

/*
 * No stale PTE after a free: while a reader thread keeps faulting pages of the mapping in,
 * FREE fires the callback; afterwards every page must raise SIGBUS (a PTE left behind would
 * read memory the provider already gave back). Runs in a child: the faults are expected.
 */
static __thread sigjmp_buf bus_jmp;
static __thread volatile int bus_armed;
static volatile int reader_stop;
static unsigned long reader_reads;      /* atomic: reads done so far */

static void on_bus(int sig)
{
    if (bus_armed)
        siglongjmp(bus_jmp, 1);
    _exit(90);
}

/* 1 if reading the byte raised SIGBUS, 0 if it read: per thread (the reader thread and the
 * main thread fault at once), which t_touch_faults of the test kit is not. */
static int bus_faults(volatile unsigned char *p)
{
    if (sigsetjmp(bus_jmp, 1)) {
        bus_armed = 0;
        return 1;
    }
    bus_armed = 1;
    (void)*p;
    bus_armed = 0;
    return 0;
}

struct reader { volatile unsigned char *map; size_t pages; };

static void *reader_main(void *arg)
{
    struct reader *r = arg;
    unsigned long i = 0;

    while (!reader_stop) {
        bus_faults(r->map + (i++ % r->pages) * 4096);
        __atomic_store_n(&reader_reads, i, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void test_no_stale_pte(void)
{
    uint64_t base = emu_live_pins();
    pid_t pid = fork();

    if (pid == 0) {
        const size_t pages = 64;          /* 4 KiB GPU pages: one PTE each */
        uint64_t va;
        gdr_t g = gdr_open();
        gdr_mh_t mh;
        void *map;
        struct reader r;
        pthread_t th;
        int readable = 0;

        if (!g || emu_alloc(pages * 4096, 0, 0, &va) || gdr_pin_buffer_v2(g, va, pages * 4096, 0, &mh) ||
            gdr_map(g, mh, &map, pages * 4096))
            _exit(80);
        signal(SIGBUS, on_bus);
        r = (struct reader){ map, pages };
        pthread_create(&th, NULL, reader_main, &r);
        /* Every page faulted in once before the free, however slow the machine (bounded). */
        for (double end = race_now() + RACE_WAIT_S;
             __atomic_load_n(&reader_reads, __ATOMIC_ACQUIRE) < pages && race_now() < end;)
            race_sleep_ms(1);
        if (__atomic_load_n(&reader_reads, __ATOMIC_ACQUIRE) < pages)
            _exit(83);
        if (emu_free(va))
            _exit(81);
        reader_stop = 1;
        pthread_join(th, NULL);
        for (size_t i = 0; i < pages; i++)
            readable += !bus_faults((volatile unsigned char *)map + i * 4096);
        _exit(readable ? 82 : 0);
    }
    int rc = t_wait_child(pid, 60);
    t_check(rc == 0 && emu_live_pins() == base, "no_stale_pte_after_free",
            "child status %d (82: pages still readable after the callback, 83: the reader "
            "did not fault every page in), live pins %llu (was %llu)",
            rc, (unsigned long long)emu_live_pins(), (unsigned long long)base);
}

int main(int argc, char **argv)
{
    int nonpersistent = argc > 1 && !strcmp(argv[1], "--nonpersistent");

    if (emu_fd() < 0) {
        t_fail("setup", "%s: %s", NVP2P_EMU_DEVICE, strerror(errno));
        return 1;
    }
    if (argc > 1 && !strcmp(argv[1], "--stress")) {
        /* Races a callback's zap with munmap: see zap_test.c for the kernel WARN this hits. */
        test_free_unpin_stress();
        return t_status();
    }
    test_free_under_pin(nonpersistent);
    if (nonpersistent) {
        test_unpin_after_callback();
        test_unpin_races_callback();
        test_exit_races_callback();
        test_no_stale_pte();
    }
    return t_status();
}

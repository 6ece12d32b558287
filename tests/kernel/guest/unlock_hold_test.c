// SPDX-License-Identifier: MIT
/*
 * unlock_hold_test.c - the free callback's mutex_unlock(&pin->lock) against a freeing side
 * that waits for pin->lock only (issue 31's L2). mutex_unlock releases the owner word first
 * and, when waiters are queued, then takes the mutex's wait_lock to wake the first: a task
 * that takes the mutex in between, on another CPU, can run on, and if the pin is freed
 * meanwhile, the unlock's wait_lock is freed memory. gdrdrv must keep the pin alive across
 * its callback's whole unlock (the callback's own reference and the completion after it).
 *
 * Every round puts the callback in that window, with the provider's unlock hold
 * (tests/kernel/emu/provider/emu_hold.c), on two CPUs:
 *   CPU 1: FREE runs gdrdrv's callback, which the provider keeps inside
 *          nvidia_p2p_free_page_table (its unlink gate) while it holds pin->lock;
 *   CPU 0: UNPIN comes once the callback is held there, and queues on pin->lock (so the
 *          unlock takes its slow path); once UNPIN is seen blocked the gate opens, the
 *          callback's unlock is then held at its wait_lock, and GET_CB_FLAG, started when
 *          the hold is seen, takes pin->lock in the window, and its own unlock wakes UNPIN,
 *          which runs on while the callback is still held.
 * The hold is let go once UNPIN has returned (a gdrdrv that waited for pin->lock only has
 * freed the pin by then: KASAN reports the callback's resumed unlock, which the rig fails on)
 * or is seen blocked again past the lock (a gdrdrv that waits for its callback). Nothing
 * rests on time (race.h); a round where the hold ran out first (EMU_HOLD_MAX_MS) missed the
 * window, the rounds that hit it are counted, and none fails. The provider finds the point by
 * lockdep's tracepoints, so the test runs on the debug kernel (whose KASAN is what sees a
 * freed pin touched) and skips elsewhere (emu_hold.c says why the stock kernels' kprobe went),
 * or where there is one CPU.
 *
 * The other side of that contract (orphan_freed_under_its_closer): a file closed while the
 * provider fails its pin's put_pages makes the pin an orphan, whose table reference is from
 * then on its free callback's. The closing task, held by the provider just after it has
 * released pin->lock (the second hold of emu_hold.c, at its next lock: the rate limit of
 * gdrdrv's error message, which reads the pin), must still own the pin while a FREE on the
 * other CPU runs the callback to its end; a gdrdrv that keeps no reference of its own there
 * reads freed memory when the hold lets go, which KASAN reports and the rig fails on.
 *   unlock_hold_test     run with gdrdrv use_persistent_mapping=0
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "race.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
#define ROUNDS 3
#define PARAMS "/sys/module/nvp2p_emu/parameters/"
#define HOLD PARAMS "unlock_hold"
#define REFCNT "/sys/module/gdrdrv/refcnt"
#define GATE NVP2P_EMU_GATE_UNLINK
#define JOIN_S (RACE_WAIT_S + 10)

enum { HOLD_OFF, HOLD_ARMED, HOLD_HOLDING, HOLD_DONE };   /* what HOLD reads */

struct round {
    int fd;
    uint64_t va, handle;
    int free_ret, unpin_ret, flag_ret;
    uint32_t flag;
    int saw_hold;               /* GET_CB_FLAG began while the callback was held */
    int held_after;             /* ... and the callback was still held when it returned */
    int moved_on;               /* ... and UNPIN went past pin->lock while it was held */
    struct race_thread t[3];    /* FREE, UNPIN, GET_CB_FLAG */
};

static int hold_state(void)
{
    char buf[8] = "";
    int f = open(HOLD, O_RDONLY | O_CLOEXEC);
    ssize_t n = f < 0 ? -1 : read(f, buf, sizeof(buf) - 1);

    if (f >= 0)
        close(f);
    return n > 0 ? buf[0] - '0' : -1;
}

static void *freeing(void *arg)
{
    struct round *r = arg;

    r->free_ret = emu_free(r->va) ? errno : 0;  /* runs gdrdrv's callback */
    return NULL;
}

static void *unpinning(void *arg)
{
    struct round *r = arg;
    struct gdrdrv_unpin_buffer u = { .handle = r->handle };

    /* Started once the callback holds pin->lock: UNPIN queues on it. */
    r->unpin_ret = ioctl(r->fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;
    return NULL;
}

/* Waits for the hold, then takes pin->lock (GET_CB_FLAG) inside the callback's unlock. */
static void *flag_reading(void *arg)
{
    struct round *r = arg;
    struct gdrdrv_get_cb_flag g = { .handle = r->handle };

    for (double end = race_now() + RACE_WAIT_S; !r->saw_hold && race_now() < end;) {
        r->saw_hold = hold_state() == HOLD_HOLDING;
        if (!r->saw_hold)
            race_sleep_ms(1);
    }
    if (!r->saw_hold)
        return NULL;
    r->flag_ret = ioctl(r->fd, GDRDRV_IOC_GET_CB_FLAG, &g) ? errno : 0;
    r->flag = g.flag;
    r->held_after = hold_state() == HOLD_HOLDING;
    return NULL;
}

/*
 * The callback is held in its unlock and GET_CB_FLAG has been through pin->lock: UNPIN,
 * woken by it, goes on past the lock. Waits until it has returned, or is blocked again
 * (another voluntary switch than the one it queued on the lock with: the completion);
 * 1 when it did either, 0 when neither came.
 */
static int wait_unpin_moved_on(struct race_thread *tu, long queued)
{
    double end = race_now() + RACE_WAIT_S;

    while (race_now() < end) {
        if (__atomic_load_n(&tu->done, __ATOMIC_ACQUIRE))
            return 1;
        if (race_state(getpid(), tu->tid) == 'D' && race_switches(getpid(), tu->tid) > queued)
            return 1;
        race_sleep_ms(1);
    }
    return 0;
}

/*
 * The callback held at the gate with pin->lock: UNPIN started and seen queued on the lock,
 * GET_CB_FLAG's thread started, the gate opened; then, the hold seen and GET_CB_FLAG done,
 * UNPIN seen going on. NULL, or which state never came.
 */
static const char *steps(struct round *r)
{
    struct race_thread *t = r->t;
    long queued;
    int e;

    if (emu_gate(GATE))
        return "the provider's unlink gate did not close";
    if ((e = race_thread_start(&t[0], 1, freeing, r)))
        return e == EINVAL ? "no CPU 1" : "FREE's thread did not start";
    if (race_wait_stopped(GATE, 1))
        return "the callback never reached the provider's unlink gate";
    if (race_thread_start(&t[1], 0, unpinning, r))
        return "UNPIN's thread did not start";
    if (race_thread_blocked(&t[1], "gdrdrv") != RACE_BLOCKED)
        return "UNPIN was not seen blocked on pin->lock while the callback held it";
    queued = race_switches(getpid(), t[1].tid);
    if (race_thread_start(&t[2], 0, flag_reading, r))
        return "GET_CB_FLAG's thread did not start";
    emu_gate(0);                /* the callback goes on to its unlock, and is held there */
    if (race_thread_join(&t[2], JOIN_S))
        return "GET_CB_FLAG did not return";
    if (r->saw_hold)
        r->moved_on = wait_unpin_moved_on(&t[1], queued) && hold_state() == HOLD_HOLDING;
    return NULL;
}

/* The threads of a round, the hold let go, joined; 0, or an errno (why says which). */
static int run_threads(struct round *r, char *why, size_t len)
{
    const char *what = steps(r);
    int stuck = 0;

    emu_gate(0);
    t_write_file(HOLD, "0\n");     /* whatever happened, nothing stays held */
    for (int i = 0; i < 3; i++)
        stuck |= race_thread_join(&r->t[i], JOIN_S) != 0;
    if (what || stuck) {
        snprintf(why, len, "%s", what ? what : "a gdrdrv or provider call did not return");
        return what && !strcmp(what, "no CPU 1") ? EINVAL : ETIMEDOUT;
    }
    return 0;
}

/* What a round must show; 0, or 1 with why filled. */
static int judge(const struct round *r, char *why, size_t len)
{
    if (!r->saw_hold) {
        snprintf(why, len, "the callback was never held in mutex_unlock's slow path "
                 "(provider state %d)", hold_state());
        return 1;
    }
    /* UNPIN and FREE succeed; GET_CB_FLAG finds the pin listed, its callback fired. */
    if (r->unpin_ret || r->free_ret || r->flag_ret || r->flag != 1) {
        snprintf(why, len, "UNPIN %s, FREE %s, GET_CB_FLAG %s (flag %u)",
                 strerror(r->unpin_ret), strerror(r->free_ret), strerror(r->flag_ret),
                 r->flag);
        return 1;
    }
    return 0;
}

/*
 * One round on a fresh pin; 0, 1 with why filled, or 77 (why says why it cannot run). *hit:
 * GET_CB_FLAG and UNPIN went through the window with the callback still held in it.
 */
static int round_of(int fd, int *hit, char *why, size_t len)
{
    struct round r = { .fd = fd };
    struct gdrdrv_pin_buffer_v2 p = { .size = GPU_PAGE };
    int e;

    if (emu_alloc(GPU_PAGE, 1, 0, &r.va)) {
        snprintf(why, len, "alloc: %s", strerror(errno));
        return 1;
    }
    p.addr = r.va;
    if (ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p)) {
        snprintf(why, len, "pin: %s", strerror(errno));
        emu_free(r.va);
        return 1;
    }
    r.handle = p.handle;
    e = t_write_file(HOLD, "1\n");
    if (e) {
        snprintf(why, len, "the provider cannot hold a callback in mutex_unlock here: %s%s",
                 strerror(e), e == EOPNOTSUPP ? " (no lockdep tracepoints: the debug kernel has them)" : "");
        emu_free(r.va);
        return e == EOPNOTSUPP ? 77 : 1;
    }
    e = run_threads(&r, why, len);
    if (e)
        return e == EINVAL ? 77 : 1;            /* EINVAL: no CPU 1 */
    *hit = r.held_after && r.moved_on;
    return judge(&r, why, len);
}

/* ---- an orphan's closer against its callback ------------------------------------------- */
struct orphan { int fd; uint64_t va; int close_ret, free_ret; };

static void *closing(void *arg)
{
    struct orphan *o = arg;

    /* The release runs here, on the way out of close: its put_pages fails, by injection. */
    o->close_ret = close(o->fd) ? errno : 0;
    return NULL;
}

static void *freeing_orphan(void *arg)
{
    struct orphan *o = arg;

    o->free_ret = emu_free(o->va) ? errno : 0;
    return NULL;
}

/* Closer on CPU 1 held after pin->lock, then FREE on CPU 0 to its end; NULL or what failed. */
static const char *orphan_steps(struct orphan *o, struct race_thread *t)
{
    double end;
    int e;

    if ((e = race_thread_start(&t[0], 1, closing, o)))
        return e == EINVAL ? "no CPU 1" : "the closing thread did not start";
    for (end = race_now() + RACE_WAIT_S; hold_state() != HOLD_HOLDING; race_sleep_ms(1))
        if (race_now() > end || __atomic_load_n(&t[0].done, __ATOMIC_ACQUIRE))
            return "the closing task was never held after its failed put_pages";
    if (race_thread_start(&t[1], 0, freeing_orphan, o))
        return "FREE's thread did not start";
    if (race_thread_join(&t[1], JOIN_S))
        return "FREE did not return while the closer was held";
    if (hold_state() != HOLD_HOLDING)
        return "the hold ran out before FREE was done";
    return NULL;
}

static void test_orphan_freed_under_its_closer(void)
{
    struct gdrdrv_pin_buffer_v2 p = { .size = GPU_PAGE };
    struct orphan o = { .fd = -1 };
    struct race_thread t[2] = { { 0 } };
    uint64_t base = emu_live_pins(), cbs = emu_callbacks_fired();
    long ref0 = t_read_long(REFCNT);
    const char *what;
    int e, stuck = 0;

    o.fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
    if (o.fd < 0 || emu_alloc(GPU_PAGE, 1, 0, &o.va)) {
        t_fail("orphan_freed_under_its_closer", "setup: %s", strerror(errno));
        return;
    }
    p.addr = o.va;
    if (ioctl(o.fd, GDRDRV_IOC_PIN_BUFFER_V2, &p)) {
        t_fail("orphan_freed_under_its_closer", "pin: %s", strerror(errno));
        close(o.fd);
        emu_free(o.va);
        return;
    }
    e = t_write_file(HOLD, "2\n");
    if (e) {
        close(o.fd);
        emu_free(o.va);
        if (e == EOPNOTSUPP)
            t_skip("orphan_freed_under_its_closer", "the provider cannot hold a task after its "
                   "put_pages here (no lockdep tracepoints: the debug kernel has them)");
        else
            t_fail("orphan_freed_under_its_closer", "arming the hold: %s", strerror(e));
        return;
    }
    emu_inject(NVP2P_EMU_FAIL_PUT_PAGES, 1, ENOMEM);
    what = orphan_steps(&o, t);
    t_write_file(HOLD, "0\n");                    /* the closer goes on, into the pin */
    emu_inject(NVP2P_EMU_FAIL_PUT_PAGES, 0, ENOMEM);
    for (int i = 0; i < 2; i++)
        stuck |= t[i].started && race_thread_join(&t[i], JOIN_S) != 0;
    if (what && !strcmp(what, "no CPU 1")) {
        t_skip("orphan_freed_under_its_closer", "one CPU");
        return;
    }
    if (what && t[1].started == 0)
        emu_free(o.va);                         /* the orphan goes with its callback */
    t_check(!what && !stuck && !o.close_ret && !o.free_ret &&
            emu_callbacks_fired() == cbs + 1 && emu_live_pins() == base &&
            t_read_long(REFCNT) == ref0, "orphan_freed_under_its_closer",
            "%s; close %s, FREE %s, callbacks +%llu, live tables %llu -> %llu, gdrdrv refcnt "
            "%ld -> %ld", what ? what : stuck ? "a thread did not return" : "held and freed",
            strerror(o.close_ret), strerror(o.free_ret),
            (unsigned long long)(emu_callbacks_fired() - cbs), (unsigned long long)base,
            (unsigned long long)emu_live_pins(), ref0, t_read_long(REFCNT));
}

int main(void)
{
    uint64_t base, cbs;
    char why[256] = "";
    int fd, bad = 0, hits = 0, e = 0;
    cpu_set_t cpu0;

    /* The callback's CPU spins with preemption off while held: the watching stays off it. */
    CPU_ZERO(&cpu0);
    CPU_SET(0, &cpu0);
    sched_setaffinity(0, sizeof(cpu0), &cpu0);
    fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
    if (fd < 0 || emu_fd() < 0 || (e = emu_gate(0))) {
        t_fail("setup", "/dev/gdrdrv, the provider or its gates (" NVP2P_EMU_GATE_PARAM "): %s",
               strerror(e ? e : errno));
        return t_status();
    }
    base = emu_live_pins();
    cbs = emu_callbacks_fired();
    for (int i = 0; i < ROUNDS && !bad; i++) {
        int hit = 0;

        bad = round_of(fd, &hit, why, sizeof(why));
        hits += hit;
    }
    close(fd);
    if (bad == 77) {
        t_skip("callback_unlock_against_unpin", "%s", why);
        return t_status();
    }
    if (!bad && (emu_callbacks_fired() != cbs + ROUNDS || emu_live_pins() != base)) {
        snprintf(why, sizeof(why), "callbacks +%llu in %d rounds, live tables %llu -> %llu",
                 (unsigned long long)(emu_callbacks_fired() - cbs), ROUNDS,
                 (unsigned long long)base, (unsigned long long)emu_live_pins());
        bad = 1;
    }
    if (!bad)
        printf("# %d of %d rounds hit the window (GET_CB_FLAG through pin->lock and UNPIN on "
               "past it while the callback was held in its unlock)\n", hits, ROUNDS);
    if (!bad && !hits) {
        snprintf(why, sizeof(why), "no round hit the window: the hold ran out first (%d rounds)",
                 ROUNDS);
        bad = 1;
    }
    t_check(!bad, "callback_unlock_against_unpin", "%s", why);
    test_orphan_freed_under_its_closer();
    return t_status();
}

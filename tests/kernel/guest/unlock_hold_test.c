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
 *   CPU 1: FREE runs gdrdrv's callback, which the provider keeps sleeping inside
 *          nvidia_p2p_free_page_table (unlink_delay_ms) while it holds pin->lock;
 *   CPU 0: UNPIN comes at 40 ms and queues on pin->lock (so the unlock takes its slow path);
 *          the callback's unlock is then held at its wait_lock, and GET_CB_FLAG, started
 *          when the hold is seen, takes pin->lock in the window, and its own unlock wakes
 *          UNPIN, which runs on while the callback is still held.
 * The hold is let go once UNPIN has returned (a gdrdrv that waited for pin->lock only has
 * freed the pin by then: KASAN reports the callback's resumed unlock, which the rig fails on)
 * or after HOLD_MS (a gdrdrv that waits for its callback). On the debug kernel the provider
 * finds the point by lockdep's tracepoints, on the stock x86-64 kernels by a kprobe; the test
 * skips where it has neither, or where there is one CPU.
 *   unlock_hold_test     run with gdrdrv use_persistent_mapping=0
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
#define ROUNDS 3
#define PARAMS "/sys/module/nvp2p_emu/parameters/"
#define HOLD PARAMS "unlock_hold"
#define UNLINK_DELAY PARAMS "unlink_delay_ms"
#define UNPIN_AT_MS 40          /* the callback holds pin->lock for 150 ms from its start */
#define SEE_HOLD_MS 3000        /* how long GET_CB_FLAG's thread looks for the hold */
#define HOLD_MS 400             /* how long the hold waits for UNPIN to return */
#define JOIN_S 20

enum { HOLD_OFF, HOLD_ARMED, HOLD_HOLDING, HOLD_DONE };   /* what HOLD reads */

struct round {
    int fd;
    uint64_t va, handle;
    int free_ret, unpin_ret, flag_ret;
    uint32_t flag;
    int saw_hold;               /* GET_CB_FLAG began while the callback was held */
    int held_after;             /* ... and the callback was still held when it returned */
    int unpin_done;             /* atomic */
};

/* 0 or the errno of writing s to path. */
static int put_param(const char *path, const char *s)
{
    int f = open(path, O_WRONLY | O_CLOEXEC), e = 0;

    if (f < 0)
        return errno;
    if (write(f, s, strlen(s)) < 0)
        e = errno;
    close(f);
    return e;
}

static int hold_state(void)
{
    char buf[8] = "";
    int f = open(HOLD, O_RDONLY | O_CLOEXEC);
    ssize_t n = f < 0 ? -1 : read(f, buf, sizeof(buf) - 1);

    if (f >= 0)
        close(f);
    return n > 0 ? buf[0] - '0' : -1;
}

static void sleep_ms(unsigned int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

    nanosleep(&ts, NULL);
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

    sleep_ms(UNPIN_AT_MS);      /* the callback holds pin->lock: UNPIN queues on it */
    r->unpin_ret = ioctl(r->fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;
    __atomic_store_n(&r->unpin_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Waits for the hold, then takes pin->lock (GET_CB_FLAG) inside the callback's unlock. */
static void *flag_reading(void *arg)
{
    struct round *r = arg;
    struct gdrdrv_get_cb_flag g = { .handle = r->handle };

    for (int ms = 0; ms < SEE_HOLD_MS && !r->saw_hold; ms++) {
        r->saw_hold = hold_state() == HOLD_HOLDING;
        if (!r->saw_hold)
            sleep_ms(1);
    }
    if (!r->saw_hold)
        return NULL;
    r->flag_ret = ioctl(r->fd, GDRDRV_IOC_GET_CB_FLAG, &g) ? errno : 0;
    r->flag = g.flag;
    r->held_after = hold_state() == HOLD_HOLDING;
    return NULL;
}

/* A thread of fn(r) on cpu; 0 or an errno. */
static int start_on(pthread_t *t, int cpu, void *(*fn)(void *), struct round *r)
{
    pthread_attr_t a;
    cpu_set_t set;
    int e;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_attr_init(&a);
    e = pthread_attr_setaffinity_np(&a, sizeof(set), &set);
    if (!e)
        e = pthread_create(t, &a, fn, r);
    pthread_attr_destroy(&a);
    return e;
}

/* Joins t within JOIN_S seconds; 0, or ETIMEDOUT for a thread stuck in the kernel. */
static int join_bounded(pthread_t t)
{
    struct timespec dl;

    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += JOIN_S;
    return pthread_timedjoin_np(t, NULL, &dl);
}

/* UNPIN has returned, or HOLD_MS have gone by. */
static void wait_unpin(struct round *r)
{
    for (int ms = 0; ms < HOLD_MS && !__atomic_load_n(&r->unpin_done, __ATOMIC_ACQUIRE); ms++)
        sleep_ms(1);
}

/* The three threads of a round, the hold let go, joined; 0, or an errno (why says which). */
static int run_threads(struct round *r, char *why, size_t len)
{
    void *(*const fn[3])(void *) = { freeing, unpinning, flag_reading };
    const int cpu[3] = { 1, 0, 0 };
    pthread_t t[3];
    int n, e = 0, stuck = 0;

    for (n = 0; n < 3 && !e; n++)
        e = start_on(&t[n], cpu[n], fn[n], r);
    if (e)
        n--;                    /* t[n - 1] was not started */
    else if (!(stuck = join_bounded(t[2])))
        wait_unpin(r);
    put_param(HOLD, "0\n");     /* whatever happened, nothing stays held */
    for (int i = 0; i < n; i++)
        stuck |= (i != 2 || e) && join_bounded(t[i]);
    if (e || stuck) {
        snprintf(why, len, "threads: %s", e ? strerror(e) :
                 "a gdrdrv or provider call did not return");
        return e ? e : ETIMEDOUT;
    }
    return 0;
}

/* What a round must show; 0, or 1 with why filled. */
static int judge(const struct round *r, char *why, size_t len)
{
    if (!r->saw_hold || !r->held_after) {
        snprintf(why, len, "the callback was %s (provider state %d)",
                 r->saw_hold ? "let go before GET_CB_FLAG returned" :
                 "never held in mutex_unlock's slow path", hold_state());
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

/* One round on a fresh pin; 0, 1 with why filled, or 77 (why says why it cannot run). */
static int round_of(int fd, char *why, size_t len)
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
    e = put_param(HOLD, "1\n");
    if (e) {
        snprintf(why, len, "the provider cannot hold a callback in mutex_unlock here: %s%s",
                 strerror(e), e == EOPNOTSUPP ? " (neither lockdep's tracepoints nor kprobes)" : "");
        emu_free(r.va);
        return e == EOPNOTSUPP ? 77 : 1;
    }
    e = run_threads(&r, why, len);
    if (e)
        return e == EINVAL ? 77 : 1;            /* EINVAL: no CPU 1 */
    return judge(&r, why, len);
}

int main(void)
{
    uint64_t base, cbs;
    char why[256] = "";
    int fd, bad = 0;

    fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
    if (fd < 0 || emu_fd() < 0 || put_param(UNLINK_DELAY, "150\n")) {
        t_fail("setup", "/dev/gdrdrv, the provider or " UNLINK_DELAY ": %s", strerror(errno));
        return t_status();
    }
    base = emu_live_pins();
    cbs = emu_callbacks_fired();
    for (int i = 0; i < ROUNDS && !bad; i++)
        bad = round_of(fd, why, sizeof(why));
    put_param(UNLINK_DELAY, "0\n");
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
    t_check(!bad, "callback_unlock_against_unpin", "%s", why);
    return t_status();
}

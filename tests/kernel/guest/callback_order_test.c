// SPDX-License-Identifier: MIT
/*
 * callback_order_test.c - the free callback's last touch of a pin against the kfree of that
 * pin (non-persistent pins). The callback ends with complete_all(&pin->cb_done) after it has
 * dropped pin->lock; a freeing side (UNPIN) that waited for pin->lock instead of the
 * completion would free the pin in between. To put it there every time rather than by luck:
 * the thread that frees the allocation (and so runs the callback) and the thread that unpins
 * share one CPU, the unpinning one at SCHED_FIFO; the provider holds the callback inside
 * nvidia_p2p_free_page_table (its unlink gate) while UNPIN comes and blocks on pin->lock.
 * When the callback unlocks, UNPIN runs at once (a preemptible kernel, as the debug kernel
 * is) and finishes before the callback resumes: with the waiting done on the lock, the
 * callback's complete_all then writes freed memory (KASAN's use-after-free report, which the
 * rig fails on). The same arrangement puts GET_INFO, blocked on pin->lock behind UNPIN, after
 * the whole of UNPIN: GET_INFO must hold its own reference on the pin (the concurrent
 * GET_INFO against unpin), and the exit of a process killed with the pin held, whose file's
 * release is then the freeing side. Skips without SCHED_FIFO.
 *
 * Nothing here rests on time (race.h): the gate holds the callback until the freeing side is
 * seen blocked in the kernel ('D'), and only then lets it go. A round whose freeing side was
 * not seen blocked (it never got there, or returned first) missed the window: the rounds
 * that hit it are counted ("# N of M rounds ..."), and a mode where none did fails.
 *   callback_order_test     run with gdrdrv use_persistent_mapping=0
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "race.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
#define ROUNDS 4
#define GATE NVP2P_EMU_GATE_UNLINK

static int fd = -1;

static int on_cpu(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof(set), &set) ? errno : 0;
}

static int fifo(int prio)
{
    struct sched_param sp = { .sched_priority = prio };

    return sched_setscheduler(0, SCHED_FIFO, &sp) ? errno : 0;
}

/*
 * One round: FREE (its callback held in free_page_table, with pin->lock, until the gate
 * opens), UNPIN once the callback is held (blocks on pin->lock), and with info set GET_INFO
 * once UNPIN is blocked (finds the pin, blocks on pin->lock behind UNPIN). With info, the
 * callback runs on CPU 1 and UNPIN and GET_INFO share CPU 0, UNPIN at the higher priority:
 * when UNPIN has the lock it runs to its end before GET_INFO resumes, so GET_INFO must hold
 * a reference. Without, FREE and UNPIN share CPU 0.
 */
enum { BY_UNPIN, WITH_INFO, BY_EXIT, MODES };

struct round {
    uint64_t va, handle;
    int info;
    int free_ret, unpin_ret, info_ret, setup_err;
};

static void *freeing_thread(void *arg)
{
    struct round *r = arg;
    int e = on_cpu(r->info ? 1 : 0);

    if (e)
        r->setup_err = e;
    r->free_ret = emu_free(r->va);      /* runs gdrdrv's callback, held in free_page_table */
    return NULL;
}

static void *unpinning_thread(void *arg)
{
    struct round *r = arg;
    struct gdrdrv_unpin_buffer u = { .handle = r->handle };
    int e = on_cpu(0);

    if (!e)
        e = fifo(20);
    if (e)
        r->setup_err = e;
    else                                /* started once the callback is held */
        r->unpin_ret = ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;
    return NULL;
}

static void *info_thread(void *arg)
{
    struct round *r = arg;
    struct gdrdrv_get_info_v2 i = { .handle = r->handle };
    int e = on_cpu(0);

    if (!e)
        e = fifo(10);
    if (e)
        r->setup_err = e;
    else                                /* started once UNPIN is blocked on pin->lock */
        r->info_ret = ioctl(fd, GDRDRV_IOC_GET_INFO_V2, &i) ? errno : 0;
    return NULL;
}

/*
 * BY_EXIT: the pin is a child's, the child is at SCHED_FIFO on CPU 0 and is killed once the
 * callback is held: the release of its file (at its exit) is the freeing side. Returns the
 * child's pid, the handle in *h; -1 when the child could not pin (its errno in *h).
 */
static pid_t pinning_child(uint64_t va, uint64_t *h)
{
    int pfd[2];
    pid_t pid;

    if (pipe(pfd))
        return -1;
    pid = fork();
    if (pid == 0) {
        struct gdrdrv_pin_buffer_v2 p = { .addr = va, .size = GPU_PAGE };
        int cfd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC), e = on_cpu(0);

        if (!e)
            e = fifo(20);
        if (!e && (cfd < 0 || ioctl(cfd, GDRDRV_IOC_PIN_BUFFER_V2, &p)))
            e = errno;
        p.handle = e ? ~0ULL - (uint64_t)e : p.handle;
        if (write(pfd[1], &p.handle, sizeof(p.handle)) != sizeof(p.handle))
            _exit(1);
        for (;;)
            pause();                    /* killed while the callback holds pin->lock */
    }
    close(pfd[1]);
    if (pid < 0 || read(pfd[0], h, sizeof(*h)) != sizeof(*h) || *h > ~0ULL - 4096) {
        int e = pid > 0 && *h > ~0ULL - 4096 ? (int)(~0ULL - *h) : EIO;

        if (pid > 0) {
            kill(pid, SIGKILL);
            t_wait_child(pid, 10);
        }
        close(pfd[0]);
        *h = (uint64_t)e;
        return -1;
    }
    close(pfd[0]);
    return pid;
}

/*
 * Bring the freeing side of a round while the callback is held at the gate, until it is
 * blocked in gdrdrv (on pin->lock): 1 when it was (the round hits the window), 0 when it
 * returned first; NULL, or what never happened, in *stuck.
 */
static int bring_freeing_side(int mode, struct round *r, pid_t child, struct race_thread *tu,
                              struct race_thread *ti, const char **stuck)
{
    int b;

    if (mode == BY_EXIT) {
        kill(child, SIGKILL);           /* its exit releases the file: the freeing side */
        b = race_wait_blocked(child, child, NULL, "gdrdrv");
        *stuck = b == RACE_TIMEOUT ? "the killed child neither blocked nor exited" : NULL;
        return b == RACE_BLOCKED;
    }
    race_thread_start(tu, -1, unpinning_thread, r);
    b = race_thread_blocked(tu, "gdrdrv");
    *stuck = b == RACE_TIMEOUT ? "UNPIN neither blocked nor returned" : NULL;
    if (b != RACE_BLOCKED || mode != WITH_INFO)
        return b == RACE_BLOCKED;
    race_thread_start(ti, -1, info_thread, r);
    b = race_thread_blocked(ti, "gdrdrv");
    *stuck = b == RACE_TIMEOUT ? "GET_INFO neither blocked nor returned" : NULL;
    return b == RACE_BLOCKED;
}

/* The round's process or threads over: 0, or ETIMEDOUT when one of them did not end. */
static int end_round(int mode, pid_t child, struct round *r, struct race_thread *t, int n)
{
    int stuck = 0;

    if (mode == BY_EXIT) {
        kill(child, SIGKILL);           /* again, if the callback never got to the gate */
        if (t_wait_child(child, 30) != 128 + SIGKILL)
            r->unpin_ret = ECHILD;
    }
    for (int k = 0; k < n; k++)
        stuck |= race_thread_join(&t[k], 2 * RACE_WAIT_S) != 0;
    return stuck ? ETIMEDOUT : 0;
}

/*
 * ROUNDS rounds; "" or why it went wrong. Returns 77 when SCHED_FIFO is not allowed. *hits:
 * the rounds whose freeing side (and GET_INFO) was seen blocked while the callback was held.
 */
static int rounds(int mode, int *hits, char *why, size_t len)
{
    int info = mode == WITH_INFO;
    uint64_t base = emu_live_pins(), cbs = emu_callbacks_fired();

    *hits = 0;
    for (int i = 0; i < ROUNDS; i++) {
        struct round r = { .info = info };
        struct gdrdrv_pin_buffer_v2 p = { .size = GPU_PAGE };
        struct race_thread t[3] = { { 0 } };        /* FREE, UNPIN, GET_INFO */
        pid_t child = 0;
        const char *stuck = NULL;
        int e;

        if (emu_alloc(GPU_PAGE, 1, 0, &r.va)) {
            snprintf(why, len, "alloc: %s", strerror(errno));
            return 1;
        }
        p.addr = r.va;
        if (mode == BY_EXIT && (child = pinning_child(r.va, &r.handle)) < 0) {
            emu_free(r.va);
            if (r.handle == EPERM) {
                snprintf(why, len, "no SCHED_FIFO here: %s", strerror(EPERM));
                return 77;
            }
            snprintf(why, len, "the child's pin: %s", strerror((int)r.handle));
            return 1;
        }
        if (mode != BY_EXIT && ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p)) {
            snprintf(why, len, "pin: %s", strerror(errno));
            emu_free(r.va);
            return 1;
        }
        if (mode != BY_EXIT)
            r.handle = p.handle;
        e = emu_gate(GATE);
        if (!e)
            e = race_thread_start(&t[0], -1, freeing_thread, &r);
        if (e) {
            snprintf(why, len, "round %d: gate or thread: %s", i, strerror(e));
            emu_gate(0);
            end_round(mode, child, &r, t, 0);
            emu_free(r.va);
            return 1;
        }
        if (race_wait_stopped(GATE, 1))
            stuck = "the callback never reached the provider's unlink gate";
        else
            *hits += bring_freeing_side(mode, &r, child, &t[1], &t[2], &stuck);
        emu_gate(0);                    /* whatever happened: the callback goes on */
        if (end_round(mode, child, &r, t, 3) && !stuck)
            stuck = "a thread stuck in the kernel after the gate opened";
        if (r.setup_err == EPERM) {
            snprintf(why, len, "no SCHED_FIFO here: %s", strerror(EPERM));
            return 77;
        }
        if (stuck) {
            snprintf(why, len, "round %d: %s in %d s", i, stuck, RACE_WAIT_S);
            return 1;
        }
        /* GET_INFO finds the pin still listed, or not at all (EINVAL): both are right. */
        if (r.setup_err || r.unpin_ret || r.free_ret || (r.info_ret && r.info_ret != EINVAL)) {
            snprintf(why, len, "round %d: setup %s, UNPIN %s, FREE %s, GET_INFO %s", i,
                     strerror(r.setup_err), strerror(r.unpin_ret), strerror(r.free_ret),
                     strerror(r.info_ret));
            return 1;
        }
    }
    if (emu_callbacks_fired() != cbs + ROUNDS || emu_live_pins() != base) {
        snprintf(why, len, "callbacks +%llu in %d rounds, live pins %llu -> %llu",
                 (unsigned long long)(emu_callbacks_fired() - cbs), ROUNDS,
                 (unsigned long long)base, (unsigned long long)emu_live_pins());
        return 1;
    }
    if (!*hits) {
        snprintf(why, len, "no round had the freeing side%s blocked while the callback was held",
                 info ? " and GET_INFO" : "");
        return 1;
    }
    return 0;
}

int main(void)
{
    const char *names[MODES] = { "unpin_waits_for_callback_end", "get_info_holds_pin_across_unpin",
                                 "exit_waits_for_callback_end" };
    char why[200] = "";
    int e = 0;

    fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
    if (fd < 0 || emu_fd() < 0 || (e = emu_gate(0))) {
        t_fail("setup", "/dev/gdrdrv, the provider or its gates (" NVP2P_EMU_GATE_PARAM "): %s",
               strerror(e ? e : errno));
        return t_status();
    }
    for (int mode = 0; mode < MODES; mode++) {
        int hits, r = rounds(mode, &hits, why, sizeof(why));

        if (r == 77) {
            t_skip(names[mode], "%s", why);
            continue;
        }
        printf("# %s: %d of %d rounds hit the window (the freeing side blocked on pin->lock "
               "while the callback was held)\n", names[mode], hits, ROUNDS);
        t_check(!r, names[mode], "%s", why);
    }
    emu_gate(0);
    close(fd);
    return t_status();
}

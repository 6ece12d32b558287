/* SPDX-License-Identifier: MIT */
/*
 * race.h - helpers of the guest's race tests (callback_order_test.c, teardown_order_test.c,
 * put_unlinked_test.c, unlock_hold_test.c, rmmod_race_test.c, callback_test.c and others):
 * instead of sleeping and hoping that a task has got where the race needs it by then, which a
 * slow or loaded machine breaks, they wait for that state, seen for real: a task stopped at
 * one of the provider's gates (tests/kernel/emu/provider/emu_gate.c), a thread or process
 * blocked in the kernel (its scheduler state in /proc). Every wait is bounded by RACE_WAIT_S;
 * what was not reached by then the caller reports as "not ok", never as a pass. Header only
 * (static inline): a guest program is its one source file and the kit, and the rig builds
 * every .c file of this folder as a program.
 */
#ifndef VRAMIO_GUEST_RACE_H
#define VRAMIO_GUEST_RACE_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"

/*
 * How long a race test waits for a state: far beyond what a loaded machine needs (the
 * states take milliseconds), under the provider's gate bound (30 s) and the debug kernel's
 * hung-task bound (60 s) for a task blocked meanwhile.
 */
#define RACE_WAIT_S 20

/* The caller's thread id (for race_state and the others, with pid getpid()). */
static inline pid_t race_tid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

/* The text of /proc/PID/task/TID/<what> into buf; its length, -1 when it cannot be read. */
static inline long race_read_task(pid_t pid, pid_t tid, const char *what, char *buf,
                                  size_t len)
{
    char path[96];
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid, (int)tid, what);
    f = fopen(path, "r");
    if (!f)
        return -1;
    n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (long)n;
}

/*
 * Threads of this process only (pid getpid()), here and in race_switches: reading another
 * process's /proc/PID/stat or status takes a reference on its mm (get_task_mm), and where that
 * process is exiting, the reader's drop of it can be the last one. The reader then tears the
 * exiting process's mappings down itself, releases the files they hold (a gdrdrv mapping
 * holds the gdrdrv file) and blocks where the exiting process was to block: in put_pages,
 * behind a free callback that the reader itself holds at the provider's gate. Seen in the
 * guest under load: exit_races_callback stuck for the gate's whole bound in one read of its
 * child's stat. Another process is watched by race_wait_blocked through its wchan and
 * waitid, neither of which touches its mm.
 *
 * The scheduler state of thread tid of process pid (/proc/PID/task/TID/stat): 'R', 'S', 'D'
 * (blocked uninterruptibly: a mutex, a completion, put_pages waiting for a callback), 'Z',
 * ...; 0 when the thread is gone.
 */
static inline char race_state(pid_t pid, pid_t tid)
{
    char buf[512], *p;

    /* "TID (COMM) S ...": COMM may hold anything, so the state follows the last ')'. */
    if (race_read_task(pid, tid, "stat", buf, sizeof(buf)) <= 0 ||
        !(p = strrchr(buf, ')')) || p[1] != ' ')
        return 0;
    return p[2];
}

/* Its voluntary context switches so far (/proc/PID/task/TID/status), -1 when gone. */
static inline long race_switches(pid_t pid, pid_t tid)
{
    static const char key[] = "\nvoluntary_ctxt_switches:";
    char buf[2048], *p;
    long n = -1;

    if (race_read_task(pid, tid, "status", buf, sizeof(buf)) > 0 && (p = strstr(buf, key)))
        sscanf(p + strlen(key), "%ld", &n);
    return n;
}

/* Where it sleeps (/proc/PID/task/TID/wchan: a function name, "0" when unknown) into buf. */
static inline void race_wchan(pid_t pid, pid_t tid, char *buf, size_t len)
{
    if (race_read_task(pid, tid, "wchan", buf, len) < 0)
        snprintf(buf, len, "?");
}

/*
 * Whether child process pid has exited (a zombie, not reaped here: its parent's wait still
 * gets its status): 1, 0 while it runs, -1 when it is no child of ours (or reaped already).
 */
static inline int race_child_exited(pid_t pid)
{
    siginfo_t si;

    memset(&si, 0, sizeof(si));         /* WNOHANG leaves si_pid alone while it runs */
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT))
        return -1;
    return si.si_pid == pid;
}

/*
 * Whether the task sleeps where the wchan in buf says wchan_prefix (any sleep without one):
 * the kernel names a wchan only for a task that is off the CPU, "0" otherwise.
 */
static inline int race_sleeps_in(const char *wchan, const char *wchan_prefix)
{
    if (!strcmp(wchan, "0") || !strcmp(wchan, "?"))
        return 0;
    return !wchan_prefix || !strncmp(wchan, wchan_prefix, strlen(wchan_prefix));
}

/* Seconds on CLOCK_MONOTONIC. */
static inline double race_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sleep ms milliseconds: the polling step of the waits. */
static inline void race_sleep_ms(unsigned int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

    nanosleep(&ts, NULL);
}

/* The id a thread publishes in *tid when it starts, waited for (RACE_WAIT_S); 0 if none. */
static inline pid_t race_wait_tid(const pid_t *tid)
{
    double end = race_now() + RACE_WAIT_S;
    pid_t t;

    while (!(t = __atomic_load_n(tid, __ATOMIC_ACQUIRE)) && race_now() < end)
        race_sleep_ms(1);
    return t;
}

/*
 * Wait until at least n tasks are stopped at the provider's place (one NVP2P_EMU_GATE_*
 * bit), at most RACE_WAIT_S: 0, or ETIMEDOUT (or EIO when the provider cannot tell).
 */
static inline int race_wait_stopped(unsigned int place, int n)
{
    double end = race_now() + RACE_WAIT_S;
    int now;

    while ((now = emu_stopped(place)) < n) {
        if (now < 0)
            return EIO;
        if (race_now() > end)
            return ETIMEDOUT;
        race_sleep_ms(1);
    }
    return 0;
}

enum { RACE_DONE, RACE_BLOCKED, RACE_TIMEOUT };

/*
 * Another process (a child of ours; its main thread): blocked while it sleeps with a wchan
 * that starts with wchan_prefix (required here: a sleep on a pipe is no block in the module),
 * done once it has exited. Its stat is never read (race_state says why).
 */
static inline int race_child_blocked(pid_t pid, const char *wchan_prefix)
{
    char wchan[128];
    int exited = race_child_exited(pid);

    race_wchan(pid, pid, wchan, sizeof(wchan));
    if (exited > 0 || (exited < 0 && !strcmp(wchan, "?")))
        return RACE_DONE;
    return race_sleeps_in(wchan, wchan_prefix) ? RACE_BLOCKED : RACE_TIMEOUT;
}

/*
 * Wait until thread tid of process pid is blocked ('D') or has finished (*done set by it, or
 * the thread gone or a zombie), at most RACE_WAIT_S. With wchan_prefix, blocked counts only
 * while its wchan starts with that (e.g. "gdrdrv": blocked in the module, not on the way),
 * or where the kernel cannot name it. For another process than ours (a child, pid == tid,
 * with a wchan_prefix), race_child_blocked's view. Returns RACE_BLOCKED, RACE_DONE or
 * RACE_TIMEOUT.
 */
static inline int race_wait_blocked(pid_t pid, pid_t tid, const int *done,
                                    const char *wchan_prefix)
{
    double end = race_now() + RACE_WAIT_S;

    if (!tid)
        return RACE_TIMEOUT;            /* the thread never said who it is */
    if (pid != getpid()) {
        int b;

        while ((b = race_child_blocked(pid, wchan_prefix)) == RACE_TIMEOUT &&
               race_now() <= end)
            race_sleep_ms(1);
        return b;
    }
    for (;;) {
        char s = race_state(pid, tid), wchan[128];

        if ((done && __atomic_load_n(done, __ATOMIC_ACQUIRE)) || s == 0 || s == 'Z' ||
            s == 'X')
            return RACE_DONE;
        if (s == 'D') {
            if (!wchan_prefix)
                return RACE_BLOCKED;
            race_wchan(pid, tid, wchan, sizeof(wchan));
            if (!strncmp(wchan, wchan_prefix, strlen(wchan_prefix)) || !strcmp(wchan, "0") ||
                !strcmp(wchan, "?"))
                return RACE_BLOCKED;
        }
        if (race_now() > end)
            return RACE_TIMEOUT;
        race_sleep_ms(1);
    }
}

/*
 * What a wait that ran out saw last, for its "not ok" line: the caller's words (printf
 * format) and where thread tid of process pid is now: its scheduler state, where it sleeps
 * and how often it has given up the CPU (a task that never ran differs from one stuck).
 */
static inline void race_describe(pid_t pid, pid_t tid, char *buf, size_t len,
                                 const char *fmt, ...)
{
    char wchan[128], tail[224], s;
    size_t room;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= len)
        return;
    race_wchan(pid, tid, wchan, sizeof(wchan));
    if (pid != getpid()) {              /* a child: no stat or status (race_state says why) */
        n = race_child_exited(pid);
        snprintf(tail, sizeof(tail), " (now: %s, wchan %s)",
                 n > 0 ? "exited" : n == 0 ? "running or asleep" : "no child of ours", wchan);
    } else {
        s = race_state(pid, tid);
        snprintf(tail, sizeof(tail), " (now: state %c, wchan %s, %ld voluntary switches)",
                 s ? s : '-', s ? wchan : "-", race_switches(pid, tid));
    }
    n = (int)strlen(buf);
    room = len - (size_t)n - 1;         /* a test's message, not data: cut short if it must */
    strncat(buf + n, tail, room);
}

/*
 * A thread of a race test: fn(arg) runs in it; it says who it is first and that fn returned
 * last, so that race_thread_blocked can watch it.
 */
struct race_thread {
    void *(*fn)(void *);
    void *arg;
    pthread_t th;
    pid_t tid;                  /* atomic: set by the thread first */
    int done;                   /* atomic: set when fn has returned */
    int started;
};

static inline void *race_thread_body(void *p)
{
    struct race_thread *t = p;

    __atomic_store_n(&t->tid, race_tid(), __ATOMIC_RELEASE);
    t->fn(t->arg);
    __atomic_store_n(&t->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Start fn(arg) in t, on CPU cpu when cpu >= 0: 0 or an errno (EINVAL: no such CPU). */
static inline int race_thread_start(struct race_thread *t, int cpu, void *(*fn)(void *),
                                    void *arg)
{
    pthread_attr_t a;
    cpu_set_t set;
    int e = 0;

    *t = (struct race_thread){ .fn = fn, .arg = arg };
    pthread_attr_init(&a);
    if (cpu >= 0) {
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        e = pthread_attr_setaffinity_np(&a, sizeof(set), &set);
    }
    if (!e)
        e = pthread_create(&t->th, &a, race_thread_body, t);
    pthread_attr_destroy(&a);
    t->started = !e;
    return e;
}

/* race_wait_blocked for the thread t (RACE_TIMEOUT when it was never started). */
static inline int race_thread_blocked(struct race_thread *t, const char *wchan_prefix)
{
    if (!t->started)
        return RACE_TIMEOUT;
    return race_wait_blocked(getpid(), race_wait_tid(&t->tid), &t->done, wchan_prefix);
}

/*
 * Join t, if it was started and not joined yet, within seconds: 0, or ETIMEDOUT for a thread
 * stuck in the kernel (a failure of the test, never a hang).
 */
static inline int race_thread_join(struct race_thread *t, unsigned int seconds)
{
    struct timespec dl;
    int e;

    if (!t->started)
        return 0;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += seconds;
    e = pthread_timedjoin_np(t->th, NULL, &dl);
    if (!e)
        t->started = 0;
    return e;
}

#endif /* VRAMIO_GUEST_RACE_H */

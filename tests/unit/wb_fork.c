/* SPDX-License-Identifier: MIT */
/*
 * wb_fork.c - white-box test of src/process/fork.c: a forked child of a process holding GPU-driver
 * state whose teardown is unsafe there leaves through _exit() with the status it gave exit(),
 * stdio flushed, and without running the parent's exit handlers (the driver's teardown among
 * them); VRAMIO_FORK_CHILD_TEARDOWN=1 turns that off; a mutex held by another thread at fork
 * is free in the child; MADV_DONTFORK mappings fault in the child. Every child is waited for
 * with a bound.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "t.h"
#include "process/fork.h"

static int marker_fd = -1;

/* Stands for the driver's teardown: an exit handler registered before the fork. */
static void teardown_marker(void)
{
    ssize_t w = write(marker_fd, "T", 1);

    (void)w;
}

/* Fork a child that writes "out" to a buffered stream on the pipe and leaves as told. What
 * came through the pipe goes to buf; the child's exit status is returned (-1 if it hung). */
static int child_ends(int how, char *buf, size_t len)
{
    int pfd[2], status = 0;
    ssize_t n, got = 0;
    pid_t pid;

    if (pipe(pfd))
        return -1;
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        FILE *f = fdopen(pfd[1], "w");

        alarm(20);
        close(pfd[0]);
        marker_fd = pfd[1];
        setvbuf(f, NULL, _IOFBF, 4096);
        fputs("out", f); /* still in the buffer when exit is called */
        if (how == 0)
            exit(7);
        if (how == 1)
            _exit(7);
        raise(SIGKILL);
    }
    close(pfd[1]);
    while ((size_t)got + 1 < len && (n = read(pfd[0], buf + got, len - 1 - (size_t)got)) > 0)
        got += n;
    buf[got] = '\0';
    close(pfd[0]);
    if (t_wait_bounded(pid, &status, 30))
        return -1;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

/* In a process of its own, so that the guard does not change this test program. */
static int guard_cases(void)
{
    char buf[64];
    int bad = 0, st;

    atexit(teardown_marker);
    st = child_ends(0, buf, sizeof(buf));
    /* exit() runs the handlers, then flushes stdio: "Tout". */
    bad |= (st != 7 || strcmp(buf, "Tout") != 0) << 0;   /* no guard: handlers run */
    vr_fork_guard_teardown("a test driver");
    st = child_ends(0, buf, sizeof(buf));
    bad |= (st != 7 || strcmp(buf, "out") != 0) << 1;    /* guarded: flushed, no teardown */
    st = child_ends(1, buf, sizeof(buf));
    bad |= (st != 7 || strcmp(buf, "") != 0) << 2;       /* _exit: as ever */
    st = child_ends(2, buf, sizeof(buf));
    bad |= (st != 128 + SIGKILL) << 3;                   /* a signal: as ever */
    setenv("VRAMIO_FORK_CHILD_TEARDOWN", "1", 1);
    st = child_ends(0, buf, sizeof(buf));
    bad |= (st != 7 || strcmp(buf, "Tout") != 0) << 4;   /* opted out: teardown runs */
    unsetenv("VRAMIO_FORK_CHILD_TEARDOWN");
    marker_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    return bad;
}

static void test_guard(void)
{
    int status = 0, bad;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        alarm(60);
        bad = guard_cases();
        fflush(NULL);
        _exit(bad);
    }
    bad = t_wait_bounded(pid, &status, 90) ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : -2;
    t_check(bad == 0, "child_exit_skips_teardown", "failed cases mask %#x (bit 0: no guard, 1: "
            "guarded exit, 2: _exit, 3: signal, 4: opt-out; -1 hung, -2 killed)", (unsigned)bad);
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int holding;

static void *holder(void *arg)
{
    pthread_mutex_lock(&held);
    holding = 1;
    usleep(300000);
    pthread_mutex_unlock(&held);
    return NULL;
}

static void test_protected_mutex(void)
{
    pthread_t t;
    int status = 0;
    pid_t pid;

    t_check(vr_fork_protect_mutex(&held) == 0, "protect_mutex", "refused");
    pthread_create(&t, NULL, holder, NULL);
    while (!holding)
        usleep(1000);
    fflush(NULL);
    pid = fork(); /* waits for the holder: the prepare handler takes the mutex */
    if (pid == 0) {
        alarm(10);
        if (pthread_mutex_trylock(&held) != 0)
            exit(1);
        pthread_mutex_unlock(&held);
        exit(0);
    }
    pthread_join(t, NULL);
    t_check(t_wait_bounded(pid, &status, 30) == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "mutex_free_in_child", "the child found the mutex held (or hung)");
}

static void test_dontfork(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    int status = 0;
    pid_t pid;

    /* An unaligned pointer, as a pin's window inside a larger mapping is. */
    t_check(p != MAP_FAILED && vr_fork_dontfork(p + 100, (size_t)pg) == 0, "dontfork_marks",
            "madvise failed");
    memcpy(p, "parent", 7);
    memcpy(p + pg, "parent", 7);
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        /* A fault, or (the address being a hole here, which the child's own allocator may
         * have filled) anything but the parent's bytes. */
        int seen = (!t_touch_faults(p) && memcmp(p, "parent", 7) == 0) ||
                   (!t_touch_faults(p + pg) && memcmp(p + pg, "parent", 7) == 0);

        alarm(10);
        exit(seen ? 1 : 0);
    }
    t_check(t_wait_bounded(pid, &status, 30) == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "dontfork_child_faults", "the child could read the mapping");
    t_check(t_touch_faults(p) == 0, "dontfork_parent_keeps", "the parent lost its mapping");
    munmap(p, (size_t)pg * 2);
}

int main(void)
{
    test_guard();
    test_protected_mutex();
    test_dontfork();
    return t_status();
}

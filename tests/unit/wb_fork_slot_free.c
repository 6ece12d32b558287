/* SPDX-License-Identifier: MIT */
/*
 * wb_fork_slot_free.c - a fork that lands inside vr_slot_free_locked (src/core/handles.c):
 * one thread of a program frees a slot (gdr_close, gdr_unpin_buffer) while another forks.
 * The child must find that slot either whole (its object still there) or free (its tokens
 * stale), never live with its object gone: a gdr_close or a pin's use in the child would
 * follow the NULL. A fork at an exact instruction cannot be timed, so the freeing thread is
 * stopped right after its write of the slot's object pointer, by a hardware watchpoint
 * (perf_event_open's SIGTRAP on the write), and forks from its signal handler there, with
 * nothing else of the library held (the slot's own lock is not one fork.c takes). Skips
 * where the kernel gives no watchpoint.
 */
#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"
#include "core/handles.h"

enum { CHILD_STALE, CHILD_WHOLE, CHILD_LIVE_WITHOUT_OBJECT };

static int marker;
static unsigned long token;
static int watch_fd = -1;
static volatile sig_atomic_t traps;
static int child_status = -1;

/* The first write to the watched pointer: fork here, and see what the child finds. */
static void on_trap(int sig, siginfo_t *si, void *uc)
{
    pid_t pid;

    (void)sig, (void)si, (void)uc;
    if (traps++)
        return;
    ioctl(watch_fd, PERF_EVENT_IOC_DISABLE, 0);
    pid = fork();
    if (pid == 0) {
        struct vr_slot *s;

        alarm(20);                  /* a lock left taken fails the test instead of hanging it */
        s = vr_slot_lock(&vr_gdrs, token);
        _exit(!s ? CHILD_STALE : s->obj ? CHILD_WHOLE : CHILD_LIVE_WITHOUT_OBJECT);
    }
    if (pid > 0)
        waitpid(pid, &child_status, 0);
}

static int watch_writes(void *addr)
{
    struct perf_event_attr a;

    memset(&a, 0, sizeof(a));
    a.type = PERF_TYPE_BREAKPOINT;
    a.size = sizeof(a);
    a.bp_type = HW_BREAKPOINT_W;
    a.bp_addr = (uintptr_t)addr;
    a.bp_len = sizeof(void *) == 8 ? HW_BREAKPOINT_LEN_8 : HW_BREAKPOINT_LEN_4;
    a.sample_period = 1;
    a.sigtrap = 1;                  /* a synchronous SIGTRAP in the writing thread */
    a.remove_on_exec = 1;           /* which sigtrap requires */
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    watch_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    return watch_fd < 0 ? errno : 0;
}

int main(void)
{
    struct sigaction sa;
    struct vr_slot *s;
    int e;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_trap;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGTRAP, &sa, NULL);
    if (vr_slot_alloc(&vr_gdrs, &marker, 1, &token) || !(s = vr_slot_lock(&vr_gdrs, token))) {
        t_fail("fork_inside_slot_free", "no slot");
        return t_status();
    }
    e = watch_writes(&s->obj);
    if (e) {
        vr_slot_free_locked(&vr_gdrs, s);
        t_skip("fork_inside_slot_free", "no hardware watchpoint here: perf_event_open: %s",
               strerror(e));
        return t_status();
    }
    vr_slot_free_locked(&vr_gdrs, s);   /* traps at its write of s->obj, and forks there */
    close(watch_fd);
    if (!traps) {
        t_fail("fork_inside_slot_free", "the watchpoint never fired: the free wrote no object "
               "pointer");
        return t_status();
    }
    t_check(child_status >= 0 && WIFEXITED(child_status) &&
            WEXITSTATUS(child_status) != CHILD_LIVE_WITHOUT_OBJECT &&
            WEXITSTATUS(child_status) <= CHILD_WHOLE, "fork_inside_slot_free",
            "child status %#x (exit %d: %s)", child_status,
            WIFEXITED(child_status) ? WEXITSTATUS(child_status) : -1,
            !WIFEXITED(child_status) ? "killed or never forked" :
            WEXITSTATUS(child_status) == CHILD_LIVE_WITHOUT_OBJECT ?
            "the inherited token still names the slot, whose object is gone" : "other");
    t_check(!vr_slot_lock(&vr_gdrs, token), "token_stale_after_free", "the slot still answers");
    return t_status();
}

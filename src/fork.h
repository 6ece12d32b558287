/* SPDX-License-Identifier: MIT */
/*
 * fork.h - what the library does for a process forked from one that uses it.
 *
 * Some GPU-driver state (a Vulkan device of the NVIDIA driver) cannot survive its own
 * teardown in a forked child: run from the child's exit(), that teardown crashes, and the
 * parent then hangs at its own exit. A module that creates such state calls
 * vr_fork_guard_teardown(); from then on a child forked from this process leaves through
 * _exit() when it calls exit() or returns from main, after flushing stdio, so the inherited
 * teardown never runs there. VRAMIO_FORK_CHILD_TEARDOWN=1 turns this off.
 */
#ifndef VRAMIO_FORK_H
#define VRAMIO_FORK_H

#include <pthread.h>
#include <stddef.h>

/* Note that this process now holds driver state whose teardown is unsafe in a child (what
 * names it, for the debug log). Cheap, idempotent, thread-safe. */
void vr_fork_guard_teardown(const char *what);

/* Make a process-wide mutex safe across fork: held by every fork (taken in registration
 * order, so the parent's threads are never caught half-way under it) and fresh in the child.
 * Call once per mutex (under the module's pthread_once), before the first use of it that a
 * fork could interrupt. At most 16 mutexes; 0 or ENOSPC. */
int vr_fork_protect_mutex(pthread_mutex_t *m);

/* Mark the CPU mapping [p, p+len) as not inherited by fork (MADV_DONTFORK), as gdrdrv marks
 * its own: a forked child then faults on the address instead of reaching the parent's GPU
 * memory. p need not be page aligned. 0, or the errno of madvise. */
int vr_fork_dontfork(void *p, size_t len);

/*
 * The fork gate. Every entry point that can call into the CUDA or Vulkan driver holds it
 * (shared) for its whole duration, and fork() takes it exclusively before anything else, so
 * a child is never forked while a thread of ours is inside the driver. Without it, a child
 * forked in the middle of, say, a Vulkan import inherits the driver's internal locks held by
 * a thread that does not exist there, and the driver's own exit handlers then die in the
 * child ("The futex facility returned an unexpected error code", seen on the H200 in one
 * fork of 150 while another thread pinned and unpinned). Nested entries are counted per
 * thread; waiting for the gate is bounded at fork (after 10 s the fork goes ahead, logged).
 * Rule: enter the gate before taking any other library lock, and never wait inside it for a
 * thread that has yet to enter it.
 */
void vr_fork_gate_enter(void);
void vr_fork_gate_leave(void);

struct vr_fork_gate_scope {
    int held;
};

static inline void vr_fork_gate_scope_end(struct vr_fork_gate_scope *g)
{
    if (g->held)
        vr_fork_gate_leave();
}

/* Hold the gate until the end of the enclosing block. */
#define VR_FORK_GATE_SCOPE()                                                          \
    struct vr_fork_gate_scope vr_gate_scope_                                            \
        __attribute__((cleanup(vr_fork_gate_scope_end), unused)) = { (vr_fork_gate_enter(), 1) }

#endif /* VRAMIO_FORK_H */

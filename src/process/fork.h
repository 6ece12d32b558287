/* SPDX-License-Identifier: MIT */
/*
 * fork.h - what the library does for a process forked from one that uses it.
 *
 * Some GPU-driver state (a Vulkan device of the NVIDIA driver) cannot survive its own
 * teardown in a forked child: run from the child's exit(), that teardown crashes, and the
 * parent then hangs at its own exit. A module that creates such state calls
 * vr_fork_guard_teardown() before its first call into the driver (the driver registers exit
 * handlers as it loads, so a fork during that first call counts too); from then on a child
 * forked from this process leaves through _exit() when it calls exit() or returns from main,
 * after flushing stdio, so the inherited teardown never runs there.
 * VRAMIO_FORK_CHILD_TEARDOWN=1 turns this off.
 */
#ifndef VRAMIO_FORK_H
#define VRAMIO_FORK_H

#include <pthread.h>
#include <stddef.h>

/* Note that this process now holds driver state whose teardown is unsafe in a child (what
 * names it, for the debug log). Cheap, idempotent, thread-safe. */
void vr_fork_guard_teardown(const char *what);

/*
 * Registration, for the two calls below: once, from a constructor of the module
 * (__attribute__((constructor))), so that the table is whole before any thread can be inside
 * the library. Not at a first use, under pthread_once: a fork that interrupts the once
 * between two of its registrations leaves the child with the first and the once still to
 * run, and the child's own first use then registers that one again (a mutex twice in the
 * table: the child's next fork locks it twice and hangs). Nor with pthread_atfork() of a
 * module's own: glibc skips, in a fork's child, the handlers registered while that fork was
 * under way (fork.c). tests/abi/test_fork_registration.sh checks both.
 */

/* Make a process-wide mutex safe across fork: held by every fork (taken in registration
 * order, so the parent's threads are never caught half-way under it) and fresh in the child.
 * No protected mutex may be taken while another is held (each guards a few fields, or one
 * driver call, of its module): then the order of the modules' constructors cannot matter.
 * At most 16 mutexes; 0 or ENOSPC. */
int vr_fork_protect_mutex(pthread_mutex_t *m);

/* Run fn in every forked child, after the protected mutexes are fresh again, in the order of
 * these calls. At most 8; 0 or ENOSPC. */
int vr_fork_on_child(void (*fn)(void));

/* Mark the CPU mapping [p, p+len) as not inherited by fork (MADV_DONTFORK), as gdrdrv marks
 * its own: a forked child then faults on the address instead of reaching the parent's GPU
 * memory. p need not be page aligned. 0, or the errno of madvise. */
int vr_fork_dontfork(void *p, size_t len);

#endif /* VRAMIO_FORK_H */

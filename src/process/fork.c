/* SPDX-License-Identifier: MIT */
/*
 * fork.c - forked children of a process whose GPU-driver teardown is unsafe in a child (see
 * fork.h), and mappings that a child must not inherit.
 *
 * The child handler registers, with glibc's on_exit(), a handler that flushes stdio and
 * calls _exit() with the status given to exit(). Exit handlers run in the reverse order of
 * their registration, and this one is registered in the child itself, after everything the
 * parent registered, so it runs first: the driver's atexit handlers and the ELF destructors
 * never run in the child. The price, documented in the README: atexit handlers registered
 * before the fork do not run in such a child either (stdio is still flushed). The library is
 * linked with -z nodelete, so this code stays mapped until the process exits even when the
 * program dlcloses us.
 */
#include "fork.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "log.h"

static _Atomic int guard_teardown;

#define VR_FORK_MAX_LOCKS 16
#define VR_FORK_MAX_CHILD_FNS 8

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t *locks[VR_FORK_MAX_LOCKS];
static int nlocks;
static void (*child_fns[VR_FORK_MAX_CHILD_FNS])(void);
static int nchild_fns;

static void fork_prepare(void)
{
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < nlocks; i++)
        pthread_mutex_lock(locks[i]);
}

static void fork_parent(void)
{
    for (int i = nlocks - 1; i >= 0; i--)
        pthread_mutex_unlock(locks[i]);
    pthread_mutex_unlock(&reg_lock);
}

static void leave_without_teardown(int status, void *arg)
{
    fflush(NULL);
    _exit(status);
}

/* Only the forking thread exists in the child; it held every lock through the fork. */
static void fork_child(void)
{
    const char *keep;

    for (int i = 0; i < nlocks; i++)
        pthread_mutex_init(locks[i], NULL);
    pthread_mutex_init(&reg_lock, NULL);
    for (int i = 0; i < nchild_fns; i++)
        child_fns[i]();
    if (!atomic_load(&guard_teardown))
        return;
    keep = getenv("VRAMIO_FORK_CHILD_TEARDOWN");
    if (keep && atoi(keep) != 0)
        return;
    on_exit(leave_without_teardown, NULL);
}

/*
 * One set of handlers, registered when the library is loaded, before any thread can be
 * inside it. glibc runs the parent and child handlers of a fork only for the handlers that
 * were registered when its prepare phase began: registered later (say by the thread whose
 * first pin starts the driver, while the fork waits in our prepare handler for that thread's
 * lock), they would be skipped in exactly the child that needs them. Locks and child hooks
 * are therefore entries in tables that the handlers read, filled by the modules' own
 * constructors (fork.h), so whole before the first call into the library; reg_lock still
 * keeps a registration made during a fork (a program's dlopen of us) out of that fork.
 */
__attribute__((constructor)) static void fork_register(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* A module's constructor ignores the answer: a full table must still be heard of. */
static int table_full(const char *what, int max)
{
    vr_err("fork: more than %d %s registered; raise the limit in fork.c (a forked child could "
           "be left with one held)", max, what);
    return ENOSPC;
}

int vr_fork_protect_mutex(pthread_mutex_t *m)
{
    int rc;

    pthread_mutex_lock(&reg_lock);
    rc = nlocks < VR_FORK_MAX_LOCKS ? 0 : ENOSPC;
    if (!rc)
        locks[nlocks++] = m;
    pthread_mutex_unlock(&reg_lock);
    return rc ? table_full("mutexes", VR_FORK_MAX_LOCKS) : 0;
}

int vr_fork_on_child(void (*fn)(void))
{
    int rc;

    pthread_mutex_lock(&reg_lock);
    rc = nchild_fns < VR_FORK_MAX_CHILD_FNS ? 0 : ENOSPC;
    if (!rc)
        child_fns[nchild_fns++] = fn;
    pthread_mutex_unlock(&reg_lock);
    return rc ? table_full("child hooks", VR_FORK_MAX_CHILD_FNS) : 0;
}

void vr_fork_guard_teardown(const char *what)
{
    if (!atomic_exchange(&guard_teardown, 1))
        vr_dbg("fork: %s starts: a forked child of this process will leave through _exit() "
               "(VRAMIO_FORK_CHILD_TEARDOWN=1 to run the driver's teardown there)", what);
}

int vr_fork_dontfork(void *p, size_t len)
{
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t start, end;

    if (!p || !len)
        return 0;
    if (pg <= 0)
        pg = 4096;
    start = (uintptr_t)p & ~((uintptr_t)pg - 1);
    end = ((uintptr_t)p + len + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    if (madvise((void *)start, end - start, MADV_DONTFORK) != 0) {
        int err = errno;

        vr_warn("fork: madvise(MADV_DONTFORK) of the mapping %p+%zu failed: %s; a forked "
                "child could reach it", p, len, strerror(err));
        return err;
    }
    return 0;
}

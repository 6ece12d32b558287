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
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;

#define VR_FORK_MAX_LOCKS 16

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t *locks[VR_FORK_MAX_LOCKS];
static int nlocks;
static pthread_once_t locks_once = PTHREAD_ONCE_INIT;

static void locks_prepare(void)
{
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < nlocks; i++)
        pthread_mutex_lock(locks[i]);
}

static void locks_parent(void)
{
    for (int i = nlocks - 1; i >= 0; i--)
        pthread_mutex_unlock(locks[i]);
    pthread_mutex_unlock(&reg_lock);
}

/* Only the forking thread exists in the child; it held every lock through the fork. */
static void locks_child(void)
{
    for (int i = 0; i < nlocks; i++)
        pthread_mutex_init(locks[i], NULL);
    pthread_mutex_init(&reg_lock, NULL);
}

static void locks_register(void)
{
    pthread_atfork(locks_prepare, locks_parent, locks_child);
}

int vr_fork_protect_mutex(pthread_mutex_t *m)
{
    int rc = 0;

    pthread_once(&locks_once, locks_register);
    pthread_mutex_lock(&reg_lock);
    if (nlocks < VR_FORK_MAX_LOCKS)
        locks[nlocks++] = m;
    else
        rc = ENOSPC;
    pthread_mutex_unlock(&reg_lock);
    return rc;
}

static void leave_without_teardown(int status, void *arg)
{
    (void)arg;
    fflush(NULL);
    _exit(status);
}

static void child_after_fork(void)
{
    const char *keep;

    if (!atomic_load_explicit(&guard_teardown, memory_order_relaxed))
        return;
    keep = getenv("VRAMIO_FORK_CHILD_TEARDOWN");
    if (keep && atoi(keep) != 0)
        return;
    on_exit(leave_without_teardown, NULL);
}

static void guard_register(void)
{
    pthread_atfork(NULL, NULL, child_after_fork);
}

void vr_fork_guard_teardown(const char *what)
{
    pthread_once(&guard_once, guard_register);
    if (!atomic_exchange_explicit(&guard_teardown, 1, memory_order_relaxed))
        vr_dbg("fork: %s made: a forked child of this process will leave through _exit() "
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

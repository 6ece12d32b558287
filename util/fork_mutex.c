/* SPDX-License-Identifier: MIT */
/* fork_mutex.c - process-wide mutexes made safe across fork (see fork_mutex.h). */
#include "fork_mutex.h"

#include <errno.h>

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

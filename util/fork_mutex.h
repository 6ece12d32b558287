/* SPDX-License-Identifier: MIT */
/*
 * fork_mutex.h - process-wide mutexes that a fork must not leave locked in the child: the
 * library's and util's own (the CUDA context helper's). The rest of the fork policy is the
 * library's (src/fork.h).
 */
#ifndef VRAMIO_FORK_MUTEX_H
#define VRAMIO_FORK_MUTEX_H

#include <pthread.h>

#define VR_FORK_MAX_LOCKS 16

/* Make a process-wide mutex safe across fork: held by every fork (taken in registration
 * order, so the parent's threads are never caught half-way under it) and fresh in the child.
 * Call once per mutex (under the module's pthread_once), before the first use of it that a
 * fork could interrupt. At most 16 mutexes; 0 or ENOSPC. */
int vr_fork_protect_mutex(pthread_mutex_t *m);

#endif /* VRAMIO_FORK_MUTEX_H */

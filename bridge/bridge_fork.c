/* SPDX-License-Identifier: MIT */
/*
 * bridge_fork.c - the bridge in a process that forks while its other threads are inside it.
 *
 * Only the forking thread goes on in the child: a lock that another thread held at the fork
 * would stay held there for ever, and the child's next CUDA call through the bridge would
 * hang where the driver alone fails cleanly. So every fork takes the bridge's locks (no
 * thread is then half-way through what they guard), the parent drops them again, and the
 * child makes them fresh and forgets what was the parent's alone: its IPC server
 * (bridge_ipc_server.c), the slabs' fds on their way between processes (closed: kept, they
 * would hold the exporter's GPU memory for the child's life; see there) and the slabs it had
 * mapped from other processes' handles (bridge_ipc_open.c, whose opens waiting for an
 * exporter a fork does not wait for: see there). Both sides draw a new key for the ids of
 * their next blocks (bridge_block_id.c). The checks of stream-ordered memory
 * (bridge_mempool.c) hold no lock: a child forked during one finds it under way for ever, and
 * leaves that GPU's stream-ordered memory to the driver.
 *
 * One set of handlers, registered as the bridge is loaded, before any thread can be inside
 * it: the library's convention (src/process/fork.c, whose header is not the bridge's to
 * include). glibc runs in a fork only the handlers registered before that fork began: a part
 * that registered its own at its first use could do so in a thread that began using it while
 * another thread forked, and the child would keep that thread's lock held (the first IPC
 * handle made during a fork: tests/bridge/fork_client.c, first_use).
 * No lock of the parts is taken while another part's is held, so any order of the parts is
 * free of deadlock; the parent and the child undo them in the reverse order all the same.
 */
#include <pthread.h>
#include "bridge.h"

void vb_fork_lock(pthread_mutex_t *m, enum vb_fork_phase phase)
{
    if (phase == VB_FORK_PREPARE)
        pthread_mutex_lock(m);
    else if (phase == VB_FORK_PARENT)
        pthread_mutex_unlock(m);
    else
        pthread_mutex_init(m, NULL); /* the forking thread's, in a process of one thread */
}

static void (*const parts[])(enum vb_fork_phase) = {
    vb_ipc_server_fork, vb_ipc_fd_fork, vb_ipc_export_fork, vb_ipc_open_fork, vb_block_fork,
    vb_async_fork, vb_resolve_fork,
};
#define NPARTS (sizeof(parts) / sizeof(parts[0]))

static void fork_prepare(void)
{
    for (size_t i = 0; i < NPARTS; i++)
        parts[i](VB_FORK_PREPARE);
}

static void fork_parent(void)
{
    for (size_t i = NPARTS; i-- > 0;)
        parts[i](VB_FORK_PARENT);
}

static void fork_child(void)
{
    for (size_t i = NPARTS; i-- > 0;)
        parts[i](VB_FORK_CHILD);
}

__attribute__((constructor)) static void fork_register(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

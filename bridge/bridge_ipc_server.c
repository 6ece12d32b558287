/* SPDX-License-Identifier: MIT */
/*
 * bridge_ipc_server.c - how a bridged block's memory reaches another process: the exporting
 * process answers on a UNIX socket whether the block that a handle names is still there (a
 * block freed since is refused, as the driver refuses its handles) and, when the other
 * process has not mapped the block's slab yet, with a POSIX file descriptor of the slab's
 * allocation (SCM_RIGHTS), which that process imports (bridge_ipc_open.c; the exporter's
 * side of the question is bridge_ipc.c's). Each side takes from the other exactly one
 * request or one answer of the expected size, and nothing else: anything longer, shorter or
 * with other control data is refused (tests/bridge/fuzz_ipc_handle.c tries them).
 *
 * Why a socket and not pidfd_getfd(2): pidfd_getfd needs ptrace rights over the exporter,
 * which Yama's default (ptrace_scope 1, as on Ubuntu) refuses between sibling processes, the
 * usual shape of MPI ranks and of UCX's peers. A socket needs only that both processes share
 * a network namespace, as CUDA's own IPC needs them on one machine. The socket is in the
 * abstract namespace (no file left behind), named by uid, pid and a random nonce that the
 * handle carries, and it serves only processes of the same user (or root): SO_PEERCRED.
 * The opener checks the other end the same way: the answer must come from the uid and pid
 * that the handle names (another user may bind the name once the exporter has exited).
 *
 * One thread per exporting process, started at its first export, with every signal blocked
 * (the program's handlers run in its own threads). Every wait is bounded: a peer that stops
 * talking costs its request, never the server.
 *
 * A slab's fd lives a moment in each process outside any table of the driver's: in the
 * exporter from the driver's export until it is sent, in the opener from its recvmsg until
 * the driver has imported it. A fork by another thread then would copy it into the child
 * (MSG_CMSG_CLOEXEC acts only at exec), and a child that does not exec (a multiprocessing
 * worker, a forked server) would keep the exporter's GPU memory alive for its whole life,
 * freed by the program or not. So each such fd is listed (fd_lock) in the same hold of the
 * lock that made it, and unlisted in the same hold that closes it; a fork takes the lock, so
 * it finds each fd either not made, listed or closed, and the child closes those listed.
 * The lock is never held while waiting for another process: the opener waits for the answer
 * with poll, and takes it under the lock with a recvmsg that does not wait; so a fork waits
 * at most for that recvmsg, or for the local driver's export (as for the other locks of the
 * bridge held across the driver's calls).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "bridge.h"
#include "clock.h"         /* util/: the one monotonic clock of deadlines */

#define IO_TIMEOUT_S 5

static pthread_mutex_t srv_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t srv_pid;                  /* the process whose server runs; 0: none */
static int srv_fd = -1;
static uint64_t srv_nonce;
static vb_ipc_export_fn srv_export;

static void srv_take(void) { pthread_mutex_lock(&srv_lock); }
static void srv_drop(void) { pthread_mutex_unlock(&srv_lock); }

/* bridge_fork.c. A forked child has no server thread: its listening socket goes, and its own
 * first export starts its own server (handles name the pid). */
void vb_ipc_server_fork(enum vb_fork_phase phase)
{
    vb_fork_lock(&srv_lock, phase);
    if (phase != VB_FORK_CHILD)
        return;
    if (srv_fd >= 0)
        close(srv_fd);
    srv_fd = -1;
    srv_pid = 0;
}

/* The slabs' fds on their way (see above): one export at a time (the server's thread) and
 * one import per exporter being asked (bridge_ipc_open.c), each of a slab or of a block's
 * chunks. Room for an export and an import of the most chunks without an allocation; more
 * (imports from several exporters at once) grows the list. */
#define FD_SLOTS (2 * VB_IPC_MAX_CHUNKS + 8)
static pthread_mutex_t fd_lock = PTHREAD_MUTEX_INITIALIZER;
static int fd_first[FD_SLOTS];
static int *fd_listed = fd_first;
static unsigned n_listed, fd_cap = FD_SLOTS;

void vb_ipc_fds_take(void) { pthread_mutex_lock(&fd_lock); }
void vb_ipc_fds_drop(void) { pthread_mutex_unlock(&fd_lock); }

int vb_ipc_fd_list_locked(int fd)
{
    int *more;

    if (n_listed == fd_cap) {
        more = fd_cap < (1u << 20) ? malloc(2 * (size_t)fd_cap * sizeof(*more)) : NULL;
        if (!more) {
            close(fd); /* unlisted, it could not be kept from a fork's child */
            return EMFILE;
        }
        memcpy(more, fd_listed, n_listed * sizeof(*more));
        if (fd_listed != fd_first)
            free(fd_listed);
        fd_listed = more;
        fd_cap *= 2;
    }
    fd_listed[n_listed++] = fd;
    return 0;
}

void vb_ipc_fd_close(int fd)
{
    unsigned i;

    /* Closed and unlisted in one hold: a fork between the two would either leave the child
     * a copy unlisted, or have it close a number that another thread had opened since. */
    vb_ipc_fds_take();
    for (i = 0; i < n_listed && fd_listed[i] != fd; i++)
        ;
    if (i < n_listed)
        fd_listed[i] = fd_listed[--n_listed];
    close(fd);
    vb_ipc_fds_drop();
}

/* bridge_fork.c. The threads that listed the fds are not in the child: it closes them. */
void vb_ipc_fd_fork(enum vb_fork_phase phase)
{
    vb_fork_lock(&fd_lock, phase);
    if (phase != VB_FORK_CHILD)
        return;
    while (n_listed)
        close(fd_listed[--n_listed]);
}

static socklen_t sock_name(struct sockaddr_un *a, uint32_t uid, uint32_t pid, uint64_t nonce)
{
    int n;

    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    /* sun_path[0] == 0: the abstract namespace. */
    n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "vramio-ipc-%u-%u-%016llx", uid,
                 pid, (unsigned long long)nonce);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static void set_timeouts(int fd)
{
    struct timeval tv = { .tv_sec = IO_TIMEOUT_S };

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Send body (len bytes) with the n descriptors fds (none when n is 0). */
static void send_reply(int c, const void *body, size_t len, const int *fds, unsigned n)
{
    union { char buf[CMSG_SPACE(sizeof(int) * VB_IPC_MAX_CHUNKS)]; struct cmsghdr align; } cbuf;
    struct iovec iov = { (void *)body, len };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
    struct cmsghdr *cm;

    if (n) {
        memset(&cbuf, 0, sizeof(cbuf));
        m.msg_control = cbuf.buf;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * n);
        cm = CMSG_FIRSTHDR(&m);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
    }
    if (sendmsg(c, &m, MSG_NOSIGNAL) < 0)
        vb_log("ipc: reply failed: %s", strerror(errno));
}

/* The reply to a slab's request: a status (0 or a positive errno) and, with 0, the
 * descriptor when there is one. */
static void reply(int c, int32_t status, int fd)
{
    send_reply(c, &status, sizeof(status), &fd, status == 0 && fd >= 0 ? 1 : 0);
}

/* The reply to a request about a block of chunks: with 0, the chunks' descriptors. */
static void reply_chunks(int c, int32_t status, const struct vb_ipc_fds *f)
{
    struct vb_ipc_chunks_reply r = { status, status == 0 ? f->n : 0, status == 0 ? f->chunk : 0 };

    send_reply(c, &r, sizeof(r), f->fd, r.nfd);
}

void vb_ipc_serve_one(int c)
{
    struct vb_ipc_req req;
    struct vb_ipc_fds fds = { .n = 0 };
    struct ucred cred;
    socklen_t len = sizeof(cred);
    vb_ipc_export_fn export_fd = srv_export;
    int rc, want, chunks;
    unsigned i;
    ssize_t n;

    set_timeouts(c);
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
        (cred.uid != geteuid() && cred.uid != 0)) {
        reply(c, EPERM, -1);
        return;
    }
    /* MSG_TRUNC: the packet's real length, so that a longer one is refused, not cut. */
    n = recv(c, &req, sizeof(req), MSG_TRUNC);
    if (n != (ssize_t)sizeof(req) || (req.flags & ~(VB_IPC_WANT_FD | VB_IPC_CHUNKS)) || req.zero) {
        reply(c, EINVAL, -1);
        return;
    }
    want = (req.flags & VB_IPC_WANT_FD) != 0;
    chunks = (req.flags & VB_IPC_CHUNKS) != 0;
    rc = export_fd ? export_fd(&req, &fds) : ENODEV;
    /* Exactly the descriptors the request allows: one of a slab, at least two chunks. */
    if (rc == 0 && want && (chunks ? fds.n < 2 : fds.n != 1))
        rc = EIO;
    if (rc == 0 && !want && fds.n)
        rc = EIO;
    if (chunks)
        reply_chunks(c, rc, &fds);
    else
        reply(c, rc, rc == 0 && want ? fds.fd[0] : -1);
    for (i = 0; i < fds.n; i++)
        vb_ipc_fd_close(fds.fd[i]);
}

static void *serve(void *arg)
{
    int lfd = (int)(intptr_t)arg, c;

    for (;;) {
        c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c >= 0) {
            vb_ipc_serve_one(c);
            close(c);
        } else if (errno == EBADF || errno == EINVAL || errno == ENOTSOCK) {
            return NULL;
        } else if (errno != EINTR && errno != ECONNABORTED) {
            /* Out of descriptors or memory: wait a little rather than spin. */
            struct timespec ts = { 0, 10 * 1000 * 1000 };
            nanosleep(&ts, NULL);
        }
    }
}

static uint64_t new_nonce(void)
{
    uint64_t v = 0;
    struct timespec ts;

    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v) && v)
        return v;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ((uint64_t)ts.tv_nsec << 32) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 16) ^
           (uint64_t)(uintptr_t)&v;
}

/* Start the server (once per process). Caller holds srv_lock. */
static int start_locked(vb_ipc_export_fn export_fd)
{
    struct sockaddr_un a;
    socklen_t alen;
    sigset_t all, old;
    pthread_attr_t attr;
    pthread_t th;
    uint64_t nonce = new_nonce();
    int fd, rc;

    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    alen = sock_name(&a, (uint32_t)geteuid(), (uint32_t)getpid(), nonce);
    if (bind(fd, (struct sockaddr *)&a, alen) || listen(fd, 64)) {
        rc = errno;
        close(fd);
        return rc;
    }
    srv_export = export_fd;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &attr, serve, (void *)(intptr_t)fd);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        close(fd);
        return rc;
    }
    pthread_setname_np(th, "vramio-ipc");
    srv_fd = fd;
    srv_nonce = nonce;
    srv_pid = getpid();
    vb_log("ipc: serving exports on @%s", a.sun_path + 1);
    return 0;
}

int vb_ipc_server_start(vb_ipc_export_fn export_fd, uint64_t *nonce)
{
    int rc = 0;

    srv_take();
    if (srv_pid != getpid())
        rc = start_locked(export_fd);
    if (!rc)
        *nonce = srv_nonce;
    srv_drop();
    return rc;
}

int vb_ipc_is_self(uint32_t pid, uint64_t nonce)
{
    int self;

    srv_take();
    self = srv_pid == getpid() && pid == (uint32_t)srv_pid && nonce == srv_nonce;
    srv_drop();
    return self;
}

/* The fds that a reply carries, at most max of them, in fds[] and their count in *n; any other
 * control data, or more fds, is refused: EPROTO, with whatever descriptors it brought closed. */
static int reply_fds(struct msghdr *m, int *fds, unsigned max, unsigned *n)
{
    struct cmsghdr *cm;
    int bad = (m->msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0, got;
    size_t i, nfd;

    *n = 0;
    for (cm = CMSG_FIRSTHDR(m); cm; cm = CMSG_NXTHDR(m, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) {
            bad = 1;
            continue;
        }
        nfd = cm->cmsg_len > CMSG_LEN(0) ? (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int) : 0;
        for (i = 0; i < nfd; i++) {
            memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            if (*n < max && !bad)
                fds[(*n)++] = got;
            else {
                bad = 1;
                close(got);
            }
        }
    }
    if (bad) {
        while (*n)
            close(fds[--*n]);
    }
    return bad ? EPROTO : 0;
}

/* Wait, holding no lock, until s has something to read (the answer, or the exporter's end
 * closed): 0, EAGAIN once the deadline (vr_now_ns) has passed, or poll's errno. */
static int wait_readable(int s, uint64_t deadline)
{
    struct pollfd p = { .fd = s, .events = POLLIN };
    uint64_t now;
    int n;

    for (;;) {
        now = vr_now_ns();
        if (now >= deadline)
            return EAGAIN; /* what the socket's receive timeout said before */
        n = poll(&p, 1, (int)((deadline - now + 999999) / 1000000));
        if (n > 0)
            return 0;
        if (n == 0)
            return EAGAIN;
        if (errno != EINTR)
            return errno;
    }
}

/* connect(2) and send(2) on a socket with SO_SNDTIMEO are never restarted after a signal
 * handler, SA_RESTART or not (signal(7)): they fail with EINTR. connect waits while the
 * exporter's backlog is full (many peers opening at once), and a signal the program handles
 * then (a profiler's timer, a runtime's preemption, SIGCHLD) failed the open, where the
 * driver's open is not failed by it. So both go on after EINTR, each wait bounded by what is
 * left until deadline (vr_now_ns): 0, or errno (EAGAIN once the deadline has passed). */
static int until(int s, uint64_t deadline, int (*op)(int s, const void *arg), const void *arg)
{
    uint64_t now, left;
    struct timeval tv;

    while (op(s, arg)) {
        if (errno != EINTR)
            return errno;
        now = vr_now_ns();
        if (now >= deadline)
            return EAGAIN;
        left = (deadline - now + 999) / 1000;
        tv.tv_sec = (time_t)(left / 1000000);
        tv.tv_usec = (suseconds_t)(left % 1000000);
        setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    }
    return 0;
}

struct to { const struct sockaddr_un *a; socklen_t alen; };

static int connect_op(int s, const void *arg)
{
    const struct to *to = arg;

    return connect(s, (const struct sockaddr *)to->a, to->alen);
}

/* The whole request or nothing (a SOCK_SEQPACKET record): -1 with errno, else 0. */
static int send_op(int s, const void *req)
{
    ssize_t n = send(s, req, sizeof(struct vb_ipc_req), MSG_NOSIGNAL);

    if (n >= 0 && n != (ssize_t)sizeof(struct vb_ipc_req))
        errno = EPROTO;
    return n == (ssize_t)sizeof(struct vb_ipc_req) ? 0 : -1;
}

/* List the n fds just received (fd_lock held): 0, or EMFILE with those not listed closed and
 * *n the count of those listed (vb_ipc_fd_close them once the lock is dropped). */
static int list_all_locked(const int *fds, unsigned *n)
{
    unsigned i, j;

    for (i = 0; i < *n; i++) {
        if (vb_ipc_fd_list_locked(fds[i])) { /* fds[i] closed there */
            for (j = i + 1; j < *n; j++)
                close(fds[j]);
            *n = i;
            return EMFILE;
        }
    }
    return 0;
}

static void close_listed(const int *fds, unsigned *n)
{
    while (*n)
        vb_ipc_fd_close(fds[--*n]);
}

/* Send req to the server of process pid (user uid, nonce) and take its answer: exactly len
 * bytes into ans, with at most max descriptors (each listed) in fds[], their count in *nfd.
 * 0, or the errno of the exchange (nothing kept). */
static int exchange(uint32_t uid, uint32_t pid, uint64_t nonce, const struct vb_ipc_req *req,
                    void *ans, size_t len, int *fds, unsigned max, unsigned *nfd)
{
    union { char buf[CMSG_SPACE(sizeof(int) * VB_IPC_MAX_CHUNKS)]; struct cmsghdr align; } cbuf;
    struct iovec iov = { ans, len };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.buf };
    struct sockaddr_un a;
    socklen_t alen = sock_name(&a, uid, pid, nonce), clen = sizeof(struct ucred);
    struct ucred cred = { 0, (uid_t)-1, (gid_t)-1 };
    struct to to = { &a, alen };
    uint64_t deadline;
    int s, rc;
    ssize_t n = -1;

    *nfd = 0;
    s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s < 0)
        return errno;
    set_timeouts(s);
    deadline = vr_now_ns() + IO_TIMEOUT_S * 1000000000ull;
    if ((rc = until(s, deadline, connect_op, &to))) {
        close(s);
        return rc;
    }
    /* The name is free once the exporter has exited, and any local user can bind it and
     * hand over memory of their own: only the process the handle names may answer. */
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &clen) || cred.uid != uid ||
        (uint32_t)cred.pid != pid) {
        vb_log("ipc: the handle's socket (process %u, uid %u) was answered by uid %u "
               "process %u: refused", pid, uid, (unsigned)cred.uid, (unsigned)cred.pid);
        close(s);
        return EACCES;
    }
    if ((rc = until(s, deadline, send_op, req))) {
        close(s);
        return rc;
    }
    /* The answer is the exporter's word: exactly len bytes, and no more descriptors than
     * max, else nothing is taken from it. MSG_TRUNC: a longer packet is seen whole.
     * Waited for without the lock of the fds on their way, taken under it (see above). */
    deadline = vr_now_ns() + IO_TIMEOUT_S * 1000000000ull;
    do {
        rc = wait_readable(s, deadline);
        if (rc)
            break;
        memset(&cbuf, 0, sizeof(cbuf));
        m.msg_controllen = CMSG_SPACE(sizeof(int) * max);
        vb_ipc_fds_take();
        n = recvmsg(s, &m, MSG_CMSG_CLOEXEC | MSG_TRUNC | MSG_DONTWAIT);
        rc = n < 0 ? errno : reply_fds(&m, fds, max, nfd);
        if (n >= 0 && !rc)
            rc = list_all_locked(fds, nfd);
        vb_ipc_fds_drop();
    } while (n < 0 && (rc == EAGAIN || rc == EWOULDBLOCK)); /* readable no more: wait again */
    close(s);
    if (!rc && n != (ssize_t)len)
        rc = EPROTO;
    if (rc)
        close_listed(fds, nfd);
    return rc;
}

/* The exporter's status: a positive errno or 0, anything else a broken answer. */
static int status_of(int32_t status)
{
    return status < 0 || status > 4095 ? EPROTO : status;
}

int vb_ipc_fetch(uint32_t uid, uint32_t pid, uint64_t nonce, const struct vb_ipc_req *req,
                 int *fd)
{
    int32_t status = EIO;
    int got[1], rc, want = (req->flags & VB_IPC_WANT_FD) != 0;
    unsigned n = 0;

    rc = exchange(uid, pid, nonce, req, &status, sizeof(status), got, 1, &n);
    if (rc)
        return rc;
    /* Exactly a status, and one descriptor when one was asked for. */
    rc = status_of(status);
    if (!rc && want != (n == 1))
        rc = EPROTO;
    if (rc) {
        close_listed(got, &n);
        return rc;
    }
    if (want)
        *fd = got[0];
    return 0;
}

int vb_ipc_fetch_chunks(uint32_t uid, uint32_t pid, uint64_t nonce, const struct vb_ipc_req *req,
                        struct vb_ipc_fds *out)
{
    struct vb_ipc_chunks_reply r = { EIO, 0, 0 };
    int rc, want = (req->flags & VB_IPC_WANT_FD) != 0;

    rc = exchange(uid, pid, nonce, req, &r, sizeof(r), out->fd, VB_IPC_MAX_CHUNKS, &out->n);
    if (rc)
        return rc;
    /* As many descriptors as the answer says, two chunks at least, when they were asked
     * for; none otherwise. */
    rc = status_of(r.status);
    if (!rc && (r.nfd != out->n || (want ? out->n < 2 || !r.chunk : out->n != 0)))
        rc = EPROTO;
    if (rc) {
        close_listed(out->fd, &out->n);
        return rc;
    }
    out->chunk = r.chunk;
    return 0;
}

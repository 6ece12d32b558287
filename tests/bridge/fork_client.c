// SPDX-License-Identifier: MIT
/*
 * fork_client.c - a program under vramio-run that forks while another of its threads is
 * inside the bridge (bridge/bridge_fork.c), run by test_bridge_fork.sh against the stand-in
 * driver (fake_cuda_vmm.c; with FAKE_CUDA_FORK_REFUSE=1 its forked children cannot make or
 * map memory, as the real driver's cannot), and by tests/gpu/run_bridge_fork_on_gpu.sh
 * against the real one (whose answers in a child are its own business: there a child must
 * only end, by itself, and whatever it was told worked must have worked).
 *
 * The first process allocates a block, fills it and makes an IPC handle of it, then runs
 * itself again for each scenario (its IPC server answers their opens meanwhile). Each
 * scenario forks children that open the handle, allocate, free, ask the bridge's attributes
 * and make a handle of their own, then leave by exit() and by _exit(); a child that has not
 * ended after CHILD_WAIT_S is a hang, killed and reported as "not ok":
 *   open_lock   a thread is held inside cuIpcOpenMemHandle, waiting for the exporter's
 *               answer (with the bridge's open_lock held), while the main thread forks;
 *   first_use   the fork begins, and during it (in a prepare handler of this program) a
 *               thread makes the process's first IPC handle, which starts the bridge's IPC
 *               server: handlers that the bridge registered then would be skipped by glibc
 *               in that fork's child; one process per way out (first use is once);
 *   stress      a thread opens and closes the handle, allocates, frees and makes handles in
 *               a loop while the main thread forks child after child;
 *   inherited   the handle is open here when the child opens it: the child's open must ask
 *               the driver (a new import; refused with FAKE_CUDA_FORK_REFUSE=1), not hand out
 *               the parent's mapping;
 *   import_fd   a thread's open has the exporter's slab fd and is held in the driver's import
 *               of it (the stand-in's fake_import_hook) while the main thread forks;
 *   export_fd   this process exports: another process (export_fd_peer) opens a handle of
 *               this one's, and the bridge's server thread is held sending it the slab's fd
 *               while the main thread forks.
 *               In both, the child must hold no descriptor of the slab in flight: one that
 *               does (and does not exec) keeps the exporter's GPU memory alive after the
 *               exporter freed it, for as long as it lives. Only against the stand-in.
 *   cancelled   a thread held inside cuIpcOpenMemHandle, where it waits for the exporter's
 *               answer (a cancellation point, with open_lock held), is pthread_cancel()led:
 *               the open must end, and a later open in the process and a forked child's
 *               must still work (none may wait for a lock the cancelled thread kept).
 *   ids         the first block the child allocates and the parent's next one (made after
 *               as many blocks on both sides) must have different ids: each side takes a new
 *               key at a fork (bridge/bridge_block_id.c).
 * A thread is held inside the bridge by this program's own poll, sendmsg and listen, which
 * the bridge calls (linked with -rdynamic, they come before libc's in the search), and by
 * the stand-in's hook in its import.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cuda.h>

#include "fake_gpu.h"
#include "hex.h"
#include "t.h"
#include "vramio.h"

/* The stand-in driver's count of imported allocations, and its hook in the import; NULL
 * with the real driver. */
int fake_imports(void) __attribute__((weak));
extern void (*fake_import_hook)(int fd) __attribute__((weak));

/* GPU 0's primary context, current in every thread that calls CUDA: the real driver needs it
 * (the stand-in does not); a thread's current context is its own, so each thread sets it. */
static CUcontext gpu_ctx;

static int use_gpu(void)
{
    CUdevice dev;

    if (!gpu_ctx && (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
                     cuDevicePrimaryCtxRetain(&gpu_ctx, dev) != CUDA_SUCCESS))
        return -1;
    return cuCtxSetCurrent(gpu_ctx) == CUDA_SUCCESS ? 0 : -1;
}

#define SMALL 4096u
#define FILL 0xf5
#define CHILD_WAIT_S 10
#define STRESS_FORKS 24

/* ---- holding a thread inside the bridge -------------------------------------------------- */
static __thread int hold_in_poll, hold_in_listen; /* this thread's next call waits */
static sem_t reached, released;

/* Say that this thread is where it is held, and wait until the fork is done, for at most
 * seconds: a fork that waits for a lock this thread holds must still end (a prepare handler
 * of the bridge, where the first IPC server starts). */
static void hold(int seconds)
{
    sem_post(&reached);
    t_sem_wait(&released, seconds);
}

/* The bridge's open waits for the exporter's answer in poll (bridge_ipc_server.c). */
int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    static int (*real)(struct pollfd *, nfds_t, int);

    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "poll");
    if (hold_in_poll) {
        hold_in_poll = 0;
        hold(10); /* no fork waits for open_lock, nor for the fds' list */
    }
    return real(fds, n, timeout);
}

/* The slab's descriptor on its way (the bridge's server sends it, or the driver is about to
 * import it), recorded where the thread is held (slab_in_flight): its number and the file it
 * is, and the descriptors of that file that this process holds for itself besides (the
 * stand-in's own, a Vulkan import's). A forked child's descriptors of that file beyond those
 * are the one in flight. */
static int in_flight = -1, in_flight_ours, in_flight_cloexec;
static dev_t in_dev;
static ino_t in_ino;
#define MAX_OWN 32
static int own[MAX_OWN], n_own;

/* This process's descriptors of the file in flight, but for skip and those in own[]: how
 * many (-1: /proc/self/fd unreadable); with record, they go to own[]. */
static int slab_fds(int skip, int record)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    struct stat st;
    int fd, n = 0, i, mine;

    if (!d)
        return -1;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        fd = atoi(e->d_name);
        if (fd == dirfd(d) || fd == skip || fstat(fd, &st) || st.st_dev != in_dev ||
            st.st_ino != in_ino)
            continue;
        for (mine = 0, i = 0; i < n_own && !mine; i++)
            mine = own[i] == fd;
        if (mine)
            continue;
        if (record && n_own < MAX_OWN)
            own[n_own++] = fd;
        n++;
    }
    closedir(d);
    return n;
}

static void slab_in_flight(int fd)
{
    struct stat st;
    int flags;

    in_flight = fd;
    in_flight_ours = fake_gpu_of_fd(fd) >= 0; /* a memfd of the stand-in's VMM memory */
    flags = fcntl(fd, F_GETFD);
    in_flight_cloexec = flags >= 0 && (flags & FD_CLOEXEC);
    if (fstat(fd, &st))
        return;
    in_dev = st.st_dev;
    in_ino = st.st_ino;
    n_own = 0;
    slab_fds(fd, 1);
}

/* The bridge's server sends a slab's fd (SCM_RIGHTS) on the connection of a peer's open. */
static atomic_int hold_in_sendmsg;

ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
    static ssize_t (*real)(int, const struct msghdr *, int);
    struct cmsghdr *cm;
    int sent;

    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "sendmsg");
    cm = m && m->msg_controllen ? CMSG_FIRSTHDR((struct msghdr *)m) : NULL;
    if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
        atomic_exchange(&hold_in_sendmsg, 0)) {
        memcpy(&sent, CMSG_DATA(cm), sizeof(sent));
        slab_in_flight(sent);
        hold(10); /* past 5 s (the bridge's socket timeout) the peer's open fails: said */
    }
    return real(fd, m, flags);
}

/* The stand-in's import: the descriptor the bridge received from the exporter. */
static __thread int hold_in_import;

static void import_held(int fd)
{
    if (!hold_in_import)
        return;
    hold_in_import = 0;
    slab_in_flight(fd);
    hold(10);
}

int listen(int fd, int backlog)
{
    static int (*real)(int, int);

    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "listen");
    if (hold_in_listen) {
        hold_in_listen = 0;
        hold(2); /* the bridge's fork handler waits for the server's lock */
    }
    return real(fd, backlog);
}

/* ---- what a child does ------------------------------------------------------------------- */
static CUipcMemHandle handle; /* the first process's block */
static CUdeviceptr before;    /* a block of this process, allocated before any fork */
/* What the driver does in a forked child: the stand-in works there, or refuses to make
 * and map memory (FAKE_CUDA_FORK_REFUSE=1); the real driver answers as it does. */
static enum { CHILD_WORKS, CHILD_REFUSED, CHILD_REAL } driver;

/* A result's name: bridge/fork/WHAT, bridge/fork_refused/WHAT or bridge/fork_gpu/WHAT. */
static const char *named(const char *what)
{
    static const char *const kind[] = { "", "_refused", "_gpu" };
    static char buf[4][160];
    static int i;
    char *b = buf[i++ % 4];

    snprintf(b, sizeof(buf[0]), "bridge/fork%s/%s", kind[driver], what);
    return b;
}

enum way_out { BY_EXIT, BY__EXIT };
static const char *const way_name[] = { "exit", "_exit" };

/* Whether the n bytes at p (n at most SMALL) are the first process's FILL. */
static int filled(CUdeviceptr p, size_t n)
{
    unsigned char got[SMALL], want[SMALL];

    memset(want, FILL, sizeof(want));
    return cuMemcpyDtoH(got, p, n) == CUDA_SUCCESS && memcmp(got, want, n) == 0;
}

/* Whether the handle opens here, with the first process's bytes, and closes again. */
static int opens_whole(void)
{
    CUdeviceptr p = 0;

    return cuIpcOpenMemHandle(&p, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
               CUDA_SUCCESS && filled(p, SMALL) && cuIpcCloseMemHandle(p) == CUDA_SUCCESS;
}

/* What went wrong in a child, one bit each (its exit status). */
enum { BAD_OPEN = 1, BAD_BYTES = 2, BAD_CLOSE = 4, BAD_ALLOC = 8, BAD_ATTR = 16,
       BAD_HANDLE = 32, BAD_FREE = 64 };

static void say_bad(int st, char *why, size_t len)
{
    if (st < 0) {
        snprintf(why, len, "the child hung (killed after %d s)", CHILD_WAIT_S);
        return;
    }
    if (st >= 128) {
        snprintf(why, len, "the child died of signal %d", st - 128);
        return;
    }
    snprintf(why, len, "the child's status %#x:%s%s%s%s%s%s%s", st,
             st & BAD_OPEN ? " open" : "", st & BAD_BYTES ? " bytes" : "",
             st & BAD_CLOSE ? " close" : "", st & BAD_ALLOC ? " alloc" : "",
             st & BAD_ATTR ? " attribute" : "", st & BAD_HANDLE ? " handle" : "",
             st & BAD_FREE ? " free" : "");
}

/* The handle opened in a child: with the driver working, the block with its bytes, closed
 * again; with the driver refusing the child, the driver's refusal; with the real driver,
 * either. */
static int child_open(void)
{
    CUdeviceptr p = 0;
    CUresult r = cuIpcOpenMemHandle(&p, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);

    if (driver == CHILD_REFUSED)
        return r == CUDA_ERROR_NOT_INITIALIZED ? 0 : BAD_OPEN;
    if (r != CUDA_SUCCESS)
        return driver == CHILD_REAL ? 0 : BAD_OPEN;
    return (filled(p, SMALL) ? 0 : BAD_BYTES) |
           (cuIpcCloseMemHandle(p) == CUDA_SUCCESS ? 0 : BAD_CLOSE);
}

/* Every lock of the bridge once: the IPC open (open_lock, the list of opened slabs and the
 * server's lock, asked whether the handle is this process's own), an allocation and its
 * free (the pool, the block records), an attribute and a handle of a block made before the
 * fork (the records, the server this child starts, the list of exports). The real driver's
 * refusals are no failure: only a hang, a crash or what worked and did not. */
static int child_work(void)
{
    unsigned long long id = 0;
    int must = driver == CHILD_WORKS, bad = child_open();
    CUipcMemHandle mine;
    CUdeviceptr q = 0;

    if (cuMemAlloc(&q, SMALL) == CUDA_SUCCESS) {
        cuMemsetD8(q, 0x3c, SMALL);
        bad |= cuMemFree(q) == CUDA_SUCCESS || driver == CHILD_REAL ? 0 : BAD_FREE;
    } else if (must) {
        bad |= BAD_ALLOC;
    }
    must = driver != CHILD_REAL;
    if (cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, before) != CUDA_SUCCESS &&
        must)
        bad |= BAD_ATTR;
    if (cuIpcGetMemHandle(&mine, before) != CUDA_SUCCESS && must)
        bad |= BAD_HANDLE;
    return bad;
}

static void leave(enum way_out way, int status)
{
    if (way == BY_EXIT)
        exit(status);
    _exit(status);
}

/* Fork a child that runs work and leaves the given way; (*between)() runs in the parent
 * right after the fork. The child's status as t_wait_child gives it. */
static int fork_child(enum way_out way, int (*work)(void), void (*between)(void))
{
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0)
        leave(way, work());
    if (between)
        between();
    return pid < 0 ? -2 : t_wait_child(pid, CHILD_WAIT_S);
}

/* The result NAME for a child's status st (fork_child's). */
static void report_as(int st, const char *name)
{
    char why[160];

    if (st == -2) {
        t_fail(name, "fork failed");
        return;
    }
    say_bad(st, why, sizeof(why));
    t_check(st == 0, name, "%s", why);
}

static void report(int st, const char *scenario, enum way_out way)
{
    char name[96];

    snprintf(name, sizeof(name), "%s/child_by_%s_unharmed", scenario, way_name[way]);
    report_as(st, named(name));
}

static void release(void)
{
    sem_post(&released);
}

/* ---- open_lock --------------------------------------------------------------------------- */
/* A thread's open of the handle, held where it waits for the exporter's answer (in poll), or
 * in the driver's import of the slab's fd (import_fd). */
struct held_open {
    int in_import;
    int bad;
};

static void *open_held(void *arg)
{
    struct held_open *o = arg;

    use_gpu();
    if (o->in_import)
        hold_in_import = 1;
    else
        hold_in_poll = 1;
    if (!opens_whole())
        o->bad = 1;
    return NULL;
}

/* Start o's thread and wait until it is held: 0, or -1 after saying why (name is
 * SCENARIO/held, never says where the thread did not get). */
static int start_held(pthread_t *th, struct held_open *o, const char *scenario,
                      const char *never)
{
    char name[64];

    snprintf(name, sizeof(name), "%s/thread", scenario);
    if (pthread_create(th, NULL, open_held, o)) {
        t_fail(named(name), "pthread_create failed");
        return -1;
    }
    if (t_sem_wait(&reached, 10)) {
        snprintf(name, sizeof(name), "%s/held", scenario);
        t_fail(named(name), "the thread's open never %s", never);
        release();
        pthread_join(*th, NULL);
        return -1;
    }
    return 0;
}

/* When the fork returned in the parent; then the held thread goes on. */
static struct timespec forked_at;

static void release_timed(void)
{
    clock_gettime(CLOCK_MONOTONIC, &forked_at);
    release();
}

static void open_lock(void)
{
    struct timespec t0;
    double waited, most = 0;
    struct held_open o = { 0, 0 };
    enum way_out way;
    pthread_t th;
    int st;

    /* Once without a fork: an open here asks the exporter (the slab is not mapped). */
    sem_post(&released);
    open_held(&o);
    if (sem_trywait(&reached)) {
        t_fail(named("open_lock/held"), "an open did not ask the exporter");
        return;
    }
    for (way = BY_EXIT; way <= BY__EXIT; way++) {
        while (sem_trywait(&released) == 0)
            ;
        if (start_held(&th, &o, "open_lock", "asked the exporter"))
            return;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        st = fork_child(way, child_work, release_timed);
        waited = (double)(forked_at.tv_sec - t0.tv_sec) + (forked_at.tv_nsec - t0.tv_nsec) / 1e9;
        most = waited > most ? waited : most;
        pthread_join(th, NULL);
        report(st, "open_lock", way);
    }
    t_check(!o.bad, named("open_lock/thread_unharmed"), "the held thread's open failed");
    /* The thread waits 10 s for the fork: a fork that waited for it (a lock held across the
     * wait for the exporter's answer) returns only when that ends. */
    t_check(most < 5, named("open_lock/fork_waits_for_no_answer"),
            "a fork took %.1f s while a thread waited for the exporter", most);
}

/* ---- cancelled --------------------------------------------------------------------------- */
static void *open_again(void *arg)
{
    use_gpu();
    *(int *)arg = opens_whole();
    return NULL;
}

static void cancelled(void)
{
    struct held_open o = { 0, 0 };
    int again = 0, first_ended, again_ended;
    pthread_t th, th2;
    void *ret = NULL;

    if (start_held(&th, &o, "cancelled", "asked the exporter"))
        return;
    /* Held in the test's poll: its wait is a cancellation point, as the real poll's is. */
    pthread_cancel(th);
    release();
    first_ended = t_join_within(th, 20000, &ret) == 0;
    if (!t_check(first_ended, named("cancelled/thread_ends"),
                 "the cancelled thread was still inside the open after 20 s"))
        return;
    /* Its cancel acts once the open is done (at its next cancellation point, or never): the
     * open itself completed, or the thread ended cancelled, its open done or not begun. */
    t_check(ret == PTHREAD_CANCELED || !o.bad, named("cancelled/open_not_torn"),
            "the open of the thread cancelled meanwhile failed");
    if (pthread_create(&th2, NULL, open_again, &again)) {
        t_fail(named("cancelled/open_after"), "pthread_create failed");
        return;
    }
    again_ended = t_join_within(th2, 15000, NULL) == 0;
    if (!t_check(again_ended && again, named("cancelled/open_after"),
                 again_ended ? "a later open failed"
                             : "a later open still waited after 15 s (a lock left held by the "
                               "cancelled thread)"))
        return; /* a thread is stuck in the bridge: no fork can be trusted now */
    report(fork_child(BY_EXIT, child_work, NULL), "cancelled", BY_EXIT);
}

/* ---- first_use --------------------------------------------------------------------------- */
static sem_t go;
static CUresult first_handle = CUDA_ERROR_UNKNOWN;

static void *first_export(void *arg)
{
    CUipcMemHandle h;

    use_gpu();
    if (t_sem_wait(&go, 10))
        return NULL;
    hold_in_listen = 1;
    first_handle = cuIpcGetMemHandle(&h, before);
    return NULL;
}

static void first_use(const char *mode, enum way_out way)
{
    char name[64];
    pthread_t th;
    int st;

    if (pthread_create(&th, NULL, first_export, NULL)) {
        t_fail(named("first_use/thread"), "pthread_create failed");
        return;
    }
    t_fork_arm(&go, &reached); /* the fork waits until the server's start holds its lock */
    st = fork_child(way, child_work, release);
    pthread_join(th, NULL);
    snprintf(name, sizeof(name), "%s/held", mode);
    if (!t_check(t_fork_armed_saw(), named(name),
                 "the thread never started the server in the fork"))
        return;
    report(st, "first_use", way);
    snprintf(name, sizeof(name), "%s/thread_unharmed", mode);
    t_check(first_handle == CUDA_SUCCESS, named(name), "its cuIpcGetMemHandle: %d",
            (int)first_handle);
}

/* ---- stress ------------------------------------------------------------------------------ */
static _Atomic int stop;

static void *churn(void *arg)
{
    unsigned long long id;
    CUipcMemHandle h;
    CUdeviceptr p, q;
    int *bad = arg;

    use_gpu();
    while (!stop) {
        p = q = 0;
        if (cuIpcOpenMemHandle(&p, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS ||
            !filled(p, 64) || cuIpcCloseMemHandle(p) != CUDA_SUCCESS)
            (*bad)++;
        if (cuMemAlloc(&q, SMALL) != CUDA_SUCCESS || cuMemsetD8(q, 0x11, SMALL) != CUDA_SUCCESS ||
            cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, q) != CUDA_SUCCESS ||
            cuIpcGetMemHandle(&h, q) != CUDA_SUCCESS || cuMemFree(q) != CUDA_SUCCESS)
            (*bad)++;
    }
    return NULL;
}

static void stress(void)
{
    struct timespec nap = { 0, 0 };
    int bad = 0, i, st = 0, n = 0;
    pthread_t th;

    if (pthread_create(&th, NULL, churn, &bad)) {
        t_fail(named("stress/thread"), "pthread_create failed");
        return;
    }
    for (i = 0; i < STRESS_FORKS; i++) {
        nap.tv_nsec = (long)(rand() % 2000) * 1000; /* up to 2 ms: a different moment each */
        nanosleep(&nap, NULL);
        st = fork_child(i % 2 ? BY__EXIT : BY_EXIT, child_work, NULL);
        n++;
        if (st)
            break; /* one hung child says it: no need to wait out the others */
    }
    stop = 1;
    pthread_join(th, NULL);
    if (st)
        printf("# the child of fork %d of %d (leaving by %s) went wrong\n", n, STRESS_FORKS,
               way_name[(n - 1) % 2]);
    report_as(st, named("stress/children_unharmed"));
    t_check(!bad, named("stress/thread_unharmed"), "%d of its rounds failed", bad);
}

/* ---- inherited --------------------------------------------------------------------------- */
static int imports_before;

/* The parent has the handle open: the child's open must still ask the driver (the
 * stand-in counts a new import). */
static int child_reopen(void)
{
    int bad = child_open();

    if (driver == CHILD_WORKS && fake_imports() != imports_before + 1)
        bad |= BAD_OPEN;
    return bad;
}

static void inherited(void)
{
    enum way_out way;
    CUdeviceptr p = 0;

    if (!t_check(cuIpcOpenMemHandle(&p, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
                     CUDA_SUCCESS, named("inherited/open"), "the parent's open failed"))
        return;
    imports_before = fake_imports ? fake_imports() : 0;
    for (way = BY_EXIT; way <= BY__EXIT; way++)
        report(fork_child(way, child_reopen, NULL), "inherited", way);
    t_check(cuIpcCloseMemHandle(p) == CUDA_SUCCESS, named("inherited/parent_closes"),
            "the parent's close failed");
}

/* ---- ids --------------------------------------------------------------------------------- */
/* The first block each side allocates after a fork comes with the same count of blocks made
 * before it: with one key on both sides (bridge/bridge_block_id.c) it would have one id, and a
 * peer given the child's handle of it would know the identity of the parent's, a block it was
 * never sent. */
static int id_pipe[2];

/* The BUFFER_ID of a new block, or 0 when none could be allocated. */
static unsigned long long new_block_id(void)
{
    unsigned long long id = 0;
    CUdeviceptr q = 0;

    if (cuMemAlloc(&q, SMALL) != CUDA_SUCCESS)
        return 0;
    if (cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, q) != CUDA_SUCCESS)
        id = 0;
    cuMemFree(q);
    return id;
}

static int child_id(void)
{
    unsigned long long id = new_block_id();

    return write(id_pipe[1], &id, sizeof(id)) == (ssize_t)sizeof(id) ? 0 : BAD_ATTR;
}

static void ids(void)
{
    unsigned long long theirs = 0, mine;
    int st;

    if (pipe(id_pipe)) {
        t_fail(named("ids/pipe"), "pipe failed");
        return;
    }
    st = fork_child(BY__EXIT, child_id, NULL);
    if (read(id_pipe[0], &theirs, sizeof(theirs)) != (ssize_t)sizeof(theirs))
        theirs = 0;
    mine = new_block_id();
    close(id_pipe[0]);
    close(id_pipe[1]);
    report_as(st, named("ids/child_unharmed"));
    if (!theirs && driver != CHILD_WORKS) {
        t_skip(named("ids/child_and_parent_ids_differ"), "the driver made no block in the "
               "child");
        return;
    }
    t_check(theirs != mine && theirs >= 1ull << 63 && mine >= 1ull << 63,
            named("ids/child_and_parent_ids_differ"), "parent %#llx, child %#llx", mine,
            theirs);
}

/* ---- other processes of this program ----------------------------------------------------- */
#define HANDLE_VAR_LEN (16 + 2 * sizeof(CUipcMemHandle))

/* Fill b (SMALL bytes) with FILL and put a handle of it into var as FORK_HANDLE=<hex>, for
 * another process of this program: 1, or 0 with "not ok NAME". */
static int handle_var(CUdeviceptr b, char *var, const char *name)
{
    CUipcMemHandle h;

    cuMemsetD8(b, FILL, SMALL);
    cuCtxSynchronize();
    if (!t_check(cuIpcGetMemHandle(&h, b) == CUDA_SUCCESS, named(name),
                 "cuIpcGetMemHandle failed"))
        return 0;
    memcpy(var, "FORK_HANDLE=", 12);
    to_hex(&h, sizeof(h), var + 12);
    return 1;
}

/* What the process that ran mode said (t_run_self's st, sig and out), and "not ok MODE/ran"
 * when it failed without saying so. */
static void relay(const char *mode, int st, int sig, const char *out)
{
    char name[64];

    fputs(out, stdout);
    snprintf(name, sizeof(name), "%s/ran", mode);
    if (st != 0 && !strstr(out, "not ok "))
        t_fail(named(name), "status %d signal %d", st, sig);
}

/* ---- import_fd, export_fd --------------------------------------------------------------- */
/* In the child: how many descriptors of the slab in flight it holds beyond the parent's own
 * (its status; 100: /proc/self/fd unreadable). */
static int child_slab_fds(void)
{
    int n = slab_fds(-1, 0);

    return n < 0 ? 100 : n;
}

static void report_fds(int st, const char *name)
{
    if (st == -2)
        t_fail(name, "fork failed");
    else if (st < 0 || st >= 100)
        t_fail(name, "the child hung, died or could not read /proc/self/fd (status %d)", st);
    else
        t_check(st == 0, name, "the child holds %d descriptor(s) of the slab in flight (the "
                "parent's fd %d, besides the %d it holds itself)", st, in_flight, n_own);
}

static void import_fd(void)
{
    struct held_open o = { 1, 0 };
    pthread_t th;
    int st;

    fake_import_hook = import_held;
    if (start_held(&th, &o, "import_fd", "reached the driver's import"))
        return;
    st = fork_child(BY__EXIT, child_slab_fds, release);
    pthread_join(th, NULL);
    fake_import_hook = NULL;
    if (t_check(in_flight_ours, named("import_fd/held"),
                "the import was given fd %d, no memfd of the stand-in", in_flight))
        report_fds(st, named("import_fd/child_holds_no_slab_fd"));
    t_check(!o.bad, named("import_fd/thread_unharmed"), "the held thread's open failed");
}

/* export_fd's other process: it opens the handle of the block of export_fd's process. */
static void export_fd_peer(void)
{
    t_check(opens_whole(), named("export_fd/peer_opens_the_block"),
            "its open, bytes or close failed");
}

static char peer_var[HANDLE_VAR_LEN], peer_out[4096];
static int peer_st, peer_sig;

static void *run_peer(void *arg)
{
    const char *env[] = { peer_var, NULL };

    peer_st = t_run_self("export_fd_peer", env, peer_out, sizeof(peer_out), &peer_sig);
    return NULL;
}

static void export_fd(void)
{
    pthread_t th;
    int st;

    if (!handle_var(before, peer_var, "export_fd/handle"))
        return;
    hold_in_sendmsg = 1;
    if (pthread_create(&th, NULL, run_peer, NULL)) {
        t_fail(named("export_fd/thread"), "pthread_create failed");
        return;
    }
    if (t_sem_wait(&reached, 10)) {
        t_fail(named("export_fd/held"), "the peer's open never made the server send the fd");
        hold_in_sendmsg = 0;
        release();
        pthread_join(th, NULL);
        relay("export_fd_peer", peer_st, peer_sig, peer_out);
        return;
    }
    st = fork_child(BY__EXIT, child_slab_fds, release);
    pthread_join(th, NULL);
    relay("export_fd_peer", peer_st, peer_sig, peer_out);
    if (!t_check(in_flight_ours, named("export_fd/held"),
                 "the server sent fd %d, no memfd of the stand-in", in_flight))
        return;
    report_fds(st, named("export_fd/child_holds_no_slab_fd"));
    /* The stand-in's export is a dup(), without close-on-exec, as the driver's may come: a
     * program started by posix_spawn (no fork handlers) would get it but for the flag. */
    t_check(in_flight_cloexec, named("export_fd/sent_fd_is_close_on_exec"),
            "the slab's fd %d was sent without FD_CLOEXEC", in_flight);
}

/* ---- the processes ----------------------------------------------------------------------- */
static void scenario(const char *mode)
{
    char name[64];

    alarm(120);
    sem_init(&reached, 0, 0);
    sem_init(&released, 0, 0);
    sem_init(&go, 0, 0);
    if (from_hex(getenv("FORK_HANDLE"), &handle, sizeof(handle))) {
        t_fail(named("handle_passed"), "no handle in the environment");
        return;
    }
    snprintf(name, sizeof(name), "%s/block_from_the_pool", mode);
    if (!t_check(cuMemAlloc(&before, SMALL) == CUDA_SUCCESS &&
                 !vramio_alloc_range(before, NULL, NULL), named(name), "not bridged"))
        return;
    if (!strcmp(mode, "open_lock"))
        open_lock();
    else if (!strcmp(mode, "first_use_exit"))
        first_use(mode, BY_EXIT);
    else if (!strcmp(mode, "first_use__exit"))
        first_use(mode, BY__EXIT);
    else if (!strcmp(mode, "stress"))
        stress();
    else if (!strcmp(mode, "inherited"))
        inherited();
    else if (!strcmp(mode, "cancelled"))
        cancelled();
    else if (!strcmp(mode, "ids"))
        ids();
    else if (driver == CHILD_REAL && strstr(mode, "_fd"))
        t_skip(named(mode), "holds a thread only in the stand-in driver's import, and knows "
               "only its memfds");
    else if (!strcmp(mode, "import_fd"))
        import_fd();
    else if (!strcmp(mode, "export_fd"))
        export_fd();
    else if (!strcmp(mode, "export_fd_peer"))
        export_fd_peer();
    else
        t_fail(named("mode"), "no scenario %s", mode);
}

static void exporter(void)
{
    static const char *const modes[] = { "open_lock", "first_use_exit", "first_use__exit",
                                         "stress", "inherited", "cancelled", "ids",
                                         "import_fd", "export_fd" };
    char var[HANDLE_VAR_LEN], out[8192];
    const char *env[] = { var, NULL };
    CUdeviceptr b = 0;
    size_t i;
    int st, sig;

    if (!t_check(cuMemAlloc(&b, SMALL) == CUDA_SUCCESS && !vramio_alloc_range(b, NULL, NULL),
                 named("exporter_block_from_the_pool"), "not bridged") ||
        !handle_var(b, var, "exporter_handle"))
        return;
    for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        sig = 0;
        st = t_run_self(modes[i], env, out, sizeof(out), &sig);
        relay(modes[i], st, sig, out);
    }
    cuMemFree(b);
}

int main(int argc, char **argv)
{
    const char *child = t_child_mode(argc, argv);

    if (!fake_imports)
        driver = CHILD_REAL;
    else if (getenv("FAKE_CUDA_FORK_REFUSE") && !strcmp(getenv("FAKE_CUDA_FORK_REFUSE"), "1"))
        driver = CHILD_REFUSED;
    if (use_gpu()) {
        t_fail(named("gpu"), "cuInit or GPU 0's primary context failed");
        return t_status();
    }
    if (child)
        scenario(child);
    else
        exporter();
    return t_status();
}

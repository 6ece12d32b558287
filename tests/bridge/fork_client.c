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
 *               the parent's mapping.
 * A thread is held inside the bridge by this program's own recvmsg and listen, which the
 * bridge calls (linked with -rdynamic, they come before libc's in the search).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cuda.h>

#include "hex.h"
#include "t.h"
#include "vramio.h"

/* The stand-in driver's count of imported allocations; NULL with the real driver. */
int fake_imports(void) __attribute__((weak));

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
static __thread int hold_in_recvmsg, hold_in_listen; /* this thread's next call waits */
static sem_t reached, released;

/* Say that this thread is where it is held, and wait until the fork is done, for at most
 * seconds: a fork that waits for a lock this thread holds must still end (a prepare handler
 * of the bridge, where the first IPC server starts). */
static void hold(int seconds)
{
    sem_post(&reached);
    t_sem_wait(&released, seconds);
}

ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
    static ssize_t (*real)(int, struct msghdr *, int);

    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "recvmsg");
    if (hold_in_recvmsg) {
        hold_in_recvmsg = 0;
        hold(10); /* no fork waits for open_lock */
    }
    return real(fd, m, flags);
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
static void *open_held(void *arg)
{
    CUdeviceptr p = 0;
    int *bad = arg;

    use_gpu();
    hold_in_recvmsg = 1;
    if (cuIpcOpenMemHandle(&p, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS ||
        !filled(p, SMALL) || cuIpcCloseMemHandle(p) != CUDA_SUCCESS)
        *bad = 1;
    return NULL;
}

static void open_lock(void)
{
    enum way_out way;
    pthread_t th;
    int bad = 0, st;

    /* Once without a fork: an open here asks the exporter (the slab is not mapped). */
    sem_post(&released);
    open_held(&bad);
    if (sem_trywait(&reached)) {
        t_fail(named("open_lock/held"), "an open did not ask the exporter");
        return;
    }
    for (way = BY_EXIT; way <= BY__EXIT; way++) {
        while (sem_trywait(&released) == 0)
            ;
        if (pthread_create(&th, NULL, open_held, &bad)) {
            t_fail(named("open_lock/thread"), "pthread_create failed");
            return;
        }
        if (t_sem_wait(&reached, 10)) {
            t_fail(named("open_lock/held"), "the thread's open never asked the exporter");
            release();
            pthread_join(th, NULL);
            return;
        }
        st = fork_child(way, child_work, release);
        pthread_join(th, NULL);
        report(st, "open_lock", way);
    }
    t_check(!bad, named("open_lock/thread_unharmed"), "the held thread's open failed");
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
    else
        t_fail(named("mode"), "no scenario %s", mode);
}

static void exporter(void)
{
    static const char *const modes[] = { "open_lock", "first_use_exit", "first_use__exit",
                                         "stress", "inherited" };
    char var[16 + 2 * sizeof(CUipcMemHandle)], out[8192];
    const char *env[] = { var, NULL };
    CUipcMemHandle h;
    CUdeviceptr b = 0;
    char name[64];
    size_t i;
    int st, sig;

    if (!t_check(cuMemAlloc(&b, SMALL) == CUDA_SUCCESS && !vramio_alloc_range(b, NULL, NULL),
                 named("exporter_block_from_the_pool"), "not bridged"))
        return;
    cuMemsetD8(b, FILL, SMALL);
    cuCtxSynchronize();
    if (!t_check(cuIpcGetMemHandle(&h, b) == CUDA_SUCCESS, named("exporter_handle"),
                 "cuIpcGetMemHandle failed"))
        return;
    memcpy(var, "FORK_HANDLE=", 12);
    to_hex(&h, sizeof(h), var + 12);
    for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        sig = 0;
        st = t_run_self(modes[i], env, out, sizeof(out), &sig);
        fputs(out, stdout);
        snprintf(name, sizeof(name), "%s/ran", modes[i]);
        if (st != 0 && !strstr(out, "not ok "))
            t_fail(named(name), "status %d signal %d", st, sig);
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

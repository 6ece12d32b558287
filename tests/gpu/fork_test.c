/* SPDX-License-Identifier: MIT */
/*
 * fork_test.c - fork and exit with GPU memory pinned and mapped, on whichever backend this
 * machine has (on the H200 without the module: vulkan), and gdr_open's promise.
 *
 * Each scenario runs in a fresh process (this program exec'd with --scenario NAME) that sets
 * up CUDA, pins and maps NCCL-style VMM memory (cuMemCreate with a POSIX-fd handle), writes
 * it, forks, lets the child do one thing, checks its own mapping and memory afterwards,
 * releases everything and leaves through a normal exit. The driver runs every scenario
 * under a bounded wait: a child or a parent that hangs (at its exit included) is killed and
 * reported as "not ok". Result lines: "ok fork/SCENARIO/CHECK", "not ok ...: why", "skip".
 *
 *   fork_test                 every scenario
 *   fork_test --scenario S    one (what the driver runs)
 */
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "gpu_common.h"
#include "t.h"

#define SIZE (2u << 20)

/* What the child does after the fork. */
enum action {
    TOUCH_EXIT,       /* read the parent's mapping: must fault; the handler calls exit() */
    IDLE_EXIT,        /* nothing, then exit() */
    IDLE__EXIT,       /* nothing, then _exit() */
    RETURN_MAIN,      /* return from main */
    EXEC,             /* exec another program */
    SIGNAL,           /* die by SIGTERM */
    TOUCH_DEFAULT,    /* read the mapping with the default handler: killed by the fault */
    REFUSED,          /* the parent's gdr_t and pins are refused (EACCES); close is 0 */
    OWN_OPEN,         /* gdr_open its own; pinning the parent's memory fails cleanly */
};

struct scenario {
    const char *name;
    enum action act;
};

static const struct scenario scenarios[] = {
    { "touch_exit", TOUCH_EXIT },     { "idle_exit", IDLE_EXIT },
    { "idle__exit", IDLE__EXIT },     { "return_from_main", RETURN_MAIN },
    { "exec", EXEC },                 { "signal", SIGNAL },
    { "touch_default", TOUCH_DEFAULT }, { "refused", REFUSED },
    { "own_open", OWN_OPEN },
};

static char prefix[96];

static const char *nm(const char *check_name)
{
    static char buf[160];

    snprintf(buf, sizeof(buf), "fork/%s/%s", prefix, check_name);
    return buf;
}

/* A child that dies of an abort or a fault where none was expected says where (a failure of
 * fork_while_unpinning is otherwise only "1 of 20 children failed"). */
static void crash_report(int sig)
{
    void *frames[48];
    int n = backtrace(frames, 48);

    dprintf(2, "# child %d: signal %d, backtrace:\n", (int)getpid(), sig);
    backtrace_symbols_fd(frames, n, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void fault_handler(int sig)
{
    exit(0); /* as upstream's sanity does: the expected fault ends the child through exit() */
}

/* The child's side. Returns the exit code when the action returns to main. */
static int child(enum action act, gdr_t g, gdr_mh_t mh, volatile char *at)
{
    gdr_mh_t other;
    void *m = NULL;
    gdr_t own;
    int bad = 0;

    alarm(30);
    switch (act) {
    case TOUCH_EXIT:
        signal(SIGSEGV, fault_handler);
        signal(SIGBUS, fault_handler);
        (void)*at;
        exit(3); /* read the parent's memory: not ok */
    case IDLE_EXIT:
        exit(0);
    case IDLE__EXIT:
        _exit(0);
    case RETURN_MAIN:
        return 0;
    case EXEC:
        execl("/bin/true", "true", (char *)NULL);
        _exit(4);
    case SIGNAL:
        raise(SIGTERM);
        _exit(5);
    case TOUCH_DEFAULT:
        (void)*at;
        exit(3);
    case REFUSED:
        bad |= (gdr_map(g, mh, &m, SIZE) != EACCES) << 0;
        bad |= (gdr_unmap(g, mh, (void *)at, SIZE) != EACCES) << 1;
        bad |= (gdr_unpin_buffer(g, mh) != EACCES) << 2;
        bad |= (gdr_pin_buffer_v2(g, 0x100000, SIZE, 0, &other) != EACCES) << 3;
        bad |= (strstr(vramio_last_error(), "forked") == NULL) << 4;
        bad |= (gdr_close(g) != 0) << 5;
        exit(bad ? 16 + bad : 0);
    case OWN_OPEN:
        own = gdr_open();
        if (!own)
            exit(6);
        /* CUDA cannot work in a child forked after cuInit: an error, never a crash. */
        bad = gdr_pin_buffer_v2(own, (unsigned long)(uintptr_t)at, SIZE, 0, &other);
        if (bad == 0)
            gdr_unpin_buffer(own, other);
        exit(gdr_close(own) == 0 && bad > 0 ? 0 : 7);
    }
    _exit(9);
}

/* Which end is right for each action: the exit status wanted, or the signal. */
static int child_ok(enum action act, int status, char *why, size_t len)
{
    if (act == SIGNAL || act == TOUCH_DEFAULT) {
        int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        int ok = act == SIGNAL ? sig == SIGTERM : (sig == SIGSEGV || sig == SIGBUS);

        snprintf(why, len, "status %#x (signal %d)", (unsigned)status, sig);
        return ok;
    }
    snprintf(why, len, "status %#x%s", (unsigned)status,
             WIFEXITED(status) && WEXITSTATUS(status) == 3 ? ": it read the parent's mapping" : "");
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int run_scenario(const struct scenario *sc)
{
    unsigned char want[4096], got[4096];
    struct gpu_vmm v;
    gdr_mh_t mh;
    void *map, *at;
    size_t len;
    char why[160];
    int rc, status = -1;
    pid_t pid;
    gdr_t g;

    snprintf(prefix, sizeof(prefix), "%s", sc->name);
    setenv("VRAMIO_ENABLE_VULKAN", "1", 0);
    gpu_cuda_setup();
    if (gpu_vmm_alloc(SIZE, &v)) {
        t_skip(nm("setup"), "cuMemCreate with a POSIX-fd handle failed");
        return 0;
    }
    g = gdr_open();
    if (!t_check(g != NULL, nm("open"), "%s", vramio_last_error()))
        return 1;
    rc = gpu_pin_map(g, v.ptr, SIZE, &mh, &map, &len, &at);
    if (!t_check(rc == 0, nm("pin_map"), "%s", vramio_last_error()))
        return 1;
    t_pattern(want, sizeof(want), 1);
    gdr_copy_to_mapping(mh, at, want, sizeof(want));
    fflush(NULL);
    pid = fork();
    if (pid == 0)
        return child(sc->act, g, mh, at);
    rc = t_wait_bounded(pid, &status, 60);
    t_check(rc == 0 && child_ok(sc->act, status, why, sizeof(why)), nm("child"), "%s%s",
            rc ? "hung (killed); " : "", why);
    /* The parent's mapping and memory are intact and still its own. */
    t_pattern(want, sizeof(want), 2);
    gdr_copy_to_mapping(mh, at, want, sizeof(want));
    memset(got, 0, sizeof(got));
    CU_MUST(cuMemcpyDtoH(got, v.ptr, sizeof(got)));
    t_check(memcmp(want, got, sizeof(got)) == 0, nm("parent_mapping_after_child"),
            "the parent's write did not reach its memory");
    t_check(gdr_unmap(g, mh, map, len) == 0 && gdr_unpin_buffer(g, mh) == 0 && gdr_close(g) == 0,
            nm("parent_release"), "%s", vramio_last_error());
    gpu_vmm_free(&v);
    return t_status(); /* then a normal exit, which must not hang */
}

/* Forks a child that leaves at once through exit() after one refused call on the parent's
 * gdr_t (whatever another thread was doing, the parent's objects are refused); a crash in
 * the child prints its backtrace. 0 when the child ended well within the bound, else 1. */
static int fork_quick_child(gdr_t g)
{
    int status = 0;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        gdr_mh_t mh = { 0 };

        alarm(20);
        signal(SIGABRT, crash_report);
        signal(SIGSEGV, crash_report);
        signal(SIGBUS, crash_report);
        exit(gdr_unpin_buffer(g, mh) == EACCES ? 0 : 1);
    }
    if (pid < 0)
        return 1;
    return t_wait_bounded(pid, &status, 30) != 0 || !WIFEXITED(status) ||
           WEXITSTATUS(status) != 0;
}

/* Forks while another thread pins, maps, unmaps and unpins: children leave at once through
 * exit(); none may hang or crash, and the parent goes on. */
static _Atomic int stop;
static CUdeviceptr churn_ptr;

static void *churn(void *arg)
{
    gdr_t g = arg;
    gdr_mh_t mh;
    void *map, *at;
    size_t len;

    gpu_cuda_thread();
    while (!stop)
        if (gpu_pin_map(g, churn_ptr, SIZE, &mh, &map, &len, &at) == 0) {
            gdr_unmap(g, mh, map, len);
            gdr_unpin_buffer(g, mh);
        }
    return NULL;
}

/* The setup of the scenarios below: VMM memory (its address in churn_ptr) and an open
 * gdr_t. -1 when ready, else the scenario's exit code (0 after a skip). */
static int setup_threaded(struct gpu_vmm *v, gdr_t *g)
{
    void *f[2];

    setenv("VRAMIO_ENABLE_VULKAN", "1", 0);
    gpu_cuda_setup();
    if (gpu_vmm_alloc(SIZE, v)) {
        t_skip(nm("setup"), "cuMemCreate with a POSIX-fd handle failed");
        return 0;
    }
    churn_ptr = v->ptr;
    *g = gdr_open();
    if (!t_check(*g != NULL, nm("open"), "%s", vramio_last_error()))
        return 1;
    backtrace(f, 2); /* loads libgcc's unwinder now: the report must not dlopen in a dying child */
    return -1;
}

static int run_fork_while_unpinning(void)
{
    struct gpu_vmm v;
    pthread_t t;
    int i, bad = 0, rounds, rc;
    gdr_t g;

    snprintf(prefix, sizeof(prefix), "fork_while_unpinning");
    rc = setup_threaded(&v, &g);
    if (rc >= 0)
        return rc;
    rounds = getenv("FORK_TEST_ROUNDS") ? atoi(getenv("FORK_TEST_ROUNDS")) : 20;
    pthread_create(&t, NULL, churn, g);
    for (i = 0; i < rounds; i++) {
        usleep(3000);
        bad += fork_quick_child(g);
    }
    stop = 1;
    pthread_join(t, NULL);
    t_check(bad == 0, nm("children"), "%d of %d children failed or hung", bad, rounds);
    t_check(gdr_close(g) == 0, nm("parent_close"), "%s", vramio_last_error());
    gpu_vmm_free(&v);
    return t_status();
}

/* Forks back to back while another thread makes the process's first pin, which loads the
 * GPU driver (hundreds of milliseconds of vkCreateInstance and device creation): a child
 * forked then inherits a driver part-way through its start, exit handlers included, and must
 * still leave cleanly through exit(). */
static _Atomic int first_pin_state; /* 0 running, 1 pinned, -1 failed */

static void *first_pin(void *arg)
{
    gdr_t g = arg;
    gdr_mh_t mh;
    void *map, *at;
    size_t len;

    gpu_cuda_thread();
    if (gpu_pin_map(g, churn_ptr, SIZE, &mh, &map, &len, &at) != 0) {
        first_pin_state = -1;
        return NULL;
    }
    first_pin_state = 1;
    gdr_unmap(g, mh, map, len);
    gdr_unpin_buffer(g, mh);
    return NULL;
}

static int run_fork_during_start(void)
{
    struct gpu_vmm v;
    pthread_t t;
    int n, bad = 0, rc;
    gdr_t g;

    snprintf(prefix, sizeof(prefix), "fork_during_start");
    rc = setup_threaded(&v, &g);
    if (rc >= 0)
        return rc;
    pthread_create(&t, NULL, first_pin, g);
    for (n = 0; n < 2000 && first_pin_state == 0; n++)
        bad += fork_quick_child(g);
    pthread_join(t, NULL);
    printf("# %d children forked while the first pin started the driver\n", n);
    t_check(first_pin_state == 1, nm("first_pin"), "%s", vramio_last_error());
    t_check(bad == 0, nm("children"), "%d of %d children failed or hung", bad, n);
    t_check(gdr_close(g) == 0, nm("parent_close"), "%s", vramio_last_error());
    gpu_vmm_free(&v);
    return t_status();
}

/* A program that only calls gdr_open with the default settings: with no module and no
 * dma-buf mmap it must get NULL (as with upstream GDRCopy), and the reason says how to opt in. */
static int run_default_open(void)
{
    struct stat st;
    char why[512] = "";
    gdr_t g;

    snprintf(prefix, sizeof(prefix), "default_open");
    unsetenv("VRAMIO_ENABLE_VULKAN");
    unsetenv("GDRCOPY_BACKEND");
    unsetenv("GDRCOPY_USE_DMABUF_MMAP");
    if (stat("/dev/gdrdrv", &st) == 0 || vramio_backend_probe(VRAMIO_BACKEND_DMABUF, why,
                                                              sizeof(why)) == 0) {
        t_skip(nm("null"), "gdrdrv or dma-buf mmap is usable here");
        return 0;
    }
    g = gdr_open();
    t_check(g == NULL && strstr(vramio_last_error(), "VRAMIO_ENABLE_VULKAN=1"), nm("null"),
            "gdr_open %s: '%s'", g ? "succeeded" : "failed", vramio_last_error());
    vramio_backend_probe(VRAMIO_BACKEND_VULKAN, why, sizeof(why));
    printf("# vulkan: %s\n", why);
    if (g)
        gdr_close(g);
    setenv("VRAMIO_ENABLE_VULKAN", "1", 1);
    g = gdr_open();
    t_check(g != NULL, nm("opt_in_opens"), "%s", vramio_last_error());
    if (g)
        gdr_close(g);
    return t_status();
}

/* Run this program with --scenario name within a bound; print its lines. */
static int drive(const char *self, const char *name, unsigned seconds)
{
    char result[128];
    int status = -1;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        execl(self, self, "--scenario", name, (char *)NULL);
        _exit(127);
    }
    snprintf(result, sizeof(result), "fork/%s/process_ends", name);
    if (t_wait_bounded(pid, &status, seconds) != 0) {
        t_fail(result, "did not end within %u s (a hang, at exit or before): killed", seconds);
        return 1;
    }
    return !t_check(WIFEXITED(status) && WEXITSTATUS(status) == 0, result, "status %#x",
                    (unsigned)status);
}

int main(int argc, char **argv)
{
    char self[4096];
    ssize_t n;
    size_t i;
    int bad = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && strcmp(argv[1], "--scenario") == 0) {
        if (strcmp(argv[2], "default_open") == 0)
            return run_default_open();
        if (strcmp(argv[2], "fork_while_unpinning") == 0)
            return run_fork_while_unpinning();
        if (strcmp(argv[2], "fork_during_start") == 0)
            return run_fork_during_start();
        for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
            if (strcmp(argv[2], scenarios[i].name) == 0)
                return run_scenario(&scenarios[i]);
        t_fail("fork/scenario", "no scenario %s", argv[2]);
        return 2;
    }
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        t_fail("fork/self", "cannot find this program");
        return 1;
    }
    self[n] = '\0';
    bad += drive(self, "default_open", 60);
    for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
        bad += drive(self, scenarios[i].name, 90);
    bad += drive(self, "fork_while_unpinning", 120);
    for (i = 0; i < 3; i++) /* a fresh process each: the driver starts once per process */
        bad += drive(self, "fork_during_start", 60);
    printf("# fork_test: %d scenario process(es) failed\n", bad);
    return bad ? 1 : 0;
}

// SPDX-License-Identifier: MIT
/*
 * safety_test.c - what must never crash, leak or leak access, through the real library
 * (static) and, where the library hides the file descriptor, through raw ioctls of the uapi:
 * process exit with pins and mappings held; fork (mappings not inherited, the inherited fd
 * refused with EACCES); an fd passed over a UNIX socket; close without unmap; 8 threads
 * sharing one gdr_t; and, with use_persistent_mapping=0, the free callback: a provider FREE
 * under a pin sets the callback flag, a later access raises SIGBUS, and an unpin racing the
 * callback waits for it. With persistent pins the same FREE leaves the pages valid.
 *   safety_test [--nonpersistent]   the tests of that module mode
 *   safety_test --hold              pin and map, print "holding", wait to be killed
 *   safety_test --stress            FREE racing unmap/unpin, 40 rounds (non-persistent mode)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gdrapi.h>

#include "common.h"
#include "gdrdrv.h"

#define GPU_PAGE 65536ULL
#define GUEST_PAGE_SHIFT 12    /* x86_64 guest: mmap offset = handle << PAGE_SHIFT */

static uint64_t live_pins(void)
{
    struct nvp2p_emu_stats st = { 0 };

    emu_stats(&st);
    return st.live_pins;
}

static uint64_t callbacks_fired(void)
{
    struct nvp2p_emu_stats st = { 0 };

    emu_stats(&st);
    return st.callbacks_fired;
}

/* Wait for a child; returns its exit status, or 128 + signal. */
static int wait_child(pid_t pid)
{
    int st;

    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Raw pin on a fd of our own, for the tests that need the kernel handle. */
static int raw_pin(int fd, uint64_t addr, uint64_t size, uint64_t *handle)
{
    struct gdrdrv_pin_buffer_v2 p = { .addr = addr, .size = size };

    if (ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p))
        return errno;
    *handle = p.handle;
    return 0;
}

static int raw_info_errno(int fd, uint64_t handle)
{
    struct gdrdrv_get_info_v2 i = { .handle = handle };

    return ioctl(fd, GDRDRV_IOC_GET_INFO_V2, &i) ? errno : 0;
}

static int raw_mmap_errno(int fd, uint64_t handle, size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(handle << GUEST_PAGE_SHIFT));

    if (p == MAP_FAILED)
        return errno;
    munmap(p, len);
    return 0;
}

/* ---- process exit with pins and mappings held ---------------------------------------------- */
static void test_exit_releases(void)
{
    uint64_t va = 0, base = live_pins();
    pid_t pid;

    if (emu_alloc(8 * GPU_PAGE, 1, 0, &va)) {
        t_fail("exit_releases", "ALLOC failed");
        return;
    }
    pid = fork();
    if (pid == 0) {
        gdr_t g = gdr_open();
        gdr_mh_t mh[3];
        void *map;

        if (!g)
            _exit(10);
        for (int i = 0; i < 3; i++)
            if (gdr_pin_buffer_v2(g, va + i * 2 * GPU_PAGE, 2 * GPU_PAGE, 0, &mh[i]))
                _exit(11);
        if (gdr_map(g, mh[0], &map, 2 * GPU_PAGE) || gdr_map(g, mh[2], &map, 2 * GPU_PAGE))
            _exit(12);
        _exit(live_pins() == base + 3 ? 0 : 13);   /* no unmap, no unpin, no close */
    }
    int rc = wait_child(pid);
    t_check(rc == 0 && live_pins() == base, "exit_releases",
            "child status %d, live pins %llu (was %llu)", rc, (unsigned long long)live_pins(),
            (unsigned long long)base);
    emu_free(va);
}

/* ---- fork: the child reaches neither the mapping nor the fd ------------------------------- */
static void test_fork(void)
{
    uint64_t va = 0, handle = 0;
    gdr_t g = gdr_open();
    gdr_mh_t mh = { 0 };
    void *map = NULL;
    int fd = open("/dev/gdrdrv", O_RDWR), rc;
    pid_t pid;

    if (!g || fd < 0 || emu_alloc(4 * GPU_PAGE, 1, 0, &va) ||
        gdr_pin_buffer_v2(g, va, 2 * GPU_PAGE, 0, &mh) || gdr_map(g, mh, &map, 2 * GPU_PAGE) ||
        raw_pin(fd, va + 2 * GPU_PAGE, 2 * GPU_PAGE, &handle)) {
        t_fail("fork", "setup failed");
        goto out;
    }
    /* The child touching the parent's mapping: not inherited, so SIGSEGV. */
    pid = fork();
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        (void)*(volatile unsigned char *)map;
        _exit(0);
    }
    rc = wait_child(pid);
    t_check(rc == 128 + SIGSEGV, "fork_mapping_not_inherited", "child status %d (want SIGSEGV)", rc);

    /* Asking for the mapping to be inherited must not work either (VM_IO refuses DOFORK). */
    int dofork = madvise(map, 2 * GPU_PAGE, MADV_DOFORK) ? errno : 0;
    pid = fork();
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        (void)*(volatile unsigned char *)map;
        _exit(0);
    }
    rc = wait_child(pid);
    t_check(rc == 128 + SIGSEGV, "fork_dofork_not_inherited", "madvise(MADV_DOFORK) %d, child status %d "
            "(want SIGSEGV)", dofork, rc);

    /* The inherited fd: every ioctl and mmap refused with EACCES. */
    pid = fork();
    if (pid == 0) {
        uint64_t h2;
        int a = raw_info_errno(fd, handle), b = raw_mmap_errno(fd, handle, GPU_PAGE);
        int c = raw_pin(fd, va, GPU_PAGE, &h2);
        struct gdrdrv_unpin_buffer u = { .handle = handle };
        int d = ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;

        printf("# child: info %d mmap %d pin %d unpin %d\n", a, b, c, d);
        _exit(a == EACCES && b == EACCES && c == EACCES && d == EACCES ? 0 : 1);
    }
    rc = wait_child(pid);
    t_check(rc == 0, "fork_fd_eacces", "child status %d (ioctl/mmap not all EACCES)", rc);

    /* The library in the child: a clean error, not a crash. */
    pid = fork();
    if (pid == 0) {
        gdr_mh_t m2;
        gdr_info_t info;
        int a = gdr_pin_buffer_v2(g, va, GPU_PAGE, 0, &m2);
        void *p2;
        int b = gdr_map(g, mh, &p2, GPU_PAGE);

        (void)gdr_get_info_v2(g, mh, &info);
        _exit(a && b ? 0 : 1);
    }
    rc = wait_child(pid);
    t_check(rc == 0, "fork_library_refused", "child status %d", rc);

    /* And the parent still owns everything. */
    unsigned char buf[64], want[64];
    emu_read(va, want, sizeof(want));
    gdr_copy_from_mapping(mh, buf, map, sizeof(buf));
    t_check(!memcmp(buf, want, sizeof(buf)) && !raw_info_errno(fd, handle), "fork_parent_unaffected",
            "parent lost its mapping or pin");
out:
    if (map)
        gdr_unmap(g, mh, map, 2 * GPU_PAGE);
    if (mh.h)
        gdr_unpin_buffer(g, mh);
    if (g)
        gdr_close(g);
    if (fd >= 0)
        close(fd);
    if (va)
        emu_free(va);
}

/* ---- an fd passed over a UNIX socket is refused ------------------------------------------- */
static int send_fd(int sock, int fd, uint64_t handle)
{
    char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
    struct iovec iov = { .iov_base = &handle, .iov_len = sizeof(handle) };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                          .msg_controllen = sizeof(cbuf) };
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    return sendmsg(sock, &msg, 0) == sizeof(handle) ? 0 : -1;
}

static int recv_fd(int sock, uint64_t *handle)
{
    char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
    struct iovec iov = { .iov_base = handle, .iov_len = sizeof(*handle) };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                          .msg_controllen = sizeof(cbuf) };
    struct cmsghdr *c;
    int fd;

    if (recvmsg(sock, &msg, 0) != sizeof(*handle))
        return -1;
    c = CMSG_FIRSTHDR(&msg);
    if (!c || c->cmsg_type != SCM_RIGHTS)
        return -1;
    memcpy(&fd, CMSG_DATA(c), sizeof(int));
    return fd;
}

static void test_socket_passing(void)
{
    uint64_t va = 0, handle = 0, base = live_pins();
    int sv[2], rc;
    pid_t pid;

    if (emu_alloc(2 * GPU_PAGE, 1, 0, &va) || socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        t_fail("socket_fd_eacces", "setup failed");
        return;
    }
    pid = fork();
    if (pid == 0) {        /* the opener: pins, sends its fd, waits for the verdict */
        char c;
        int fd = open("/dev/gdrdrv", O_RDWR);

        if (fd < 0 || raw_pin(fd, va, 2 * GPU_PAGE, &handle) || send_fd(sv[1], fd, handle))
            _exit(1);
        _exit(read(sv[1], &c, 1) == 1 ? 0 : 2);
    }
    int fd = recv_fd(sv[0], &handle);
    int a = fd >= 0 ? raw_info_errno(fd, handle) : -1;
    int b = fd >= 0 ? raw_mmap_errno(fd, handle, GPU_PAGE) : -1;
    uint64_t h2 = 0;
    int c = fd >= 0 ? raw_pin(fd, va, GPU_PAGE, &h2) : -1;

    if (fd >= 0)
        close(fd);
    if (write(sv[0], "x", 1) != 1)
        a = -2;
    rc = wait_child(pid);
    t_check(a == EACCES && b == EACCES && c == EACCES && rc == 0 && live_pins() == base,
            "socket_fd_eacces", "info %d mmap %d pin %d (want EACCES), opener %d, live pins %llu",
            a, b, c, rc, (unsigned long long)live_pins());
    close(sv[0]);
    close(sv[1]);
    emu_free(va);
}

/* ---- close without unmap: the library's and the raw fd's ---------------------------------- */
static void test_close_without_unmap(void)
{
    uint64_t va = 0, handle, base = live_pins();
    gdr_t g = gdr_open();
    gdr_mh_t mh;
    void *map;
    int fd = -1, ret;

    if (!g || emu_alloc(4 * GPU_PAGE, 1, 0, &va) || gdr_pin_buffer_v2(g, va, 2 * GPU_PAGE, 0, &mh) ||
        gdr_map(g, mh, &map, 2 * GPU_PAGE)) {
        t_fail("close_without_unmap", "setup failed");
        goto out;
    }
    ret = gdr_close(g);
    g = NULL;
    t_check(!ret && live_pins() == base, "close_without_unmap", "gdr_close %d, live pins %llu (was %llu)",
            ret, (unsigned long long)live_pins(), (unsigned long long)base);

    /* Raw: the mapping outlives close(); the pin goes with the last munmap. */
    fd = open("/dev/gdrdrv", O_RDWR);
    if (fd < 0 || raw_pin(fd, va, 2 * GPU_PAGE, &handle)) {
        t_fail("raw_close_then_munmap", "setup failed");
        goto out;
    }
    map = mmap(NULL, 2 * GPU_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(handle << GUEST_PAGE_SHIFT));
    close(fd);
    fd = -1;
    if (map == MAP_FAILED) {
        t_fail("raw_close_then_munmap", "mmap: %s", strerror(errno));
        goto out;
    }
    unsigned char want[128];
    emu_read(va + GPU_PAGE, want, sizeof(want));
    int same = !memcmp((unsigned char *)map + GPU_PAGE, want, sizeof(want));
    munmap(map, 2 * GPU_PAGE);
    t_check(same && live_pins() == base, "raw_close_then_munmap",
            "data through the mapping after close %s, live pins %llu (was %llu)",
            same ? "ok" : "differs", (unsigned long long)live_pins(), (unsigned long long)base);
out:
    if (g)
        gdr_close(g);
    if (fd >= 0)
        close(fd);
    if (va)
        emu_free(va);
}

/* ---- 8 threads sharing one gdr_t ------------------------------------------------------------ */
#define THREADS 8
#define ROUNDS 40

struct worker {
    gdr_t g;
    uint64_t va;
    int id, errors;
    char why[128];
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    unsigned char in[4096], out[4096];

    for (int r = 0; r < ROUNDS && !w->errors; r++) {
        gdr_mh_t mh;
        void *map;
        int ret = gdr_pin_buffer_v2(w->g, w->va, 2 * GPU_PAGE, 0, &mh);

        if (ret) {
            snprintf(w->why, sizeof(w->why), "pin: %s", strerror(ret));
            w->errors++;
            break;
        }
        ret = gdr_map(w->g, mh, &map, 2 * GPU_PAGE);
        if (!ret) {
            fill_pattern(in, sizeof(in), (uint32_t)(w->id * 1000 + r));
            gdr_copy_to_mapping(mh, (char *)map + (r % 16) * 4096, in, sizeof(in));
            emu_read(w->va + (r % 16) * 4096, out, sizeof(out));
            if (memcmp(in, out, sizeof(in))) {
                snprintf(w->why, sizeof(w->why), "round %d: data mismatch", r);
                w->errors++;
            }
            gdr_unmap(w->g, mh, map, 2 * GPU_PAGE);
        } else {
            snprintf(w->why, sizeof(w->why), "map: %s", strerror(ret));
            w->errors++;
        }
        ret = gdr_unpin_buffer(w->g, mh);
        if (ret) {
            snprintf(w->why, sizeof(w->why), "unpin: %s", strerror(ret));
            w->errors++;
        }
    }
    return NULL;
}

static void test_threads(void)
{
    struct worker w[THREADS] = { 0 };
    pthread_t th[THREADS];
    uint64_t base = live_pins();
    gdr_t g = gdr_open();
    int errors = 0;
    const char *why = "";

    if (!g) {
        t_fail("threads", "gdr_open failed");
        return;
    }
    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct worker){ .g = g, .id = i };
        if (emu_alloc(2 * GPU_PAGE, i % 3, 0, &w[i].va)) {
            t_fail("threads", "ALLOC failed");
            goto out;
        }
    }
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        errors += w[i].errors;
        if (w[i].errors)
            why = w[i].why;
    }
    t_check(!errors && live_pins() == base, "threads_pin_map_unpin",
            "%d errors (%s), live pins %llu (was %llu)", errors, why,
            (unsigned long long)live_pins(), (unsigned long long)base);
out:
    for (int i = 0; i < THREADS; i++)
        if (w[i].va)
            emu_free(w[i].va);
    gdr_close(g);
}

/* ---- the provider frees the memory under a pin ------------------------------------------ */
/* In a child (the access may kill it): pin, map, FREE, report the flag, then touch. */
static void test_free_under_pin(int nonpersistent)
{
    uint64_t base = live_pins(), cbs = callbacks_fired();
    int pfd[2], flag = -1, rc;
    pid_t pid;

    if (pipe(pfd)) {
        t_fail("free_under_pin", "pipe");
        return;
    }
    pid = fork();
    if (pid == 0) {
        uint64_t va;
        gdr_t g = gdr_open();
        gdr_mh_t mh;
        void *map;
        int f = -1;
        unsigned char before[64], after[64];

        if (!g || emu_alloc(2 * GPU_PAGE, 1, 0, &va) || gdr_pin_buffer_v2(g, va, 2 * GPU_PAGE, 0, &mh) ||
            gdr_map(g, mh, &map, 2 * GPU_PAGE))
            _exit(20);
        gdr_copy_from_mapping(mh, before, map, sizeof(before));
        if (emu_free(va))
            _exit(21);
        if (gdr_get_callback_flag(g, mh, &f))
            _exit(22);
        if (write(pfd[1], &f, sizeof(f)) != sizeof(f))
            _exit(23);
        signal(SIGBUS, SIG_DFL);
        memcpy(after, (void *)map, sizeof(after));    /* SIGBUS when the pages are gone */
        _exit(memcmp(before, after, sizeof(after)) ? 24 : 0);
    }
    close(pfd[1]);
    if (read(pfd[0], &flag, sizeof(flag)) != sizeof(flag))
        flag = -1;
    close(pfd[0]);
    rc = wait_child(pid);
    if (nonpersistent) {
        t_check(flag == 1, "free_sets_callback_flag", "flag %d (child status %d)", flag, rc);
        t_check(rc == 128 + SIGBUS, "access_after_free_sigbus", "child status %d (want SIGBUS)", rc);
        t_check(callbacks_fired() == cbs + 1, "callback_fired_once", "callbacks %llu -> %llu",
                (unsigned long long)cbs, (unsigned long long)callbacks_fired());
    } else {
        t_check(flag == 0, "persistent_free_no_flag", "flag %d (child status %d)", flag, rc);
        t_check(rc == 0, "persistent_pages_stay_valid", "child status %d (want 0: same data)", rc);
    }
    t_check(live_pins() == base, "free_under_pin_no_leak", "live pins %llu (was %llu)",
            (unsigned long long)live_pins(), (unsigned long long)base);
}

/* After the callback, the owner unmaps and unpins normally: no error, no double release. */
static void test_unpin_after_callback(void)
{
    uint64_t va = 0, base = live_pins();
    gdr_t g = gdr_open();
    gdr_mh_t mh;
    void *map;
    int flag = -1, a, b;

    if (!g || emu_alloc(2 * GPU_PAGE, 1, 0, &va) || gdr_pin_buffer_v2(g, va, 2 * GPU_PAGE, 0, &mh) ||
        gdr_map(g, mh, &map, 2 * GPU_PAGE)) {
        t_fail("unpin_after_callback", "setup failed");
        if (g)
            gdr_close(g);
        return;
    }
    emu_free(va);
    gdr_get_callback_flag(g, mh, &flag);
    a = gdr_unmap(g, mh, map, 2 * GPU_PAGE);
    b = gdr_unpin_buffer(g, mh);
    t_check(flag == 1 && !a && !b && live_pins() == base, "unpin_after_callback",
            "flag %d unmap %d unpin %d live pins %llu (was %llu)", flag, a, b,
            (unsigned long long)live_pins(), (unsigned long long)base);
    gdr_close(g);
}

/* Unpin racing a slow callback: put_pages must wait for it; nothing leaks or deadlocks. */
struct racer {
    uint64_t va;
    int ret;
};

static void *free_thread(void *arg)
{
    struct racer *r = arg;

    r->ret = emu_free(r->va);
    return NULL;
}

static void test_unpin_races_callback(void)
{
    struct racer r = { 0 };
    uint64_t base = live_pins(), cbs = callbacks_fired();
    gdr_t g = gdr_open();
    gdr_mh_t mh;
    void *map;
    pthread_t th;
    struct timespec ts = { 0, 300 * 1000 * 1000 };

    if (!g || emu_alloc(2 * GPU_PAGE, 1, 0, &r.va) || gdr_pin_buffer_v2(g, r.va, 2 * GPU_PAGE, 0, &mh) ||
        gdr_map(g, mh, &map, 2 * GPU_PAGE) || emu_cb_delay(1000)) {
        t_fail("unpin_races_callback", "setup failed");
        if (g)
            gdr_close(g);
        return;
    }
    pthread_create(&th, NULL, free_thread, &r);
    nanosleep(&ts, NULL);               /* FREE is now sleeping with the callback due (1 s) */
    struct timespec t0, t1;
    int a = gdr_unmap(g, mh, map, 2 * GPU_PAGE);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int b = gdr_unpin_buffer(g, mh);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_join(th, NULL);
    /* Informational: put_pages waiting for the callback shows as a long unpin. */
    printf("# unpin during the callback window took %ld ms\n",
           (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000));
    emu_cb_delay(0);
    t_check(!r.ret && !a && !b && live_pins() == base && callbacks_fired() == cbs + 1,
            "unpin_races_callback", "free %d unmap %d unpin %d live pins %llu (was %llu) callbacks +%llu",
            r.ret, a, b, (unsigned long long)live_pins(), (unsigned long long)base,
            (unsigned long long)(callbacks_fired() - cbs));
    gdr_close(g);
}

/* FREE and unmap/unpin racing, many times with shifting timing: no crash, leak or deadlock. */
static void test_free_unpin_stress(void)
{
    uint64_t base = live_pins();
    gdr_t g = gdr_open();
    int rounds = 40, done = 0;

    if (!g) {
        t_fail("free_unpin_stress", "gdr_open failed");
        return;
    }
    for (int i = 0; i < rounds; i++) {
        struct racer r = { 0 };
        gdr_mh_t mh;
        void *map;
        pthread_t th;
        struct timespec ts = { 0, (i % 8) * 250 * 1000 };

        if (emu_alloc(2 * GPU_PAGE, i % 3, 0, &r.va))
            break;
        if (gdr_pin_buffer_v2(g, r.va, 2 * GPU_PAGE, 0, &mh) || gdr_map(g, mh, &map, 2 * GPU_PAGE)) {
            emu_free(r.va);
            break;
        }
        pthread_create(&th, NULL, free_thread, &r);
        nanosleep(&ts, NULL);
        gdr_unmap(g, mh, map, 2 * GPU_PAGE);
        gdr_unpin_buffer(g, mh);
        pthread_join(th, NULL);
        done++;
    }
    gdr_close(g);
    t_check(done == rounds && live_pins() == base, "free_unpin_stress", "%d of %d rounds, live pins %llu (was %llu)",
            done, rounds, (unsigned long long)live_pins(), (unsigned long long)base);
}

/* A process exits (its fd released) while the free callback of its pin is due. */
static void test_exit_races_callback(void)
{
    uint64_t base = live_pins(), cbs = callbacks_fired();
    struct racer r = { 0 };
    int ready[2], go[2], rc;
    char c = 0;
    pthread_t th;
    pid_t pid;
    struct timespec ts = { 0, 200 * 1000 * 1000 };

    if (emu_alloc(2 * GPU_PAGE, 1, 0, &r.va) || pipe(ready) || pipe(go)) {
        t_fail("exit_races_callback", "setup failed");
        return;
    }
    pid = fork();
    if (pid == 0) {
        gdr_t g = gdr_open();
        gdr_mh_t mh;
        void *map;

        if (!g || gdr_pin_buffer_v2(g, r.va, 2 * GPU_PAGE, 0, &mh) || gdr_map(g, mh, &map, 2 * GPU_PAGE))
            _exit(1);
        if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
            _exit(2);
        _exit(0);                      /* pins and mapping released by exit */
    }
    if (read(ready[0], &c, 1) != 1 || emu_cb_delay(800)) {
        t_fail("exit_races_callback", "child did not pin");
        kill(pid, SIGKILL);
        wait_child(pid);
        emu_free(r.va);
        return;
    }
    pthread_create(&th, NULL, free_thread, &r);
    nanosleep(&ts, NULL);
    if (write(go[1], "g", 1) != 1)
        c = 0;
    rc = wait_child(pid);
    pthread_join(th, NULL);
    emu_cb_delay(0);
    t_check(rc == 0 && !r.ret && live_pins() == base && callbacks_fired() == cbs + 1, "exit_races_callback",
            "child %d free %d live pins %llu (was %llu) callbacks +%llu", rc, r.ret,
            (unsigned long long)live_pins(), (unsigned long long)base,
            (unsigned long long)(callbacks_fired() - cbs));
    close(ready[0]); close(ready[1]); close(go[0]); close(go[1]);
}

/*
 * No stale PTE after a free: while a reader thread keeps faulting pages of the mapping in,
 * FREE fires the callback; afterwards every page must raise SIGBUS (a PTE left behind would
 * read memory the provider already gave back). Runs in a child: the faults are expected.
 */
static __thread sigjmp_buf bus_jmp;
static __thread volatile int bus_armed;
static volatile int reader_stop;

static void on_bus(int sig)
{
    (void)sig;
    if (bus_armed)
        siglongjmp(bus_jmp, 1);
    _exit(90);
}

/* 1 if reading the byte raised SIGBUS, 0 if it read. */
static int touch_faults(volatile unsigned char *p)
{
    if (sigsetjmp(bus_jmp, 1)) {
        bus_armed = 0;
        return 1;
    }
    bus_armed = 1;
    (void)*p;
    bus_armed = 0;
    return 0;
}

struct reader { volatile unsigned char *map; size_t pages; };

static void *reader_main(void *arg)
{
    struct reader *r = arg;
    unsigned long i = 0;

    while (!reader_stop)
        touch_faults(r->map + (i++ % r->pages) * 4096);
    return NULL;
}

static void test_no_stale_pte(void)
{
    uint64_t base = live_pins();
    pid_t pid = fork();

    if (pid == 0) {
        const size_t pages = 64;          /* 4 KiB GPU pages: one PTE each */
        uint64_t va;
        gdr_t g = gdr_open();
        gdr_mh_t mh;
        void *map;
        struct reader r;
        pthread_t th;
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        int readable = 0;

        if (!g || emu_alloc(pages * 4096, 0, 0, &va) || gdr_pin_buffer_v2(g, va, pages * 4096, 0, &mh) ||
            gdr_map(g, mh, &map, pages * 4096))
            _exit(80);
        signal(SIGBUS, on_bus);
        r = (struct reader){ map, pages };
        pthread_create(&th, NULL, reader_main, &r);
        nanosleep(&ts, NULL);
        if (emu_free(va))
            _exit(81);
        reader_stop = 1;
        pthread_join(th, NULL);
        for (size_t i = 0; i < pages; i++)
            readable += !touch_faults((volatile unsigned char *)map + i * 4096);
        _exit(readable ? 82 : 0);
    }
    int rc = wait_child(pid);
    t_check(rc == 0 && live_pins() == base, "no_stale_pte_after_free",
            "child status %d (82: pages still readable after the callback), live pins %llu (was %llu)",
            rc, (unsigned long long)live_pins(), (unsigned long long)base);
}

/* ---- --hold: for the unload-while-held test of /init --------------------------------------- */
static int hold(void)
{
    uint64_t va;
    gdr_t g = gdr_open();
    gdr_mh_t a, b;
    void *map;

    if (!g || emu_alloc(4 * GPU_PAGE, 1, 0, &va) || gdr_pin_buffer_v2(g, va, 2 * GPU_PAGE, 0, &a) ||
        gdr_pin_buffer_v2(g, va + 2 * GPU_PAGE, 2 * GPU_PAGE, 0, &b) || gdr_map(g, a, &map, 2 * GPU_PAGE)) {
        printf("hold: setup failed\n");
        return 1;
    }
    printf("holding\n");
    fflush(stdout);
    for (;;)
        pause();
}

int main(int argc, char **argv)
{
    int nonpersistent = argc > 1 && !strcmp(argv[1], "--nonpersistent");

    if (emu_fd() < 0) {
        printf("not ok setup: %s: %s\n", NVP2P_EMU_DEVICE, strerror(errno));
        return 1;
    }
    if (argc > 1 && !strcmp(argv[1], "--hold"))
        return hold();
    if (argc > 1 && !strcmp(argv[1], "--stress")) {
        /* Run last by /init: it races a callback's zap with munmap (see zap_test.c). */
        test_free_unpin_stress();
        return t_exit_status();
    }
    test_exit_releases();
    test_fork();
    test_socket_passing();
    test_close_without_unmap();
    test_threads();
    test_free_under_pin(nonpersistent);
    if (nonpersistent) {
        test_unpin_after_callback();
        test_unpin_races_callback();
        test_exit_races_callback();
        test_no_stale_pte();
    }
    return t_exit_status();
}

// SPDX-License-Identifier: MIT
/*
 * safety_test.c - what must never crash, leak or leak access, through the real library
 * (static) and, where the library hides the file descriptor, through raw ioctls of the uapi:
 * process exit with pins and mappings held; fork (mappings not inherited, the inherited fd
 * refused with EACCES); an fd passed over a UNIX socket; close without unmap; 8 threads
 * sharing one gdr_t. The free callback's tests are in callback_test.c.
 *   safety_test          the tests (either module mode)
 *   safety_test --hold   pin and map, print "holding", wait to be killed (unload-while-held)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gdrapi.h>

#include "t.h"
#include "emu.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
#define GUEST_PAGE_SHIFT 12    /* x86_64 guest: mmap offset = handle << PAGE_SHIFT */

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
    uint64_t va = 0, base = emu_live_pins();
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
        _exit(emu_live_pins() == base + 3 ? 0 : 13);   /* no unmap, no unpin, no close */
    }
    int rc = t_wait_child(pid, 60);
    t_check(rc == 0 && emu_live_pins() == base, "exit_releases",
            "child status %d, live pins %llu (was %llu)", rc, (unsigned long long)emu_live_pins(),
            (unsigned long long)base);
    emu_free(va);
}

/* ---- fork: the child reaches neither the mapping nor the fd ------------------------------- */

/* The child touching the parent's mapping: not inherited, so SIGSEGV, even with MADV_DOFORK. */
static void test_fork_mapping(void *map)
{
    pid_t pid = fork();
    int rc;

    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        (void)*(volatile unsigned char *)map;
        _exit(0);
    }
    rc = t_wait_child(pid, 60);
    t_check(rc == 128 + SIGSEGV, "fork_mapping_not_inherited", "child status %d (want SIGSEGV)",
            rc);

    /* Asking for the mapping to be inherited must not work either (VM_IO refuses DOFORK). */
    int dofork = madvise(map, 2 * GPU_PAGE, MADV_DOFORK) ? errno : 0;
    pid = fork();
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        (void)*(volatile unsigned char *)map;
        _exit(0);
    }
    rc = t_wait_child(pid, 60);
    t_check(rc == 128 + SIGSEGV, "fork_dofork_not_inherited",
            "madvise(MADV_DOFORK) %d, child status %d (want SIGSEGV)", dofork, rc);
}

/* The inherited fd: every ioctl and mmap refused with EACCES. */
static void test_fork_fd(int fd, uint64_t handle, uint64_t va)
{
    pid_t pid = fork();

    if (pid == 0) {
        uint64_t h2;
        int a = raw_info_errno(fd, handle), b = raw_mmap_errno(fd, handle, GPU_PAGE);
        int c = raw_pin(fd, va, GPU_PAGE, &h2);
        struct gdrdrv_unpin_buffer u = { .handle = handle };
        int d = ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;

        printf("# child: info %d mmap %d pin %d unpin %d\n", a, b, c, d);
        _exit(a == EACCES && b == EACCES && c == EACCES && d == EACCES ? 0 : 1);
    }
    int rc = t_wait_child(pid, 60);
    t_check(rc == 0, "fork_fd_eacces", "child status %d (ioctl/mmap not all EACCES)", rc);
}

/* The library in the child: a clean error, not a crash. */
static void test_fork_library(gdr_t g, gdr_mh_t mh, uint64_t va)
{
    pid_t pid = fork();

    if (pid == 0) {
        gdr_mh_t m2;
        gdr_info_t info;
        int a = gdr_pin_buffer_v2(g, va, GPU_PAGE, 0, &m2);
        void *p2;
        int b = gdr_map(g, mh, &p2, GPU_PAGE);

        (void)gdr_get_info_v2(g, mh, &info);
        _exit(a && b ? 0 : 1);
    }
    int rc = t_wait_child(pid, 60);
    t_check(rc == 0, "fork_library_refused", "child status %d", rc);
}

/* A library pin mapped and a raw pin; children of the process reach neither. */
static void test_fork(void)
{
    uint64_t va = 0, handle = 0;
    gdr_t g = gdr_open();
    gdr_mh_t mh = { 0 };
    void *map = NULL;
    int fd = open("/dev/gdrdrv", O_RDWR);

    if (!g || fd < 0 || emu_alloc(4 * GPU_PAGE, 1, 0, &va) ||
        gdr_pin_buffer_v2(g, va, 2 * GPU_PAGE, 0, &mh) || gdr_map(g, mh, &map, 2 * GPU_PAGE) ||
        raw_pin(fd, va + 2 * GPU_PAGE, 2 * GPU_PAGE, &handle)) {
        t_fail("fork", "setup failed");
        goto out;
    }
    test_fork_mapping(map);
    test_fork_fd(fd, handle, va);
    test_fork_library(g, mh, va);

    /* And the parent still owns everything. */
    unsigned char buf[64], want[64];
    emu_read(va, want, sizeof(want));
    gdr_copy_from_mapping(mh, buf, map, sizeof(buf));
    t_check(!memcmp(buf, want, sizeof(buf)) && !raw_info_errno(fd, handle),
            "fork_parent_unaffected", "parent lost its mapping or pin");
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
static void test_socket_passing(void)
{
    uint64_t va = 0, handle = 0, base = emu_live_pins();
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

        if (fd < 0 || raw_pin(fd, va, 2 * GPU_PAGE, &handle) || t_send_fd(sv[1], fd, handle))
            _exit(1);
        _exit(read(sv[1], &c, 1) == 1 ? 0 : 2);
    }
    int fd = t_recv_fd(sv[0], &handle);
    int a = fd >= 0 ? raw_info_errno(fd, handle) : -1;
    int b = fd >= 0 ? raw_mmap_errno(fd, handle, GPU_PAGE) : -1;
    uint64_t h2 = 0;
    int c = fd >= 0 ? raw_pin(fd, va, GPU_PAGE, &h2) : -1;

    if (fd >= 0)
        close(fd);
    if (write(sv[0], "x", 1) != 1)
        a = -2;
    rc = t_wait_child(pid, 60);
    t_check(a == EACCES && b == EACCES && c == EACCES && rc == 0 && emu_live_pins() == base,
            "socket_fd_eacces", "info %d mmap %d pin %d (want EACCES), opener %d, live pins %llu",
            a, b, c, rc, (unsigned long long)emu_live_pins());
    close(sv[0]);
    close(sv[1]);
    emu_free(va);
}

/* ---- close without unmap: the library's and the raw fd's ---------------------------------- */
static void test_close_without_unmap(void)
{
    uint64_t va = 0, handle, base = emu_live_pins();
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
    t_check(!ret && emu_live_pins() == base, "close_without_unmap", "gdr_close %d, live pins %llu (was %llu)",
            ret, (unsigned long long)emu_live_pins(), (unsigned long long)base);

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
    t_check(same && emu_live_pins() == base, "raw_close_then_munmap",
            "data through the mapping after close %s, live pins %llu (was %llu)",
            same ? "ok" : "differs", (unsigned long long)emu_live_pins(), (unsigned long long)base);
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
            t_pattern(in, sizeof(in), (uint32_t)(w->id * 1000 + r));
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
    uint64_t base = emu_live_pins();
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
    t_check(!errors && emu_live_pins() == base, "threads_pin_map_unpin",
            "%d errors (%s), live pins %llu (was %llu)", errors, why,
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
out:
    for (int i = 0; i < THREADS; i++)
        if (w[i].va)
            emu_free(w[i].va);
    gdr_close(g);
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
    if (emu_fd() < 0) {
        t_fail("setup", "%s: %s", NVP2P_EMU_DEVICE, strerror(errno));
        return 1;
    }
    if (argc > 1 && !strcmp(argv[1], "--hold"))
        return hold();
    test_exit_releases();
    test_fork();
    test_socket_passing();
    test_close_without_unmap();
    test_threads();
    return t_status();
}

/* SPDX-License-Identifier: MIT */
/* harness.c - reporting, allocation, pin/map and fault helpers of gdrcopy_sanity tests. */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cuda_loader.h"

struct t_env T = { .report_fd = -1 };

/* Failures recorded by T_CHECK in this process (any thread), reported when the test ends. */
static pthread_mutex_t recorded_lock = PTHREAD_MUTEX_INITIALIZER;
#define RECORDED_IN_FULL 4
static char recorded[768];
static int recorded_count;

/* One report to the runner, ended by its NUL: the runner joins those of a test and of its
 * children. */
static void send_line(const char *line)
{
    if (T.report_fd >= 0) {
        ssize_t w = write(T.report_fd, line, strlen(line) + 1);
        (void)w;
    } else {
        fprintf(stderr, "%s\n", line);
    }
}

/* "file:line: " + the message, on one line. */
static void format_reason(char *buf, size_t len, const char *file, int line, const char *fmt,
                          va_list ap)
{
    const char *base = file ? strrchr(file, '/') : NULL;
    int n = 0;

    if (file)
        n = snprintf(buf, len, "%s:%d: ", base ? base + 1 : file, line);
    vsnprintf(buf + n, len - (size_t)n, fmt, ap);
    for (char *p = buf; *p; p++)
        if (*p == '\n')
            *p = ' ';
}

/* The recorded failures, then (when reason is not NULL) the one that ends the test. */
static void report_failures(const char *reason)
{
    char line[1024], more[32] = "";

    pthread_mutex_lock(&recorded_lock);
    if (recorded_count > RECORDED_IN_FULL)
        snprintf(more, sizeof(more), "; and %d more", recorded_count - RECORDED_IN_FULL);
    snprintf(line, sizeof(line), "%s%s%s%s", recorded, more,
             recorded_count && reason ? "; then " : "", reason ? reason : "");
    pthread_mutex_unlock(&recorded_lock);
    send_line(line);
}

void t_fail_exit_at(const char *file, int line, const char *fmt, ...)
{
    char why[1024];
    va_list ap;

    va_start(ap, fmt);
    format_reason(why, sizeof(why), file, line, fmt, ap);
    va_end(ap);
    report_failures(why);
    fflush(NULL);
    _exit(1);
}

void t_record_at(const char *file, int line, const char *fmt, ...)
{
    char why[512];
    size_t used;
    va_list ap;

    va_start(ap, fmt);
    format_reason(why, sizeof(why), file, line, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&recorded_lock);
    used = strlen(recorded);
    /* The first few reasons in full; the rest only counted (the runner prints one line). */
    if (recorded_count < RECORDED_IN_FULL)
        snprintf(recorded + used, sizeof(recorded) - used, "%s%s", recorded_count ? "; " : "", why);
    recorded_count++;
    pthread_mutex_unlock(&recorded_lock);
}

int t_report_recorded(void)
{
    int n;

    pthread_mutex_lock(&recorded_lock);
    n = recorded_count;
    pthread_mutex_unlock(&recorded_lock);
    if (n)
        report_failures(NULL);
    return n;
}

/* A forked child starts with nothing recorded (what its parent recorded is the parent's), and
 * with a fresh lock: another thread of the parent may have held it at the fork. */
static void forget_recorded(void)
{
    pthread_mutex_init(&recorded_lock, NULL);
    recorded[0] = '\0';
    recorded_count = 0;
}

void t_skip_exit(const char *fmt, ...)
{
    char why[1024];
    va_list ap;

    va_start(ap, fmt);
    format_reason(why, sizeof(why), NULL, 0, fmt, ap);
    va_end(ap);
    send_line(why);
    fflush(NULL);
    _exit(77);
}

void t_log(const char *fmt, ...)
{
    va_list ap;

    if (!T.verbose)
        return;
    va_start(ap, fmt);
    printf("    # ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

gdr_t t_open(void)
{
    char why[256];
    gdr_t g = gdr_open();

    if (g)
        return g;
    snprintf(why, sizeof(why), "%s", vramio_last_error());
    t_fail_exit("gdr_open() returned NULL: %s", why);
}

void t_alloc(size_t size, struct gm_buf *buf)
{
    char why[256];
    int rc = gm_alloc(T.kind, size, buf, why, sizeof(why));

    if (rc == ENOMEM || rc == EOPNOTSUPP || rc == ENODEV)
        t_skip_exit("cannot allocate %zu bytes of %s memory: %s", size, gm_kind_name(T.kind), why);
    T_ASSERT(rc == 0, "allocating %zu bytes of %s memory: %s", size, gm_kind_name(T.kind), why);
    t_log("allocated %zu bytes of %s memory at 0x%" PRIx64, buf->alloc_size,
          gm_kind_name(T.kind), buf->dptr);
}

void t_free(struct gm_buf *buf)
{
    T_ASSERT_OK(gm_free(buf));
}

const char *t_backend(gdr_t g)
{
    vramio_backend_t b = VRAMIO_BACKEND_NONE;

    vramio_get_backend(g, &b);
    return vramio_backend_name(b) ? vramio_backend_name(b) : "?";
}

int t_force_pcie_must_pin(gdr_t g)
{
    const struct vr_cuda *cu = gm_cuda();
    int supported = 0, coherent = 0;

    T_ASSERT_OK(gdr_get_attribute(g, GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE, &supported));
    /* Memory without CUDA (the emulated provider's): whether its platform is coherent is not
     * known here, so the flag's answer is not judged (tests/kernel/guest/coherent_test.c is). */
    if (cu && cu->cuDeviceGetAttribute &&
        cu->cuDeviceGetAttribute(&coherent,
                                 CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
                                 (CUdevice)gm_cuda_device()) != CUDA_SUCCESS)
        coherent = 0;
    return supported && coherent;
}

char *t_pin_map(gdr_t g, uint64_t addr, size_t size, gdr_mh_t *mh, void **map, size_t *map_size)
{
    gdr_info_t info;

    T_ASSERT_OK(gdr_pin_buffer_v2(g, addr, size, GDR_PIN_FLAG_DEFAULT, mh));
    T_ASSERT(mh->h != 0, "gdr_pin_buffer_v2 succeeded but returned the null handle");
    T_ASSERT_OK(gdr_get_info(g, *mh, &info));
    T_ASSERT(info.va <= addr && addr + size <= info.va + info.mapped_size,
             "info (va 0x%" PRIx64 ", size %" PRIu64 ") does not cover [0x%" PRIx64 ", +%zu)",
             info.va, info.mapped_size, addr, size);
    *map_size = info.mapped_size;
    T_ASSERT_OK(gdr_map(g, *mh, map, *map_size));
    T_ASSERT(*map != NULL, "gdr_map succeeded but returned NULL");
    return (char *)*map + (addr - info.va);
}

void t_unmap_unpin(gdr_t g, gdr_mh_t mh, void *map, size_t map_size)
{
    T_ASSERT_OK(gdr_unmap(g, mh, map, map_size));
    T_ASSERT_OK(gdr_unpin_buffer(g, mh));
}

/* xorshift32: cheap, and every 4-byte word differs from its neighbours. */
void t_pattern(void *buf, size_t n, uint32_t seed)
{
    uint32_t x = seed ? seed : 0x9e3779b9u;
    unsigned char *p = buf;

    for (size_t i = 0; i < n; i++) {
        if ((i & 3) == 0) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
        }
        p[i] = (unsigned char)(x >> ((i & 3) * 8));
    }
}

void t_compare(const void *want, const void *got, size_t n, const char *what)
{
    const unsigned char *a = want, *b = got;

    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            t_fail_exit("%s: data differs at offset %zu of %zu (want 0x%02x, got 0x%02x)", what,
                        i, n, a[i], b[i]);
}

void t_check_gpu(const struct gm_buf *b, size_t off, const void *want, size_t n, const char *what)
{
    void *got = malloc(n);

    T_ASSERT(got, "out of memory");
    memset(got, 0x5a, n);
    T_ASSERT_OK(gm_read(b, off, got, n));
    t_compare(want, got, n, what);
    free(got);
}

static sigjmp_buf access_jmp;
static volatile sig_atomic_t access_sig;

static void access_handler(int sig)
{
    access_sig = sig;
    siglongjmp(access_jmp, 1);
}

int t_access(volatile char *p, int write)
{
    struct sigaction sa, old_segv, old_bus;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = access_handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
    access_sig = 0;
    if (sigsetjmp(access_jmp, 1) == 0) {
        if (write)
            *p = 0x42;
        else
            (void)*p;
    }
    sigaction(SIGSEGV, &old_segv, NULL);
    sigaction(SIGBUS, &old_bus, NULL);
    return access_sig;
}

int t_count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    while (d && readdir(d))
        n++;
    if (d)
        closedir(d);
    return n;
}

void t_init_kind(void)
{
    char why[512];

    if (gm_init(T.kind, T.gpu, why, sizeof(why)))
        t_skip_exit("%s", why);
}

int t_wait_child(pid_t pid, unsigned seconds)
{
    unsigned long waited_ms = 0;
    int status;
    pid_t r;

    for (;;) {
        r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        T_ASSERT(r == 0 || errno == EINTR, "waitpid: %s", strerror(errno));
        if (waited_ms >= seconds * 1000ul) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            t_fail_exit("the child (pid %d) did not end within %u s: killed", (int)pid, seconds);
        }
        usleep(10000);
        waited_ms += 10;
    }
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

static pid_t fork_running(int (*fn)(void *), void *arg, int through_exit)
{
    pid_t pid;

    fflush(NULL);
    pid = fork();
    T_ASSERT(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int rc;

        forget_recorded();
        alarm(60);
        rc = fn(arg);
        if (t_report_recorded())
            rc = 1;
        if (through_exit)
            exit(rc);
        fflush(NULL);
        _exit(rc);
    }
    return pid;
}

pid_t t_fork(int (*fn)(void *), void *arg)
{
    return fork_running(fn, arg, 1);
}

int t_in_child_ending(int (*fn)(void *), void *arg, int through_exit)
{
    return t_wait_child(fork_running(fn, arg, through_exit), 60);
}

int t_in_child(int (*fn)(void *), void *arg)
{
    return t_in_child_ending(fn, arg, 1);
}

/* ---- the child side of the runner's steps (tools/sanity.c) ---- */

void t_child_backend(void *arg)
{
    char line[1024];
    size_t used;
    gdr_t g = gdr_open();

    (void)arg;
    if (g) {
        send_line(t_backend(g));
        gdr_close(g);
        _exit(0);
    }
    used = (size_t)snprintf(line, sizeof(line), "no backend can map GPU memory here:");
    for (int b = VRAMIO_BACKEND_GDRDRV; b < VRAMIO_BACKEND_COUNT && used < sizeof(line); b++) {
        char why[256] = "";

        vramio_backend_probe((vramio_backend_t)b, why, sizeof(why));
        used += (size_t)snprintf(line + used, sizeof(line) - used, "\n  %s: %s",
                                 vramio_backend_name((vramio_backend_t)b), why);
    }
    send_line(line);
    _exit(3);
}

void t_child_kind(void *arg)
{
    struct gm_buf b;
    gdr_mh_t mh;
    gdr_t g;

    (void)arg;
    t_init_kind();
    g = gdr_open();
    if (!g)
        t_fail_exit("gdr_open() failed: %s", vramio_last_error());
    t_alloc(2 * GPU_PAGE_SIZE, &b);
    if (gdr_pin_buffer_v2(g, b.dptr, 2 * GPU_PAGE_SIZE, 0, &mh))
        t_skip_exit("the %s backend does not pin %s memory: %s", t_backend(g),
                    gm_kind_name(T.kind), vramio_last_error());
    gdr_unpin_buffer(g, mh);
    gdr_close(g);
    gm_free(&b);
}

void t_child_case(void *arg)
{
    const struct t_case *tc = arg;

    if (!(tc->flags & (T_ONCE | T_FORK_FIRST)))
        t_init_kind();
    tc->fn();
}

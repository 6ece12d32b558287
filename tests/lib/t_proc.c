/* SPDX-License-Identifier: MIT */
/* t_proc.c - the test kit's process helpers: re-running this program in a child, bounded
 * waits, a read that may fault, fd passing, small files such as sysfs parameters (see t.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "t.h"

const char *t_child_mode(int argc, char **argv)
{
    return argc == 3 && strcmp(argv[1], "--child") == 0 ? argv[2] : NULL;
}

int t_fake_cuda_dir(const char *family, char *dir, size_t len)
{
    char self[4096], lib[4096 + 64];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char *slash;

    self[n > 0 ? n : 0] = '\0';
    slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    snprintf(dir, len, "%s/fake/%s", self, family);
    snprintf(lib, sizeof(lib), "%s/libcuda.so.1", dir);
    return n > 0 && access(lib, R_OK) == 0;
}

static const char *const gdrcopy_vars[] = {
    "GDRCOPY_BACKEND", "GDRCOPY_USE_DMABUF_MMAP", "GDRCOPY_ENABLE_LOGGING",
    "GDRCOPY_LOG_LEVEL", "GDRCOPY_COPY_KERNEL", NULL,
};

int t_run_self(const char *mode, const char *const *env, char *out, size_t len, int *sig)
{
    char self[4096];
    size_t used = 0;
    ssize_t n, got;
    int fds[2], status, i;
    pid_t pid;
    const char *launcher = getenv("VRAMIO_TEST_LAUNCHER");

    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n < 0 || pipe(fds) != 0)
        return -1;
    self[n] = '\0';
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        for (i = 0; gdrcopy_vars[i]; i++)
            unsetenv(gdrcopy_vars[i]);
        for (i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        /* Under qemu-user without binfmt_misc (tests/cross/) the kernel cannot run this
         * foreign program itself: the emulator named by VRAMIO_TEST_LAUNCHER runs the child. */
        if (launcher && *launcher)
            execlp(launcher, launcher, self, "--child", mode, (char *)NULL);
        else
            execl(self, self, "--child", mode, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    for (;;) {
        char sink[4096];
        char *dst = used + 1 < len ? out + used : sink;
        size_t room = used + 1 < len ? len - 1 - used : sizeof(sink);

        got = read(fds[0], dst, room);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        if (dst != sink)
            used += (size_t)got;
    }
    close(fds[0]);
    if (len)
        out[used] = '\0';
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (sig)
        *sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return -1;
}

int t_wait_bounded(pid_t pid, int *status, unsigned seconds)
{
    struct timespec nap = { 0, 10 * 1000 * 1000 };
    unsigned long waited_ms = 0;
    pid_t r;

    for (;;) {
        r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
        if (waited_ms >= seconds * 1000ul) {
            kill(pid, SIGKILL);
            waitpid(pid, status, 0);
            return -1;
        }
        nanosleep(&nap, NULL);
        waited_ms += 10;
    }
}

int t_wait_child(pid_t pid, unsigned seconds)
{
    int st;

    if (t_wait_bounded(pid, &st, seconds) != 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static sem_t *_Atomic arm_go, *arm_reached;
static _Atomic int arm_saw;

static void arm_prepare(void)
{
    sem_t *go = atomic_exchange(&arm_go, NULL);

    if (!go)
        return;
    sem_post(go);
    arm_saw = t_sem_wait(arm_reached, 10) == 0;
}

static void arm_register(void)
{
    pthread_atfork(arm_prepare, NULL, NULL);
}

void t_fork_arm(sem_t *go, sem_t *reached)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, arm_register);
    arm_saw = 0;
    arm_reached = reached;
    atomic_store(&arm_go, go);
}

int t_fork_armed_saw(void)
{
    return arm_saw;
}

int t_sem_wait(sem_t *s, unsigned seconds)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += seconds;
    while (sem_timedwait(s, &ts) != 0)
        if (errno != EINTR)
            return -1;
    return 0;
}

int t_join_within(pthread_t th, unsigned ms, void **ret)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return pthread_timedjoin_np(th, ret, &ts);
}

static sigjmp_buf touch_jmp;
static volatile sig_atomic_t touch_sig;

static void touch_handler(int sig)
{
    touch_sig = sig;
    siglongjmp(touch_jmp, 1);
}

int t_touch_faults(const volatile void *p)
{
    struct sigaction sa, old_segv, old_bus;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = touch_handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
    touch_sig = 0;
    if (sigsetjmp(touch_jmp, 1) == 0)
        (void)*(const volatile char *)p;
    sigaction(SIGSEGV, &old_segv, NULL);
    sigaction(SIGBUS, &old_bus, NULL);
    return touch_sig;
}

int t_send_fd(int sock, int fd, uint64_t handle)
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
    return sendmsg(sock, &msg, 0) == (ssize_t)sizeof(handle) ? 0 : -1;
}

int t_recv_fd(int sock, uint64_t *handle)
{
    char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
    struct iovec iov = { .iov_base = handle, .iov_len = sizeof(*handle) };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                          .msg_controllen = sizeof(cbuf) };
    struct cmsghdr *c;
    int fd;

    if (recvmsg(sock, &msg, 0) != (ssize_t)sizeof(*handle))
        return -1;
    c = CMSG_FIRSTHDR(&msg);
    if (!c || c->cmsg_type != SCM_RIGHTS)
        return -1;
    memcpy(&fd, CMSG_DATA(c), sizeof(int));
    return fd;
}

int t_count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = -1;         /* the directory's own */

    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

int t_count_maps(const char *needle)
{
    FILE *f = fopen("/proc/self/maps", "re");
    char line[512];
    int n = 0;

    while (f && fgets(line, sizeof(line), f))
        n += strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return n;
}

int t_fd_room(int room, struct rlimit *old)
{
    struct rlimit rl;
    int fd = dup(0);

    getrlimit(RLIMIT_NOFILE, old);
    rl = *old;
    rl.rlim_cur = (rlim_t)(fd + room);
    close(fd);
    setrlimit(RLIMIT_NOFILE, &rl);
    return fd + room;
}

int t_write_file(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC), e = 0;

    if (fd < 0)
        return errno;
    if (write(fd, s, strlen(s)) < 0)
        e = errno;
    close(fd);
    return e;
}

long t_read_long(const char *path)
{
    FILE *f = fopen(path, "r");
    long n = -1;

    if (f) {
        if (fscanf(f, "%ld", &n) != 1)
            n = -1;
        fclose(f);
    }
    return n;
}

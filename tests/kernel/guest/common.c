// SPDX-License-Identifier: MIT
/* common.c - result lines and provider control wrappers for the QEMU guest tests. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

int t_failures;

static void t_line(const char *prefix, const char *name, const char *fmt, va_list ap)
{
    printf("%s %s", prefix, name);
    if (fmt) {
        printf(": ");
        vprintf(fmt, ap);
    }
    printf("\n");
    fflush(stdout);
}

void t_ok(const char *name)
{
    printf("ok %s\n", name);
    fflush(stdout);
}

void t_fail(const char *name, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    t_line("not ok", name, fmt, ap);
    va_end(ap);
    t_failures++;
}

void t_skip(const char *name, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    t_line("skip", name, fmt, ap);
    va_end(ap);
}

int t_check(int cond, const char *name, const char *fmt, ...)
{
    va_list ap;

    if (cond) {
        t_ok(name);
        return 1;
    }
    va_start(ap, fmt);
    t_line("not ok", name, fmt, ap);
    va_end(ap);
    t_failures++;
    return 0;
}

int t_exit_status(void)
{
    return t_failures ? 1 : 0;
}

int emu_fd(void)
{
    static int fd = -1;

    if (fd < 0)
        fd = open(NVP2P_EMU_DEVICE, O_RDWR | O_CLOEXEC);
    return fd;
}

static int emu_ioctl(unsigned long cmd, void *arg)
{
    if (emu_fd() < 0)
        return errno;
    return ioctl(emu_fd(), cmd, arg) ? errno : 0;
}

int emu_alloc(uint64_t size, unsigned int page_kind, unsigned int flags, uint64_t *va)
{
    struct nvp2p_emu_alloc a = { .size = size, .page_kind = page_kind, .flags = flags };
    int ret = emu_ioctl(NVP2P_EMU_IOC_ALLOC, &a);

    if (!ret)
        *va = a.va;
    return ret;
}

int emu_free(uint64_t va)
{
    struct nvp2p_emu_free f = { .va = va };

    return emu_ioctl(NVP2P_EMU_IOC_FREE, &f);
}

int emu_write(uint64_t va, const void *buf, size_t len)
{
    struct nvp2p_emu_rw rw = { .va = va, .len = len, .user_ptr = (uintptr_t)buf };

    return emu_ioctl(NVP2P_EMU_IOC_WRITE, &rw);
}

int emu_read(uint64_t va, void *buf, size_t len)
{
    struct nvp2p_emu_rw rw = { .va = va, .len = len, .user_ptr = (uintptr_t)buf };

    return emu_ioctl(NVP2P_EMU_IOC_READ, &rw);
}

int emu_stats(struct nvp2p_emu_stats *st)
{
    return emu_ioctl(NVP2P_EMU_IOC_STATS, st);
}

int emu_inject(unsigned int what, unsigned int count, int errno_value)
{
    struct nvp2p_emu_inject in = { .what = what, .count = count, .errno_value = errno_value };

    return emu_ioctl(NVP2P_EMU_IOC_INJECT, &in);
}

int emu_cb_delay(unsigned int ms)
{
    struct nvp2p_emu_cb_delay d = { .ms = ms };

    return emu_ioctl(NVP2P_EMU_IOC_CB_DELAY, &d);
}

int emu_phys(uint64_t va, uint64_t *phys)
{
    struct nvp2p_emu_phys q = { .va = va };
    int ret = emu_ioctl(NVP2P_EMU_IOC_PHYS, &q);

    if (!ret)
        *phys = q.phys;
    return ret;
}

int emu_pte(const void *addr, uint64_t *pfn, uint32_t *cache_mode)
{
    struct nvp2p_emu_pte q = { .uaddr = (uintptr_t)addr };
    int ret = emu_ioctl(NVP2P_EMU_IOC_PTE, &q);

    if (!ret) {
        *pfn = q.pfn;
        *cache_mode = q.cache_mode;
    }
    return ret;
}

int emu_hold(uint64_t va, uint64_t len, unsigned mode)
{
    struct nvp2p_emu_hold h = { .va = va, .len = len, .mode = mode };

    return emu_ioctl(NVP2P_EMU_IOC_HOLD, &h);
}

int emu_release(uint64_t va)
{
    struct nvp2p_emu_hold h = { .va = va };

    return emu_ioctl(NVP2P_EMU_IOC_RELEASE, &h);
}

static sigjmp_buf read_jmp;

static void read_on_bus(int sig)
{
    (void)sig;
    siglongjmp(read_jmp, 1);
}

int read_faults(const volatile void *p)
{
    struct sigaction sa = { .sa_handler = read_on_bus }, old;
    volatile int faulted = 0;

    sigaction(SIGBUS, &sa, &old);
    if (sigsetjmp(read_jmp, 1))
        faulted = 1;
    else
        (void)*(const volatile unsigned char *)p;
    sigaction(SIGBUS, &old, NULL);
    return faulted;
}

void fill_pattern(void *buf, size_t len, uint32_t seed)
{
    unsigned char *p = buf;
    uint32_t x = seed * 2654435761u + 1;

    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (unsigned char)x;
    }
}

int emu_coherent(void)
{
    FILE *f = fopen(NVP2P_EMU_COHERENT_PARAM, "r");
    int c = 0;

    if (f) {
        c = fgetc(f);
        fclose(f);
    }
    return c == 'Y';
}

uint64_t emu_live_pins(void)
{
    struct nvp2p_emu_stats st = { 0 };

    emu_stats(&st);
    return st.live_pins;
}

uint64_t emu_callbacks_fired(void)
{
    struct nvp2p_emu_stats st = { 0 };

    emu_stats(&st);
    return st.callbacks_fired;
}

int wait_child(pid_t pid)
{
    int st;

    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int send_fd(int sock, int fd, uint64_t handle)
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

int recv_fd(int sock, uint64_t *handle)
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

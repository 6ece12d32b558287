// SPDX-License-Identifier: MIT
/*
 * user_test.c - gdrdrv as seen by another, unprivileged user on the machine (uid/gid 65534):
 * the default node mode (0666) lets that user pin, map and unpin GPU memory of its own, but
 * never reach root's pins: not by handle through its own file (handles are per file), not
 * through root's file passed over a socket (ioctl and mmap refuse a non-opener), not through
 * the module's parameters (root only). Killed with pins and mappings held, it leaves nothing
 * behind.
 *   user_test      either module mode
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
#define NOBODY 65534
#define PARAM "/sys/module/gdrdrv/parameters/max_pins_per_file"

static int pin(int fd, uint64_t va, uint64_t size, uint64_t *h)
{
    struct gdrdrv_pin_buffer_v2 p = { .addr = va, .size = size };

    if (ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p))
        return errno;
    *h = p.handle;
    return 0;
}

static int unpin(int fd, uint64_t h)
{
    struct gdrdrv_unpin_buffer u = { .handle = h };

    return ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;
}

static int info(int fd, uint64_t h)
{
    struct gdrdrv_get_info_v2 i = { .handle = h };

    return ioctl(fd, GDRDRV_IOC_GET_INFO_V2, &i) ? errno : 0;
}

static int become_nobody(void)
{
    return setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY) || getuid() != NOBODY;
}

/* Child exit codes: 0 as expected, else the step (10 + n) that went wrong. */
static int nobody_own_pins(uint64_t va, uint64_t root_handle)
{
    int fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
    uint64_t h = 0;
    volatile unsigned char *m;

    if (fd < 0)
        return 10;
    if (pin(fd, va, GPU_PAGE, &h))
        return 11;
    m = mmap(NULL, GPU_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(h << 12));
    if (m == MAP_FAILED)
        return 12;
    m[0] = 0x5a;
    if (m[0] != 0x5a)
        return 13;
    munmap((void *)m, GPU_PAGE);
    /* Root's handle number means nothing in this file (or is this user's own pin). */
    if (root_handle != h && (info(fd, root_handle) != EINVAL || unpin(fd, root_handle) != EINVAL))
        return 14;
    if (unpin(fd, h))
        return 15;
    if (open(PARAM, O_WRONLY) >= 0 || errno != EACCES)
        return 16;
    return 0;
}

static int nobody_with_roots_fd(int sock)
{
    uint64_t h = 0;
    int fd = t_recv_fd(sock, &h);

    if (fd < 0)
        return 10;
    if (info(fd, h) != EACCES || unpin(fd, h) != EACCES)
        return 11;
    if (mmap(NULL, GPU_PAGE, PROT_READ, MAP_SHARED, fd, (off_t)(h << 12)) != MAP_FAILED ||
        errno != EACCES)
        return 12;
    return 0;
}

/* Pins and maps 8 buffers, then waits to be killed. */
static int nobody_killed(uint64_t va, int ready)
{
    int fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
    uint64_t h = 0;

    for (int i = 0; fd >= 0 && i < 8; i++) {
        volatile unsigned char *m;

        if (pin(fd, va + (uint64_t)i * GPU_PAGE, GPU_PAGE, &h))
            return 10;
        m = mmap(NULL, GPU_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(h << 12));
        if (m == MAP_FAILED)
            return 11;
        m[1] = 1;
    }
    if (fd < 0 || write(ready, "r", 1) != 1)
        return 12;
    pause();
    return 13;
}

static pid_t as_nobody(int (*fn)(uint64_t, uint64_t), uint64_t a, uint64_t b)
{
    pid_t pid = fork();

    if (pid == 0)
        _exit(become_nobody() ? 9 : fn(a, b));
    return pid;
}

static int own_pins_fn(uint64_t va, uint64_t h) { return nobody_own_pins(va, h); }
static int roots_fd_fn(uint64_t sock, uint64_t unused) { return nobody_with_roots_fd((int)sock); }
static int killed_fn(uint64_t va, uint64_t ready) { return nobody_killed(va, (int)ready); }

int main(void)
{
    uint64_t va = 0, h = 0, base = emu_live_pins();
    int fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC), sv[2], pfd[2], rc;
    volatile unsigned char *m;
    char c;
    pid_t pid;

    if (fd < 0 || emu_alloc(8 * GPU_PAGE, 1, 0, &va) || pin(fd, va, GPU_PAGE, &h)) {
        t_fail("setup", "open/alloc/pin as root: %s", strerror(errno));
        return t_status();
    }
    m = mmap(NULL, GPU_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(h << 12));
    if (m == MAP_FAILED) {
        t_fail("setup", "mmap as root: %s", strerror(errno));
        return t_status();
    }
    m[0] = 0x11;

    rc = t_wait_child(as_nobody(own_pins_fn, va + GPU_PAGE, h), 60);
    t_check(rc == 0, "user_pins_maps_unpins_own_only", "child status %d (9: setuid, 1x: step x)", rc);

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0) {
        pid = as_nobody(roots_fd_fn, (uint64_t)sv[1], 0);
        rc = t_send_fd(sv[0], fd, h) ? -2 : t_wait_child(pid, 60);
        t_check(rc == 0, "user_refused_roots_fd", "child status %d (1x: step x)", rc);
        close(sv[0]);
        close(sv[1]);
    } else {
        t_fail("user_refused_roots_fd", "socketpair: %s", strerror(errno));
    }
    t_check(m[0] == 0x11 && info(fd, h) == 0, "roots_pin_untouched", "root's pin: %s, byte %#x",
            strerror(info(fd, h)), m[0]);

    if (pipe(pfd) == 0) {
        pid = as_nobody(killed_fn, va, (uint64_t)pfd[1]);
        rc = read(pfd[0], &c, 1) == 1 ? 0 : -1;
        kill(pid, SIGKILL);
        t_wait_child(pid, 60);
        t_check(rc == 0, "user_killed_with_pins_setup", "the child did not pin and map 8 buffers");
        close(pfd[0]);
        close(pfd[1]);
    }
    munmap((void *)m, GPU_PAGE);
    t_check(!unpin(fd, h), "root_unpins", "%s", strerror(errno));
    close(fd);
    emu_free(va);
    t_check(emu_live_pins() == base, "user_killed_leaves_nothing", "live pins %llu (was %llu)",
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    return t_status();
}

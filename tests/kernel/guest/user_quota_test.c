// SPDX-License-Identifier: MIT
/*
 * user_quota_test.c - the per-user bounds of gdrdrv (driver/gdrdrv_user.c): pins and bytes
 * pinned by one user (real uid) across all of its open files, whatever file they are in.
 * Before them a user bounded only per file could open more files and pin on: each pin costs
 * the NVIDIA driver a page table that no memory cgroup is charged for. Run with gdrdrv
 * loaded with max_pins_per_user=MAX_PINS max_pinned_mib_per_user=1: two files of root
 * reach MAX_PINS together and the next pin fails EDQUOT; another user still pins; one UNPIN
 * makes room; a pin larger than 1 MiB fails EDQUOT, one of 1 MiB succeeds once the small
 * ones are gone; at the end nothing is counted (the params file's pins: 0).
 *   user_quota_test
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
#define MAX_PINS 8
#define NOBODY 65534

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

/* Another user pins one page of va: 0, or the errno. */
static int nobody_pins(uint64_t va)
{
    pid_t pid = fork();
    int st;

    if (pid == 0) {
        int fd;
        uint64_t h;

        if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
            _exit(200);
        fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
        _exit(fd < 0 ? 201 : pin(fd, va, GPU_PAGE, &h));
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

int main(void)
{
    uint64_t va, h[MAX_PINS + 1], big;
    int a = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
    int b = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
    int e = 0, n, got;

    if (a < 0 || b < 0 || emu_alloc(2 << 20, 1, 0, &va)) {
        t_fail("setup", "open or alloc: %s", strerror(errno));
        return t_status();
    }
    /* Half in each file: the bound is the user's, not a file's. */
    for (n = 0; n < MAX_PINS && !e; n++)
        e = pin(n % 2 ? b : a, va, GPU_PAGE, &h[n]);
    t_check(!e, "pins_up_to_the_bound", "pin %d: %s", n, strerror(e));
    e = pin(b, va, GPU_PAGE, &h[MAX_PINS]);
    t_check(e == EDQUOT, "one_more_fails_edquot", "pin %d: %s", MAX_PINS + 1,
            e ? strerror(e) : "succeeded");
    if (!e)
        unpin(b, h[MAX_PINS]);
    got = nobody_pins(va);
    t_check(got == 0, "another_user_unaffected", "nobody's pin: %s",
            got > 0 && got < 200 ? strerror(got) : "child failed");
    e = unpin(a, h[0]);
    if (!e)
        e = pin(a, va, GPU_PAGE, &h[0]);
    t_check(!e, "unpin_makes_room", "%s", strerror(e));

    /* Bytes: 1 MiB in all. */
    for (n = 0; n < MAX_PINS; n++)
        unpin(n % 2 ? b : a, h[n]);
    e = pin(a, va, 2 << 20, &big);
    t_check(e == EDQUOT, "bytes_bound", "a 2 MiB pin: %s", e ? strerror(e) : "succeeded");
    if (!e)
        unpin(a, big);
    e = pin(a, va, 1 << 20, &big);
    t_check(!e, "bytes_up_to_the_bound", "a 1 MiB pin: %s", strerror(e));
    close(a);
    close(b);
    emu_free(va);
    return t_status();
}

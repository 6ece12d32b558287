// SPDX-License-Identifier: MIT
/*
 * opener_test.c - only the process that opened /dev/gdrdrv may use that file, even after the
 * opener is gone and a new process has both its pid and (by slab reuse) its mm_struct address.
 * The opener (a child) opens the device, pins, passes the fd to its parent over a socket and
 * exits; the parent reaps it, makes the next pid the opener's (ns_last_pid) and forks at once
 * on the same CPU, so the child's new mm is likely the opener's freed one. That child must get
 * EACCES from the file. Repeated a bounded number of times; skips without ns_last_pid.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
#define LAST_PID "/proc/sys/kernel/ns_last_pid"

static int set_last_pid(pid_t pid)
{
    FILE *f = fopen(LAST_PID, "w");
    int ok = f && fprintf(f, "%d", (int)pid) > 0;

    if (f && fclose(f))
        ok = 0;
    return ok ? 0 : -1;
}

/* One attempt: 2 reused pid and the file was usable, 1 reused pid and EACCES, 0 no reuse,
 * -1 setup failure. */
static int attempt(uint64_t va)
{
    int sv[2], fd, st;
    uint64_t handle = 0;
    pid_t opener, child;

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
        return -1;
    fflush(stdout);
    opener = fork();
    if (opener == 0) {
        struct gdrdrv_pin_buffer_v2 p = { .addr = va, .size = GPU_PAGE };
        int g = open("/dev/gdrdrv", O_RDWR);

        close(sv[0]);
        if (g < 0 || ioctl(g, GDRDRV_IOC_PIN_BUFFER_V2, &p) || t_send_fd(sv[1], g, p.handle))
            exit(1);
        exit(0);                        /* the file lives on in the parent */
    }
    close(sv[1]);
    fd = t_recv_fd(sv[0], &handle);
    close(sv[0]);
    if (t_wait_child(opener, 60) != 0 || fd < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (set_last_pid(opener - 1)) {
        close(fd);
        return -1;
    }
    child = fork();
    if (child == 0) {
        struct gdrdrv_get_info_v2 i = { .handle = handle };

        if (getpid() != opener)
            exit(10);
        exit(ioctl(fd, GDRDRV_IOC_GET_INFO_V2, &i) == 0 ? 12 : errno == EACCES ? 11 : 13);
    }
    st = t_wait_child(child, 60);
    close(fd);                          /* releases the opener's pin */
    return st == 12 ? 2 : st == 11 ? 1 : st == 10 ? 0 : -1;
}

int main(void)
{
    cpu_set_t one;
    uint64_t va = 0, base = emu_live_pins();
    int reused = 0, bypassed = 0, failed = 0;

    if (access(LAST_PID, W_OK)) {
        printf("%s not writable (needs CONFIG_CHECKPOINT_RESTORE and root)\n", LAST_PID);
        return 77;
    }
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    sched_setaffinity(0, sizeof(one), &one);      /* the opener's mm is freed on this CPU */
    if (emu_alloc(GPU_PAGE, 1, 0, &va)) {
        t_fail("opener_setup", "provider ALLOC failed");
        return 1;
    }
    for (int i = 0; i < 30 && !bypassed; i++) {
        int r = attempt(va);

        reused += r >= 1;
        bypassed += r == 2;
        failed += r < 0;
    }
    emu_free(va);
    printf("# %d attempts gave the dead opener's pid to a new process\n", reused);
    t_check(!failed && reused > 0, "opener_pid_reused", "%d setup failures, %d reuses", failed, reused);
    t_check(!bypassed, "reused_pid_and_mm_refused", "a new process with the dead opener's pid used its file");
    t_check(emu_live_pins() == base, "opener_no_leak", "live pins %llu (was %llu)",
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    return t_status();
}

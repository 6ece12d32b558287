// SPDX-License-Identifier: MIT
/*
 * memcg_test.c - what gdrdrv allocates for a process (its pins, their handle-table nodes) is
 * charged to that process's memory cgroup, and uncharged when the pins go: a user confined
 * by a memcg cannot make the kernel hold memory outside it. A child in a fresh cgroup v2
 * group pins NPINS times; the group's memory.stat slab_unreclaimable must grow by at least
 * NPINS * MIN_BYTES, and fall back once the child has unpinned them. Skips where the kernel
 * has no memory controller.
 *   memcg_test      either module mode
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "race.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
#define NPINS 512
#define MIN_BYTES 128                   /* a pin struct is larger than this */
#define CG "/sys/fs/cgroup"
#define GROUP CG "/gdrdrv_memcg_test"

static int write_file(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY), ok;

    if (fd < 0)
        return 0;
    ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
    return !close(fd) && ok;
}

/* The group's slab_unreclaimable now (as last flushed), -1 when it cannot be read. */
static long long slab_now(void)
{
    FILE *f = fopen(GROUP "/memory.stat", "r");
    char key[64];
    long long v, found = -1;

    while (f && fscanf(f, "%63s %lld", key, &v) == 2)
        if (!strcmp(key, "slab_unreclaimable"))
            found = v;
    if (f)
        fclose(f);
    return found;
}

/*
 * memory.stat is flushed on read only past a number of updates, counted in pages since 6.x
 * (512 pins stay under it on 6.12), and every 2 s by the kernel's periodic flush, which a
 * loaded machine delays: the reading that the check wants, or the last one after
 * RACE_WAIT_S. want(v, ref) says whether v is it; the baseline wants one flush (3 s).
 */
static long long slab_bytes(int (*want)(long long v, long long ref), long long ref)
{
    double end = race_now() + RACE_WAIT_S;
    long long v;

    if (!want) {
        sleep(3);
        return slab_now();
    }
    while ((v = slab_now()) >= 0 && !want(v, ref) && race_now() < end)
        race_sleep_ms(100);
    return v;
}

static int grew(long long v, long long joined)
{
    return v - joined >= (long long)NPINS * MIN_BYTES;
}

static int fell(long long v, long long pinned)
{
    return pinned - v >= (long long)NPINS * MIN_BYTES / 2;
}

/* The child: joins the group, pins NPINS times, says so, waits, unpins, says so, waits. */
static int child(uint64_t va, int to_parent, int from_parent)
{
    char pid[32], c;
    uint64_t h[NPINS];
    int fd;

    snprintf(pid, sizeof(pid), "%d\n", getpid());
    if (!write_file(GROUP "/cgroup.procs", pid))
        return 10;
    fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);   /* the file is charged here too */
    if (fd < 0 || write(to_parent, "j", 1) != 1 || read(from_parent, &c, 1) != 1)
        return 11;
    for (int i = 0; i < NPINS; i++) {
        struct gdrdrv_pin_buffer_v2 p = { .addr = va, .size = GPU_PAGE };

        if (ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p))
            return 12;
        h[i] = p.handle;
    }
    if (write(to_parent, "p", 1) != 1 || read(from_parent, &c, 1) != 1)
        return 13;
    for (int i = 0; i < NPINS; i++) {
        struct gdrdrv_unpin_buffer u = { .handle = h[i] };

        if (ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u))
            return 14;
    }
    if (write(to_parent, "u", 1) != 1 || read(from_parent, &c, 1) != 1)
        return 15;
    close(fd);
    return 0;
}

int main(void)
{
    uint64_t va = 0, base = emu_live_pins();
    int up[2], down[2], rc;
    long long joined, pinned, unpinned;
    char c;
    pid_t pid;

    mkdir(CG, 0755);
    if (mount("cgroup2", CG, "cgroup2", 0, NULL) && errno != EBUSY) {
        t_skip("memcg_charges_pins", "mount cgroup2: %s", strerror(errno));
        return t_status();
    }
    if (!write_file(CG "/cgroup.subtree_control", "+memory\n")) {
        t_skip("memcg_charges_pins", "no memory controller: %s", strerror(errno));
        return t_status();
    }
    rmdir(GROUP);
    if (mkdir(GROUP, 0755) || emu_alloc(GPU_PAGE, 1, 0, &va) || pipe(up) || pipe(down)) {
        t_fail("setup", "mkdir " GROUP ", alloc or pipe: %s", strerror(errno));
        return t_status();
    }
    pid = fork();
    if (pid == 0)
        _exit(child(va, up[1], down[0]));
    joined = read(up[0], &c, 1) == 1 ? slab_bytes(NULL, 0) : -1;
    pinned = write(down[1], "g", 1) == 1 && read(up[0], &c, 1) == 1 ? slab_bytes(grew, joined) : -1;
    unpinned = write(down[1], "g", 1) == 1 && read(up[0], &c, 1) == 1 ?
               slab_bytes(fell, pinned) : -1;
    if (write(down[1], "g", 1) != 1)
        kill(pid, 9);
    rc = t_wait_child(pid, 60);
    printf("# slab_unreclaimable of the group: %lld joined, %lld with %d pins, %lld after unpin\n",
           joined, pinned, NPINS, unpinned);
    t_check(rc == 0, "memcg_child", "child status %d (1x: step x)", rc);
    t_check(joined >= 0 && pinned - joined >= (long long)NPINS * MIN_BYTES, "memcg_charges_pins",
            "the group's slab grew by %lld bytes for %d pins (want >= %d each)",
            pinned - joined, NPINS, MIN_BYTES);
    t_check(unpinned >= 0 && pinned - unpinned >= (long long)NPINS * MIN_BYTES / 2,
            "memcg_uncharges_unpinned", "the group's slab fell by %lld bytes after unpin",
            pinned - unpinned);
    rmdir(GROUP);
    emu_free(va);
    t_check(emu_live_pins() == base, "memcg_no_leak", "live pins %llu (was %llu)",
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    return t_status();
}

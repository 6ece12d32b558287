// SPDX-License-Identifier: MIT
/*
 * offsets_test.c - handles (mmap offsets) are per open file, and so are the zaps that use
 * them; an open file holds a bounded number of pins. Run with gdrdrv loaded with
 * use_persistent_mapping=0 offset_space_log2=16 max_pins_per_file=CAP (a small offset space
 * makes the wrap quick):
 *  - a pin unpinned under a live mapping (its offsets given back) whose memory is freed later
 *    must not zap the mapping of another file's pin that got the same offsets;
 *  - one file fragmenting its offset space must not keep another file from a large pin;
 *  - the CAP+1-th pin of a file fails with EDQUOT, and another file can still pin.
 *   offsets_test CAP
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
#define SPACE (1ULL << 16)              /* offset_space_log2=16, in host pages */

static int pin(int fd, uint64_t va, uint64_t size, uint64_t *h)
{
    struct gdrdrv_pin_buffer_v2 p = { .addr = va, .size = size };
    int e = ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p) ? errno : 0;

    *h = p.handle;
    return e;
}

static int unpin(int fd, uint64_t h)
{
    struct gdrdrv_unpin_buffer u = { .handle = h };

    return ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;
}

static void *map(int fd, uint64_t h, size_t len)
{
    return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(h << 12));
}

/* Another file's pin gets the offsets of a detached pin; that pin's callback comes later. */
static void test_detached_pin_zaps_only_its_own(void)
{
    int fa = open("/dev/gdrdrv", O_RDWR), fb = open("/dev/gdrdrv", O_RDWR), e = 0, tries = 0;
    uint64_t x = 0, y = 0, ha = 0, hb = 0;
    volatile uint32_t *ma = MAP_FAILED, *mb = MAP_FAILED;

    if (fa < 0 || fb < 0 || emu_alloc(GPU_PAGE, 1, 0, &x) || emu_alloc(GPU_PAGE, 1, 0, &y) ||
        pin(fa, x, GPU_PAGE, &ha) || (ma = map(fa, ha, 4096)) == MAP_FAILED) {
        t_fail("detached_pin_zaps_only_its_own", "setup: %s", strerror(errno));
        goto out;
    }
    ma[0] = 1;
    e = unpin(fa, ha);                  /* detached: the mapping keeps it */
    /* Pin through the other file until its pin covers the detached pin's offsets. */
    for (;;) {
        e = pin(fb, y, GPU_PAGE, &hb);
        if (e || hb == ha || ++tries > (int)(2 * SPACE / 16))
            break;
        unpin(fb, hb);
    }
    if (e || hb != ha) {
        t_fail("detached_pin_zaps_only_its_own", "no pin of the other file got offset %#llx (%d tries, %d)",
               (unsigned long long)ha, tries, e);
        goto out;
    }
    printf("# the other file's pin got offset %#llx after %d pin/unpin cycles\n",
           (unsigned long long)hb, tries);
    mb = map(fb, hb, GPU_PAGE);
    if (mb == MAP_FAILED) {
        t_fail("detached_pin_zaps_only_its_own", "mmap of the other pin: %s", strerror(errno));
        goto out;
    }
    mb[3] = 0xfeedbeef;
    emu_free(x);                        /* the detached pin's callback, if it still has one */
    x = 0;
    t_check(t_touch_faults(mb + 3) == 0 && mb[3] == 0xfeedbeef, "detached_pin_zaps_only_its_own",
            "the other file's mapping was zapped (SIGBUS) or lost its data");
    t_check(t_touch_faults(ma) == SIGBUS, "detached_pin_mapping_sigbus", "the unpinned mapping still reads");
out:
    if (ma != MAP_FAILED)
        munmap((void *)ma, 4096);
    if (mb != MAP_FAILED)
        munmap((void *)mb, GPU_PAGE);
    if (fa >= 0)
        close(fa);
    if (fb >= 0)
        close(fb);
    if (x)
        emu_free(x);
    if (y)
        emu_free(y);
}

/* File A leaves only gaps of 16 MiB in its space; file B pins 32 MiB. */
static void test_fragmented_file_blocks_nobody(void)
{
    const uint64_t small = GPU_PAGE, big = 16ULL << 20;
    int fa = open("/dev/gdrdrv", O_RDWR), fb = open("/dev/gdrdrv", O_RDWR), n = 0, e = 0;
    uint64_t va = 0, hs[64], hb[64], h;

    if (fa < 0 || fb < 0 || emu_alloc(2 * big, 1, 0, &va)) {
        t_fail("fragmented_file_blocks_nobody", "setup: %s", strerror(errno));
        goto out;
    }
    while (n < 64 && !(e = pin(fa, va, small, &hs[n]))) {
        if ((e = pin(fa, va, big, &hb[n]))) {
            unpin(fa, hs[n]);
            break;
        }
        n++;
    }
    for (int i = 0; i < n; i++)
        unpin(fa, hb[i]);
    printf("# file A: %d small pins between %d freed 16 MiB ranges (then %d)\n", n, n, e);
    e = pin(fb, va, 2 * big, &h);
    t_check(e == 0, "fragmented_file_blocks_nobody", "32 MiB pin of another file: %s", strerror(e));
    if (!e)
        unpin(fb, h);
    for (int i = 0; i < n; i++)
        unpin(fa, hs[i]);
out:
    if (fa >= 0)
        close(fa);
    if (fb >= 0)
        close(fb);
    if (va)
        emu_free(va);
}

static void test_pin_cap(int cap)
{
    int fa = open("/dev/gdrdrv", O_RDWR), fb = open("/dev/gdrdrv", O_RDWR), n = 0, e = 0, e2 = -1;
    uint64_t va = 0, h;

    if (fa < 0 || fb < 0 || emu_alloc(GPU_PAGE, 1, 0, &va)) {
        t_fail("pin_cap_per_file", "setup: %s", strerror(errno));
        goto out;
    }
    while (n <= cap + 10 && !(e = pin(fa, va, GPU_PAGE, &h)))
        n++;
    t_check(n == cap && e == EDQUOT, "pin_cap_per_file", "%d pins, then %s (cap %d)", n, strerror(e), cap);
    e2 = pin(fb, va, GPU_PAGE, &h);
    t_check(e2 == 0, "pin_cap_other_file_pins", "%s", strerror(e2));
out:
    if (fa >= 0)
        close(fa);                      /* releases its pins */
    if (fb >= 0)
        close(fb);
    if (va)
        emu_free(va);
}

int main(int argc, char **argv)
{
    uint64_t base = emu_live_pins();

    if (argc < 2 || emu_fd() < 0) {
        t_fail("setup", "usage offsets_test CAP, and the provider");
        return 1;
    }
    test_detached_pin_zaps_only_its_own();
    test_fragmented_file_blocks_nobody();
    test_pin_cap(atoi(argv[1]));
    t_check(emu_live_pins() == base, "offsets_no_leak", "live pins %llu (was %llu)",
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    return t_status();
}

// SPDX-License-Identifier: MIT
/*
 * offsets_test.c - handles (mmap offsets) are per open file, and so are the zaps that use
 * them; an open file holds a bounded number of pins. Run with gdrdrv loaded with
 * use_persistent_mapping=0 offset_space_log2=16 max_pins_per_file=CAP (a small offset space
 * makes the wrap quick):
 *  - a free callback or UNPIN in one file must not zap another file's mapping of the same
 *    offsets, and an orphan's late callback (put_pages failed at UNPIN) must not zap the
 *    mapping of the pin of its file that got its offsets: both seen in the page table
 *    (emu_pte), as a zapped PTE of a live pin would only be refaulted;
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

/* A PTE is there for addr: the test sees a zap, which a later access would only refault. */
static int has_pte(const volatile void *addr)
{
    uint64_t pfn;
    uint32_t mode;

    return emu_pte((const void *)addr, &pfn, &mode) == 0;
}

/*
 * Two files, each with its first pin at the same offset (handle): file A's free callback and
 * UNPIN zap that offset range in A's address_space only, never B's mapping of its own pin.
 */
static void test_zap_stays_in_its_file(void)
{
    int fa = open("/dev/gdrdrv", O_RDWR), fb = open("/dev/gdrdrv", O_RDWR);
    uint64_t x = 0, y = 0, ha = 0, hb = 0;
    volatile uint32_t *ma = MAP_FAILED, *mb = MAP_FAILED;

    if (fa < 0 || fb < 0 || emu_alloc(GPU_PAGE, 1, 0, &x) || emu_alloc(GPU_PAGE, 1, 0, &y) ||
        pin(fa, x, GPU_PAGE, &ha) || pin(fb, y, GPU_PAGE, &hb) || ha != hb ||
        (ma = map(fa, ha, GPU_PAGE)) == MAP_FAILED || (mb = map(fb, hb, GPU_PAGE)) == MAP_FAILED) {
        t_fail("zap_stays_in_its_file", "setup: %s (handles %#llx, %#llx)", strerror(errno),
               (unsigned long long)ha, (unsigned long long)hb);
        goto out;
    }
    ma[0] = 1;
    mb[0] = 2;
    if (!has_pte(mb)) {
        t_fail("zap_stays_in_its_file", "the emulated provider sees no PTE after an access");
        goto out;
    }
    emu_free(x);                        /* A's pin's free callback zaps A's offsets */
    x = 0;
    t_check(has_pte(mb) && mb[0] == 2, "callback_zap_stays_in_its_file",
            "A's callback zapped B's mapping of the same offset");
    t_check(t_touch_faults(ma) == SIGBUS, "callback_zap_own_mapping", "A's mapping still reads");
    t_check(unpin(fa, ha) == 0 && has_pte(mb), "unpin_zap_stays_in_its_file",
            "A's UNPIN zapped B's mapping of the same offset");
out:
    if (ma != MAP_FAILED)
        munmap((void *)ma, GPU_PAGE);
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

/*
 * A pin whose put_pages failed at UNPIN is kept for its callback (an orphan), and its offsets
 * go back to the file. Another pin of the same file gets them and is mapped; the orphan's
 * callback, when it comes, must not zap that mapping.
 */
static void test_orphan_zaps_nothing(void)
{
    int fa = open("/dev/gdrdrv", O_RDWR), e = 0, tries = 0;
    uint64_t x = 0, y = 0, ha = 0, hb = 0;
    volatile uint32_t *mb = MAP_FAILED;

    if (fa < 0 || emu_alloc(GPU_PAGE, 1, 0, &x) || emu_alloc(GPU_PAGE, 1, 0, &y) ||
        pin(fa, x, GPU_PAGE, &ha) || emu_inject(NVP2P_EMU_FAIL_PUT_PAGES, 1, EIO) ||
        unpin(fa, ha)) {
        t_fail("orphan_callback_zaps_nothing", "setup: %s", strerror(errno));
        goto out;
    }
    /* Pin until a pin covers the orphan's offsets (the cursor wraps in the small space). */
    for (;;) {
        e = pin(fa, y, GPU_PAGE, &hb);
        if (e || hb == ha || ++tries > (int)(2 * SPACE / 16))
            break;
        unpin(fa, hb);
    }
    if (e || hb != ha) {
        t_fail("orphan_callback_zaps_nothing", "no new pin got offset %#llx (%d tries, %s)",
               (unsigned long long)ha, tries, strerror(e));
        goto out;
    }
    printf("# the new pin got the orphan's offset %#llx after %d pin/unpin cycles\n",
           (unsigned long long)hb, tries);
    mb = map(fa, hb, GPU_PAGE);
    if (mb == MAP_FAILED) {
        t_fail("orphan_callback_zaps_nothing", "mmap of the new pin: %s", strerror(errno));
        goto out;
    }
    mb[3] = 0xfeedbeef;
    emu_free(x);                        /* the orphan's callback */
    x = 0;
    t_check(has_pte(mb + 3) && mb[3] == 0xfeedbeef, "orphan_callback_zaps_nothing",
            "the orphan's callback zapped the mapping of the pin that got its offsets");
out:
    if (mb != MAP_FAILED)
        munmap((void *)mb, GPU_PAGE);
    if (fa >= 0)
        close(fa);
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
    test_zap_stays_in_its_file();
    test_orphan_zaps_nothing();
    test_fragmented_file_blocks_nobody();
    test_pin_cap(atoi(argv[1]));
    t_check(emu_live_pins() == base, "offsets_no_leak", "live pins %llu (was %llu)",
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    return t_status();
}

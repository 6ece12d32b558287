// SPDX-License-Identifier: MIT
/*
 * reshape_test.c - mappings of a pin reshaped after mmap: moved by mremap, cut by a partial
 * munmap, split by mprotect. Each piece must keep showing the pin's bytes at its own offset,
 * lose its PTEs and answer SIGBUS once the pin is unpinned (UNPIN zaps by offset in the
 * file's address_space, which the moved and split VMAs are in too), and the module must count
 * every piece as a mapping: the pin's struct goes with the last piece, none earlier (a use
 * after free), none never (gdrdrv's pins count is checked by /init afterwards). Growing a
 * mapping and making it executable stay refused.
 *   reshape_test      either module mode
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "uapi/gdrdrv.h"

#define LEN (4 * 65536ULL)
#define HP 4096ULL

static int fd = -1;
static unsigned char want[LEN];

static int pin(uint64_t va, uint64_t *h)
{
    struct gdrdrv_pin_buffer_v2 p = { .addr = va, .size = LEN };

    if (ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p))
        return errno;
    *h = p.handle;
    return 0;
}

static int unpin(uint64_t h)
{
    struct gdrdrv_unpin_buffer u = { .handle = h };

    return ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;
}

/* The bytes at m are the pin's bytes [off, off + len), read a page at a time. */
static int shows(const unsigned char *m, uint64_t off, uint64_t len)
{
    for (uint64_t i = 0; i < len; i += HP)
        if (t_touch_faults(m + i) || memcmp(m + i, want + off + i, 64))
            return 0;
    return 1;
}

static unsigned char *map_pin(uint64_t h)
{
    unsigned char *m = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(h << 12));

    return m == MAP_FAILED ? NULL : m;
}

static void test_mremap(uint64_t va)
{
    uint64_t h;
    unsigned char *m, *spot, *moved;

    if (pin(va, &h) || !(m = map_pin(h))) {
        t_fail("mremap_setup", "%s", strerror(errno));
        return;
    }
    t_check(shows(m, 0, LEN), "mremap_before", "the mapping does not show the pin");
    spot = mmap(NULL, 2 * LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    t_check(mremap(m, LEN, 2 * LEN, 0) == MAP_FAILED, "mremap_grow_refused", "grew in place");
    moved = mremap(m, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, spot + LEN);
    if (!t_check(moved == spot + LEN, "mremap_move", "%s", strerror(errno)))
        return;
    t_check(shows(moved, 0, LEN), "mremap_moved_shows_pin", "the moved mapping shows other bytes");
    t_check(t_touch_faults(m) == SIGSEGV, "mremap_old_address_gone", "the old address still maps");
    t_check(!unpin(h), "mremap_unpin", "%s", strerror(errno));
    t_check(t_touch_faults(moved) == SIGBUS && t_touch_faults(moved + LEN - HP) == SIGBUS,
            "mremap_moved_zapped_by_unpin", "the moved mapping survived UNPIN");
    munmap(spot, 2 * LEN);
}

static void test_partial_munmap(uint64_t va)
{
    uint64_t h;
    unsigned char *m;

    if (pin(va, &h) || !(m = map_pin(h))) {
        t_fail("munmap_setup", "%s", strerror(errno));
        return;
    }
    /* Keep [0, 1/4) and [1/2, 1): two VMAs of one pin, the second at its own offset. */
    t_check(!munmap(m + LEN / 4, LEN / 4), "munmap_middle", "%s", strerror(errno));
    t_check(shows(m, 0, LEN / 4) && shows(m + LEN / 2, LEN / 2, LEN / 2), "munmap_pieces_show_pin",
            "a piece shows other bytes");
    t_check(t_touch_faults(m + LEN / 4) == SIGSEGV, "munmap_hole", "the hole still maps");
    t_check(!munmap(m, LEN / 4), "munmap_first_piece", "%s", strerror(errno));
    t_check(shows(m + LEN / 2, LEN / 2, LEN / 2), "munmap_last_piece_lives",
            "the last piece lost its pin when the first went");
    t_check(!unpin(h), "munmap_unpin", "%s", strerror(errno));
    t_check(t_touch_faults(m + LEN / 2) == SIGBUS, "munmap_piece_zapped_by_unpin",
            "the remaining piece survived UNPIN");
    munmap(m + LEN / 2, LEN / 2);
}

static void test_mprotect(uint64_t va)
{
    uint64_t h;
    unsigned char *m;

    if (pin(va, &h) || !(m = map_pin(h))) {
        t_fail("mprotect_setup", "%s", strerror(errno));
        return;
    }
    t_check(!mprotect(m + LEN / 2, LEN / 4, PROT_READ), "mprotect_split", "%s", strerror(errno));
    t_check(shows(m, 0, LEN), "mprotect_pieces_show_pin", "a piece shows other bytes");
    t_check(mprotect(m, LEN, PROT_READ | PROT_EXEC) && errno == EACCES, "mprotect_exec_refused",
            "PROT_EXEC: %s", strerror(errno));
    t_check(!mprotect(m + LEN / 2, LEN / 4, PROT_READ | PROT_WRITE), "mprotect_back", "%s",
            strerror(errno));
    m[LEN / 2] = want[LEN / 2];
    t_check(!unpin(h), "mprotect_unpin", "%s", strerror(errno));
    t_check(t_touch_faults(m) == SIGBUS && t_touch_faults(m + LEN / 2) == SIGBUS &&
            t_touch_faults(m + LEN - HP) == SIGBUS, "mprotect_pieces_zapped_by_unpin",
            "a piece survived UNPIN");
    munmap(m, LEN);
}

int main(void)
{
    uint64_t va = 0, base = emu_live_pins();

    fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
    t_pattern(want, LEN, 21);
    if (fd < 0 || emu_alloc(LEN, 1, 0, &va) || emu_write(va, want, LEN)) {
        t_fail("setup", "open/alloc/write: %s", strerror(errno));
        return t_status();
    }
    test_mremap(va);
    test_partial_munmap(va);
    test_mprotect(va);
    close(fd);
    emu_free(va);
    t_check(emu_live_pins() == base, "reshape_no_leak", "live pins %llu (was %llu)",
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    return t_status();
}

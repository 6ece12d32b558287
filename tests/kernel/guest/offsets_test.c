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
 *  - the CAP+1-th pin of a file fails with EDQUOT, and another file can still pin;
 *  - pins unpinned while still mapped (their structs live on with the mappings) count
 *    against CAP until unmapped;
 *  - a PIN whose reply cannot be written back undoes its own pin, not the pin that holds its
 *    handle by then: the reply's page is write-protected with userfaultfd, so the PIN waits
 *    in its copy-out while this thread unpins the new pin (handles are predictable) and pins
 *    again into the one free slot of a full offset space, then unmaps the page.
 *   offsets_test CAP
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
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

/* Pin, map and unpin (keeping the mapping) until the cap says no; unmapping frees the cap. */
static void test_detached_pins_count(int cap)
{
    int fa = open("/dev/gdrdrv", O_RDWR), n = 0, e = 0, rounds = 3 * cap;
    void **maps = calloc((size_t)rounds, sizeof(*maps));
    uint64_t va = 0, h;

    if (fa < 0 || !maps || emu_alloc(GPU_PAGE, 1, 0, &va)) {
        t_fail("detached_pins_count", "setup: %s", strerror(errno));
        goto out;
    }
    while (n < rounds && !(e = pin(fa, va, GPU_PAGE, &h))) {
        maps[n] = map(fa, h, 4096);
        if (maps[n] == MAP_FAILED || unpin(fa, h)) {
            e = errno;
            break;
        }
        n++;
    }
    t_check(n == cap && e == EDQUOT, "detached_pins_count",
            "%d rounds of pin, mmap, unpin, then %s (cap %d)", n, strerror(e), cap);
    for (int i = 0; i < n; i++)
        munmap(maps[i], 4096);
    e = pin(fa, va, GPU_PAGE, &h);
    t_check(e == 0, "detached_pins_released_by_munmap", "pin after the munmaps: %s", strerror(e));
out:
    if (fa >= 0)
        close(fa);
    free(maps);
    if (va)
        emu_free(va);
}

struct reply_pin {
    int fd;
    void *arg;                          /* the PIN_BUFFER_V2 struct, in a write-protected page */
    int err;
};

static void *reply_pin_thread(void *p)
{
    struct reply_pin *r = p;

    r->err = ioctl(r->fd, GDRDRV_IOC_PIN_BUFFER_V2, r->arg) ? errno : 0;
    return NULL;
}

/* A write-protected page (userfaultfd) holding *req; the uffd, or -1 with errno. */
static int wp_page(void **page, const void *req, size_t len)
{
    struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP };
    int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

    *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (uffd < 0 || *page == MAP_FAILED || ioctl(uffd, UFFDIO_API, &api))
        goto fail;
    memcpy(*page, req, len);
    struct uffdio_register reg = { .range = { (unsigned long)*page, 4096 },
                                   .mode = UFFDIO_REGISTER_MODE_WP };
    struct uffdio_writeprotect wp = { .range = { (unsigned long)*page, 4096 },
                                      .mode = UFFDIO_WRITEPROTECT_MODE_WP };
    if (ioctl(uffd, UFFDIO_REGISTER, &reg) || ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))
        goto fail;
    return uffd;
fail:
    if (uffd >= 0)
        close(uffd);
    return -1;
}

static void test_pin_reply_undoes_its_own(int cap)
{
    const uint64_t per_gpu = GPU_PAGE / 4096, slots = (SPACE - 1) / per_gpu;
    int fa = open("/dev/gdrdrv", O_RDWR), uffd = -1, nfill = 0, e = 0, started = 0;
    uint64_t fill = 0, x = 0, y = 0, hfill[64], hole = 0, h2 = 0;
    uint64_t nf = (uint64_t)(cap > 1 && cap <= 64 ? cap - 1 : 63), each = (slots - 1) / nf;
    struct gdrdrv_pin_buffer_v2 req = { .size = GPU_PAGE };
    struct reply_pin r = { .fd = fa };
    struct gdrdrv_get_info_v2 info = { 0 };
    pthread_t th;
    void *page = MAP_FAILED;

    if (fa < 0 || emu_alloc((each + 1) * GPU_PAGE, 1, 0, &fill) || emu_alloc(GPU_PAGE, 1, 0, &x) ||
        emu_alloc(GPU_PAGE, 1, 0, &y)) {
        t_fail("pin_reply_undoes_its_own", "setup: %s", strerror(errno));
        goto out;
    }
    /* Fill the offset space but for one 64 KiB slot: the next pins all land in it. */
    for (uint64_t k = 0; k < nf; k++) {
        uint64_t size = (each + (k < (slots - 1) % nf)) * GPU_PAGE;

        if ((e = pin(fa, fill, size, &hfill[nfill])))
            break;
        nfill++;
    }
    if (!e && !(e = pin(fa, x, GPU_PAGE, &hole)))
        e = unpin(fa, hole);
    req.addr = x;
    if (e || (uffd = wp_page(&page, &req, sizeof(req))) < 0) {
        if (!e && (errno == ENOSYS || errno == EPERM || errno == EINVAL))
            t_skip("pin_reply_undoes_its_own", "no write-protect userfaultfd here: %s", strerror(errno));
        else
            t_fail("pin_reply_undoes_its_own", "setup: %s", strerror(e ? e : errno));
        goto out;
    }
    r.arg = page;
    started = !pthread_create(&th, NULL, reply_pin_thread, &r);
    struct pollfd pf = { .fd = uffd, .events = POLLIN };
    struct uffd_msg msg;
    /* Bounded generously: on a loaded machine the thread may be slow to get there. */
    if (!started || poll(&pf, 1, 30000) != 1 || read(uffd, &msg, sizeof(msg)) != sizeof(msg)) {
        t_fail("pin_reply_undoes_its_own", "the PIN never wrote its reply");
        goto out;
    }
    /* The PIN is published and waits in its copy-out: take its handle over. */
    e = unpin(fa, hole);
    e = e ? e : pin(fa, y, GPU_PAGE, &h2);
    munmap(page, 4096);                 /* the copy-out fails once woken */
    page = MAP_FAILED;
    close(uffd);
    uffd = -1;
    pthread_join(th, NULL);
    started = 0;
    info.handle = h2;
    int ie = ioctl(fa, GDRDRV_IOC_GET_INFO_V2, &info) ? errno : 0;
    t_check(!e && h2 == hole && r.err == EFAULT && !ie && info.va == y, "pin_reply_undoes_its_own",
            "unpin+repin %s (handle %#llx, hole %#llx), PIN %s, then the new pin: %s va %#llx "
            "(want %#llx)", strerror(e), (unsigned long long)h2, (unsigned long long)hole,
            strerror(r.err), ie ? strerror(ie) : "alive", (unsigned long long)info.va,
            (unsigned long long)y);
    if (!ie)
        unpin(fa, h2);
out:
    if (uffd >= 0)
        close(uffd);
    if (started)
        pthread_join(th, NULL);
    if (page != MAP_FAILED)
        munmap(page, 4096);
    if (fa >= 0)
        close(fa);
    if (fill)
        emu_free(fill);
    if (x)
        emu_free(x);
    if (y)
        emu_free(y);
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
    test_detached_pins_count(atoi(argv[1]));
    test_pin_reply_undoes_its_own(atoi(argv[1]));
    t_check(emu_live_pins() == base, "offsets_no_leak", "live pins %llu (was %llu)",
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    return t_status();
}

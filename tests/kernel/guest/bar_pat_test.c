// SPDX-License-Identifier: MIT
/*
 * bar_pat_test.c - gdrdrv's x86 PAT bookkeeping when another owner holds memory types on some
 * of a pin's BAR pages (the provider's HOLD). gdrdrv reserves WC per physically contiguous run
 * of a WC-mapped pin. A run that holds two other types (WC on its first half, UC- on its
 * second) cannot be reserved at all (PAT logs "conflicting memory types", which this test
 * provokes). That run must not be released later: releasing what was never reserved makes
 * PAT log "freeing invalid memtype", and where the other owner's entry has the run's bounds it
 * erases it. What gdrdrv did reserve must go with the mapping, also when mmap fails: else a
 * later DEVICE mapping of the pin comes out WC. Two GPU pages in reverse physical order, so
 * each is a run; the held run is page 1. The kernel-log check of mmio_end catches the rest.
 * Also: many pins of one BAR page, each mapped WC, share one PAT entry (the kernel allocates
 * one per reservation, so one per pin let a user make it hold any number), which stays while
 * any of them is mapped and goes with the last.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "uapi/gdrdrv.h"
#include "mmio.h"

static int fd = -1;

static int ioc(unsigned long cmd, void *arg)
{
    return ioctl(fd, cmd, arg) ? errno : 0;
}

static void *map(uint64_t handle, uint64_t len)
{
    return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(handle << 12));
}

/* Pages of pp[0, n) under some PAT entry. */
static size_t covered(const uint64_t *pp, size_t n)
{
    size_t wc, any;

    return memtype_cover(pp, n, &wc, &any) ? 0 : any;
}

static void test_unreserved_run(void)
{
    const uint64_t len = 2 * GPU_PAGE, per = GPU_PAGE / HOST_PAGE, half = GPU_PAGE / 2;
    struct gdrdrv_pin_buffer_v2 p = { .size = len };
    struct gdrdrv_req_mapping_type r = { .mapping_type = GDRDRV_MAPPING_TYPE_DEVICE };
    uint64_t va = 0, *pp = NULL;
    size_t np = 0, wc = 0, any = 0;
    int held = 0, e;
    void *m;

    if (emu_alloc(len, 1, BAR_FLAG | REVERSED, &va) || !(pp = bar_capture(va, len, &np)) ||
        emu_hold(va + GPU_PAGE, half, NVP2P_EMU_CACHE_WC) || !(held = 1) ||
        emu_hold(va + GPU_PAGE + half, half, NVP2P_EMU_CACHE_UC_MINUS) || !(held = 2) ||
        (p.addr = va, ioc(GDRDRV_IOC_PIN_BUFFER_V2, &p))) {
        t_fail("unreserved_run_setup", "alloc/hold/pin failed: %s", strerror(errno));
        goto out;
    }
    kmsg_expect("conflicting memory types");   /* the refusal we provoke, in two lines */
    kmsg_expect("memtype_reserve failed");
    m = map(p.handle, len);             /* made or refused: either way nothing may be left */
    printf("# WC mmap of a pin with an unreservable run: %s\n", m == MAP_FAILED ? strerror(errno) : "made");
    if (m != MAP_FAILED) {
        check_ptes("reserved_run_wc", m, pp, per, MODE(WC));
        munmap(m, len);
    }
    memtype_cover(pp, per, &wc, &any);
    t_check(wc == 0, "reservation_gone_after_mapping", "%zu pages of page 0 still under a WC entry", wc);
    r.handle = p.handle;
    e = ioc(GDRDRV_IOC_REQ_MAPPING_TYPE, &r);
    m = e ? MAP_FAILED : map(p.handle, GPU_PAGE);
    if (t_check(m != MAP_FAILED, "device_after_wc_mapping", "req %d mmap %s", e, strerror(errno))) {
        check_ptes("device_after_wc_mapping_uncached", m, pp, per, MODE(UC) | MODE(UC_MINUS));
        munmap(m, GPU_PAGE);
    }
    struct gdrdrv_unpin_buffer u = { .handle = p.handle };
    ioc(GDRDRV_IOC_UNPIN_BUFFER, &u);
    t_check(covered(pp + per, per) == per, "other_owner_entries_kept",
            "%zu of %zu pages still under the other owner's entries", covered(pp + per, per), (size_t)per);
out:
    if (held > 1)
        emu_release(va + GPU_PAGE + half);
    if (held)
        emu_release(va + GPU_PAGE);
    if (va)
        emu_free(va);
    free(pp);
}

static void test_shared_reservation(void)
{
    enum { N = 64 };
    uint64_t va = 0, *pp = NULL, h[N];
    void *m[N];
    size_t np = 0;
    int n = 0, before, during = -1, half = -1;

    if (emu_alloc(GPU_PAGE, 1, BAR_FLAG, &va) || !(pp = bar_capture(va, GPU_PAGE, &np))) {
        t_fail("shared_reservation_setup", "alloc failed: %s", strerror(errno));
        goto out;
    }
    before = memtype_entries(pp[0], pp[0] + GPU_PAGE);
    for (; n < N; n++) {
        struct gdrdrv_pin_buffer_v2 p = { .addr = va, .size = GPU_PAGE };

        if (ioc(GDRDRV_IOC_PIN_BUFFER_V2, &p))
            break;
        h[n] = p.handle;
        if ((m[n] = map(h[n], GPU_PAGE)) == MAP_FAILED) {
            struct gdrdrv_unpin_buffer u = { .handle = h[n] };

            ioc(GDRDRV_IOC_UNPIN_BUFFER, &u);
            break;
        }
    }
    if (n == N) {
        during = memtype_entries(pp[0], pp[0] + GPU_PAGE) - before;
        check_wc("shared_reservation_wc", pp, np);
    }
    for (int i = 0; i < n; i++) {
        struct gdrdrv_unpin_buffer u = { .handle = h[i] };

        munmap(m[i], GPU_PAGE);
        ioc(GDRDRV_IOC_UNPIN_BUFFER, &u);
        if (i == N / 2 - 1) {
            half = memtype_entries(pp[0], pp[0] + GPU_PAGE) - before;
            check_wc("shared_reservation_kept_while_mapped", pp, np);
        }
    }
    t_check(n == N && during == 1 && half == 1, "shared_reservation_one_entry",
            "%d of %d WC-mapped pins of one BAR page; PAT entries on it: %d (half unmapped: %d), want 1",
            n, N, during, half);
    check_released("shared_reservation_released", pp, np);
out:
    if (va)
        emu_free(va);
    free(pp);
}

int main(void)
{
    struct nvp2p_emu_stats st0;

    if (!mmio_begin(&st0))
        return t_status();
    if (memtype_cover(NULL, 0, &(size_t){ 0 }, &(size_t){ 0 })) {
        t_skip("bar_pat", "no PAT memory-type list in this guest");
        return t_status();
    }
    fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        t_fail("open", "/dev/gdrdrv: %s", strerror(errno));
        return 1;
    }
    test_unreserved_run();
    test_shared_reservation();
    close(fd);
    mmio_end(&st0);
    return t_status();
}

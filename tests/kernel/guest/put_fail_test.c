// SPDX-License-Identifier: MIT
/*
 * put_fail_test.c - (non-persistent) nvidia_p2p_put_pages fails while the driver still holds
 * the free callback (provider: NVP2P_EMU_FAIL_PUT_PAGES). gdrdrv must then keep the pin,
 * and itself loaded, until the callback comes: freeing the pin would leave the driver a
 * callback into freed memory, unloading would leave it one into freed code. When the memory
 * is freed later, the callback finds the pin, frees the page table, and gdrdrv lets go.
 * Reads gdrdrv's use count from /sys/module/gdrdrv/refcnt; does not free the allocation
 * (which fires the callback) when gdrdrv has already let go, so a failure here stays a
 * failure and does not become a crash. The orphan is made twice: by UNPIN, and by a PIN
 * whose pages were got but which its file cannot take (max_pins_per_file reached: EDQUOT),
 * so that PIN's error path gives them back and keeps the pin for its callback.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
#define MAX_PINS "/sys/module/gdrdrv/parameters/max_pins_per_file"

static int refcnt(void)
{
    return (int)t_read_long("/sys/module/gdrdrv/refcnt");
}

/* After the orphan's callback: the table freed, and gdrdrv's use count back to r0. */
static void check_late_callback(const char *prefix, uint64_t va, uint64_t base, uint64_t cbs,
                                int r0)
{
    struct timespec tick = { 0, 50 * 1000 * 1000 };
    char name[96];
    int e;

    e = emu_free(va);                   /* NVIDIA's callback after all */
    for (int i = 0; i < 100 && refcnt() != r0; i++)
        nanosleep(&tick, NULL);
    snprintf(name, sizeof(name), "%slate_callback_frees_table", prefix);
    t_check(!e && emu_callbacks_fired() == cbs + 1 && emu_live_pins() == base, name,
            "free %d, callbacks %llu (was %llu), live pins %llu (was %llu)", e,
            (unsigned long long)emu_callbacks_fired(), (unsigned long long)cbs,
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    snprintf(name, sizeof(name), "%smodule_released_after_callback", prefix);
    t_check(refcnt() == r0, name, "refcnt %d (was %d)", refcnt(), r0);
}

/* PIN's error path: its file full, the pages it got given back with a failing put_pages. */
static void test_pin_error_orphan(void)
{
    uint64_t va[2] = { 0, 0 }, base = emu_live_pins(), cbs;
    struct gdrdrv_pin_buffer_v2 p = { .size = GPU_PAGE };
    int r0, r1, fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC), e;
    char old[32] = "";
    FILE *f = fopen(MAX_PINS, "r");

    if (!f || !fgets(old, sizeof(old), f) || fd < 0 || emu_alloc(GPU_PAGE, 1, 0, &va[0]) ||
        emu_alloc(GPU_PAGE, 1, 0, &va[1])) {
        t_fail("pin_error/setup", "%s", strerror(errno));
        return;
    }
    fclose(f);
    p.addr = va[0];
    if (ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p) || t_write_file(MAX_PINS, "1\n")) {
        t_fail("pin_error/setup", "pin, or max_pins_per_file: %s", strerror(errno));
        return;
    }
    r0 = refcnt();
    cbs = emu_callbacks_fired();
    emu_inject(NVP2P_EMU_FAIL_PUT_PAGES, 1, EIO);
    p.addr = va[1];
    e = ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p) ? errno : 0;
    emu_inject(NVP2P_EMU_FAIL_PUT_PAGES, 0, EIO);
    t_write_file(MAX_PINS, old);
    r1 = refcnt();
    t_check(e == EDQUOT, "pin_error/pin_refused_file_full", "PIN: %s",
            e ? strerror(e) : "succeeded");
    t_check(emu_live_pins() == base + 2, "pin_error/put_pages_failed_table_still_held",
            "live pins %llu (was %llu, one pin of the file's own)",
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    if (t_check(r1 == r0 + 1, "pin_error/module_held_while_callback_due", "refcnt %d (was %d)",
                r1, r0))
        check_late_callback("pin_error/", va[1], base + 1, cbs, r0);
    else
        printf("# not freeing the allocation: gdrdrv would get a callback for a pin it freed\n");
    close(fd);                          /* the file's own pin: put_pages works again */
    emu_free(va[0]);
}

int main(void)
{
    uint64_t va = 0, base = emu_live_pins(), cbs = emu_callbacks_fired();
    struct gdrdrv_pin_buffer_v2 p = { .size = GPU_PAGE };
    int r0 = refcnt(), fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC), r1 = -1, e;

    if (fd < 0 || emu_alloc(GPU_PAGE, 1, 0, &va)) {
        t_fail("setup", "%s", strerror(errno));
        return 1;
    }
    p.addr = va;
    if (ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p) || emu_inject(NVP2P_EMU_FAIL_PUT_PAGES, 1, EIO)) {
        t_fail("setup", "pin/inject: %s", strerror(errno));
        return 1;
    }
    struct gdrdrv_unpin_buffer u = { .handle = p.handle };
    e = ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;
    close(fd);
    r1 = refcnt();
    t_check(e == 0, "unpin_with_failing_put_pages", "UNPIN: %s", strerror(e));
    t_check(emu_live_pins() == base + 1, "put_pages_failed_table_still_held", "live pins %llu (was %llu)",
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    if (!t_check(r1 == r0 + 1, "module_held_while_callback_due", "refcnt %d (was %d)", r1, r0)) {
        printf("# not freeing the allocation: gdrdrv would get a callback for a pin it freed\n");
        return t_status();
    }
    check_late_callback("", va, base, cbs, r0);
    test_pin_error_orphan();
    return t_status();
}

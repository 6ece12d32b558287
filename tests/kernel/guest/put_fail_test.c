// SPDX-License-Identifier: MIT
/*
 * put_fail_test.c - (non-persistent) nvidia_p2p_put_pages fails while the driver still holds
 * the free callback (provider: NVP2P_EMU_FAIL_PUT_PAGES). gdrdrv must then keep the pin,
 * and itself loaded, until the callback comes: freeing the pin would leave the driver a
 * callback into freed memory, unloading would leave it one into freed code. When the memory
 * is freed later, the callback finds the pin, frees the page table, and gdrdrv lets go.
 * Reads gdrdrv's use count from /sys/module/gdrdrv/refcnt; does not free the allocation
 * (which fires the callback) when gdrdrv has already let go, so a failure here stays a
 * failure and does not become a crash.
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

static int refcnt(void)
{
    FILE *f = fopen("/sys/module/gdrdrv/refcnt", "r");
    int n = -1;

    if (f) {
        if (fscanf(f, "%d", &n) != 1)
            n = -1;
        fclose(f);
    }
    return n;
}

int main(void)
{
    uint64_t va = 0, base = emu_live_pins(), cbs = emu_callbacks_fired();
    struct gdrdrv_pin_buffer_v2 p = { .size = GPU_PAGE };
    int r0 = refcnt(), fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC), r1 = -1, e;
    struct timespec tick = { 0, 50 * 1000 * 1000 };

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
    e = emu_free(va);                   /* NVIDIA's callback after all */
    for (int i = 0; i < 100 && refcnt() != r0; i++)
        nanosleep(&tick, NULL);
    t_check(!e && emu_callbacks_fired() == cbs + 1 && emu_live_pins() == base,
            "late_callback_frees_table", "free %d, callbacks %llu (was %llu), live pins %llu (was %llu)", e,
            (unsigned long long)emu_callbacks_fired(), (unsigned long long)cbs,
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    t_check(refcnt() == r0, "module_released_after_callback", "refcnt %d (was %d)", refcnt(), r0);
    return t_status();
}

// SPDX-License-Identifier: MIT
/*
 * rmmod_race_test.c - rmmod of gdrdrv racing the last free callback, that of an orphan (a
 * non-persistent pin whose put_pages failed, provider NVP2P_EMU_FAIL_PUT_PAGES; the orphan
 * holds the module until its callback comes). The provider holds that callback inside
 * nvidia_p2p_free_page_table for HOLD_MS (unlink_delay_ms), after the callback has given the
 * module reference back, and rmmod comes in the middle: module exit must wait for the
 * callback to leave, since it returns into gdrdrv's code. A gdrdrv whose exit does not wait
 * is gone when the callback resumes (the kernel's page fault on freed module text ends the
 * run); one that drops the reference only at the end of its callback leaves that window for
 * its last instructions. Checks rmmod is refused while the callback is due, that it succeeds
 * once the callback has begun and not before it left (it takes at least most of HOLD_MS),
 * and that the table is freed. Run last with gdrdrv use_persistent_mapping=0 loaded: it
 * unloads gdrdrv itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
#define HOLD_MS 600
#define UNLINK_DELAY "/sys/module/nvp2p_emu/parameters/unlink_delay_ms"

static int write_param(const char *path, unsigned int v)
{
    FILE *f = fopen(path, "w");
    int ok;

    if (!f)
        return 0;
    ok = fprintf(f, "%u\n", v) > 0;
    return fclose(f) == 0 && ok;
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int rmmod_gdrdrv(void)
{
    return syscall(SYS_delete_module, "gdrdrv", O_NONBLOCK) ? errno : 0;
}

struct freer {
    uint64_t va;
    int ret;
};

static void *free_it(void *arg)
{
    struct freer *f = arg;

    f->ret = emu_free(f->va) ? errno : 0;
    return NULL;
}

int main(void)
{
    uint64_t base = emu_live_pins();
    struct gdrdrv_pin_buffer_v2 p = { .size = GPU_PAGE };
    struct timespec third = { 0, HOLD_MS / 3 * 1000000L };
    struct freer f = { 0 };
    int fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC), e;
    pthread_t th;
    double t0, took;

    if (fd < 0 || emu_alloc(GPU_PAGE, 1, 0, &f.va)) {
        t_fail("setup", "open or alloc: %s", strerror(errno));
        return t_status();
    }
    p.addr = f.va;
    if (ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p) || emu_inject(NVP2P_EMU_FAIL_PUT_PAGES, 1, EIO)) {
        t_fail("setup", "pin or inject: %s", strerror(errno));
        return t_status();
    }
    struct gdrdrv_unpin_buffer u = { .handle = p.handle };

    e = ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;
    close(fd);
    if (!t_check(!e, "orphan_made", "UNPIN: %s", strerror(e)))
        return t_status();
    e = rmmod_gdrdrv();
    if (!t_check(e == EWOULDBLOCK || e == EBUSY, "rmmod_refused_while_callback_due",
                 "rmmod: %s", e ? strerror(e) : "succeeded"))
        return t_status();              /* freeing now would call into a gone module */

    if (!write_param(UNLINK_DELAY, HOLD_MS)) {
        t_fail("setup", "%s: %s", UNLINK_DELAY, strerror(errno));
        return t_status();
    }
    pthread_create(&th, NULL, free_it, &f);
    nanosleep(&third, NULL);            /* the callback is held, its module reference given back */
    t0 = now_ms();
    e = rmmod_gdrdrv();
    took = now_ms() - t0;
    pthread_join(th, NULL);
    write_param(UNLINK_DELAY, 0);
    t_check(!e, "rmmod_during_callback", "rmmod: %s", strerror(e));
    t_check(took >= HOLD_MS / 3, "rmmod_waited_for_callback",
            "rmmod returned after %.0f ms, the callback was held %d ms more", took,
            HOLD_MS * 2 / 3);
    t_check(!f.ret && emu_live_pins() == base, "callback_freed_table",
            "FREE: %s, live tables %llu (was %llu)", strerror(f.ret),
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    printf("# rmmod took %.0f ms\n", took);
    return t_status();
}

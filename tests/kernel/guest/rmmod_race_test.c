// SPDX-License-Identifier: MIT
/*
 * rmmod_race_test.c - rmmod of gdrdrv racing the last free callback, that of an orphan (a
 * non-persistent pin whose put_pages failed, provider NVP2P_EMU_FAIL_PUT_PAGES; the orphan
 * holds the module until its callback comes). The provider holds that callback inside
 * nvidia_p2p_free_page_table (its unlink gate), after the callback has given the module
 * reference back, and rmmod comes in the middle: module exit must wait for the callback to
 * leave, since it returns into gdrdrv's code. A gdrdrv whose exit does not wait is gone when
 * the callback resumes (the kernel's page fault on freed module text ends the run); one that
 * drops the reference only at the end of its callback leaves that window for its last
 * instructions. Checks rmmod is refused while the callback is due; that once the callback
 * has begun rmmod goes into gdrdrv's exit and stays blocked there (SETTLE_MS, seen in /proc:
 * race.h) while the callback is held, and succeeds once it is let go; and that the table is
 * freed. Run last with gdrdrv use_persistent_mapping=0 loaded: it unloads gdrdrv itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "race.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
/*
 * How long rmmod, once seen blocked in gdrdrv, must stay so with the callback held. Only a
 * broken gdrdrv is timed by it (an exit that does not wait returns meanwhile); a working one
 * stays blocked until the gate opens, however long that is.
 */
#define SETTLE_MS 1000
#define GATE NVP2P_EMU_GATE_UNLINK

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

static void *remove_it(void *arg)
{
    *(int *)arg = rmmod_gdrdrv();
    return NULL;
}

/*
 * rmmod, in tr, while the callback is held: 1 when it was seen blocked in gdrdrv and stayed
 * there for SETTLE_MS, 0 when it returned meanwhile; -1 when it did neither (why says what).
 */
static int rmmod_while_held(struct race_thread *tr, int *ret, char *why, size_t len)
{
    char wchan[128] = "";
    double end;
    int b;

    if (race_thread_start(tr, -1, remove_it, ret)) {
        snprintf(why, len, "rmmod's thread did not start");
        return -1;
    }
    b = race_thread_blocked(tr, "gdrdrv");
    if (b == RACE_TIMEOUT) {
        race_wchan(getpid(), tr->tid, wchan, sizeof(wchan));
        snprintf(why, len, "rmmod neither blocked in gdrdrv nor returned in %d s (state %c, in %s)",
                 RACE_WAIT_S, race_state(getpid(), tr->tid), wchan);
        return -1;
    }
    if (b == RACE_DONE)
        return 0;
    race_wchan(getpid(), tr->tid, wchan, sizeof(wchan));
    for (end = race_now() + SETTLE_MS / 1e3; race_now() < end;) {
        if (__atomic_load_n(&tr->done, __ATOMIC_ACQUIRE))
            return 0;
        race_sleep_ms(1);
    }
    printf("# rmmod blocked in %s while the callback was held\n", wchan);
    return 1;
}

int main(void)
{
    uint64_t base = emu_live_pins();
    struct gdrdrv_pin_buffer_v2 p = { .size = GPU_PAGE };
    struct freer f = { 0 };
    struct race_thread tf, tr = { 0 };
    int fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC), e, waited = -1, rm = -1;
    char why[256] = "";

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

    e = emu_gate(GATE);
    if (e || (e = race_thread_start(&tf, -1, free_it, &f))) {
        t_fail("setup", "the provider's unlink gate (%s) or a thread: %s", NVP2P_EMU_GATE_PARAM,
               strerror(e));
        emu_gate(0);
        return t_status();              /* the orphan keeps gdrdrv: no rmmod can follow */
    }
    /* The callback is held once it is at the gate, its module reference given back. */
    if (race_wait_stopped(GATE, 1))
        snprintf(why, sizeof(why), "the callback never reached the provider's unlink gate in %d s",
                 RACE_WAIT_S);
    else
        waited = rmmod_while_held(&tr, &rm, why, sizeof(why));
    emu_gate(0);                        /* the callback goes on, and leaves */
    if (race_thread_join(&tr, 2 * RACE_WAIT_S) | race_thread_join(&tf, 2 * RACE_WAIT_S)) {
        snprintf(why, sizeof(why), "rmmod or FREE stuck in the kernel after the gate opened");
        waited = -1;
    }
    t_check(waited >= 0 && !rm, "rmmod_during_callback", "rmmod: %s",
            waited < 0 ? why : strerror(rm));
    t_check(waited == 1, "rmmod_waited_for_callback", "%s", waited < 0 ? why :
            "rmmod returned while the callback was still held in the provider");
    t_check(!f.ret && emu_live_pins() == base, "callback_freed_table",
            "FREE: %s, live tables %llu (was %llu)", strerror(f.ret),
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    return t_status();
}

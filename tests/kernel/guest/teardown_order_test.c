// SPDX-License-Identifier: MIT
/*
 * teardown_order_test.c - UNPIN and close() against the free of the GPU memory, in each
 * teardown order the provider can produce (its `order` parameter, tests/kernel/emu/provider/
 * emu_p2p.c): 0, the consumer's callback frees the table; 1, NVIDIA's order (callback with
 * the table listed, under the lock put_pages takes, then the provider unlinks and frees it);
 * 2, the table unlinked before the callback is entered, put_pages returning 0 meanwhile
 * without waiting. FREE holds its callbacks back (the provider's callback gate) and the
 * freeing side comes in the middle of that, and the gate opens only once it is seen blocked
 * in the provider (orders 0 and 1: put_pages waits) or returned (order 2: race.h): in
 * order 2 gdrdrv is told "put" before the callback has begun, frees the pin, and the
 * callback comes afterwards. A gdrdrv whose callback finds
 * its pin by address then works on freed memory (KASAN's use-after-free report on the debug
 * kernel, which the rig fails on); it must find nothing and leave. Each round checks UNPIN's
 * result, that FREE fired its callback, and that the provider's live tables and gdrdrv's
 * pin count come back.
 *   teardown_order_test     run with gdrdrv use_persistent_mapping=0
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "race.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
#define GATE NVP2P_EMU_GATE_CB
#define ORDER "/sys/module/nvp2p_emu/parameters/order"

static int set_order(unsigned int v)
{
    FILE *f = fopen(ORDER, "w");
    int ok;

    if (!f)
        return 0;
    ok = fprintf(f, "%u\n", v) > 0;
    return fclose(f) == 0 && ok;
}

/* gdrdrv's count of live pin structs (the params file). */
static long gdrdrv_pins(void)
{
    FILE *f = fopen("/proc/driver/gdrdrv/params", "r");
    char line[128];
    long n = -1;

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "pins: %ld", &n) == 1)
            break;
    fclose(f);
    return n;
}

struct freer {
    uint64_t va;
    int ret;
};

static void *free_now(void *arg)
{
    struct freer *f = arg;

    f->ret = emu_free(f->va) ? errno : 0;
    return NULL;
}

/* The freeing side of UNPIN_DURING and CLOSE_DURING, in a thread of its own. */
struct side {
    int fd, unpin, ret;
    uint64_t handle;
};

static void *freeing_side(void *arg)
{
    struct side *s = arg;
    struct gdrdrv_unpin_buffer u = { .handle = s->handle };

    if (s->unpin)
        s->ret = ioctl(s->fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;
    close(s->fd);
    return NULL;
}

/*
 * During FREE, its callback held at the gate: the freeing side started, and seen blocked in
 * the provider's put_pages or done, then the gate opened. 1 when it was blocked, 0 when it
 * returned first; -1 with why filled when a state never came.
 */
static int during_free(unsigned int order, struct freer *f, struct side *s, char *why,
                       size_t len)
{
    struct race_thread tf, ts = { 0 };
    int e = emu_gate(GATE), b = RACE_TIMEOUT, ran = 0;

    if (e || (e = race_thread_start(&tf, -1, free_now, f))) {
        snprintf(why, len, "order %u: gate or thread: %s", order, strerror(e));
        emu_gate(0);
        close(s->fd);
        return -1;
    }
    if (race_wait_stopped(GATE, 1)) {
        snprintf(why, len, "order %u: FREE never reached the provider's callback gate in %d s",
                 order, RACE_WAIT_S);
    } else if ((e = race_thread_start(&ts, -1, freeing_side, s))) {
        snprintf(why, len, "order %u: thread: %s", order, strerror(e));
    } else {
        ran = 1;
        b = race_thread_blocked(&ts, "nvidia_p2p");
        if (b == RACE_TIMEOUT)
            snprintf(why, len, "order %u: %s neither blocked in put_pages nor returned in %d s",
                     order, s->unpin ? "UNPIN" : "close()", RACE_WAIT_S);
    }
    emu_gate(0);                        /* whatever happened: the callback goes on */
    if (!ran)
        close(s->fd);                   /* the side never ran */
    if ((race_thread_join(&ts, 2 * RACE_WAIT_S) | race_thread_join(&tf, 2 * RACE_WAIT_S)) &&
        b != RACE_TIMEOUT) {
        snprintf(why, len, "order %u: a thread stuck in the kernel after the gate opened", order);
        b = RACE_TIMEOUT;
    }
    return b == RACE_TIMEOUT ? -1 : b == RACE_BLOCKED;
}

enum how { CALLBACK_FIRST, UNPIN_DURING, CLOSE_DURING };
static const char *const how_name[] = { "callback_then_unpin", "unpin_during_free",
                                        "close_during_free" };

/* One round; 0 or 1 with why filled. *waited: the freeing side waited for the callback. */
static int round_of(unsigned int order, enum how how, int *waited, char *why, size_t len)
{
    uint64_t base = emu_live_pins(), cbs = emu_callbacks_fired();
    struct gdrdrv_pin_buffer_v2 p = { .size = GPU_PAGE };
    struct freer f = { 0 };
    int fd, e = 0;
    long pins;

    fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
    if (fd < 0 || emu_alloc(GPU_PAGE, 1, 0, &f.va)) {
        snprintf(why, len, "open or alloc: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return 1;
    }
    p.addr = f.va;
    if (ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p)) {
        snprintf(why, len, "pin: %s", strerror(errno));
        emu_free(f.va);
        close(fd);
        return 1;
    }
    struct gdrdrv_unpin_buffer u = { .handle = p.handle };

    if (how == CALLBACK_FIRST) {
        free_now(&f);
        e = ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;
        close(fd);
    } else {
        struct side s = { .fd = fd, .unpin = how == UNPIN_DURING, .handle = p.handle };
        int w = during_free(order, &f, &s, why, len);

        if (w < 0)
            return 1;
        *waited += w;
        e = s.ret;
    }
    pins = gdrdrv_pins();
    /*
     * UNPIN after the callback: the pin was still listed (0) or is refused as gone (EINVAL
     * is not expected either: the handle stays until UNPIN). During FREE: 0.
     */
    if (e || f.ret || emu_callbacks_fired() != cbs + 1 || emu_live_pins() != base || pins) {
        snprintf(why, len, "order %u: UNPIN %s, FREE %s, callbacks +%llu, live tables %llu -> %llu, gdrdrv pins %ld",
                 order, strerror(e), strerror(f.ret),
                 (unsigned long long)(emu_callbacks_fired() - cbs),
                 (unsigned long long)base, (unsigned long long)emu_live_pins(), pins);
        return 1;
    }
    return 0;
}

int main(void)
{
    char why[256], name[96];

    int e = 0;

    if (access(ORDER, W_OK) || (e = emu_gate(0))) {
        t_fail("setup", "the provider has no writable %s or gates: %s", ORDER,
               strerror(e ? e : errno));
        return t_status();
    }
    for (unsigned int order = 0; order <= 2; order++) {
        if (!set_order(order)) {
            t_fail("setup", "cannot set order %u: %s", order, strerror(errno));
            break;
        }
        for (int how = CALLBACK_FIRST; how <= CLOSE_DURING; how++) {
            int bad = 0, waited = 0, r;

            why[0] = 0;
            for (r = 0; r < 2 && !bad; r++)
                bad = round_of(order, (enum how)how, &waited, why, sizeof(why));
            snprintf(name, sizeof(name), "order%u/%s", order, how_name[how]);
            if (how != CALLBACK_FIRST && !bad)
                printf("# %s: the freeing side came while FREE held its callback in %d of %d "
                       "rounds, and waited for it in %d\n", name, r, r, waited);
            t_check(!bad, name, "%s", why);
        }
    }
    set_order(0);
    emu_gate(0);
    return t_status();
}

// SPDX-License-Identifier: MIT
/*
 * teardown_order_test.c - UNPIN and close() against the free of the GPU memory, in each
 * teardown order the provider can produce (its `order` parameter, tests/kernel/emu/provider/
 * emu_p2p.c): 0, the consumer's callback frees the table; 1, NVIDIA's order (callback with
 * the table listed, under the lock put_pages takes, then the provider unlinks and frees it);
 * 2, the table unlinked before the callback is entered, put_pages returning 0 meanwhile
 * without waiting. FREE holds its callbacks back for DELAY_MS (cb_delay) and the freeing
 * side comes in the middle of that: in order 2 gdrdrv is told "put" before the callback
 * has begun, frees the pin, and the callback comes afterwards. A gdrdrv whose callback finds
 * its pin by address then works on freed memory (KASAN's use-after-free report on the debug
 * kernel, which the rig fails on); it must find nothing and leave. Each round checks UNPIN's
 * result, that FREE fired its callback, and that the provider's live tables and gdrdrv's
 * pin count come back.
 *   teardown_order_test     run with gdrdrv use_persistent_mapping=0
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
#define DELAY_MS 300
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

static void sleep_ms(unsigned int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

    nanosleep(&ts, NULL);
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

enum how { CALLBACK_FIRST, UNPIN_DURING, CLOSE_DURING };
static const char *const how_name[] = { "callback_then_unpin", "unpin_during_free",
                                        "close_during_free" };

/* One round; 0 or 1 with why filled. */
static int round_of(unsigned int order, enum how how, char *why, size_t len)
{
    uint64_t base = emu_live_pins(), cbs = emu_callbacks_fired();
    struct gdrdrv_pin_buffer_v2 p = { .size = GPU_PAGE };
    struct freer f = { 0 };
    pthread_t th;
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
        emu_cb_delay(0);
        free_now(&f);
        e = ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;
        close(fd);
    } else {
        emu_cb_delay(DELAY_MS);
        pthread_create(&th, NULL, free_now, &f);
        sleep_ms(DELAY_MS / 3);         /* FREE is holding its callback back now */
        if (how == UNPIN_DURING)
            e = ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;
        close(fd);
        pthread_join(th, NULL);
        emu_cb_delay(0);
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

    if (access(ORDER, W_OK)) {
        t_fail("setup", "the provider has no writable %s: %s", ORDER, strerror(errno));
        return t_status();
    }
    for (unsigned int order = 0; order <= 2; order++) {
        if (!set_order(order)) {
            t_fail("setup", "cannot set order %u: %s", order, strerror(errno));
            break;
        }
        for (int how = CALLBACK_FIRST; how <= CLOSE_DURING; how++) {
            int bad = 0;

            why[0] = 0;
            for (int r = 0; r < 2 && !bad; r++)
                bad = round_of(order, (enum how)how, why, sizeof(why));
            snprintf(name, sizeof(name), "order%u/%s", order, how_name[how]);
            t_check(!bad, name, "%s", why);
        }
    }
    set_order(0);
    return t_status();
}

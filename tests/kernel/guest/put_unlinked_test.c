// SPDX-License-Identifier: MIT
/*
 * put_unlinked_test.c - UNPIN whose nvidia_p2p_put_pages comes after the free callback has
 * unlinked the table but before the callback has returned (non-persistent pins). NVIDIA's
 * put_pages returns 0 there ("not found" is success) without waiting for the callback, so
 * gdrdrv must not take success to mean "no callback": it has to look at cb_fired under
 * pin->lock and wait for the callback's completion before the pin can be freed. Run with the
 * provider both ways (put_unlinked_ok=0: -EINVAL, =1: 0, NVIDIA's), with its put_delay_ms and
 * unlink_delay_ms parameters opening the window: put_pages sleeps before its lookup, FREE's
 * callback unlinks the table meanwhile and then sleeps inside free_page_table, holding
 * gdrdrv's pin->lock. A gdrdrv that frees the pin at once leaves the callback to touch freed
 * memory when it resumes: KASAN's use-after-free report on the debug kernel (the rig fails
 * on it), a hang or a crash on the stock ones.
 *   put_unlinked_test     run with gdrdrv use_persistent_mapping=0
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
#define ROUNDS 6
#define PARAMS "/sys/module/nvp2p_emu/parameters/"

static int set_param(const char *name, unsigned int v)
{
    char path[128];
    FILE *f;
    int ok;

    snprintf(path, sizeof(path), PARAMS "%s", name);
    f = fopen(path, "w");
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

struct freer {
    uint64_t va;
    unsigned int after_ms;
    int ret;
};

static void *free_later(void *arg)
{
    struct freer *f = arg;

    sleep_ms(f->after_ms);
    f->ret = emu_free(f->va);
    return NULL;
}

/* ROUNDS of UNPIN against FREE; returns the number of rounds that went wrong. */
static int rounds(int fd, unsigned int nvidia, char *why, size_t len)
{
    for (int i = 0; i < ROUNDS; i++) {
        uint64_t base = emu_live_pins(), cbs = emu_callbacks_fired();
        struct gdrdrv_pin_buffer_v2 p = { .size = GPU_PAGE };
        struct freer f = { .after_ms = 5 + 5 * (unsigned)i };
        pthread_t th;
        int e;

        if (emu_alloc(GPU_PAGE, 1, 0, &f.va)) {
            snprintf(why, len, "alloc: %s", strerror(errno));
            return 1;
        }
        p.addr = f.va;
        if (ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p)) {
            snprintf(why, len, "pin: %s", strerror(errno));
            emu_free(f.va);
            return 1;
        }
        pthread_create(&th, NULL, free_later, &f);
        struct gdrdrv_unpin_buffer u = { .handle = p.handle };
        e = ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;
        pthread_join(th, NULL);
        if (e || f.ret || emu_callbacks_fired() != cbs + 1 || emu_live_pins() != base) {
            snprintf(why, len, "put_unlinked_ok=%u round %d: UNPIN %s, FREE %s, callbacks +%llu, live pins %llu -> %llu",
                     nvidia, i, strerror(e), strerror(f.ret),
                     (unsigned long long)(emu_callbacks_fired() - cbs),
                     (unsigned long long)base, (unsigned long long)emu_live_pins());
            return 1;
        }
    }
    return 0;
}

int main(void)
{
    char why[256] = "";
    int fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);

    if (fd < 0 || !set_param("put_delay_ms", 60) || !set_param("unlink_delay_ms", 60)) {
        t_fail("setup", "open /dev/gdrdrv or set " PARAMS "*_delay_ms: %s", strerror(errno));
        return t_status();
    }
    for (unsigned int nvidia = 0; nvidia <= 1; nvidia++) {
        const char *name = nvidia ? "unpin_vs_callback_put_returns_0" : "unpin_vs_callback_put_fails";

        if (!set_param("put_unlinked_ok", nvidia)) {
            t_fail(name, "cannot set put_unlinked_ok: %s", strerror(errno));
            continue;
        }
        t_check(!rounds(fd, nvidia, why, sizeof(why)), name, "%s", why);
    }
    set_param("put_unlinked_ok", 0);
    set_param("put_delay_ms", 0);
    set_param("unlink_delay_ms", 0);
    close(fd);
    return t_status();
}

// SPDX-License-Identifier: MIT
/*
 * put_unlinked_test.c - UNPIN whose nvidia_p2p_put_pages comes after the free callback has
 * unlinked the table but before the callback has returned (non-persistent pins). NVIDIA's
 * put_pages returns 0 there ("not found" is success) without waiting for the callback, so
 * gdrdrv must not take success to mean "no callback": it has to look at cb_fired under
 * pin->lock and wait for the callback's completion before the pin can be freed. Run with the
 * provider both ways (put_unlinked_ok=0: -EINVAL, =1: 0, NVIDIA's), with its gates putting
 * every round in the window (race.h): UNPIN's put_pages is stopped before its lookup, FREE's
 * callback unlinks the table meanwhile and is stopped inside free_page_table, holding
 * gdrdrv's pin->lock; then put_pages goes on (the table is not found), and the callback is
 * let go once UNPIN is seen blocked in gdrdrv or has returned. A gdrdrv that frees the pin
 * at once leaves the callback to touch freed memory when it resumes: KASAN's use-after-free
 * report on the debug kernel (the rig fails on it), a hang or a crash on the stock ones.
 *   put_unlinked_test     run with gdrdrv use_persistent_mapping=0
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
#define ROUNDS 6
#define PARAMS "/sys/module/nvp2p_emu/parameters/"

/* 1 when the provider's parameter took v, 0 when not. */
static int set_param(const char *name, unsigned int v)
{
    char path[128], val[16];

    snprintf(path, sizeof(path), PARAMS "%s", name);
    snprintf(val, sizeof(val), "%u\n", v);
    return t_write_file(path, val) == 0;
}

struct freer {
    uint64_t va;
    int ret;
};

static void *free_it(void *arg)
{
    struct freer *f = arg;

    f->ret = emu_free(f->va);           /* runs gdrdrv's callback: stopped after the unlink */
    return NULL;
}

struct unpinner {
    int fd, ret;
    uint64_t handle;
};

static void *unpin_it(void *arg)
{
    struct unpinner *u = arg;
    struct gdrdrv_unpin_buffer req = { .handle = u->handle };

    u->ret = ioctl(u->fd, GDRDRV_IOC_UNPIN_BUFFER, &req) ? errno : 0;
    return NULL;
}

/*
 * The steps of a round, UNPIN started in tu: NULL when each came, else the one that did not.
 * *blocked: UNPIN was seen blocked in gdrdrv after its put_pages found no table.
 */
static const char *steps(struct race_thread *tu, struct race_thread *tf, struct freer *f,
                         int *blocked)
{
    int b;

    if (race_wait_stopped(NVP2P_EMU_GATE_PUT, 1))
        return "UNPIN's put_pages never reached the provider's gate";
    if (race_thread_start(tf, -1, free_it, f))
        return "FREE's thread did not start";
    if (race_wait_stopped(NVP2P_EMU_GATE_UNLINK, 1))
        return "the callback never reached the gate after its unlink";
    if (emu_gate(NVP2P_EMU_GATE_UNLINK))     /* put_pages goes on and finds no table */
        return "the put_pages gate did not open";
    b = race_thread_blocked(tu, "gdrdrv");
    *blocked = b == RACE_BLOCKED;
    return b == RACE_TIMEOUT ? "UNPIN neither blocked in gdrdrv nor returned" : NULL;
}

/* ROUNDS of UNPIN against FREE; returns the number of rounds that went wrong. */
static int rounds(int fd, unsigned int nvidia, int *blocked, char *why, size_t len)
{
    *blocked = 0;
    for (int i = 0; i < ROUNDS; i++) {
        uint64_t base = emu_live_pins(), cbs = emu_callbacks_fired();
        struct gdrdrv_pin_buffer_v2 p = { .size = GPU_PAGE };
        struct freer f = { 0 };
        struct unpinner u = { .fd = fd };
        struct race_thread tf = { 0 }, tu;
        const char *stuck;
        int b = 0, e;

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
        u.handle = p.handle;
        e = emu_gate(NVP2P_EMU_GATE_PUT | NVP2P_EMU_GATE_UNLINK);
        if (!e)
            e = race_thread_start(&tu, -1, unpin_it, &u);
        if (e) {
            snprintf(why, len, "gates or thread: %s", strerror(e));
            emu_gate(0);
            emu_free(f.va);
            return 1;
        }
        stuck = steps(&tu, &tf, &f, &b);
        emu_gate(0);                    /* whatever happened: everybody goes on */
        if (!tf.started)                /* the round stopped before FREE */
            f.ret = emu_free(f.va);
        if ((race_thread_join(&tu, 2 * RACE_WAIT_S) | race_thread_join(&tf, 2 * RACE_WAIT_S)) &&
            !stuck)
            stuck = "a thread stuck in the kernel after the gates opened";
        *blocked += b;
        if (stuck) {
            snprintf(why, len, "put_unlinked_ok=%u round %d: %s in %d s", nvidia, i, stuck,
                     RACE_WAIT_S);
            return 1;
        }
        if (u.ret || f.ret || emu_callbacks_fired() != cbs + 1 || emu_live_pins() != base) {
            snprintf(why, len, "put_unlinked_ok=%u round %d: UNPIN %s, FREE %s, callbacks +%llu, live pins %llu -> %llu",
                     nvidia, i, strerror(u.ret), strerror(f.ret),
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
    int fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC), blocked;

    if (fd < 0 || emu_gate(0)) {
        t_fail("setup", "open /dev/gdrdrv or the provider's gates: %s", strerror(errno));
        return t_status();
    }
    for (unsigned int nvidia = 0; nvidia <= 1; nvidia++) {
        const char *name = nvidia ? "unpin_vs_callback_put_returns_0" : "unpin_vs_callback_put_fails";

        if (!set_param("put_unlinked_ok", nvidia)) {
            t_fail(name, "cannot set put_unlinked_ok: %s", strerror(errno));
            continue;
        }
        int bad = rounds(fd, nvidia, &blocked, why, sizeof(why));

        /* UNPIN returning in a round is gdrdrv's to judge: the checks above and KASAN. */
        if (!bad)
            printf("# %s: in %d of %d rounds put_pages found the table unlinked while the "
                   "callback was held; UNPIN then waited for the callback in %d\n", name,
                   ROUNDS, ROUNDS, blocked);
        t_check(!bad, name, "%s", why);
    }
    set_param("put_unlinked_ok", 0);
    emu_gate(0);
    close(fd);
    return t_status();
}

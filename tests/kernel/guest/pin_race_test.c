// SPDX-License-Identifier: MIT
/*
 * pin_race_test.c - races on a pin's lifetime through the raw gdrdrv ioctls.
 *  - PIN racing UNPIN of the handle it is about to return (handles are predictable): the
 *    handle PIN returns must be the one of the pin it made, never memory of a pin that another
 *    thread already unpinned and freed (and that a new pin of that thread may reuse).
 *  - (persistent) FREE racing UNPIN: the provider's FREE keeps the memory while a persistent
 *    pin holds it, and the put of that pin, at any moment of FREE's run, lets it go exactly
 *    once (a release while FREE still used the allocation was a use after free that KASAN
 *    caught in the fuzz run of the debug kernel).
 *  - (non-persistent) FREE racing PIN (the free callback during pin creation, whose error path
 *    frees the pin) and FREE racing UNPIN (the freeing side meeting a running callback): the
 *    pin may be freed only after the callback is done with it; no leak, crash or hang.
 *   pin_race_test                  the PIN/UNPIN race and FREE racing a persistent UNPIN
 *   pin_race_test --nonpersistent  the PIN/UNPIN race and the FREE races
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
#define STEP (GPU_PAGE / 4096)          /* handles of 64 KiB pins advance by this */
#define MIN_ROUNDS 21                   /* FREE racing PIN or UNPIN: rounds that count */

static int fd = -1;

static int pin(uint64_t va, uint64_t *h)
{
    struct gdrdrv_pin_buffer_v2 p = { .addr = va, .size = GPU_PAGE };
    int e = ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p) ? errno : 0;

    *h = p.handle;
    return e;
}

static int unpin(uint64_t h)
{
    struct gdrdrv_unpin_buffer u = { .handle = h };

    return ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;
}

static int info_va(uint64_t h, uint64_t *va)
{
    struct gdrdrv_get_info_v2 i = { .handle = h };
    int e = ioctl(fd, GDRDRV_IOC_GET_INFO_V2, &i) ? errno : 0;

    *va = i.va;
    return e;
}

/* ---- PIN racing UNPIN of its own future handle -------------------------------------------- */
struct sniper {
    uint64_t va_other;
    volatile uint64_t last;         /* the pinner's last handle */
    volatile int stop;
    int kills;
};

/* Unpins the handles the pinner is about to get; pins another buffer at once, so the freed
 * pin's memory is likely reused by a pin with another handle. */
static void *sniper_thread(void *arg)
{
    struct sniper *s = arg;
    uint64_t mine[8] = { 0 }, h;
    unsigned int n = 0;

    while (!s->stop) {
        for (uint64_t k = 1; k <= 3 && !s->stop; k++) {
            uint64_t t = s->last + k * STEP;
            int own = 0;

            for (int j = 0; j < 8; j++)
                own |= mine[j] == t;
            if (own || unpin(t))
                continue;
            s->kills++;
            if (mine[n % 8])
                unpin(mine[n % 8]);
            mine[n % 8] = pin(s->va_other, &h) ? 0 : h;
            n++;
        }
    }
    for (int j = 0; j < 8; j++)
        if (mine[j])
            unpin(mine[j]);
    return NULL;
}

static void test_pin_vs_unpin(void)
{
    struct sniper s = { 0 };
    uint64_t va = 0, h, got, base = emu_live_pins();
    int rounds = 3000, bad = 0, e = 0, i;
    pthread_t th;
    time_t t0 = time(NULL);

    if (emu_alloc(GPU_PAGE, 1, 0, &va) || emu_alloc(GPU_PAGE, 1, 0, &s.va_other)) {
        t_fail("pin_returns_its_own_handle", "provider ALLOC failed");
        return;
    }
    pthread_create(&th, NULL, sniper_thread, &s);
    for (i = 0; i < rounds && !bad && time(NULL) - t0 < 40; i++) {
        e = pin(va, &h);
        if (e)
            break;
        s.last = h;
        /* Ours, or already unpinned by the sniper (EINVAL); never another pin's. */
        if (h == 0 || (info_va(h, &got) == 0 && got != va)) {
            printf("# PIN returned handle %#llx, which is not the pin it made\n",
                   (unsigned long long)h);
            bad++;
        } else if (info_va(h, &got) == 0) {
            unpin(h);
        }
    }
    s.stop = 1;
    pthread_join(th, NULL);
    printf("# %d pins, %d of them unpinned by the other thread first\n", i, s.kills);
    t_check(!e && !bad, "pin_returns_its_own_handle", "pin error %d, %d wrong handle(s)", e, bad);
    emu_free(va);
    emu_free(s.va_other);
    t_check(emu_live_pins() == base, "pin_vs_unpin_no_leak", "live pins %llu (was %llu)",
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
}

/* ---- non-persistent: FREE racing PIN and UNPIN -------------------------------------------- */
struct freer { uint64_t va; unsigned int spin; volatile int ready, go; };

static void *free_thread(void *arg)
{
    struct freer *f = arg;

    f->ready = 1;
    while (!f->go)
        ;
    for (volatile unsigned int i = 0; i < f->spin; i++)
        ;
    emu_free(f->va);
    return NULL;
}

/*
 * FREE on one thread, UNPIN on this one, released together with a margin that shifts each
 * round. during_pin (non-persistent): PIN instead, against FREE. Either may go first; what
 * must hold is that nothing leaks and the kernel reports nothing (the rig reads its log).
 */
static void test_free_races(int during_pin, int persistent)
{
    const char *name = during_pin ? "free_races_pin_create" :
                       persistent ? "free_races_persistent_unpin" : "free_races_unpin";
    uint64_t base = emu_live_pins(), cbs = emu_callbacks_fired(), h = 0;
    int rounds = persistent ? 2000 : 200, done = 0, fired = 0;
    time_t t0 = time(NULL);

    /* The time bound cuts the rounds short, never below the MIN_ROUNDS the check wants. */
    for (int i = 0; i < rounds && (i < MIN_ROUNDS || time(NULL) - t0 < 40); i++) {
        struct freer f = { .spin = (unsigned)(i % 16) * 500 };
        pthread_t th;
        int e = 0;

        if (emu_alloc(GPU_PAGE, 1, 0, &f.va))
            break;
        if (!during_pin && pin(f.va, &h)) {
            emu_free(f.va);
            break;
        }
        pthread_create(&th, NULL, free_thread, &f);
        while (!f.ready)
            ;
        f.go = 1;
        /* Either side may go first, by a shifting margin, so that some callbacks fire. */
        for (volatile unsigned int k = 0; k < (unsigned)(15 - i % 16) * 500; k++)
            ;
        if (during_pin)
            e = pin(f.va, &h);          /* may fail: the memory went first */
        if (!e)
            unpin(h);
        pthread_join(th, NULL);
        done++;
    }
    fired = (int)(emu_callbacks_fired() - cbs);
    printf("# %s: %d rounds, %d callbacks\n", name, done, fired);
    if (persistent)
        t_check(fired == 0, "free_fires_no_persistent_callback", "%d callbacks", fired);
    t_check(done >= MIN_ROUNDS, name, "%d of %d rounds", done, rounds);
    char leak[64];
    snprintf(leak, sizeof(leak), "%s_no_leak", name);
    t_check(emu_live_pins() == base, leak, "live pins %llu (was %llu)",
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
}

int main(int argc, char **argv)
{
    int nonpersistent = argc > 1 && !strcmp(argv[1], "--nonpersistent");

    fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
    if (fd < 0 || emu_fd() < 0) {
        t_fail("setup", "/dev/gdrdrv or the provider: %s", strerror(errno));
        return 1;
    }
    test_pin_vs_unpin();
    if (nonpersistent) {
        test_free_races(1, 0);
        test_free_races(0, 0);
    } else {
        test_free_races(0, 1);
    }
    close(fd);
    return t_status();
}

// SPDX-License-Identifier: MIT
/*
 * bar_life_test.c - lifetimes of gdrdrv mappings of MMIO pages (provider allocations in the
 * ivshmem BAR, see bar_test.c): munmap before and after close and after UNPIN (raw gdrdrv
 * fd), a process exiting or killed with live pins and mappings, and the provider freeing the
 * allocation under a mapping. After each, no PAT entry may be left on the pages, and while a
 * mapping lives its WC reservation must stay (mmio.c checks the PAT list and the kernel log).
 *   bar_life_test                  persistent-mode expectations (default module parameters)
 *   bar_life_test --nonpersistent  FREE fires gdrdrv's free callback; also FREE (callback
 *                                  zap + WC release) racing munmap, 100 rounds
 * Skips, saying why, when the guest has no ivshmem device (run-qemu.sh VRAMIO_QEMU_BAR=0).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gdrapi.h>

#include "uapi/gdrdrv.h"
#include "mmio.h"

static int nonpersistent;

/* ---- raw gdrdrv fd: munmap and close in every order --------------------------------------- */
enum order { CLOSE_THEN_MUNMAP, UNPIN_THEN_MUNMAP, MUNMAP_THEN_CLOSE, MUNMAP_HALVES };

static void test_raw_order(enum order o)
{
    static const char *const names[] = { "close_then_munmap", "unpin_then_munmap", "munmap_then_close",
                                         "munmap_in_halves" };
    const uint64_t len = 4 * GPU_PAGE;
    unsigned char in[len], out[len];
    uint64_t va = 0, base = emu_live_pins(), *pp = NULL, maplen = len;
    size_t np = 0;
    struct gdrdrv_pin_buffer_v2 p = { .size = len };
    int fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC), e = 0, same = 0;
    unsigned char *m = MAP_FAILED;

    if (fd < 0 || emu_alloc(len, 1, BAR_FLAG | REVERSED, &va) || !(pp = bar_capture(va, len, &np))) {
        t_fail(names[o], "setup failed");
        goto out;
    }
    p.addr = va;
    if (ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p) ||
        (m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(p.handle << 12))) == MAP_FAILED) {
        t_fail(names[o], "pin/mmap: %s", strerror(errno));
        goto out;
    }
    t_pattern(in, len, 500 + o);
    if (o == CLOSE_THEN_MUNMAP) {
        close(fd);                      /* the mapping keeps the file, the pin and its WC type */
        fd = -1;
        check_wc("close_then_munmap_keeps_wc", pp, np);
        check_ptes("close_then_munmap_keeps_ptes", m, pp, np, MODE(WC));
        memcpy(m, in, len);
        same = !emu_read(va, out, len) && !memcmp(in, out, len);
    } else if (o == UNPIN_THEN_MUNMAP) {
        struct gdrdrv_unpin_buffer u = { .handle = p.handle };

        memcpy(m, in, len);
        e = ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;    /* zaps the live mapping */
        check_ptes("unpin_zaps_ptes", m, pp, np, 0);
        same = !emu_read(va, out, len) && !memcmp(in, out, len);
    } else if (o == MUNMAP_HALVES) {
        /* Unmapping the first half splits the VMA; the second half must still work. */
        memcpy(m, in, len);
        munmap(m, len / 2);
        check_wc("munmap_in_halves_keeps_wc", pp + np / 2, np / 2);
        check_ptes("munmap_in_halves_keeps_ptes", m + len / 2, pp + np / 2, np / 2, MODE(WC));
        t_pattern(in + len / 2, len / 2, 555);
        memcpy(m + len / 2, in + len / 2, len / 2);
        same = !emu_read(va, out, len) && !memcmp(in, out, len);
        m += len / 2;
        maplen = len / 2;
    } else {
        memcpy(m, in, len);
        same = !emu_read(va, out, len) && !memcmp(in, out, len);
    }
    munmap(m, maplen);
    if (fd >= 0)
        close(fd);
    fd = -1;
    t_check(!e && same && emu_live_pins() == base, names[o], "unpin %d data %s live pins %llu (was %llu)", e,
            same ? "ok" : "differs", (unsigned long long)emu_live_pins(), (unsigned long long)base);
    char rel[64];
    snprintf(rel, sizeof(rel), "%s_memtype_released", names[o]);
    check_released(rel, pp, np);
out:
    if (fd >= 0)
        close(fd);
    if (va)
        emu_free(va);
    free(pp);
}

/* ---- a process exits, or is killed, with live pins and mappings ------------------------- */
static void test_exit_with_mappings(int kill_it)
{
    const char *name = kill_it ? "killed_with_mappings" : "exit_with_mappings";
    const uint64_t len = 4 * GPU_PAGE;
    unsigned char want[len], got[len];
    uint64_t va[2] = { 0, 0 }, base = emu_live_pins(), *pp[2] = { NULL, NULL };
    size_t np[2];
    int ready[2] = { -1, -1 }, rc, same = 1;
    char c = 0;
    pid_t pid;

    if (pipe(ready) || emu_alloc(len, 1, BAR_FLAG, &va[0]) || emu_alloc(len, 2, BAR_FLAG | REVERSED, &va[1]) ||
        !(pp[0] = bar_capture(va[0], len, &np[0])) || !(pp[1] = bar_capture(va[1], len, &np[1]))) {
        t_fail(name, "setup failed");
        goto out;
    }
    t_pattern(want, len, 600 + kill_it);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        gdr_t g = gdr_open();
        gdr_mh_t mh;
        void *map;

        for (int i = 0; i < 2; i++)
            if (!g || gdr_pin_buffer_v2(g, va[i], len, 0, &mh) || gdr_map(g, mh, &map, len) ||
                gdr_copy_to_mapping(mh, map, want, len))
                _exit(20);
        if (write(ready[1], "r", 1) != 1)
            _exit(21);
        if (kill_it)
            pause();
        _exit(0);                       /* nothing unmapped, unpinned or closed */
    }
    close(ready[1]);
    ready[1] = -1;
    if (read(ready[0], &c, 1) == 1 && kill_it)
        kill(pid, SIGKILL);
    rc = t_wait_child(pid, 60);
    for (int i = 0; i < 2; i++)
        same &= !emu_read(va[i], got, len) && !memcmp(want, got, len);
    t_check(c == 'r' && rc == (kill_it ? 128 + SIGKILL : 0) && same && emu_live_pins() == base, name,
            "child status %d ready %d data %s live pins %llu (was %llu)", rc, c == 'r',
            same ? "ok" : "differs", (unsigned long long)emu_live_pins(), (unsigned long long)base);
    char rel[64];
    for (int i = 0; i < 2; i++) {
        snprintf(rel, sizeof(rel), "%s_memtype_released_%d", name, i);
        check_released(rel, pp[i], np[i]);
    }
out:
    for (int i = 0; i < 2; i++) {
        if (va[i])
            emu_free(va[i]);
        free(pp[i]);
    }
    for (int i = 0; i < 2; i++)
        if (ready[i] >= 0)
            close(ready[i]);
}

/*
 * ---- the provider frees the allocation under a live mapping -----------------------------
 * In a child. Non-persistent: the free callback sets the flag and releases the WC type while
 * the VMA still exists; an access then raises SIGBUS. Persistent: the pages stay valid, WC
 * stays reserved, and the BAR space is not handed to a new allocation until the pin is put.
 * Either way the owner then unmaps and unpins normally.
 */
/* Persistent: a new BAR allocation made now shares no page with the freed, pinned one. */
static void check_space_held(const uint64_t *pp, size_t np, uint64_t len)
{
    uint64_t other = 0, *po = NULL;
    size_t no = 0, overlap = 0;

    if (!emu_alloc(len, 1, BAR_FLAG, &other) && (po = bar_capture(other, len, &no)))
        for (size_t i = 0; i < no; i++)
            for (size_t j = 0; j < np; j++)
                overlap += po[i] == pp[j];
    t_check(po && !overlap, "bar_space_held_by_pin", "new allocation %s, %zu pages reused",
            po ? "made" : "failed", overlap);
    free(po);
    if (other)
        emu_free(other);
}

static void test_free_while_mapped(void)
{
    const uint64_t len = 4 * GPU_PAGE;
    uint64_t va = 0, base = emu_live_pins(), cbs = emu_callbacks_fired(), *pp = NULL;
    size_t np = 0;
    int rc;
    pid_t pid;

    if (emu_alloc(len, 1, BAR_FLAG | REVERSED, &va) || !(pp = bar_capture(va, len, &np))) {
        t_fail("free_while_mapped", "setup failed");
        if (va)
            emu_free(va);
        return;
    }
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        unsigned char want[len], got[len];
        gdr_t g = gdr_open();
        gdr_mh_t mh;
        void *map;
        int flag = -1;

        t_pattern(want, len, 700);
        if (!g || gdr_pin_buffer_v2(g, va, len, 0, &mh) || gdr_map(g, mh, &map, len) ||
            gdr_copy_to_mapping(mh, map, want, len))
            _exit(20);
        if (emu_free(va) || gdr_get_callback_flag(g, mh, &flag))
            _exit(21);
        if (nonpersistent) {
            t_check(flag == 1, "free_sets_callback_flag", "flag %d", flag);
            check_released("free_releases_memtype_before_munmap", pp, np);
            check_ptes("free_zaps_ptes", map, pp, np, 0);
            t_check(t_touch_faults(map) == SIGBUS, "access_after_free_sigbus", "the access did not fault");
        } else {
            t_check(flag == 0, "persistent_free_no_flag", "flag %d", flag);
            check_wc("persistent_free_keeps_wc", pp, np);
            check_ptes("persistent_free_keeps_ptes", map, pp, np, MODE(WC));
            gdr_copy_from_mapping(mh, got, map, len);
            t_check(!memcmp(want, got, len), "persistent_data_survives_free", "data differs");
            check_space_held(pp, np, len);
        }
        int a = gdr_unmap(g, mh, map, len), b = gdr_unpin_buffer(g, mh);
        t_check(!a && !b, "unpin_after_free", "unmap %d unpin %d", a, b);
        gdr_close(g);
        _exit(t_status());
    }
    rc = t_wait_child(pid, 60);
    t_check(rc == 0, "free_while_mapped_child", "child status %d", rc);
    if (nonpersistent)
        t_check(emu_callbacks_fired() == cbs + 1, "callback_fired_once", "callbacks %llu -> %llu",
                (unsigned long long)cbs, (unsigned long long)emu_callbacks_fired());
    t_check(emu_live_pins() == base, "free_while_mapped_no_leak", "live pins %llu (was %llu)",
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    check_released("free_while_mapped_memtype_released", pp, np);
    free(pp);
}

/* Non-persistent: FREE's callback (zap, WC release) racing munmap of a BAR mapping. */
static void *free_thread(void *arg)
{
    emu_free(*(uint64_t *)arg);
    return NULL;
}

static void test_free_races_munmap(void)
{
    const uint64_t len = 2 * GPU_PAGE;
    uint64_t base = emu_live_pins();
    int fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC), rounds = 100, done = 0;

    for (int i = 0; fd >= 0 && i < rounds; i++) {
        struct gdrdrv_pin_buffer_v2 p = { .size = len };
        struct gdrdrv_unpin_buffer u;
        uint64_t va;
        pthread_t th;
        void *m;

        if (emu_alloc(len, 1 + i % 2, BAR_FLAG | (i % 3 ? REVERSED : 0), &va))
            break;
        p.addr = va;
        if (ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p) ||
            (m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(p.handle << 12))) == MAP_FAILED) {
            emu_free(va);
            break;
        }
        pthread_create(&th, NULL, free_thread, &va);
        for (volatile int spin = 0; spin < (i % 16) * 200; spin++)
            ;
        munmap(m, len);
        pthread_join(th, NULL);
        u.handle = p.handle;
        ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u);
        done++;
    }
    if (fd >= 0)
        close(fd);
    t_check(done == rounds && emu_live_pins() == base, "free_races_munmap",
            "%d of %d rounds, live pins %llu (was %llu)", done, rounds,
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
}

int main(int argc, char **argv)
{
    struct nvp2p_emu_stats st0 = { 0 };

    nonpersistent = argc > 1 && !strcmp(argv[1], "--nonpersistent");
    if (!mmio_begin(&st0))
        return t_status();
    for (int o = CLOSE_THEN_MUNMAP; o <= MUNMAP_HALVES; o++)
        test_raw_order(o);
    test_exit_with_mappings(0);
    test_exit_with_mappings(1);
    test_free_while_mapped();
    if (nonpersistent)
        test_free_races_munmap();
    mmio_end(&st0);
    return t_status();
}

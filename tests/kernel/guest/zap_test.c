// SPDX-License-Identifier: MIT
/*
 * zap_test.c - a physically contiguous mapping (one 128 KiB provider page, so gdrdrv maps it
 * with a single remap over the whole VMA) that gdrdrv zaps, then munmap: by UNPIN with the
 * mapping still live (default mode), or by a provider FREE (--free, non-persistent mode).
 * On x86 a remap covering the whole VMA is PAT-tracked, and munmap of such a VMA whose PTEs
 * are gone trips WARN_ON_ONCE in untrack_pfn: with panic_on_warn the guest dies here, so
 * /init runs this last. The access between zap and munmap must raise SIGBUS.
 *   --race   FREE's callback zap racing munmap of the same VMA, 300 times
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "uapi/gdrdrv.h"

#define SZ128K (128 * 1024UL)

/* --race: FREE (callback zap) racing munmap of the same PAT-tracked VMA, many times. */
struct racer { uint64_t va; };

static void *free_thread(void *arg)
{
    emu_free(((struct racer *)arg)->va);
    return NULL;
}

static int race(void)
{
    int fd = open("/dev/gdrdrv", O_RDWR), rounds = 300, done = 0;

    for (int i = 0; fd >= 0 && i < rounds; i++) {
        struct racer r;
        struct gdrdrv_pin_buffer_v2 p = { .size = SZ128K };
        pthread_t th;
        void *m;

        if (emu_alloc(SZ128K, 2, 0, &r.va))
            break;
        p.addr = r.va;
        if (ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p))
            break;
        m = mmap(NULL, SZ128K, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(p.handle << 12));
        if (m == MAP_FAILED)
            break;
        pthread_create(&th, NULL, free_thread, &r);
        for (volatile int spin = 0; spin < (i % 16) * 200; spin++)
            ;
        munmap(m, SZ128K);
        pthread_join(th, NULL);
        struct gdrdrv_unpin_buffer u = { .handle = p.handle };
        ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u);
        done++;
    }
    if (fd >= 0)
        close(fd);
    return t_check(done == rounds, "free_races_munmap_contiguous", "%d of %d rounds", done, rounds) ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--race"))
        return race();
    int use_free = argc > 1 && !strcmp(argv[1], "--free");
    const char *name = use_free ? "free_then_munmap_contiguous" : "unpin_then_munmap_contiguous";
    struct nvp2p_emu_stats st;
    uint64_t va;
    int fd = open("/dev/gdrdrv", O_RDWR);
    struct gdrdrv_pin_buffer_v2 p = { .size = SZ128K };
    volatile unsigned char *m;
    int faulted = 0, e;

    if (fd < 0 || emu_alloc(SZ128K, 2, 0, &va)) {
        t_fail(name, "setup: %s", strerror(errno));
        return 1;
    }
    p.addr = va;
    if (ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p)) {
        t_fail(name, "pin: %s", strerror(errno));
        return 1;
    }
    m = mmap(NULL, SZ128K, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(p.handle << 12));
    if (m == MAP_FAILED) {
        t_fail(name, "mmap: %s", strerror(errno));
        return 1;
    }
    m[5] = 0x5a;                                /* the PTEs are there */
    if (use_free) {
        e = emu_free(va);
    } else {
        struct gdrdrv_unpin_buffer u = { .handle = p.handle };
        e = ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u) ? errno : 0;
    }
    faulted = t_touch_faults(&m[5]) == SIGBUS;
    printf("# zapped by %s (%d); access after it %s; now munmap\n", use_free ? "FREE" : "UNPIN", e,
           faulted ? "raised SIGBUS" : "read");
    fflush(stdout);
    munmap((void *)m, SZ128K);                  /* the kernel WARNs here if PAT-tracked */
    close(fd);
    if (!use_free)
        emu_free(va);
    emu_stats(&st);
    if (!t_check(!e && faulted, name, "zap %d, access after zap %s", e, faulted ? "faulted" : "read"))
        return 1;
    return 0;
}

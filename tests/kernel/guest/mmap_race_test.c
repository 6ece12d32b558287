// SPDX-License-Identifier: MIT
/*
 * mmap_race_test.c - a free callback during mmap() of a non-persistent pin must leave no PTE
 * to the freed GPU pages. The kernel links a new VMA into the file's address_space only after
 * the driver's ->mmap returns, so a callback that zaps between the two cannot see the VMA: a
 * driver that installs PTEs in ->mmap then leaves them pointing at memory that the provider
 * has taken back. Thread A maps a large pin of scattered 4 KiB BAR pages (slow to map, so
 * thread B's FREE lands while the mapping is made) while thread B frees the allocation after
 * a varying delay; afterwards the mapping, if mmap succeeded, must have no PTE and an access
 * must raise SIGBUS. BAR pages, so that a stale PTE reads freed MMIO, never freed RAM.
 *   mmap_race_test      run with gdrdrv use_persistent_mapping=0
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "uapi/gdrdrv.h"
#include "mmio.h"

#define LEN (4ULL << 20)
#define ROUNDS 40

struct racer {
    uint64_t va;
    volatile int go;
    unsigned int spin;
    int ret;
};

static void *free_thread(void *arg)
{
    struct racer *r = arg;

    while (!r->go)
        ;
    for (volatile unsigned int i = 0; i < r->spin; i++)
        ;
    r->ret = emu_free(r->va);
    return NULL;
}

/* Stale PTEs among the first, middle and last host page of the mapping (no access made). */
static int stale_ptes(const unsigned char *m)
{
    const uint64_t at[] = { 0, LEN / 2, LEN - HOST_PAGE };
    int stale = 0;

    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
        uint64_t pfn;
        uint32_t mode;

        stale += emu_pte(m + at[i], &pfn, &mode) == 0;
    }
    return stale;
}

int main(void)
{
    struct nvp2p_emu_stats st0;
    int fd, mapped = 0, refused = 0, stale = 0, live = 0, setup = 0;
    time_t t0 = time(NULL);

    if (!mmio_begin(&st0))
        return t_status();
    fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
    for (int i = 0; fd >= 0 && i < ROUNDS && time(NULL) - t0 < 60; i++) {
        struct gdrdrv_pin_buffer_v2 p = { .size = LEN };
        struct racer r = { .spin = (unsigned)(i % 8) * 20000 };
        pthread_t th;
        unsigned char *m;

        if (emu_alloc(LEN, 0, BAR_FLAG | REVERSED, &r.va)) {
            setup = 1;
            break;
        }
        p.addr = r.va;
        if (ioctl(fd, GDRDRV_IOC_PIN_BUFFER_V2, &p)) {
            emu_free(r.va);
            setup = 1;
            break;
        }
        pthread_create(&th, NULL, free_thread, &r);
        r.go = 1;
        m = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)(p.handle << 12));
        pthread_join(th, NULL);
        if (m == MAP_FAILED) {
            refused++;                  /* the callback came first: nothing to check */
        } else {
            int s = stale_ptes(m);

            mapped++;
            stale += s > 0;
            live += t_touch_faults(m + LEN / 2) == 0;
            munmap(m, LEN);
        }
        struct gdrdrv_unpin_buffer u = { .handle = p.handle };
        ioctl(fd, GDRDRV_IOC_UNPIN_BUFFER, &u);
        if (stale || live)
            break;                      /* seen: no need to go on */
    }
    if (fd >= 0)
        close(fd);
    printf("# %d mappings made, %d refused (callback first)\n", mapped, refused);
    t_check(fd >= 0 && !setup, "race_setup", "open/alloc/pin failed: %s", strerror(errno));
    t_check(!stale, "callback_during_mmap_leaves_no_pte",
            "%d mapping(s) kept PTEs to pages freed by the callback", stale);
    t_check(!live, "callback_during_mmap_access_sigbus",
            "%d mapping(s) read freed pages instead of raising SIGBUS", live);
    mmio_end(&st0);
    return t_status();
}

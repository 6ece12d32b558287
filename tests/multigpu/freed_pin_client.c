// SPDX-License-Identifier: MIT
/*
 * freed_pin_client.c - a pin that outlives the free of its vramio_alloc memory (run by
 * test_multigpu.sh over the stand-in CUDA driver and Vulkan loader, with a 4 KiB write
 * crossover). The pin keeps working on the pinned pages (the import holds them), so
 * vramio_copy_to_mapping_auto must write there, as gdr_copy_to_mapping does: once the pool
 * released the allocation, its GPU address reaches other memory (a later allocation may get
 * it) or none, and the copy engine must not be sent there.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t.h"
#include "vramio.h"

int fake_async_copies(void);

#define SIZE (4u << 20)
#define N (64u << 10)

int main(void)
{
    unsigned long long d = 0, d2 = 0;
    static unsigned char buf[N], back[N];
    gdr_t g = gdr_open();
    gdr_mh_t mh;
    void *map = NULL;
    int before, rc;

    if (!t_check(g && vramio_alloc(0, SIZE, &d) == 0 &&
                 gdr_pin_buffer(g, d, SIZE, 0, 0, &mh) == 0 && gdr_map(g, mh, &map, SIZE) == 0,
                 "freed_pin/setup", "%s", vramio_last_error()))
        return t_status();
    memset(buf, 0x5a, N);
    before = fake_async_copies();
    t_check(vramio_copy_to_mapping_auto(mh, map, buf, N) == 0 && fake_async_copies() > before &&
            memcmp((void *)(uintptr_t)d, buf, N) == 0, "freed_pin/engine_used_while_live",
            "%d engine copies", fake_async_copies() - before);
    /* A large allocation has a slab of its own: its free releases the VMM allocation. */
    vramio_free(d);
    vramio_alloc(0, SIZE, &d2);
    if (d2)
        memset((void *)(uintptr_t)d2, 0, N);
    memset(buf, 0xa5, N);
    before = fake_async_copies();
    rc = vramio_copy_to_mapping_auto(mh, map, buf, N);
    gdr_copy_from_mapping(mh, back, map, N);
    t_check(rc == 0 && memcmp(back, buf, N) == 0 && fake_async_copies() == before &&
            (!d2 || ((unsigned char *)(uintptr_t)d2)[0] == 0),
            "freed_pin/auto_copy_writes_the_pinned_pages",
            "rc %d, pinned pages %s, %d engine copies, later allocation at the same address %s",
            rc, memcmp(back, buf, N) ? "not written" : "written", fake_async_copies() - before,
            d2 == d ? (((unsigned char *)(uintptr_t)d2)[0] ? "written" : "untouched") : "none");
    gdr_unmap(g, mh, map, SIZE);
    gdr_unpin_buffer(g, mh);
    if (d2)
        vramio_free(d2);
    gdr_close(g);
    return t_status();
}

// SPDX-License-Identifier: MIT
/*
 * chunk_pin_client.c - a vramio_alloc block made of chunks, pinned through the vulkan backend
 * (run by test_multigpu.sh over the stand-in CUDA driver and Vulkan loader, the stand-in's
 * granularity 2 MiB, VRAMIO_POOL_CHUNK_MB=4): a 9 MiB block is CHUNKS of the driver's
 * allocations (3 where the pool chunks, the stand-in Vulkan offering placed maps; 1 where
 * chunks are off or placed maps are not offered); a pin of 1 MiB inside its second chunk
 * imports that chunk alone (4 MiB, where one allocation would cost the block's 10 MiB); a pin
 * of the whole block is one window whose CPU writes across the chunks' seams land in the
 * block, and whose reads see what the block holds there; the block's free, after the unpins,
 * leaves none of its allocations.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t.h"
#include "vramio.h"

int fake_vmm_live(void);

#define MIB (1ull << 20)
#define SIZE (9 * MIB)
#define SPAN (10 * MIB)       /* rounded to the granularity */

static unsigned long long (*import_bytes)(void);

struct pin { gdr_mh_t mh; void *map; size_t len; unsigned long long va; };

/* Pin [d, d + n) and map it: 1, or 0 with a "not ok" line for name. */
static int pin_map(gdr_t g, unsigned long long d, size_t n, struct pin *p, const char *name)
{
    gdr_info_t info;

    memset(p, 0, sizeof(*p));
    if (!t_check(gdr_pin_buffer(g, d, n, 0, 0, &p->mh) == 0 && !gdr_get_info(g, p->mh, &info) &&
                 !gdr_map(g, p->mh, &p->map, info.mapped_size), name, "%s",
                 vramio_last_error()))
        return 0;
    p->len = info.mapped_size;
    p->va = info.va;
    return 1;
}

static void unpin(gdr_t g, struct pin *p)
{
    gdr_unmap(g, p->mh, p->map, p->len);
    gdr_unpin_buffer(g, p->mh);
}

/* 1 MiB inside the second chunk: the import is that chunk's alone where the block is chunks. */
static void pin_inside(gdr_t g, unsigned long long d, int chunks)
{
    unsigned long long before = import_bytes(), want = chunks > 1 ? 4 * MIB : SPAN;
    unsigned char buf[256];
    struct pin p;

    if (!pin_map(g, d + 5 * MIB, MIB, &p, "chunk_pin/inside/pin"))
        return;
    t_check(import_bytes() - before == want, "chunk_pin/inside/imports_what_it_touches",
            "%llu bytes imported for a 1 MiB pin, %llu expected", import_bytes() - before, want);
    memset(buf, 0x77, sizeof(buf));
    t_check(gdr_copy_to_mapping(p.mh, (char *)p.map + (d + 5 * MIB - p.va), buf, sizeof(buf)) ==
            0 && !memcmp((void *)(uintptr_t)(d + 5 * MIB), buf, sizeof(buf)),
            "chunk_pin/inside/write_lands", "the block does not hold what was written");
    unpin(g, &p);
}

/* The whole block: one window, written and read across both seams. */
static void pin_whole(gdr_t g, unsigned long long d)
{
    static const unsigned long long seam[] = { 4 * MIB, 8 * MIB };
    unsigned char buf[256], back[256];
    struct pin p;
    int ok = 1, i;

    if (!pin_map(g, d, SPAN, &p, "chunk_pin/whole/pin"))
        return;
    for (i = 0; i < 2 && ok; i++) {
        char *at = (char *)p.map + (d - p.va) + seam[i] - sizeof(buf) / 2;
        unsigned char *dev = (unsigned char *)(uintptr_t)(d + seam[i] - sizeof(buf) / 2);

        t_pattern(buf, sizeof(buf), 10 + (uint64_t)i);
        ok = gdr_copy_to_mapping(p.mh, at, buf, sizeof(buf)) == 0 &&
             !memcmp(dev, buf, sizeof(buf));
        t_pattern(dev, sizeof(buf), 20 + (uint64_t)i); /* the GPU's write, as it were */
        ok = ok && gdr_copy_from_mapping(p.mh, back, at, sizeof(back)) == 0 &&
             !memcmp(back, dev, sizeof(back));
    }
    t_check(ok, "chunk_pin/whole/both_ways_across_each_seam", "seam %d", i - 1);
    unpin(g, &p);
}

int main(void)
{
    void *vk = dlopen("libvulkan.so.1", RTLD_NOW);
    int chunks = atoi(getenv("CHUNKS") ? getenv("CHUNKS") : "3"), before;
    unsigned long long d = 0;
    gdr_t g;

    *(void **)&import_bytes = vk ? dlsym(vk, "fake_vk_import_bytes") : NULL;
    if (!t_check(import_bytes != NULL, "chunk_pin/stand_in", "not the stand-in Vulkan"))
        return t_status();
    g = gdr_open();
    before = fake_vmm_live();
    if (!t_check(g && vramio_alloc(0, SIZE, &d) == 0, "chunk_pin/alloc", "%s",
                 vramio_last_error()))
        return t_status();
    t_check(fake_vmm_live() - before == chunks, "chunk_pin/allocations",
            "%d of the driver's allocations for the block, %d expected", fake_vmm_live() - before,
            chunks);
    pin_inside(g, d, chunks);
    pin_whole(g, d);
    gdr_close(g);
    t_check(vramio_free(d) == 0 && fake_vmm_live() == before, "chunk_pin/free_leaves_nothing",
            "%d allocations held", fake_vmm_live() - before);
    return t_status();
}

// SPDX-License-Identifier: MIT
/*
 * bar_test.c - gdrdrv mapping MMIO pages: allocations of the emulated provider in the memory
 * BAR of QEMU's ivshmem device (NVP2P_EMU_ALLOC_BAR), physical addresses that are not RAM, as
 * a real GPU's BAR1, so gdrdrv takes its BAR path (pages with no struct page, a WC memory-type
 * reservation). Through the real libgdrapi (static): pin, map, WC reported and reserved in
 * PAT, copies both ways at aligned and unaligned offsets checked against the provider's
 * READ/WRITE, contiguous and scattered (reversed) GPU pages of 4, 64 and 128 KiB, a DEVICE
 * mapping (no WC reservation), several pins of one allocation (one overlapping two others)
 * torn down in mixed orders and by gdr_close. Lifetimes (munmap vs close, exit, FREE under a
 * mapping) are in bar_life_test.c; the PAT and kernel-log checks in mmio.c.
 *   bar_test    in either module mode
 * Skips, saying why, when the guest has no ivshmem device (run-qemu.sh VRAMIO_QEMU_BAR=0).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gdrapi.h>

#include "mmio.h"

/* ---- one pin of a BAR allocation, mapped, copied both ways --------------------------------- */
static const struct { uint64_t off, len; } cuts[] = {
    { 1, 1 }, { 3, 7 }, { 63, 130 }, { 4095, 4098 }, { GPU_PAGE - 3, 9 }, { 0x1234, 777 },
    { GPU_PAGE + 5, GPU_PAGE + 1000 }, { 8, 8 }, { 2 * GPU_PAGE - 1, 1 },
};
#define NCUTS (sizeof(cuts) / sizeof(cuts[0]))
#define ASIZE (1ULL << 20)              /* each round trip's allocation */

/* A round trip's state: the allocation, its model (what the BAR must hold), the pin. */
struct trip {
    gdr_t g;
    const char *tag;
    unsigned kind, flags;
    uint64_t pin_off, pin_len;
    unsigned char *model, *buf;
    uint64_t va, base, *pp;
    size_t np;
    gdr_mh_t mh;
    void *map;
    char name[128];
};

/* The name of a step's result line: "<tag>/<step>". */
static const char *step_name(struct trip *t, const char *step)
{
    snprintf(t->name, sizeof(t->name), "%s/%s", t->tag, step);
    return t->name;
}

/* A step's result line; false (the round trip ends) when it failed. */
#define STEP(cond, step, ...) t_check(cond, step_name(t, step), __VA_ARGS__)

/* A BAR allocation filled with the model's bytes, its pages found in the BAR. */
static int trip_alloc(struct trip *t)
{
    int ret = emu_alloc(ASIZE, t->kind, BAR_FLAG | t->flags, &t->va);

    if (!STEP(!ret, "alloc", "provider ALLOC_BAR: %s", strerror(ret)))
        return 0;
    t_pattern(t->model, ASIZE, t->kind * 77 + t->flags);
    ret = emu_write(t->va, t->model, ASIZE);
    if (!STEP(!ret, "fill", "provider WRITE: %s", strerror(ret)))
        return 0;
    t->pp = bar_capture(t->va + t->pin_off, t->pin_len, &t->np);
    return STEP(t->pp != NULL, "pages_in_bar",
                "a page of the pin is not in the BAR [0x%llx, 0x%llx)", (unsigned long long)bar_lo,
                (unsigned long long)bar_hi);
}

/* Pin and map: a WC mapping, its pages reserved WC in PAT and its PTEs WC. */
static int trip_map(struct trip *t)
{
    gdr_info_t info;
    int ret = gdr_pin_buffer_v2(t->g, t->va + t->pin_off, t->pin_len, 0, &t->mh);

    if (!STEP(!ret, "pin", "%s", strerror(ret)))
        return 0;
    ret = gdr_map(t->g, t->mh, &t->map, t->pin_len);
    if (!STEP(!ret, "map", "%s", strerror(ret)))
        return 0;
    ret = gdr_get_info_v2(t->g, t->mh, &info);
    int where = info.va == t->va + t->pin_off && info.mapped_size == t->pin_len;
    if (!STEP(!ret && info.mapped && info.wc_mapping && info.mapping_type == GDR_MAPPING_TYPE_WC &&
              where, "info_wc", "ret %d mapped %u wc %u type %d va/size %s", ret, info.mapped,
              info.wc_mapping, info.mapping_type, where ? "ok" : "wrong"))
        return 0;
    check_wc(step_name(t, "memtype_wc"), t->pp, t->np);
    check_ptes(step_name(t, "ptes_wc"), t->map, t->pp, t->np, MODE(WC));
    return 1;
}

/* Reads of the whole pin, then writes at unaligned offsets and odd sizes, seen by the provider. */
static int trip_writes(struct trip *t)
{
    unsigned char *m = t->map, *model = t->model + t->pin_off;
    uint64_t len = t->pin_len;
    int ret = gdr_copy_from_mapping(t->mh, t->buf, m, len);

    if (!STEP(!ret && !memcmp(t->buf, model, len), "read_all", "ret %d or data differs", ret))
        return 0;
    /* The model says what the BAR must hold. */
    for (size_t i = 0; i < NCUTS; i++) {
        if (cuts[i].off + cuts[i].len > len)
            continue;
        t_pattern(t->buf, cuts[i].len, 1000 + i);
        ret |= gdr_copy_to_mapping(t->mh, m + cuts[i].off, t->buf, cuts[i].len);
        memcpy(model + cuts[i].off, t->buf, cuts[i].len);
    }
    ((volatile unsigned char *)m)[len - 2] = 0xa5;              /* plain stores too */
    ((volatile uint64_t *)m)[3] = 0x0123456789abcdefULL;
    model[len - 2] = 0xa5;
    memcpy(model + 24, &(uint64_t){ 0x0123456789abcdefULL }, 8);
    return STEP(!ret && !emu_read(t->va, t->buf, ASIZE) && !memcmp(t->buf, t->model, ASIZE),
                "writes_seen_by_provider", "copy ret %d or the provider's bytes differ", ret);
}

/* The provider writes; unaligned reads through the mapping see it. */
static int trip_reads(struct trip *t)
{
    unsigned char *m = t->map, *model = t->model + t->pin_off;
    uint64_t len = t->pin_len;
    int ret;

    t_pattern(t->model, ASIZE, 4242 + t->kind);
    ret = emu_write(t->va, t->model, ASIZE);
    for (size_t i = 0; !ret && i < NCUTS; i++) {
        if (cuts[i].off + cuts[i].len > len)
            continue;
        ret = gdr_copy_from_mapping(t->mh, t->buf, m + cuts[i].off, cuts[i].len);
        if (!ret && memcmp(t->buf, model + cuts[i].off, cuts[i].len))
            ret = -(int)i - 1;
    }
    return STEP(!ret && ((volatile unsigned char *)m)[len - 1] == model[len - 1],
                "unaligned_reads", "ret %d (negative: cut %d differs)", ret, -ret - 1);
}

/* Unmap and unpin: each gives its PAT reservation back, and the provider its pages. */
static void trip_release(struct trip *t)
{
    int ret = gdr_unmap(t->g, t->mh, t->map, t->pin_len);

    t->map = NULL;
    if (!STEP(!ret, "unmap", "%s", strerror(ret)))
        return;
    check_released(step_name(t, "unmap_releases_memtype"), t->pp, t->np);
    ret = gdr_unpin_buffer(t->g, t->mh);
    t->mh.h = 0;
    if (!STEP(!ret && emu_live_pins() == t->base, "unpin", "ret %d live pins %llu (was %llu)", ret,
              (unsigned long long)emu_live_pins(), (unsigned long long)t->base))
        return;
    check_released(step_name(t, "memtype_released"), t->pp, t->np);
}
#undef STEP

static void round_trip(gdr_t g, const char *tag, unsigned kind, unsigned flags, uint64_t pin_off,
                       uint64_t pin_len)
{
    struct trip t = { .g = g, .tag = tag, .kind = kind, .flags = flags, .pin_off = pin_off,
                      .pin_len = pin_len, .model = malloc(ASIZE), .buf = malloc(ASIZE),
                      .base = emu_live_pins() };

    if (trip_alloc(&t) && trip_map(&t) && trip_writes(&t) && trip_reads(&t))
        trip_release(&t);
    if (t.map)
        gdr_unmap(g, t.mh, t.map, pin_len);
    if (t.mh.h)
        gdr_unpin_buffer(g, t.mh);
    if (t.va)
        emu_free(t.va);
    free(t.pp);
    free(t.model);
    free(t.buf);
}

/*
 * ---- a DEVICE mapping takes no WC reservation, and data still flows ---------------------
 * wc_first: the pin was mapped WC and unmapped before. Its PTEs must still come out
 * uncached: PAT gives partial remaps the type reserved for the pages, so a WC reservation
 * left behind by the first mapping would turn the "DEVICE" mapping WC.
 */
static void test_device_mapping(gdr_t g, int wc_first)
{
    const char *tag = wc_first ? "device_after_wc" : "device";
    unsigned char in[4096], out[4096];
    uint64_t va = 0, *pp = NULL;
    size_t np = 0, wc, any;
    gdr_mh_t mh = { 0 };
    gdr_info_t info = { 0 };
    void *map = NULL;
    char name[64];
    int a = -1, b = -1, c = -1;

    snprintf(name, sizeof(name), "%s_mapping", tag);
    if (emu_alloc(2 * GPU_PAGE, 1, BAR_FLAG, &va) || !(pp = bar_capture(va, 2 * GPU_PAGE, &np)) ||
        gdr_pin_buffer_v2(g, va, 2 * GPU_PAGE, 0, &mh) ||
        (wc_first && (gdr_map(g, mh, &map, 2 * GPU_PAGE) || gdr_unmap(g, mh, map, 2 * GPU_PAGE)))) {
        t_fail(name, "setup failed");
        goto out;
    }
    a = gdr_map_v2(g, mh, &map, 2 * GPU_PAGE, GDR_MAP_FLAG_REQ_DEVICE_MAPPING);
    if (!a) {
        gdr_get_info_v2(g, mh, &info);
        t_pattern(in, sizeof(in), 99);
        b = gdr_copy_to_mapping(mh, (char *)map + GPU_PAGE, in, sizeof(in));
        c = emu_read(va + GPU_PAGE, out, sizeof(out)) || memcmp(in, out, sizeof(in));
        if (memtype_cover(pp, np, &wc, &any) == 0) {
            snprintf(name, sizeof(name), "%s_no_wc", tag);
            t_check(wc == 0, name, "%zu pages under a WC entry", wc);
        }
        snprintf(name, sizeof(name), "%s_ptes_uncached", tag);
        check_ptes(name, map, pp, np, MODE(UC) | MODE(UC_MINUS));
        gdr_unmap(g, mh, map, 2 * GPU_PAGE);
    }
    snprintf(name, sizeof(name), "%s_mapping", tag);
    t_check(!a && info.mapping_type == GDR_MAPPING_TYPE_DEVICE && !b && !c, name,
            "map %d type %d copy %d data %s", a, info.mapping_type, b, c ? "differs" : "ok");
out:
    if (mh.h)
        gdr_unpin_buffer(g, mh);
    if (va)
        emu_free(va);
    free(pp);
}

/* ---- several pins of one allocation, one overlapping two others ------------------------ */
static void test_multi_pins(void)
{
    /* A, B, C tile 1 MiB; D overlaps the end of A and the start of B. */
    static const uint64_t off[4] = { 0, 4 * GPU_PAGE, 8 * GPU_PAGE, 2 * GPU_PAGE };
    static const uint64_t len[4] = { 4 * GPU_PAGE, 4 * GPU_PAGE, 8 * GPU_PAGE, 4 * GPU_PAGE };
    const uint64_t asize = 16 * GPU_PAGE;
    unsigned char *model = calloc(1, asize), *buf = malloc(asize);
    uint64_t va = 0, base = emu_live_pins(), *pp = NULL, *pd = NULL;
    size_t np = 0, nd = 0;
    gdr_t g2 = gdr_open();
    gdr_mh_t mh[4] = { { 0 } };
    void *map[4] = { 0 };
    int ret = 0, i;

    if (!g2 || emu_alloc(asize, 1, BAR_FLAG, &va) || !(pp = bar_capture(va, asize, &np)) ||
        !(pd = bar_capture(va + off[3], len[3], &nd))) {
        t_fail("multi_pins", "setup failed");
        goto out;
    }
    for (i = 0; i < 4 && !ret; i++)
        ret = gdr_pin_buffer_v2(g2, va + off[i], len[i], 0, &mh[i]) ?:
              gdr_map(g2, mh[i], &map[i], len[i]);
    if (!t_check(!ret, "multi_pins_map", "pin/map %d: %s", i - 1, strerror(ret)))
        goto out;
    check_wc("multi_pins_memtype_wc", pp, np);
    for (i = 0; i < 4; i++) {
        char name[64];

        snprintf(name, sizeof(name), "multi_pins_ptes_wc_%c", 'a' + i);
        check_ptes(name, map[i], pp + off[i] / HOST_PAGE, len[i] / HOST_PAGE, MODE(WC));
    }

    /* Each of A, B, C writes its own range; D then writes across the A/B boundary. */
    for (i = 0; i < 3; i++) {
        t_pattern(model + off[i], len[i], 300 + i);
        ret |= gdr_copy_to_mapping(mh[i], map[i], model + off[i], len[i]);
    }
    t_pattern(model + off[3] + 100, 2 * GPU_PAGE, 400);
    ret |= gdr_copy_to_mapping(mh[3], (char *)map[3] + 100, model + off[3] + 100, 2 * GPU_PAGE);
    int seen = !emu_read(va, buf, asize) && !memcmp(buf, model, asize);
    /* A and B see what D wrote over them. */
    ret |= gdr_copy_from_mapping(mh[0], buf, map[0], len[0]);
    int via_a = !memcmp(buf, model + off[0], len[0]);
    ret |= gdr_copy_from_mapping(mh[1], buf, map[1], len[1]);
    int via_b = !memcmp(buf, model + off[1], len[1]);
    t_check(!ret && seen && via_a && via_b, "multi_pins_data", "copy %d provider %s A %s B %s", ret,
            seen ? "ok" : "differs", via_a ? "ok" : "differs", via_b ? "ok" : "differs");

    /* Teardown in mixed orders: A unmapped then unpinned, C unpinned while mapped. D's pages
     * overlap A's, so D must keep its own WC reservation whatever A's release does. */
    int a1 = gdr_unmap(g2, mh[0], map[0], len[0]), a2 = gdr_unpin_buffer(g2, mh[0]);
    int c1 = gdr_unpin_buffer(g2, mh[2]);
    check_wc("multi_pins_overlap_keeps_wc", pd, nd);
    ret = gdr_copy_from_mapping(mh[3], buf, map[3], len[3]);
    t_check(!a1 && !a2 && !c1 && !ret && !memcmp(buf, model + off[3], len[3]), "multi_pins_partial_teardown",
            "unmap A %d unpin A %d unpin C %d read D %d or D's data differs", a1, a2, c1, ret);
    /* B unmapped but still pinned, D mapped: gdr_close releases both. */
    int b1 = gdr_unmap(g2, mh[1], map[1], len[1]), cl = gdr_close(g2);

    g2 = NULL;
    t_check(!b1 && !cl && emu_live_pins() == base, "multi_pins_close_releases",
            "unmap B %d close %d live pins %llu (was %llu)", b1, cl,
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    check_released("multi_pins_memtype_released", pp, np);
out:
    if (g2)
        gdr_close(g2);
    if (va)
        emu_free(va);
    free(pp);
    free(pd);
    free(model);
    free(buf);
}

int main(void)
{
    struct nvp2p_emu_stats st0 = { 0 };
    uint64_t va = 0;
    gdr_t g;
    int ret;

    if (!mmio_begin(&st0))
        return t_status();
    t_check(emu_alloc(GPU_PAGE, 1, BAR_FLAG | NVP2P_EMU_ALLOC_CPU_CACHEABLE, &va) == EINVAL &&
            emu_alloc(GPU_PAGE, 1, REVERSED, &va) == EINVAL, "bar_flag_errors",
            "BAR|CPU_CACHEABLE or REVERSED without BAR was accepted");
    g = gdr_open();
    if (!g) {
        t_fail("gdr_open", "returned NULL with gdrdrv loaded");
        return 1;
    }
    round_trip(g, "64k", 1, 0, 0, 16 * GPU_PAGE);
    round_trip(g, "64k_reversed", 1, REVERSED, 3 * GPU_PAGE, 5 * GPU_PAGE);
    round_trip(g, "128k_reversed_midpage", 2, REVERSED, GPU_PAGE, 6 * GPU_PAGE);
    round_trip(g, "4k", 0, 0, 0, 2 * GPU_PAGE);
    round_trip(g, "4k_reversed", 0, REVERSED, GPU_PAGE, 3 * GPU_PAGE);
    test_device_mapping(g, 0);
    test_device_mapping(g, 1);
    test_multi_pins();
    ret = gdr_close(g);
    t_check(!ret, "close", "gdr_close %d", ret);
    mmio_end(&st0);
    return t_status();
}

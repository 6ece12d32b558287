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
static void round_trip(gdr_t g, const char *tag, unsigned kind, unsigned flags, uint64_t pin_off,
                       uint64_t pin_len)
{
    static const struct { uint64_t off, len; } cuts[] = {
        { 1, 1 }, { 3, 7 }, { 63, 130 }, { 4095, 4098 }, { GPU_PAGE - 3, 9 }, { 0x1234, 777 },
        { GPU_PAGE + 5, GPU_PAGE + 1000 }, { 8, 8 }, { 2 * GPU_PAGE - 1, 1 },
    };
    const uint64_t asize = 1 << 20;
    unsigned char *model = malloc(asize), *buf = malloc(asize);
    uint64_t va = 0, base = emu_live_pins(), *pp = NULL;
    size_t np = 0;
    gdr_mh_t mh = { 0 };
    gdr_info_t info;
    void *map = NULL;
    char name[128];
    int ret;

#define STEP(cond, step, ...) \
    do { snprintf(name, sizeof(name), "%s/%s", tag, step); \
         if (!t_check(cond, name, __VA_ARGS__)) goto out; } while (0)
#define NAME(step) (snprintf(name, sizeof(name), "%s/%s", tag, step), name)

    ret = emu_alloc(asize, kind, BAR_FLAG | flags, &va);
    STEP(!ret, "alloc", "provider ALLOC_BAR: %s", strerror(ret));
    t_pattern(model, asize, kind * 77 + flags);
    ret = emu_write(va, model, asize);
    STEP(!ret, "fill", "provider WRITE: %s", strerror(ret));
    pp = bar_capture(va + pin_off, pin_len, &np);
    STEP(pp != NULL, "pages_in_bar", "a page of the pin is not in the BAR [0x%llx, 0x%llx)",
         (unsigned long long)bar_lo, (unsigned long long)bar_hi);

    ret = gdr_pin_buffer_v2(g, va + pin_off, pin_len, 0, &mh);
    STEP(!ret, "pin", "%s", strerror(ret));
    ret = gdr_map(g, mh, &map, pin_len);
    STEP(!ret, "map", "%s", strerror(ret));
    ret = gdr_get_info_v2(g, mh, &info);
    STEP(!ret && info.mapped && info.wc_mapping && info.mapping_type == GDR_MAPPING_TYPE_WC &&
         info.va == va + pin_off && info.mapped_size == pin_len, "info_wc",
         "ret %d mapped %u wc %u type %d va/size %s", ret, info.mapped, info.wc_mapping,
         info.mapping_type, info.va == va + pin_off && info.mapped_size == pin_len ? "ok" : "wrong");
    check_wc(NAME("memtype_wc"), pp, np);
    check_ptes(NAME("ptes_wc"), map, pp, np, MODE(WC));

    unsigned char *m = map;
    ret = gdr_copy_from_mapping(mh, buf, m, pin_len);
    STEP(!ret && !memcmp(buf, model + pin_off, pin_len), "read_all", "ret %d or data differs", ret);

    /* Writes at unaligned offsets and odd sizes; the model says what the BAR must hold. */
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        if (cuts[i].off + cuts[i].len > pin_len)
            continue;
        t_pattern(buf, cuts[i].len, 1000 + i);
        ret |= gdr_copy_to_mapping(mh, m + cuts[i].off, buf, cuts[i].len);
        memcpy(model + pin_off + cuts[i].off, buf, cuts[i].len);
    }
    ((volatile unsigned char *)m)[pin_len - 2] = 0xa5;          /* plain stores too */
    ((volatile uint64_t *)m)[3] = 0x0123456789abcdefULL;
    model[pin_off + pin_len - 2] = 0xa5;
    memcpy(model + pin_off + 24, &(uint64_t){ 0x0123456789abcdefULL }, 8);
    STEP(!ret && !emu_read(va, buf, asize) && !memcmp(buf, model, asize), "writes_seen_by_provider",
         "copy ret %d or the provider's bytes differ", ret);

    /* The provider writes; unaligned reads through the mapping see it. */
    t_pattern(model, asize, 4242 + kind);
    ret = emu_write(va, model, asize);
    for (size_t i = 0; !ret && i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        if (cuts[i].off + cuts[i].len > pin_len)
            continue;
        ret = gdr_copy_from_mapping(mh, buf, m + cuts[i].off, cuts[i].len);
        if (!ret && memcmp(buf, model + pin_off + cuts[i].off, cuts[i].len))
            ret = -(int)i - 1;
    }
    STEP(!ret && ((volatile unsigned char *)m)[pin_len - 1] == model[pin_off + pin_len - 1],
         "unaligned_reads", "ret %d (negative: cut %d differs)", ret, -ret - 1);

    ret = gdr_unmap(g, mh, map, pin_len);
    map = NULL;
    STEP(!ret, "unmap", "%s", strerror(ret));
    check_released(NAME("unmap_releases_memtype"), pp, np);
    ret = gdr_unpin_buffer(g, mh);
    mh.h = 0;
    STEP(!ret && emu_live_pins() == base, "unpin", "ret %d live pins %llu (was %llu)", ret,
         (unsigned long long)emu_live_pins(), (unsigned long long)base);
    check_released(NAME("memtype_released"), pp, np);
out:
#undef STEP
    if (map)
        gdr_unmap(g, mh, map, pin_len);
    if (mh.h)
        gdr_unpin_buffer(g, mh);
    if (va)
        emu_free(va);
    free(pp);
    free(model);
    free(buf);
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

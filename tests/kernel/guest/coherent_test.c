// SPDX-License-Identifier: MIT
/*
 * coherent_test.c - the library and gdrdrv on a CPU-coherent platform (Grace in CDMM mode),
 * emulated by the provider's coherent mode (its page tables say CPU_CACHEABLE; init.sh turns
 * it on): a default pin maps CACHING, with cached PTEs; copies through a CACHING mapping (the
 * copy engine's memcpy path) agree with the provider's view at any offset and size, and so do
 * plain loads and stores on the mapping; FORCE_PCIE pins (BAR1, not coherent) map WC; each
 * gdr_map_v2 request is granted or refused as the module's rules say (CACHING only where the
 * pages are cacheable, WC and DEVICE anywhere) and a refused request leaves nothing mapped; and
 * one buffer reached through a CACHING and a WC mapping in turn (the mixed-mappings fence rule)
 * always reads back what was last written through the other. No pin outlives the test.
 *   coherent_test   exits 77 when the provider is not in coherent mode
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gdrapi.h>

#include "t.h"
#include "emu.h"
#include "mmio.h"

#define NPAGES 4                /* GPU pages per buffer */
#define BUF    (NPAGES * GPU_PAGE)

static gdr_t g;
static int have_pte = -1;       /* the provider's PTE ioctl works on this architecture */

struct pm {
    gdr_mh_t mh;
    void *map;
    gdr_info_t info;
};

/* Pin [va, va + BUF) and map it with map_flags; 0 or the failing call's errno (nothing left). */
static int pin_map(uint64_t va, uint32_t pin_flags, int map_flags, struct pm *p)
{
    int ret = gdr_pin_buffer_v2(g, va, BUF, pin_flags, &p->mh);

    p->map = NULL;
    if (ret)
        return ret;
    ret = gdr_map_v2(g, p->mh, &p->map, BUF, map_flags);
    if (!ret)
        ret = gdr_get_info_v2(g, p->mh, &p->info);
    if (ret) {
        if (p->map)
            gdr_unmap(g, p->mh, p->map, BUF);
        gdr_unpin_buffer(g, p->mh);
        p->map = NULL;
    }
    return ret;
}

static void unpin(struct pm *p)
{
    if (p->map)
        gdr_unmap(g, p->mh, p->map, BUF);
    gdr_unpin_buffer(g, p->mh);
}

/*
 * The PTEs of the whole mapping carry a mode in `modes` and map the provider's pages. Not on
 * x86: PAT keeps RAM pages write-back whatever mode a remap asks for, and the emulated GPU
 * pages here are RAM (a real GPU's are BAR pages, whose WC PTEs bar_test checks). The arm64
 * guest checks them.
 */
static void check_mapping_ptes(const char *name, uint64_t va, const struct pm *p, unsigned modes)
{
    static uint64_t phys[BUF / HOST_PAGE];
    uint64_t pfn;
    uint32_t mode;

#if defined(__x86_64__)
    (void)va; (void)p; (void)modes; (void)pfn; (void)mode; (void)phys;
    t_skip(name, "x86 PAT maps RAM pages write-back whatever the request (arm64 guests check)");
    return;
#endif
    if (have_pte < 0)
        have_pte = emu_pte(p->map, &pfn, &mode) != EOPNOTSUPP;
    if (!have_pte) {
        t_skip(name, "the provider reads no PTEs on this architecture");
        return;
    }
    for (size_t i = 0; i < BUF / HOST_PAGE; i++)
        if (emu_phys(va + i * HOST_PAGE, &phys[i])) {
            t_fail(name, "PHYS of page %zu failed", i);
            return;
        }
    check_ptes(name, p->map, phys, BUF / HOST_PAGE, modes);
}

static void test_default_caching(uint64_t va)
{
    struct pm p;
    int ret = pin_map(va, GDR_PIN_FLAG_DEFAULT, GDR_MAP_FLAG_DEFAULT, &p);

    if (!t_check(!ret, "default/map", "pin+map: %s", strerror(ret)))
        return;
    t_check(p.info.mapping_type == GDR_MAPPING_TYPE_CACHING && !p.info.wc_mapping && p.info.mapped,
            "default/caching", "mapping_type %d wc %u mapped %u (want CACHING)",
            (int)p.info.mapping_type, p.info.wc_mapping, p.info.mapped);
    check_mapping_ptes("default/ptes_cached", va, &p, MODE(WB));
    unpin(&p);
}

/* Copies and plain accesses through a CACHING mapping, against the provider's own view. */
static void test_caching_copies(uint64_t va)
{
    static const size_t offs[] = { 0, 1, 7, 63, 4095, 65535, 65536 + 8 };
    static const size_t lens[] = { 1, 3, 8, 100, 4096, 65536 + 13 };
    static unsigned char in[BUF], out[BUF], dev[BUF];
    struct pm p;
    size_t bad = 0, cases = 0;
    int ret = pin_map(va, GDR_PIN_FLAG_DEFAULT, GDR_MAP_FLAG_REQ_CACHE_MAPPING, &p);

    if (!t_check(!ret && p.info.mapping_type == GDR_MAPPING_TYPE_CACHING, "copies/map",
                 "REQ_CACHE_MAPPING: ret %d type %d", ret, ret ? -1 : (int)p.info.mapping_type)) {
        if (!ret)
            unpin(&p);
        return;
    }
    for (size_t o = 0; o < sizeof(offs) / sizeof(offs[0]); o++)
        for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
            size_t off = offs[o], len = lens[l];

            if (off + len > BUF)
                continue;
            cases++;
            t_pattern(in, len, (uint32_t)(o * 16 + l));
            ret = gdr_copy_to_mapping(p.mh, (char *)p.map + off, in, len);
            if (ret || emu_read(va + off, dev, len) || memcmp(in, dev, len)) {
                bad++;
                continue;
            }
            t_pattern(dev, len, (uint32_t)(o * 16 + l + 1000));
            ret = emu_write(va + off, dev, len);
            if (ret || gdr_copy_from_mapping(p.mh, out, (char *)p.map + off, len) ||
                memcmp(out, dev, len))
                bad++;
        }
    t_check(!bad, "copies/both_ways", "%zu of %zu offset/size cases differ", bad, cases);

    /* A CACHING mapping is ordinary memory to the CPU: plain stores and loads work too. */
    t_pattern(in, BUF, 77);
    memcpy(p.map, in, BUF);
    ret = emu_read(va, dev, BUF);
    t_check(!ret && !memcmp(in, dev, BUF), "copies/plain_stores", "provider sees other bytes");
    t_pattern(dev, BUF, 78);
    emu_write(va, dev, BUF);
    t_check(!memcmp(p.map, dev, BUF), "copies/plain_loads", "mapping shows other bytes");
    unpin(&p);
}

/* FORCE_PCIE goes through BAR1: never coherent, so WC, and CACHING is refused there. */
static void test_force_pcie(uint64_t va)
{
    struct pm p;
    int supported = 0, ret;

    gdr_get_attribute(g, GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE, &supported);
    if (!supported) {
        gdr_mh_t mh;

        ret = gdr_pin_buffer_v2(g, va, BUF, GDR_PIN_FLAG_FORCE_PCIE, &mh);
        t_check(ret != 0, "force_pcie/refused_unsupported", "pinned though the attribute is 0");
        if (!ret)
            gdr_unpin_buffer(g, mh);
        return;
    }
    ret = pin_map(va, GDR_PIN_FLAG_FORCE_PCIE, GDR_MAP_FLAG_DEFAULT, &p);
    if (t_check(!ret, "force_pcie/map", "pin+map: %s", strerror(ret))) {
        t_check(p.info.mapping_type == GDR_MAPPING_TYPE_WC && p.info.wc_mapping, "force_pcie/wc",
                "mapping_type %d wc %u (want WC)", (int)p.info.mapping_type, p.info.wc_mapping);
        check_mapping_ptes("force_pcie/ptes_wc", va, &p, MODE(WC));
        unpin(&p);
    }
    ret = pin_map(va, GDR_PIN_FLAG_FORCE_PCIE, GDR_MAP_FLAG_REQ_CACHE_MAPPING, &p);
    t_check(ret == EINVAL, "force_pcie/req_caching_refused", "ret %d (want EINVAL)", ret);
    if (!ret)
        unpin(&p);
}

/* Each request on cacheable pages: granted as asked, with PTEs of that type. */
static void test_requests(uint64_t va)
{
    static const struct { int flag; gdr_mapping_type_t type; const char *name; unsigned modes; } req[] = {
        { GDR_MAP_FLAG_REQ_CACHE_MAPPING, GDR_MAPPING_TYPE_CACHING, "req/caching", MODE(WB) },
        { GDR_MAP_FLAG_REQ_WC_MAPPING, GDR_MAPPING_TYPE_WC, "req/wc", MODE(WC) },
        { GDR_MAP_FLAG_REQ_DEVICE_MAPPING, GDR_MAPPING_TYPE_DEVICE, "req/device",
          MODE(UC) | MODE(UC_MINUS) },
    };
    char name[64];

    for (size_t i = 0; i < sizeof(req) / sizeof(req[0]); i++) {
        struct pm p;
        int ret = pin_map(va, GDR_PIN_FLAG_DEFAULT, req[i].flag, &p);

        if (!t_check(!ret && p.info.mapping_type == req[i].type, req[i].name,
                     "ret %d type %d (want %d)", ret, ret ? -1 : (int)p.info.mapping_type,
                     (int)req[i].type)) {
            if (!ret)
                unpin(&p);
            continue;
        }
        snprintf(name, sizeof(name), "%s/ptes", req[i].name);
        check_mapping_ptes(name, va, &p, req[i].modes);
        unpin(&p);
    }
}

/*
 * One buffer, two pins: one mapped CACHING, one WC. Written through one, read through the
 * other, in turn, at changing offsets and sizes (the library fences every copy while both
 * types are mapped). With emulated RAM the data would agree even without the fence; what this
 * shows is that the rule's path moves the right bytes in every combination.
 */
static void test_mixed(uint64_t va)
{
    static unsigned char in[BUF], out[BUF];
    struct pm c, w;
    size_t bad = 0, rounds = 64;
    int rc = pin_map(va, GDR_PIN_FLAG_DEFAULT, GDR_MAP_FLAG_DEFAULT, &c), rw;

    rw = rc ? -1 : pin_map(va, GDR_PIN_FLAG_DEFAULT, GDR_MAP_FLAG_REQ_WC_MAPPING, &w);
    if (!t_check(!rc && !rw && c.info.mapping_type == GDR_MAPPING_TYPE_CACHING &&
                 w.info.mapping_type == GDR_MAPPING_TYPE_WC, "mixed/two_types",
                 "caching pin %d, wc pin %d, types %d/%d", rc, rw, rc ? -1 : (int)c.info.mapping_type,
                 rw ? -1 : (int)w.info.mapping_type)) {
        if (!rc)
            unpin(&c);
        if (!rw)
            unpin(&w);
        return;
    }
    for (size_t r = 0; r < rounds; r++) {
        size_t off = (r * 4099) % (BUF / 2), len = 1 + (r * 7919) % (BUF / 2);
        const struct pm *to = (r & 1) ? &w : &c, *from = (r & 1) ? &c : &w;

        t_pattern(in, len, (uint32_t)r + 500);
        if (gdr_copy_to_mapping(to->mh, (char *)to->map + off, in, len) ||
            gdr_copy_from_mapping(from->mh, out, (char *)from->map + off, len) ||
            memcmp(in, out, len))
            bad++;
    }
    t_check(!bad, "mixed/in_turn", "%zu of %zu write-one/read-other rounds differ", bad, rounds);
    unpin(&w);
    unpin(&c);
}

int main(void)
{
    uint64_t va = 0, base = emu_live_pins();
    int ret;

    if (!emu_coherent()) {
        printf("the provider is not in coherent mode (%s)\n", NVP2P_EMU_COHERENT_PARAM);
        return 77;
    }
    g = gdr_open();
    if (!g) {
        t_fail("open", "gdr_open failed");
        return 1;
    }
    ret = emu_alloc(BUF, 1, 0, &va);
    if (!t_check(!ret, "alloc", "ALLOC: %s", strerror(ret)))
        return t_status();
    test_default_caching(va);
    test_caching_copies(va);
    test_force_pcie(va);
    test_requests(va);
    test_mixed(va);
    t_check(emu_live_pins() == base, "no_pin_left", "live pins %llu, %llu before",
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    gdr_close(g);
    emu_free(va);
    return t_status();
}

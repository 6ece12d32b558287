// SPDX-License-Identifier: MIT
/*
 * api_test.c - the real libgdrapi (static) against gdrdrv on the emulated provider: pin, map,
 * copy and unpin with copies at aligned and unaligned offsets for 4 KiB, 64 KiB and 128 KiB GPU
 * pages, pins at unaligned addresses (pinned, reported aligned down, but not mappable: gdrdrv's
 * contract, as upstream's),
 * with the data checked both ways against the provider's own view (READ/WRITE ioctls); info,
 * attributes and versions; the v1 and v2 pin calls and the legacy gdr_get_info symbol;
 * mapping-type requests; pin errors and injected provider failures.
 *   api_test           everything
 *   api_test --quick   one 64 KiB pin/map/copy round trip (used between module reloads)
 * Runs in both module modes, and against every ABI the module can present (abi=2.0..2.6):
 * it reads use_persistent_mapping and abi from sysfs to know which. Before 2.5 pins are
 * callback pins and the library says so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gdrapi.h>

#include "emu.h"
#include "legacy_info.h"
#include "t.h"

#define GPU_PAGE 65536ULL

static gdr_t g;
static int persistent = -1;     /* from sysfs; -1 unknown */
static int abi_minor = 6;       /* the 2.N ABI the module presents */

/* A gdrdrv parameter's value (of "2.N", the N), or -1 when it cannot be read. */
static int read_param(const char *name)
{
    char path[128], buf[32] = "";
    FILE *f;
    const char *dot;

    snprintf(path, sizeof(path), "/sys/module/gdrdrv/parameters/%s", name);
    f = fopen(path, "r");
    if (!f)
        return -1;
    if (!fgets(buf, sizeof(buf), f))
        buf[0] = '\0';
    fclose(f);
    dot = strchr(buf, '.');
    dot = dot ? dot + 1 : buf;
    return *dot >= '0' && *dot <= '9' ? atoi(dot) : -1;
}

/* A round trip's state: the allocation and the provider's bytes (dev), the pin, its mapping. */
struct trip {
    const char *tag;
    unsigned int kind;
    uint64_t offset;
    size_t size;
    int v1;
    uint64_t va, base;
    unsigned char *dev, *host, *back;
    gdr_mh_t mh;
    gdr_info_t info;
    void *map;
    char name[128];
};
#define ALLOC_SIZE ((size_t)1 << 20)    /* each round trip's allocation */

/* A step's result line, named "<tag>/<step>"; false (the round trip ends) when it failed. */
#define STEP(cond, step, ...) \
    (snprintf(t->name, sizeof(t->name), "%s/%s", t->tag, step), \
     t_check(cond, t->name, __VA_ARGS__))

/* A fresh allocation with a pattern of its own, pinned from its start (v1 or v2 call). */
static int trip_pin(struct trip *t)
{
    int ret = emu_alloc(ALLOC_SIZE, t->kind, 0, &t->va);

    if (!STEP(!ret, "alloc", "provider ALLOC: %s", strerror(ret)))
        return 0;
    t_pattern(t->dev, ALLOC_SIZE, (uint32_t)(t->kind * 1000 + t->offset));
    ret = emu_write(t->va, t->dev, ALLOC_SIZE);
    if (!STEP(!ret, "fill", "provider WRITE: %s", strerror(ret)))
        return 0;
    size_t pin_size = t->offset + t->size;
    ret = t->v1 ? gdr_pin_buffer(g, t->va, pin_size, 0, 0, &t->mh) :
                  gdr_pin_buffer_v2(g, t->va, pin_size, 0, &t->mh);
    return STEP(!ret && t->mh.h, "pin", "%s: %s", t->v1 ? "gdr_pin_buffer" : "gdr_pin_buffer_v2",
                strerror(ret));
}

/* The pin's info before mapping (the range in whole GPU pages), then a WC mapping of it. */
static int trip_map(struct trip *t)
{
    gdr_info_t *info = &t->info;
    uint64_t want_va = t->va & ~(GPU_PAGE - 1);
    uint64_t want_size = ((t->va + t->offset + t->size + GPU_PAGE - 1) & ~(GPU_PAGE - 1)) - want_va;
    int ret = gdr_get_info_v2(g, t->mh, info);

    if (!STEP(!ret && info->va == want_va && info->mapped_size == want_size && !info->mapped &&
              info->mapping_type == GDR_MAPPING_TYPE_NONE &&
              (info->page_size == 65536 ||
               (t->kind != 1 && (info->page_size == 4096 || info->page_size == 131072))),
              "info_unmapped",
              "ret %d va 0x%llx (want 0x%llx) size %llu (want %llu) page %u mapped %u type %d",
              ret, (unsigned long long)info->va, (unsigned long long)want_va,
              (unsigned long long)info->mapped_size, (unsigned long long)want_size,
              info->page_size, info->mapped, info->mapping_type))
        return 0;
    ret = gdr_map(g, t->mh, &t->map, info->mapped_size);
    if (!STEP(!ret && t->map, "map", "gdr_map: %s", strerror(ret)))
        return 0;
    ret = gdr_get_info_v2(g, t->mh, info);
    return STEP(!ret && info->mapped && info->mapping_type == GDR_MAPPING_TYPE_WC &&
                info->wc_mapping, "info_mapped",
                "ret %d mapped %u wc %u type %d (want WC for a non-cacheable alloc)", ret,
                info->mapped, info->wc_mapping, info->mapping_type);
}

/* `size` bytes at `offset` both ways through the mapping, checked against the provider. */
static int trip_copy(struct trip *t)
{
    uint64_t off = t->offset;
    size_t size = t->size;
    unsigned char *user = (unsigned char *)t->map + (t->va - t->info.va) + off;

    /* Device -> host: what the provider holds is what the mapping shows. */
    int ret = gdr_copy_from_mapping(t->mh, t->host, user, size);
    if (!STEP(!ret && !memcmp(t->host, t->dev + off, size), "read",
              "ret %d or data differs from the provider's", ret) ||
        !STEP(((volatile unsigned char *)user)[size - 1] == t->dev[off + size - 1], "load",
              "a plain CPU load through the mapping differs"))
        return 0;

    /* Host -> device: the provider sees the new bytes, and nothing outside them changed. */
    t_pattern(t->host, size, (uint32_t)(7 + t->kind + off));
    ret = gdr_copy_to_mapping(t->mh, user, t->host, size);
    if (!STEP(!ret, "write", "gdr_copy_to_mapping: %s", strerror(ret)))
        return 0;
    ret = emu_read(t->va, t->back, ALLOC_SIZE);
    return STEP(!ret && !memcmp(t->back + off, t->host, size) && !memcmp(t->back, t->dev, off) &&
                !memcmp(t->back + off + size, t->dev + off + size, ALLOC_SIZE - off - size),
                "write_seen_by_provider", "ret %d or the provider's bytes differ", ret);
}

/* Unmap (the info says so), then unpin: the provider's pin goes. */
static int trip_release(struct trip *t)
{
    int ret = gdr_unmap(g, t->mh, t->map, t->info.mapped_size);

    t->map = NULL;
    if (!STEP(!ret, "unmap", "gdr_unmap: %s", strerror(ret)))
        return 0;
    ret = gdr_get_info_v2(g, t->mh, &t->info);
    if (!STEP(!ret && !t->info.mapped, "info_after_unmap", "ret %d mapped %u", ret, t->info.mapped))
        return 0;
    ret = gdr_unpin_buffer(g, t->mh);
    t->mh.h = 0;
    return STEP(!ret && emu_live_pins() == t->base, "unpin", "ret %d live pins %llu (was %llu)",
                ret, (unsigned long long)emu_live_pins(), (unsigned long long)t->base);
}
#undef STEP

/*
 * One full round trip: pin [va, va + offset + size) of a fresh allocation, map it, copy `size`
 * bytes at `offset` both ways. `v1` pins with gdr_pin_buffer, else gdr_pin_buffer_v2. Returns
 * 0 when every step passed (each step also printed its own line under `tag`).
 */
static int round_trip(const char *tag, unsigned int kind, uint64_t offset, size_t size, int v1)
{
    struct trip t = { .tag = tag, .kind = kind, .offset = offset, .size = size, .v1 = v1,
                      .base = emu_live_pins(), .dev = malloc(ALLOC_SIZE), .host = malloc(size),
                      .back = malloc(ALLOC_SIZE) };
    int bad = !(trip_pin(&t) && trip_map(&t) && trip_copy(&t) && trip_release(&t));

    if (t.map)
        gdr_unmap(g, t.mh, t.map, t.info.mapped_size);
    if (t.mh.h)
        gdr_unpin_buffer(g, t.mh);
    if (t.va)
        emu_free(t.va);
    free(t.dev);
    free(t.host);
    free(t.back);
    return bad;
}

/* A pin may start anywhere; gdrdrv refuses to map one that does not start on a GPU page. */
static void test_unaligned_pin(unsigned int kind, uint64_t offset)
{
    char name[64];
    uint64_t va = 0, base = emu_live_pins();
    gdr_mh_t mh = { 0 };
    gdr_info_t info;
    void *map = NULL;
    int ret = emu_alloc(4 * GPU_PAGE, kind, 0, &va), pin, inf, m, un;

    snprintf(name, sizeof(name), "unaligned_pin_kind%u_off%llx", kind, (unsigned long long)offset);
    if (ret) {
        t_fail(name, "ALLOC: %s", strerror(ret));
        return;
    }
    pin = gdr_pin_buffer_v2(g, va + offset, GPU_PAGE, 0, &mh);
    inf = pin ? -1 : gdr_get_info_v2(g, mh, &info);
    m = pin ? -1 : gdr_map(g, mh, &map, 2 * GPU_PAGE);
    if (!m)
        gdr_unmap(g, mh, map, 2 * GPU_PAGE);
    un = pin ? -1 : gdr_unpin_buffer(g, mh);
    t_check(!pin && !inf && info.va == ((va + offset) & ~(GPU_PAGE - 1)) &&
            info.mapped_size == ((offset & (GPU_PAGE - 1)) ? 2 : 1) * GPU_PAGE && m > 0 && !un &&
            emu_live_pins() == base, name,
            "pin %d info %d va 0x%llx size %llu map %d (want an error) unpin %d", pin, inf,
            (unsigned long long)(inf ? 0 : info.va), (unsigned long long)(inf ? 0 : info.mapped_size),
            m, un);
    emu_free(va);
}

static void test_versions(void)
{
    int maj = -1, min = -1, dmaj = -1, dmin = -1;

    gdr_runtime_get_version(&maj, &min);
    t_check(maj == 2 && min == 6, "runtime_version", "%d.%d", maj, min);
    int ret = gdr_driver_get_version(g, &dmaj, &dmin);
    t_check(!ret && dmaj == 2 && dmin == abi_minor, "driver_version", "ret %d %d.%d (want 2.%d)",
            ret, dmaj, dmin, abi_minor);
}

static void test_attributes(void)
{
    int v = -1, ret;

    ret = gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &v);
    if (persistent >= 0)
        t_check(!ret && !!v == !!persistent, "attr_persistent", "ret %d value %d, module param %d",
                ret, v, persistent);
    else
        t_check(!ret, "attr_persistent", "ret %d", ret);
    v = -1;
    ret = gdr_get_attribute(g, GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE, &v);
    t_check(!ret && (v == 0 || v == 1), "attr_force_pcie", "ret %d value %d", ret, v);
    v = -1;
    ret = gdr_get_attribute(g, GDR_ATTR_USING_DMA_BUF_MMAP, &v);
    t_check(!ret && v == 0, "attr_dmabuf", "ret %d value %d (gdrdrv serves the pins)", ret, v);
    int bad0 = gdr_get_attribute(g, (gdr_attr_t)0, &v);
    int bad99 = gdr_get_attribute(g, (gdr_attr_t)99, &v);
    t_check(bad0 == EINVAL && bad99 == EINVAL, "attr_unknown", "attr 0 -> %d, 99 -> %d", bad0, bad99);
}

static void test_legacy_info(void)
{
    uint64_t va = 0;
    gdr_mh_t mh = { 0 };
    struct t_info_v1 v1;
    int ret = emu_alloc(GPU_PAGE * 2, 1, 0, &va);

    if (ret) {
        t_fail("legacy_get_info", "ALLOC: %s", strerror(ret));
        return;
    }
    ret = gdr_pin_buffer(g, va, GPU_PAGE * 2, 0, 0, &mh);
    if (!ret) {
        memset(&v1, 0xa5, sizeof(v1));
        ret = t_get_info_v1(g, mh, &v1);
        t_check(!ret && v1.va == va && v1.mapped_size == 2 * GPU_PAGE && v1.page_size == 65536 &&
                !v1.mapped, "legacy_get_info", "ret %d va 0x%llx size %llu page %u mapped %u", ret,
                (unsigned long long)v1.va, (unsigned long long)v1.mapped_size, v1.page_size, v1.mapped);
        gdr_unpin_buffer(g, mh);
    } else {
        t_fail("legacy_get_info", "pin: %s", strerror(ret));
    }
    emu_free(va);
}

/* Map with a requested type; returns gdr_map_v2's result and the granted type. */
static int map_with(uint64_t va, int flags, gdr_mapping_type_t *type, int check_data)
{
    gdr_mh_t mh = { 0 };
    gdr_info_t info;
    void *map = NULL;
    int ret = gdr_pin_buffer_v2(g, va, GPU_PAGE, 0, &mh);

    if (ret)
        return -ret;
    ret = gdr_map_v2(g, mh, &map, GPU_PAGE, flags);
    *type = GDR_MAPPING_TYPE_NONE;
    if (!ret) {
        gdr_get_info_v2(g, mh, &info);
        *type = info.mapping_type;
        if (check_data) {
            unsigned char in[256], out[256];

            t_pattern(in, sizeof(in), 4242);
            gdr_copy_to_mapping(mh, map, in, sizeof(in));
            emu_read(va, out, sizeof(out));
            if (memcmp(in, out, sizeof(in)))
                ret = -EIO;
        }
        gdr_unmap(g, mh, map, GPU_PAGE);
    }
    gdr_unpin_buffer(g, mh);
    return ret;
}

static void test_mapping_requests(void)
{
    uint64_t plain = 0, cacheable = 0;
    gdr_mapping_type_t type;
    int ret;

    if (emu_alloc(GPU_PAGE, 1, 0, &plain) ||
        emu_alloc(GPU_PAGE, 1, NVP2P_EMU_ALLOC_CPU_CACHEABLE, &cacheable)) {
        t_fail("map_requests", "ALLOC failed");
        goto out;
    }
    ret = map_with(plain, GDR_MAP_FLAG_REQ_WC_MAPPING, &type, 1);
    t_check(!ret && type == GDR_MAPPING_TYPE_WC, "map_req_wc", "ret %d type %d", ret, type);
    ret = map_with(plain, GDR_MAP_FLAG_REQ_CACHE_MAPPING, &type, 0);
    t_check(ret == EINVAL, "map_req_caching_noncacheable", "ret %d type %d (want EINVAL)", ret, type);
    ret = map_with(plain, 7, &type, 0);
    t_check(ret == EINVAL, "map_bad_flags", "ret %d (want EINVAL)", ret);
    /* A CPU_CACHEABLE table: the module may grant CACHING; if it does, data must still flow. */
    ret = map_with(cacheable, GDR_MAP_FLAG_REQ_CACHE_MAPPING, &type, 1);
    if (!ret)
        t_check(type == GDR_MAPPING_TYPE_CACHING, "map_req_caching_cacheable",
                "granted type %d instead of CACHING", type);
    else
        t_check(ret == EINVAL, "map_req_caching_cacheable", "ret %d (want 0 or EINVAL)", ret);
    ret = map_with(cacheable, GDR_MAP_FLAG_DEFAULT, &type, 1);
    t_check(!ret && (type == GDR_MAPPING_TYPE_CACHING || type == GDR_MAPPING_TYPE_WC),
            "map_default_cacheable", "ret %d type %d", ret, type);
    printf("# default mapping of a CPU_CACHEABLE pin: type %d\n", type);
out:
    if (plain)
        emu_free(plain);
    if (cacheable)
        emu_free(cacheable);
}

static void test_map_misuse(void)
{
    uint64_t va = 0;
    gdr_mh_t mh = { 0 };
    void *map = NULL, *map2 = NULL;
    int ret;

    if (emu_alloc(4 * GPU_PAGE, 1, 0, &va) || gdr_pin_buffer_v2(g, va, 2 * GPU_PAGE, 0, &mh)) {
        t_fail("map_misuse", "setup failed");
        goto out;
    }
    ret = gdr_unmap(g, mh, (void *)0x10000, GPU_PAGE);
    t_check(ret == EINVAL, "unmap_not_mapped", "ret %d (want EINVAL)", ret);
    ret = gdr_map(g, mh, &map2, 3 * GPU_PAGE);
    t_check(ret != 0, "map_too_big", "mapping more than the pin succeeded");
    if (!ret)
        gdr_unmap(g, mh, map2, 3 * GPU_PAGE);
    ret = gdr_map(g, mh, &map, 2 * GPU_PAGE);
    t_check(!ret, "map_once", "ret %d", ret);
    ret = gdr_map(g, mh, &map2, 2 * GPU_PAGE);
    t_check(ret == EAGAIN, "map_twice", "ret %d (want EAGAIN)", ret);
    if (!ret)
        gdr_unmap(g, mh, map2, 2 * GPU_PAGE);
    if (map)
        gdr_unmap(g, mh, map, 2 * GPU_PAGE);
    /* The pin goes with its mapping still there: unpin tears it down. */
    ret = gdr_map(g, mh, &map, 2 * GPU_PAGE);
    ret = ret ? ret : gdr_unpin_buffer(g, mh);
    mh.h = 0;
    t_check(!ret, "unpin_while_mapped", "ret %d", ret);
out:
    if (mh.h)
        gdr_unpin_buffer(g, mh);
    if (va)
        emu_free(va);
}

static void test_pin_errors(void)
{
    uint64_t va = 0, base = emu_live_pins();
    gdr_mh_t mh = { 0 };
    int a, b, c, d, e;

    if (emu_alloc(2 * GPU_PAGE, 1, 0, &va)) {
        t_fail("pin_errors", "ALLOC failed");
        return;
    }
    a = gdr_pin_buffer_v2(g, 0x1000000, GPU_PAGE, 0, &mh);            /* no allocation there */
    b = gdr_pin_buffer_v2(g, va + GPU_PAGE, 2 * GPU_PAGE, 0, &mh);    /* runs past the end */
    c = gdr_pin_buffer_v2(g, va, 0, 0, &mh);                          /* empty */
    d = gdr_pin_buffer_v2(g, va, GPU_PAGE, 0x80, &mh);                /* unknown flag */
    e = gdr_pin_buffer_v2(g, ~0UL - 100, 4096, 0, &mh);               /* wraps */
    t_check(a && b && c && d == EINVAL && e && emu_live_pins() == base, "pin_errors",
            "nowhere %d past-end %d empty %d badflag %d wrap %d", a, b, c, d, e);

    /* A failure of the provider reaches the caller as an error, and leaves nothing behind. */
    emu_inject(NVP2P_EMU_FAIL_GET_PAGES, 1, ENOMEM);
    emu_inject(NVP2P_EMU_FAIL_GET_PAGES_PERSISTENT, 1, ENOMEM);
    a = gdr_pin_buffer_v2(g, va, GPU_PAGE, 0, &mh);
    emu_inject(NVP2P_EMU_FAIL_GET_PAGES, 0, ENOMEM);
    emu_inject(NVP2P_EMU_FAIL_GET_PAGES_PERSISTENT, 0, ENOMEM);
    t_check(a != 0 && emu_live_pins() == base, "pin_injected_failure", "pin returned %d", a);
    if (!a)
        gdr_unpin_buffer(g, mh);
    b = gdr_pin_buffer_v2(g, va, GPU_PAGE, 0, &mh);
    t_check(!b, "pin_after_failure", "ret %d", b);
    if (!b)
        gdr_unpin_buffer(g, mh);
    emu_free(va);
}

static void test_handles(void)
{
    gdr_mh_t none = { 0 }, junk = { .h = 0xdeadbeef };
    gdr_info_t info;
    int flag;
    int a = gdr_unpin_buffer(g, none), b = gdr_unpin_buffer(g, junk);
    int c = gdr_get_info_v2(g, junk, &info), d = gdr_get_callback_flag(g, junk, &flag);

    t_check(a && b && c && d, "bad_handles", "unpin(0) %d unpin(junk) %d info %d cbflag %d", a, b, c, d);
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    static const uint64_t offsets[] = { 0, 0x1234 };
    static const char *kinds[] = { "4k", "64k", "128k" };

    if (emu_fd() < 0) {
        t_fail("setup", "%s: %s", NVP2P_EMU_DEVICE, strerror(errno));
        return 1;
    }
    persistent = read_param("use_persistent_mapping");
    abi_minor = read_param("abi");
    if (abi_minor < 0)
        abi_minor = 6;
    if (abi_minor < 5 && persistent > 0)
        persistent = 0;         /* an older ABI: callback pins, as those modules made */
    g = gdr_open();
    if (!g) {
        t_fail("gdr_open", "returned NULL with gdrdrv loaded");
        return 1;
    }
    if (quick) {
        round_trip("quick", 1, 0, 3 * GPU_PAGE, 0);
        gdr_close(g);
        return t_status();
    }
    test_versions();
    test_attributes();
    for (unsigned int kind = 0; kind < 3; kind++)
        for (unsigned int o = 0; o < 2; o++) {
            char tag[64];

            snprintf(tag, sizeof(tag), "%s_%s", kinds[kind], o ? "unaligned" : "aligned");
            round_trip(tag, kind, offsets[o], 5 * GPU_PAGE + (o ? 777 : 0), 0);
        }
    round_trip("64k_pin_v1", 1, 0, 2 * GPU_PAGE, 1);
    round_trip("64k_pin_v1_unaligned", 1, 0x20 + GPU_PAGE, GPU_PAGE, 1);
    test_unaligned_pin(1, 4);
    test_unaligned_pin(1, 0x1234);
    test_unaligned_pin(0, GPU_PAGE + 4096);
    test_unaligned_pin(2, 0x8000);
    test_legacy_info();
    test_mapping_requests();
    test_map_misuse();
    test_pin_errors();
    test_handles();
    int ret = gdr_close(g);
    t_check(!ret && emu_live_pins() == 0, "close", "gdr_close %d, live pins %llu", ret,
            (unsigned long long)emu_live_pins());
    return t_status();
}

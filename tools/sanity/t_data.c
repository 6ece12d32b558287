/* SPDX-License-Identifier: MIT */
/*
 * t_data.c - data written through a mapping reaches GPU memory and back (GDRCopy 2.6's
 * data_validation tests). GPU memory is read and written through the allocation kind's own
 * path (cuMemcpy, or the emulated provider), never through the mapping under test.
 */
#include "harness.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define DV_SIZE (256 * 1024 + 16)

enum dv_pin { DV_PIN_LEGACY, DV_PIN_V2, DV_PIN_FORCEPCI };

struct dv {
    gdr_t g;
    struct gm_buf b;
    gdr_mh_t mh;
    void *map;
    size_t map_size;
    char *p;              /* the buffer's start in the mapping */
    unsigned char *want, *got;
};

static void dv_reset(struct dv *d)
{
    T_ASSERT_OK(gm_fill(&d->b, 0xa5));
    memset(d->got, 0xa5, DV_SIZE);
}

static void dv_setup(struct dv *d, enum dv_pin how, int map_flags)
{
    gdr_info_t info;
    int rc;

    memset(d, 0, sizeof(*d));
    d->want = malloc(DV_SIZE);
    d->got = malloc(DV_SIZE);
    T_ASSERT(d->want && d->got, "out of memory");
    t_pattern(d->want, DV_SIZE, 0x1234);
    t_alloc(DV_SIZE, &d->b);
    d->g = t_open();
    dv_reset(d);
    switch (how) {
    case DV_PIN_LEGACY:
        T_ASSERT_OK(gdr_pin_buffer(d->g, d->b.dptr, DV_SIZE, 0, 0, &d->mh));
        break;
    case DV_PIN_V2:
        T_ASSERT_OK(gdr_pin_buffer_v2(d->g, d->b.dptr, DV_SIZE, GDR_PIN_FLAG_DEFAULT, &d->mh));
        break;
    case DV_PIN_FORCEPCI: {
        int must = t_force_pcie_must_pin(d->g);

        rc = gdr_pin_buffer_v2(d->g, d->b.dptr, DV_SIZE, GDR_PIN_FLAG_FORCE_PCIE, &d->mh);
        /* As upstream's test: the flag is for coherent GPUs, waived elsewhere. */
        if (rc && !must)
            t_skip_exit("the %s backend refuses GDR_PIN_FLAG_FORCE_PCIE here (no coherent "
                        "link): %s", t_backend(d->g), vramio_strerror(rc));
        T_ASSERT_OK(rc);
        break;
    }
    }
    T_ASSERT_OK(gdr_get_info(d->g, d->mh, &info));
    T_ASSERT(!info.mapped, "info.mapped is set before gdr_map");
    d->map_size = info.mapped_size;
    rc = gdr_map_v2(d->g, d->mh, &d->map, d->map_size, map_flags);
    if (rc == EINVAL && map_flags != GDR_MAP_FLAG_DEFAULT)
        t_skip_exit("the %s backend cannot grant mapping request %d here", t_backend(d->g),
                    map_flags);
    T_ASSERT_OK(rc);
    T_ASSERT_OK(gdr_get_info(d->g, d->mh, &info));
    T_ASSERT(info.mapped, "info.mapped is clear after gdr_map");
    T_ASSERT(info.mapping_type != GDR_MAPPING_TYPE_NONE, "mapped, but mapping_type is NONE");
    T_ASSERT(info.wc_mapping == (info.mapping_type == GDR_MAPPING_TYPE_WC),
             "wc_mapping %u disagrees with mapping_type %d", info.wc_mapping, (int)info.mapping_type);
    if (map_flags != GDR_MAP_FLAG_DEFAULT)
        T_ASSERT((int)info.mapping_type == map_flags, "asked for mapping type %d, got %d",
                 map_flags, (int)info.mapping_type);
    d->p = (char *)d->map + (d->b.dptr - info.va);
    t_log("backend %s, mapping type %d, offset %" PRIu64, t_backend(d->g), (int)info.mapping_type,
          d->b.dptr - info.va);
}

static void dv_teardown(struct dv *d)
{
    t_unmap_unpin(d->g, d->mh, d->map, d->map_size);
    T_ASSERT_OK(gdr_close(d->g));
    t_free(&d->b);
    free(d->want);
    free(d->got);
}

static void dv_checks(struct dv *d)
{
    volatile uint32_t *w = (volatile uint32_t *)d->p;
    const uint32_t *src = (const uint32_t *)d->want;
    unsigned char fill[512];
    size_t off;

    /* 1: plain CPU stores through the mapping, read back by the GPU side. */
    for (size_t i = 0; i < DV_SIZE / 4; i++)
        w[i] = src[i];
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    t_check_gpu(&d->b, 0, d->want, DV_SIZE / 4 * 4, "check 1 (CPU stores)");
    dv_reset(d);

    /* 2: gdr_copy_to_mapping, read back by the GPU side. */
    T_ASSERT_OK(gdr_copy_to_mapping(d->mh, d->p, d->want, DV_SIZE));
    t_check_gpu(&d->b, 0, d->want, DV_SIZE, "check 2 (gdr_copy_to_mapping)");
    dv_reset(d);

    /* 3: both directions through the library. */
    T_ASSERT_OK(gdr_copy_to_mapping(d->mh, d->p, d->want, DV_SIZE));
    T_ASSERT_OK(gdr_copy_from_mapping(d->mh, d->got, d->p, DV_SIZE));
    t_compare(d->want, d->got, DV_SIZE, "check 3 (to + from mapping)");
    dv_reset(d);

    /* 4 and 5: a dword offset, then an odd byte offset (heads and tails of the copy kernels). */
    off = 5 * sizeof(uint32_t);
    T_ASSERT_OK(gdr_copy_to_mapping(d->mh, d->p + off, d->want, DV_SIZE - off));
    T_ASSERT_OK(gdr_copy_from_mapping(d->mh, d->got, d->p + off, DV_SIZE - off));
    t_compare(d->want, d->got, DV_SIZE - off, "check 4 (5-dword offset)");
    t_check_gpu(&d->b, off, d->want, DV_SIZE - off, "check 4 (GPU side)");
    dv_reset(d);
    off = 11;
    T_ASSERT_OK(gdr_copy_to_mapping(d->mh, d->p + off, d->want, DV_SIZE - off));
    T_ASSERT_OK(gdr_copy_from_mapping(d->mh, d->got, d->p + off, DV_SIZE - off));
    t_compare(d->want, d->got, DV_SIZE - off, "check 5 (11-byte offset)");
    t_check_gpu(&d->b, off, d->want, DV_SIZE - off, "check 5 (GPU side)");

    /* 6: the GPU side writes, the CPU reads through the mapping. */
    t_pattern(d->want, DV_SIZE, 0xbeef);
    T_ASSERT_OK(gm_write(&d->b, 0, d->want, DV_SIZE));
    T_ASSERT_OK(gdr_copy_from_mapping(d->mh, d->got, d->p, DV_SIZE));
    t_compare(d->want, d->got, DV_SIZE, "check 6 (GPU writes, CPU reads)");

    /* 7: every small size at a few misalignments, both ways; bytes around are untouched. */
    memset(fill, 0xa5, sizeof(fill));
    for (size_t n = 1; n <= 130; n += (n < 20 ? 1 : 7)) {
        for (off = 1; off < 70; off += 17) {
            unsigned char around[256 + 2];

            T_ASSERT_OK(gm_write(&d->b, 0, fill, sizeof(fill)));
            T_ASSERT_OK(gdr_copy_to_mapping(d->mh, d->p + off, d->want, n));
            memset(d->got, 0, n);
            T_ASSERT_OK(gdr_copy_from_mapping(d->mh, d->got, d->p + off, n));
            t_compare(d->want, d->got, n, "check 7 (small copy read back)");
            T_ASSERT_OK(gm_read(&d->b, off - 1, around, n + 2));
            T_ASSERT(around[0] == 0xa5 && around[n + 1] == 0xa5,
                     "check 7: copy of %zu bytes at offset %zu wrote outside its range", n, off);
            t_compare(d->want, around + 1, n, "check 7 (GPU side)");
        }
    }
}

static void data_validation(enum dv_pin how, int map_flags)
{
    struct dv d;

    dv_setup(&d, how, map_flags);
    dv_checks(&d);
    dv_teardown(&d);
}

T_CASE(data_validation, T_UPSTREAM,
       "data through the mapping, checked through the GPU side (legacy pin)")
{
    data_validation(DV_PIN_LEGACY, GDR_MAP_FLAG_DEFAULT);
}

T_CASE(data_validation_v2, 0, "the same with gdr_pin_buffer_v2")
{
    data_validation(DV_PIN_V2, GDR_MAP_FLAG_DEFAULT);
}

T_CASE(data_validation_forcepci, 0, "the same with GDR_PIN_FLAG_FORCE_PCIE")
{
    data_validation(DV_PIN_FORCEPCI, GDR_MAP_FLAG_DEFAULT);
}

/* Two buffers mapped with different mapping types, used in turn: each copy must use the
 * instruction mix of its own mapping, not of the last one. */
T_CASE(data_validation_mix_mappings, 0, "buffers mapped with different mapping types used in turn")
{
    static const int types[] = { GDR_MAP_FLAG_REQ_WC_MAPPING, GDR_MAP_FLAG_REQ_CACHE_MAPPING,
                                 GDR_MAP_FLAG_REQ_DEVICE_MAPPING };
    struct dv a;
    int tried = 0;

    dv_setup(&a, DV_PIN_V2, GDR_MAP_FLAG_DEFAULT);
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        struct gm_buf b;
        gdr_mh_t mh;
        void *map = NULL;
        gdr_info_t info;
        unsigned char *tmp = malloc(DV_SIZE);
        int rc;

        T_ASSERT(tmp, "out of memory");
        t_alloc(DV_SIZE, &b);
        T_ASSERT_OK(gm_fill(&b, 0xa5));
        T_ASSERT_OK(gdr_pin_buffer_v2(a.g, b.dptr, DV_SIZE, 0, &mh));
        T_ASSERT_OK(gdr_get_info(a.g, mh, &info));
        rc = gdr_map_v2(a.g, mh, &map, info.mapped_size, types[t]);
        if (rc) {
            T_ASSERT(rc == EINVAL, "gdr_map_v2(type %d) returned %d, expected 0 or EINVAL",
                     types[t], rc);
            t_log("mapping type %d not granted here (EINVAL)", types[t]);
        } else {
            char *q = (char *)map + (b.dptr - info.va);

            tried++;
            for (size_t off = 0; off + 4096 <= DV_SIZE; off += 4096 + 8) {
                T_ASSERT_OK(gdr_copy_to_mapping(a.mh, a.p + off, a.want + off, 4096));
                T_ASSERT_OK(gdr_copy_to_mapping(mh, q + off, a.want + off, 4096));
            }
            T_ASSERT_OK(gdr_copy_from_mapping(mh, tmp, q, DV_SIZE));
            T_ASSERT_OK(gdr_copy_from_mapping(a.mh, a.got, a.p, DV_SIZE));
            t_compare(tmp, a.got, DV_SIZE, "the two mappings disagree");
            t_check_gpu(&b, 0, tmp, DV_SIZE, "mixed mapping (GPU side)");
            T_ASSERT_OK(gdr_unmap(a.g, mh, map, info.mapped_size));
        }
        T_ASSERT_OK(gdr_unpin_buffer(a.g, mh));
        t_free(&b);
        free(tmp);
    }
    t_log("%d non-default mapping type(s) granted", tried);
    dv_teardown(&a);
}

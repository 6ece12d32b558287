/* SPDX-License-Identifier: MIT */
/*
 * t_ours.c - attributes, the extended leakage test, and vramio's own tests: many threads on
 * one gdr_t, stale and foreign handles, bad arguments.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

T_CASE(attributes_sanity, T_ONCE, "attributes, mapping type names, versions, unknown values")
{
    static const char *const type_names[] = { "None", "Write Combining", "Caching", "Device" };
    static const int bad_attrs[] = { 0, GDR_ATTR_MAX, 1000, -1 };
    vramio_backend_t be = VRAMIO_BACKEND_NONE;
    int v, major = -1, minor = -1;
    const char *s;
    gdr_t g = t_open();

    /* Independent facts: each wrong one is recorded, the rest still checked. */
    T_ASSERT_OK(vramio_get_backend(g, &be));
    for (int a = GDR_ATTR_USE_PERSISTENT_MAPPING; a < GDR_ATTR_MAX; a++) {
        v = -1;
        if (T_CHECK_OK(gdr_get_attribute(g, (gdr_attr_t)a, &v)))
            T_CHECK(v == 0 || v == 1, "attribute %d has value %d, want 0 or 1", a, v);
        t_log("attribute %d = %d", a, v);
    }
    if (T_CHECK_OK(gdr_get_attribute(g, GDR_ATTR_USING_DMA_BUF_MMAP, &v)))
        T_CHECK(v == (be == VRAMIO_BACKEND_DMABUF), "USING_DMA_BUF_MMAP is %d on backend %s", v,
                vramio_backend_name(be));
    for (size_t i = 0; i < sizeof(bad_attrs) / sizeof(bad_attrs[0]); i++)
        T_CHECK_EQ_ERR(gdr_get_attribute(g, (gdr_attr_t)bad_attrs[i], &v), EINVAL);
    T_CHECK_EQ_ERR(gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, NULL), EINVAL);
    T_CHECK_EQ_ERR(gdr_get_attribute(NULL, GDR_ATTR_USE_PERSISTENT_MAPPING, &v), EINVAL);

    for (int t = GDR_MAPPING_TYPE_NONE; t <= GDR_MAPPING_TYPE_DEVICE; t++) {
        s = NULL;
        if (T_CHECK_OK(gdr_get_mapping_type_string((gdr_mapping_type_t)t, &s)))
            T_CHECK(s && strcmp(s, type_names[t]) == 0, "mapping type %d is named '%s', want '%s'",
                    t, s ? s : "(null)", type_names[t]);
    }
    T_CHECK_EQ_ERR(gdr_get_mapping_type_string(GDR_MAPPING_TYPE_MAX, &s), EINVAL);
    T_CHECK_EQ_ERR(gdr_get_mapping_type_string((gdr_mapping_type_t)-1, &s), EINVAL);

    gdr_runtime_get_version(&major, &minor);
    T_CHECK(major == 2 && minor == 6, "runtime version %d.%d, want 2.6", major, minor);
    major = minor = -1;
    gdr_driver_get_version(g, &major, &minor); /* clients ignore its return code */
    T_CHECK(major >= 2 && minor >= 0, "driver version %d.%d on backend %s is not sensible",
            major, minor, vramio_backend_name(be));
    T_ASSERT_OK(gdr_close(g));
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    int n = 0, c;

    while (f && (c = fgetc(f)) != EOF)
        n += c == '\n';
    if (f)
        fclose(f);
    return n;
}

struct footprint {
    int fds, maps;
    uint64_t pins;
};

static void footprint(struct footprint *f)
{
    f->fds = t_count_fds();
    f->maps = count_lines("/proc/self/maps");
    f->pins = 0;
    gm_live_pins(&f->pins); /* provider's leak counter, emu only */
}

/* One cycle: 4 pins, 2 released by hand, 2 left for gdr_close to release. */
static void leak_cycle(struct gm_buf *b, int nb, char **left)
{
    gdr_mh_t mh[4];
    void *map[4];
    size_t size[4];
    char *p[4];
    uint64_t v = 0x1eaf;
    gdr_t g = t_open();

    for (int i = 0; i < 4; i++) {
        p[i] = t_pin_map(g, b[i % nb].dptr, GPU_PAGE_SIZE, &mh[i], &map[i], &size[i]);
        T_ASSERT_OK(gdr_copy_to_mapping(mh[i], p[i], &v, sizeof(v)));
    }
    t_unmap_unpin(g, mh[0], map[0], size[0]);
    t_unmap_unpin(g, mh[1], map[1], size[1]);
    T_ASSERT_OK(gdr_close(g));
    *left = p[3];
}

T_CASE(leakage_extended, 0, "no fd, mapping or provider pin leaks over open/pin/map/close cycles")
{
    struct gm_buf b[2];
    struct footprint before, after;
    char *left = NULL;
    const int cycles = 20;

    t_alloc(GPU_PAGE_SIZE, &b[0]);
    t_alloc(GPU_PAGE_SIZE, &b[1]);
    leak_cycle(b, 2, &left); /* first use may set up process-wide state (CUDA, Vulkan) */
    footprint(&before);
    for (int i = 0; i < cycles; i++)
        leak_cycle(b, 2, &left);
    footprint(&after);
    t_log("fds %d -> %d, maps %d -> %d, provider pins %" PRIu64 " -> %" PRIu64, before.fds,
          after.fds, before.maps, after.maps, before.pins, after.pins);
    /* The CUDA and Vulkan drivers may open a file or grow an arena of their own once in a
     * while; a leak of ours grows with every cycle. With the emulated provider: none at all. */
    int slack = gm_kind_is_cuda(T.kind) ? 4 : 0;
    T_ASSERT(after.fds <= before.fds + slack, "%d file descriptors leaked over %d open/close cycles",
             after.fds - before.fds, cycles);
    T_ASSERT(after.maps <= before.maps + slack, "%d memory mappings leaked over %d cycles",
             after.maps - before.maps, cycles);
    T_ASSERT(after.pins <= before.pins, "%" PRIu64 " provider pins leaked over %d cycles",
             after.pins - before.pins, cycles);
    t_free(&b[0]);
    t_free(&b[1]);
    if (T.kind == GM_EMU) {
        uint64_t pins = 1;

        T_ASSERT_OK(gm_live_pins(&pins));
        T_ASSERT(pins == 0, "%" PRIu64 " provider pins still live after everything was freed", pins);
    }
}

#define STRESS_THREADS 8
#define STRESS_ITERS 40

struct stress {
    gdr_t g;
    struct gm_buf *b;
    int id;
};

static void *stress_thread(void *arg)
{
    struct stress *s = arg;
    unsigned char want[4096], got[4096];

    gm_thread_attach();
    for (int it = 0; it < STRESS_ITERS; it++) {
        gdr_mh_t mh;
        void *map;
        size_t size;
        char *p = t_pin_map(s->g, s->b->dptr, GPU_PAGE_SIZE, &mh, &map, &size);

        t_pattern(want, sizeof(want), (uint32_t)(s->id * 1000 + it + 1));
        T_ASSERT_OK(gdr_copy_to_mapping(mh, p, want, sizeof(want)));
        T_ASSERT_OK(gdr_copy_from_mapping(mh, got, p, sizeof(got)));
        t_compare(want, got, sizeof(want), "thread stress round trip");
        t_unmap_unpin(s->g, mh, map, size);
    }
    return NULL;
}

/* Many threads pin, map, copy and release on one gdr_t at once, each in its own buffer. */
T_CASE(thread_stress, 0, "many threads pin, map, copy and release on one gdr_t")
{
    struct gm_buf b[STRESS_THREADS];
    struct stress s[STRESS_THREADS];
    pthread_t th[STRESS_THREADS];
    int n = gm_kind_is_cuda(T.kind) && T.kind != GM_CUDA ? 4 : STRESS_THREADS;
    gdr_t g = t_open();

    for (int i = 0; i < n; i++) {
        t_alloc(GPU_PAGE_SIZE, &b[i]);
        s[i] = (struct stress){ .g = g, .b = &b[i], .id = i };
        T_ASSERT(pthread_create(&th[i], NULL, stress_thread, &s[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    T_ASSERT_OK(gdr_close(g));
    for (int i = 0; i < n; i++)
        t_free(&b[i]);
}

/* A released handle must be refused everywhere, and never alias a newer pin. */
T_CASE(stale_handles, 0, "released handles and closed gdr_t are refused, never aliased")
{
    struct gm_buf b;
    gdr_mh_t mh, mh2, zero = { 0 }, junk = { ~0UL };
    gdr_info_t info;
    void *map = NULL;
    size_t size;
    char host[64] = { 0 };
    int flag;
    gdr_t g = t_open();

    t_alloc(GPU_PAGE_SIZE, &b);
    char *p = t_pin_map(g, b.dptr, GPU_PAGE_SIZE, &mh, &map, &size);
    T_ASSERT_EQ_ERR(gdr_map(g, mh, &map, size), EAGAIN); /* already mapped: upstream's EAGAIN */
    t_unmap_unpin(g, mh, map, size);
    T_ASSERT_EQ_ERR(gdr_unmap(g, mh, map, size), EINVAL);
    T_ASSERT_OK(gdr_pin_buffer_v2(g, b.dptr, GPU_PAGE_SIZE, 0, &mh2));
    T_ASSERT(mh2.h != mh.h, "a new pin reuses the released handle value %#lx", mh.h);
    /* Every call with every bad handle: each one accepted is recorded. */
    gdr_mh_t bad[] = { mh, zero, junk, { mh2.h ^ 1 } };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        T_CHECK_ERR(gdr_unpin_buffer(g, bad[i]));
        T_CHECK_ERR(gdr_get_info(g, bad[i], &info));
        T_CHECK_ERR(gdr_map(g, bad[i], &map, size));
        T_CHECK_ERR(gdr_unmap(g, bad[i], p, size));
        T_CHECK_ERR(gdr_get_callback_flag(g, bad[i], &flag));
        T_CHECK_ERR(gdr_copy_to_mapping(bad[i], host, host + 8, 8));
        T_CHECK_ERR(gdr_copy_from_mapping(bad[i], host, host + 8, 8));
    }
    /* The live pin was not disturbed by any of that. */
    T_ASSERT_OK(gdr_get_info(g, mh2, &info));
    T_ASSERT_OK(gdr_unpin_buffer(g, mh2));
    T_ASSERT_OK(gdr_close(g));
    /* A closed gdr_t is refused too. */
    T_CHECK_ERR(gdr_pin_buffer_v2(g, b.dptr, GPU_PAGE_SIZE, 0, &mh));
    T_CHECK_ERR(gdr_close(g));
    t_free(&b);
}

/* A handle used with another gdr_t, or a pointer outside the handle's own mapping. */
T_CASE(foreign_handles, 0, "handles of another gdr_t, pointers outside the mapping")
{
    struct gm_buf b1, b2;
    gdr_mh_t mh1, mh2;
    gdr_info_t info;
    void *map1, *map2, *map = NULL;
    size_t s1, s2;
    uint64_t v = 42;
    gdr_t g1 = t_open(), g2 = t_open();

    t_alloc(GPU_PAGE_SIZE, &b1);
    t_alloc(GPU_PAGE_SIZE, &b2);
    char *p1 = t_pin_map(g1, b1.dptr, GPU_PAGE_SIZE, &mh1, &map1, &s1);
    char *p2 = t_pin_map(g2, b2.dptr, GPU_PAGE_SIZE, &mh2, &map2, &s2);
    T_CHECK_ERR(gdr_unpin_buffer(g2, mh1));
    T_CHECK_ERR(gdr_get_info(g2, mh1, &info));
    T_CHECK_ERR(gdr_map(g2, mh1, &map, s1));
    T_CHECK_ERR(gdr_unmap(g2, mh1, map1, s1));
    /* A pointer of another pin's mapping, or past the end of its own. */
    if (p2 < p1 || p2 >= p1 + s1)
        T_CHECK_EQ_ERR(gdr_copy_to_mapping(mh1, p2, &v, sizeof(v)), EINVAL);
    T_CHECK_EQ_ERR(gdr_copy_to_mapping(mh1, (char *)map1 + s1 - 4, &v, sizeof(v)), EINVAL);
    T_CHECK_EQ_ERR(gdr_copy_from_mapping(mh1, &v, (char *)map1 + s1, 1), EINVAL);
    /* Both pins are intact (a refusal above that did not happen is reported with this). */
    T_ASSERT_OK(gdr_copy_to_mapping(mh1, p1, &v, sizeof(v)));
    t_check_gpu(&b1, 0, &v, sizeof(v), "first pin after foreign use");
    T_ASSERT_OK(gdr_copy_to_mapping(mh2, p2, &v, sizeof(v)));
    t_check_gpu(&b2, 0, &v, sizeof(v), "second pin after foreign use");
    t_unmap_unpin(g1, mh1, map1, s1);
    t_unmap_unpin(g2, mh2, map2, s2);
    T_ASSERT_OK(gdr_close(g1));
    T_ASSERT_OK(gdr_close(g2));
    t_free(&b1);
    t_free(&b2);
}

T_CASE(bad_arguments, 0, "NULL, zero, unknown flags and sizes get EINVAL")
{
    struct gm_buf b;
    gdr_mh_t mh;
    gdr_info_t info;
    void *map = NULL;
    char *host = malloc(GPU_PAGE_SIZE);
    gdr_t g = t_open();

    T_ASSERT(host, "out of memory");
    t_alloc(GPU_PAGE_SIZE, &b);
    /* Each bad argument on its own: every one accepted is recorded. */
    T_CHECK_EQ_ERR(gdr_pin_buffer_v2(NULL, b.dptr, GPU_PAGE_SIZE, 0, &mh), EINVAL);
    T_CHECK_EQ_ERR(gdr_pin_buffer_v2(g, b.dptr, GPU_PAGE_SIZE, 0, NULL), EINVAL);
    T_CHECK_EQ_ERR(gdr_pin_buffer_v2(g, b.dptr, 0, 0, &mh), EINVAL);
    T_CHECK_EQ_ERR(gdr_pin_buffer_v2(g, b.dptr, GPU_PAGE_SIZE, 2, &mh), EINVAL);
    T_CHECK_EQ_ERR(gdr_pin_buffer_v2(g, b.dptr, GPU_PAGE_SIZE, 0x80000000u, &mh), EINVAL);
    T_CHECK_ERR(gdr_pin_buffer_v2(g, (uintptr_t)host, GPU_PAGE_SIZE, 0, &mh)); /* host memory */
    T_CHECK_ERR(gdr_pin_buffer(g, 0, GPU_PAGE_SIZE, 0, 0, &mh));

    T_ASSERT_OK(gdr_pin_buffer_v2(g, b.dptr, GPU_PAGE_SIZE, 0, &mh));
    T_ASSERT_OK(gdr_get_info(g, mh, &info));
    T_CHECK_EQ_ERR(gdr_get_info(g, mh, NULL), EINVAL);
    T_CHECK_EQ_ERR(gdr_map(g, mh, NULL, info.mapped_size), EINVAL);
    T_CHECK_EQ_ERR(gdr_map_v2(g, mh, &map, info.mapped_size, 4), EINVAL);
    T_CHECK_EQ_ERR(gdr_map_v2(g, mh, &map, info.mapped_size, -1), EINVAL);
    T_CHECK_EQ_ERR(gdr_map(g, mh, &map, info.mapped_size + GPU_PAGE_SIZE), EINVAL);
    T_ASSERT_OK(gdr_map(g, mh, &map, info.mapped_size));
    /* Not the mapping's pointer (DPDK passes the device address): released, as upstream. */
    T_ASSERT_OK(gdr_unmap(g, mh, (char *)map + 4096, info.mapped_size));
    T_ASSERT_OK(gdr_get_info(g, mh, &info));
    T_ASSERT(!info.mapped, "gdr_unmap with another pointer left the handle mapped");
    T_ASSERT_EQ_ERR(gdr_unmap(g, mh, map, info.mapped_size), EINVAL); /* no longer mapped */
    T_ASSERT_OK(gdr_map(g, mh, &map, info.mapped_size));
    T_CHECK_EQ_ERR(gdr_copy_to_mapping(mh, map, NULL, 8), EINVAL);
    T_CHECK_EQ_ERR(gdr_copy_from_mapping(mh, NULL, map, 8), EINVAL);
    T_CHECK_OK(gdr_copy_to_mapping(mh, map, host, 0)); /* size 0 is a no-op */
    T_CHECK_EQ_ERR(gdr_get_callback_flag(g, mh, NULL), EINVAL);
    T_ASSERT_OK(gdr_unmap(g, mh, map, info.mapped_size));
    T_ASSERT_OK(gdr_unpin_buffer(g, mh));
    T_ASSERT_OK(gdr_close(g));
    T_CHECK_EQ_ERR(gdr_close(NULL), EINVAL);
    t_free(&b);
    free(host);
}

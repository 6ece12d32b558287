/* SPDX-License-Identifier: MIT */
/* t_basic.c - pinning and mapping basics (GDRCopy 2.6's basic_* tests). */
#include "harness.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_loader.h"

/* 256 KiB + 16 B, as upstream: more than one GPU page, not a multiple of it. */
#define BASIC_SIZE (256 * 1024 + 16)

static void basic_pin(int v2)
{
    struct gm_buf b;
    gdr_mh_t mh = { 0 };
    gdr_t g;

    t_alloc(BASIC_SIZE, &b);
    g = t_open();
    t_log("backend %s", t_backend(g));
    if (v2)
        T_ASSERT_OK(gdr_pin_buffer_v2(g, b.dptr, BASIC_SIZE, GDR_PIN_FLAG_DEFAULT, &mh));
    else
        T_ASSERT_OK(gdr_pin_buffer(g, b.dptr, BASIC_SIZE, 0, 0, &mh));
    T_ASSERT(mh.h != 0, "pin succeeded but returned the null handle");
    if (v2) {
        gdr_info_t info;

        T_ASSERT_OK(gdr_get_info(g, mh, &info));
        T_ASSERT(info.page_size && !(info.page_size & (info.page_size - 1)),
                 "page_size %u is not a power of two", info.page_size);
        T_ASSERT(info.va == (b.dptr & ~(uint64_t)(info.page_size - 1)),
                 "info.va 0x%" PRIx64 " is not the pinned address 0x%" PRIx64 " aligned down",
                 info.va, b.dptr);
        /* The contract rounds pins to 64 KiB GPU pages; page_size is the backend's page
         * (the host page for dma-buf), so only GPU pages are required of mapped_size. */
        T_ASSERT(info.mapped_size >= BASIC_SIZE && info.mapped_size % GPU_PAGE_SIZE == 0,
                 "info.mapped_size %" PRIu64 " is not whole 64 KiB GPU pages covering %d bytes",
                 info.mapped_size, BASIC_SIZE);
        t_log("page_size %u, mapped_size %" PRIu64, info.page_size, info.mapped_size);
        T_ASSERT(!info.mapped && info.mapping_type == GDR_MAPPING_TYPE_NONE,
                 "a pin that was never mapped reports mapped=%u type=%d", info.mapped,
                 (int)info.mapping_type);
    }
    T_ASSERT_OK(gdr_unpin_buffer(g, mh));
    T_ASSERT_OK(gdr_close(g));
    t_free(&b);
}

T_CASE(basic, T_UPSTREAM, "pin with gdr_pin_buffer, unpin, close")
{
    basic_pin(0);
}

T_CASE(basic_v2, 0, "pin with gdr_pin_buffer_v2; info of an unmapped pin")
{
    basic_pin(1);
}

T_CASE(basic_v2_forcepci, 0, "FORCE_PCIE works on a coherent GPU, is refused cleanly elsewhere")
{
    struct gm_buf b;
    gdr_mh_t mh = { 0 };
    int must, rc;
    gdr_t g;

    t_alloc(BASIC_SIZE, &b);
    g = t_open();
    must = t_force_pcie_must_pin(g);
    rc = gdr_pin_buffer_v2(g, b.dptr, BASIC_SIZE, GDR_PIN_FLAG_FORCE_PCIE, &mh);
    if (rc == 0) {
        void *map;
        size_t map_size;
        uint32_t v = 0xc0ffee01;

        T_ASSERT_OK(gdr_unpin_buffer(g, mh));
        char *p = t_pin_map(g, b.dptr, BASIC_SIZE, &mh, &map, &map_size);
        T_ASSERT_OK(gdr_copy_to_mapping(mh, p, &v, sizeof(v)));
        t_check_gpu(&b, 0, &v, sizeof(v), "write through a FORCE_PCIE pin");
        t_unmap_unpin(g, mh, map, map_size);
    } else {
        T_ASSERT(!must, "FORCE_PCIE is supported on this coherent GPU but the pin failed: %s",
                 vramio_strerror(rc));
        /* Clients retry without the flag when it is refused: it must be refused cleanly. */
        T_ASSERT(rc > 0, "FORCE_PCIE refused with %d", rc);
        t_log("FORCE_PCIE refused (no coherent link): %s", vramio_strerror(rc));
    }
    T_ASSERT_OK(gdr_close(g));
    t_free(&b);
}

T_CASE(basic_with_tokens, 0, "legacy pin with CUDA P2P tokens")
{
    CUDA_POINTER_ATTRIBUTE_P2P_TOKENS tokens = { 0, 0 };
    const struct vr_cuda *cu = gm_cuda();
    struct gm_buf b;
    gdr_mh_t mh = { 0 };
    CUresult cr;
    gdr_t g;

    if (T.kind != GM_CUDA)
        t_skip_exit("P2P tokens exist only for cuMemAlloc memory (kind cuda), not %s",
                    gm_kind_name(T.kind));
    t_alloc(BASIC_SIZE, &b);
    cr = cu->cuPointerGetAttribute(&tokens, CU_POINTER_ATTRIBUTE_P2P_TOKENS, (CUdeviceptr)b.dptr);
    if (cr != CUDA_SUCCESS)
        t_skip_exit("this CUDA driver gives no P2P tokens: %s", vr_cuda_errstr(cr));
    g = t_open();
    T_ASSERT_OK(gdr_pin_buffer(g, b.dptr, BASIC_SIZE, tokens.p2pToken, tokens.vaSpaceToken, &mh));
    T_ASSERT(mh.h != 0, "pin succeeded but returned the null handle");
    T_ASSERT_OK(gdr_unpin_buffer(g, mh));
    T_ASSERT_OK(gdr_close(g));
    t_free(&b);
}

T_CASE(basic_unaligned_mapping, 0, "a pin off a GPU page boundary; a hand-aligned pin maps")
{
    struct gm_buf b;
    gdr_mh_t mh = { 0 };
    gdr_info_t info;
    vramio_backend_t be = VRAMIO_BACKEND_NONE;
    uint64_t addr;
    void *map = NULL;
    size_t map_size;
    uint32_t v = 0x5eed1234;
    int rc;
    gdr_t g;

    t_alloc(3 * GPU_PAGE_SIZE, &b);
    g = t_open();
    /* A pin may start anywhere: 4 bytes past a GPU page boundary. */
    addr = b.dptr + sizeof(int);
    T_ASSERT_OK(gdr_pin_buffer_v2(g, addr, GPU_PAGE_SIZE, 0, &mh));
    T_ASSERT_OK(gdr_get_info(g, mh, &info));
    T_ASSERT_OK(vramio_handle_backend(g, mh, &be));
    rc = gdr_map(g, mh, &map, info.mapped_size);
    if (be == VRAMIO_BACKEND_GDRDRV) {
        /* gdrdrv's contract (and upstream's test): mapping an unaligned pin is an error. */
        T_ASSERT(rc > 0, "gdrdrv mapped a pin that does not start on a GPU page (rc %d)", rc);
    } else if (rc == 0) {
        /* Other backends may map it: then the mapping must start at info.va. */
        T_ASSERT(info.va <= addr && addr - info.va < info.page_size,
                 "info.va 0x%" PRIx64 " is not addr 0x%" PRIx64 " aligned down", info.va, addr);
        T_ASSERT_OK(gdr_copy_to_mapping(mh, (char *)map + (addr - info.va), &v, sizeof(v)));
        t_check_gpu(&b, sizeof(int), &v, sizeof(v), "write through an unaligned pin");
        T_ASSERT_OK(gdr_unmap(g, mh, map, info.mapped_size));
    } else {
        T_ASSERT(rc > 0, "gdr_map returned %d", rc);
    }
    T_ASSERT_OK(gdr_unpin_buffer(g, mh));

    /* Aligned by hand to the next GPU page, as a user would: must map and work. */
    addr = (b.dptr + GPU_PAGE_SIZE) & GPU_PAGE_MASK;
    char *p = t_pin_map(g, addr, GPU_PAGE_SIZE, &mh, &map, &map_size);
    ((volatile uint32_t *)p)[0] = v;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    t_check_gpu(&b, addr - b.dptr, &v, sizeof(v), "store through a hand-aligned pin");
    t_unmap_unpin(g, mh, map, map_size);
    T_ASSERT_OK(gdr_close(g));
    t_free(&b);
}

#define SMALL_BUFS 8

T_CASE(basic_small_buffers_mapping, 0, "small buffers sharing a GPU page map independently")
{
    struct gm_buf b[SMALL_BUFS];
    gdr_mh_t mh[SMALL_BUFS];
    void *map[SMALL_BUFS];
    size_t map_size[SMALL_BUFS];
    uint32_t *p[SMALL_BUFS];
    /* cuMemAlloc packs small buffers into one GPU page; other kinds round up (2 MiB for VMM). */
    int n = T.kind == GM_CUDA || T.kind == GM_EMU ? SMALL_BUFS : 4;
    gdr_t g = t_open();

    for (int i = 0; i < n; i++)
        t_alloc(sizeof(uint32_t), &b[i]);
    for (int i = 0; i < n; i++) {
        p[i] = (uint32_t *)t_pin_map(g, b[i].dptr, sizeof(uint32_t), &mh[i], &map[i], &map_size[i]);
        uint32_t v = 0xa000 + (uint32_t)i;
        T_ASSERT_OK(gdr_copy_to_mapping(mh[i], p[i], &v, sizeof(v)));
    }
    /* Each write landed in its own buffer, none overwrote a neighbour sharing the page. */
    for (int i = 0; i < n; i++) {
        uint32_t v = 0xa000 + (uint32_t)i, got = 0;

        t_check_gpu(&b[i], 0, &v, sizeof(v), "small buffer");
        T_ASSERT_OK(gdr_copy_from_mapping(mh[i], &got, p[i], sizeof(got)));
        T_ASSERT(got == v, "buffer %d reads back 0x%x through its mapping, want 0x%x", i, got, v);
    }
    for (int i = n - 1; i >= 0; i--)
        t_unmap_unpin(g, mh[i], map[i], map_size[i]);
    T_ASSERT_OK(gdr_close(g));
    for (int i = 0; i < n; i++)
        t_free(&b[i]);
}

struct child_pin {
    gdr_t g;
    uint64_t addr;
    gdr_mh_t mh;
    void *map;
    size_t map_size;
    char *p;
};

static void *child_pins(void *arg)
{
    struct child_pin *c = arg;

    gm_thread_attach();
    c->p = t_pin_map(c->g, c->addr, BASIC_SIZE, &c->mh, &c->map, &c->map_size);
    return NULL;
}

T_CASE(basic_child_thread_pins_buffer, T_UPSTREAM,
       "a pin made by another thread is usable after it exits")
{
    struct child_pin c = { 0 };
    struct gm_buf b;
    pthread_t th;
    unsigned char *src = malloc(BASIC_SIZE), *dst = malloc(BASIC_SIZE);

    T_ASSERT(src && dst, "out of memory");
    t_alloc(BASIC_SIZE, &b);
    c.g = t_open();
    c.addr = b.dptr;
    T_ASSERT(pthread_create(&th, NULL, child_pins, &c) == 0, "pthread_create failed");
    pthread_join(th, NULL);
    /* The thread is gone; its pin and mapping belong to the gdr_t and stay usable. */
    t_pattern(src, BASIC_SIZE, 11);
    T_ASSERT_OK(gdr_copy_to_mapping(c.mh, c.p, src, BASIC_SIZE));
    t_check_gpu(&b, 0, src, BASIC_SIZE, "write through a pin made by another thread");
    T_ASSERT_OK(gdr_copy_from_mapping(c.mh, dst, c.p, BASIC_SIZE));
    t_compare(src, dst, BASIC_SIZE, "read through a pin made by another thread");
    t_unmap_unpin(c.g, c.mh, c.map, c.map_size);
    T_ASSERT_OK(gdr_close(c.g));
    t_free(&b);
    free(src);
    free(dst);
}

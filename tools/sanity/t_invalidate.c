/* SPDX-License-Identifier: MIT */
/*
 * t_invalidate.c - what happens to a mapping when its gdr_t is closed, when its GPU memory is
 * freed, and when two gdr_t map the same memory (GDRCopy 2.6's invalidation_* tests).
 */
#include "harness.h"

#include <signal.h>
#include <string.h>

#define INV_SIZE GPU_PAGE_SIZE

T_CASE(invalidation_access_after_gdr_close, T_UPSTREAM, "a mapping faults after gdr_close")
{
    struct gm_buf b;
    gdr_mh_t mh;
    void *map;
    size_t map_size;
    char *p;
    int sig;
    gdr_t g;

    t_alloc(INV_SIZE, &b);
    g = t_open();
    p = t_pin_map(g, b.dptr, INV_SIZE, &mh, &map, &map_size);
    T_ASSERT(t_access(p, 1) == 0, "the mapping cannot be written while it is live");
    T_ASSERT_OK(gdr_close(g));
    /* gdr_close releases every mapping still held: the address must no longer be usable. */
    sig = t_access(p, 0);
    T_ASSERT(sig == SIGSEGV || sig == SIGBUS,
             "the mapping is still readable after gdr_close (the %s backend kept it)",
             gm_kind_name(T.kind));
    t_log("access after gdr_close raised signal %d", sig);
    t_free(&b);
}

/* Free the GPU memory under a live mapping. Non-persistent pins (gdrdrv's callback mode) are
 * invalidated: the callback flag is set and the mapping raises SIGBUS. Persistent pins keep the
 * pages until unpin: the mapping keeps working and shows the old data. Either way the pin and
 * the gdr_t must then be released cleanly. */
static void access_after_free(gdr_t g, struct gm_buf *b)
{
    uint32_t v = 0x600dcafe, got = 0;
    gdr_mh_t mh;
    void *map;
    size_t map_size;
    char *p;
    int persistent = -1, flag = -1, sig;

    p = t_pin_map(g, b->dptr, INV_SIZE, &mh, &map, &map_size);
    T_ASSERT_OK(gdr_copy_to_mapping(mh, p, &v, sizeof(v)));
    T_ASSERT_OK(gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &persistent));
    T_ASSERT_OK(gdr_get_callback_flag(g, mh, &flag));
    T_ASSERT(flag == 0, "callback flag is %d before the memory was freed", flag);
    t_free(b);
    T_ASSERT_OK(gdr_get_callback_flag(g, mh, &flag));
    if (persistent) {
        /* The pages stay until unpin; the flag may say that the allocation is gone (vulkan
         * does) or not (gdrdrv's persistent pins get no callback): both are true statements. */
        T_ASSERT(flag == 0 || flag == 1, "persistent pin reports callback flag %d after free", flag);
        sig = t_access(p, 0);
        T_ASSERT(sig == 0, "persistent mapping raised signal %d after the memory was freed", sig);
        T_ASSERT_OK(gdr_copy_from_mapping(mh, &got, p, sizeof(got)));
        T_ASSERT(got == v, "persistent mapping lost its data after free: 0x%x, want 0x%x", got, v);
    } else {
        T_ASSERT(flag == 1, "non-persistent pin reports callback flag %d after free, want 1", flag);
        sig = t_access(p, 0);
        T_ASSERT(sig == SIGBUS || sig == SIGSEGV,
                 "invalidated mapping is still readable after the memory was freed");
    }
    t_log("persistent=%d flag=%d after free", persistent, flag);
    T_ASSERT_OK(gdr_unmap(g, mh, map, map_size));
    T_ASSERT_OK(gdr_unpin_buffer(g, mh));
}

T_CASE(invalidation_access_after_free, T_UPSTREAM,
       "freeing GPU memory under a mapping: invalidated or persistent")
{
    struct gm_buf b;
    gdr_t g;

    t_alloc(INV_SIZE, &b);
    g = t_open();
    access_after_free(g, &b);
    T_ASSERT_OK(gdr_close(g));
}

/* Exported for t_fork.c: the same check after a fork whose child exited. */
void t_access_after_free(gdr_t g, struct gm_buf *b);
void t_access_after_free(gdr_t g, struct gm_buf *b)
{
    access_after_free(g, b);
}

T_CASE(invalidation_two_mappings, T_UPSTREAM,
       "two gdr_t map the same memory; closing one spares the other")
{
    unsigned char want[4096], got[4096];
    struct gm_buf b;
    gdr_mh_t mh1, mh2;
    void *map1, *map2;
    size_t size1, size2;
    char *p1, *p2;
    gdr_t g1, g2;
    int sig;

    t_alloc(INV_SIZE, &b);
    g1 = t_open();
    g2 = t_open();
    p1 = t_pin_map(g1, b.dptr, INV_SIZE, &mh1, &map1, &size1);
    p2 = t_pin_map(g2, b.dptr, INV_SIZE, &mh2, &map2, &size2);
    t_pattern(want, sizeof(want), 21);
    T_ASSERT_OK(gdr_copy_to_mapping(mh1, p1, want, sizeof(want)));
    T_ASSERT_OK(gdr_copy_from_mapping(mh2, got, p2, sizeof(got)));
    t_compare(want, got, sizeof(want), "write through one gdr_t, read through the other");

    /* Closing one gdr_t must leave the other's pin and mapping intact. */
    T_ASSERT_OK(gdr_close(g1));
    t_pattern(want, sizeof(want), 22);
    T_ASSERT_OK(gdr_copy_to_mapping(mh2, p2, want, sizeof(want)));
    t_check_gpu(&b, 0, want, sizeof(want), "write through the remaining gdr_t");
    /* The closed one's handle is gone; its mapping too unless both share one window. */
    T_ASSERT_ERR(gdr_unpin_buffer(g2, mh1));
    if (p1 != p2) {
        sig = t_access(p1, 0);
        t_log("access through the closed gdr_t's mapping: signal %d", sig);
    }
    t_unmap_unpin(g2, mh2, map2, size2);
    T_ASSERT_OK(gdr_close(g2));
    t_free(&b);
}

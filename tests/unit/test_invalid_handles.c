/* SPDX-License-Identifier: MIT */
/*
 * test_invalid_handles.c - every entry point that takes a gdr_t or a gdr_mh_t answers EINVAL,
 * without crashing, for NULL, zeroed, made-up, freed-memory and stale values. Under ASan a
 * library that dereferenced a made-up gdr_t would be caught here.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "legacy_info.h"
#include "t.h"
#include "vramio.h"


#define NVALS 8

/* Run every call that takes a gdr_t with g and a handle mh; count the ones that are not
 * EINVAL into *bad and name the first in what. */
static void every_call(gdr_t g, gdr_mh_t mh, int *bad, char *what, size_t len)
{
    char buf[64], reason[128];
    void *va = NULL;
    int v = 0, major, minor;
    gdr_mh_t out;
    gdr_info_t info;
    struct t_info_v1 info1;
    vramio_backend_t be;
    const struct { const char *name; int rc; } r[] = {
        { "gdr_pin_buffer", gdr_pin_buffer(g, 0x100000, 65536, 0, 0, &out) },
        { "gdr_pin_buffer_v2", gdr_pin_buffer_v2(g, 0x100000, 65536, 0, &out) },
        { "gdr_unpin_buffer", gdr_unpin_buffer(g, mh) },
        { "gdr_get_callback_flag", gdr_get_callback_flag(g, mh, &v) },
        { "gdr_get_info_v2", gdr_get_info_v2(g, mh, &info) },
        { "gdr_get_info(legacy)", t_get_info_v1(g, mh, &info1) },
        { "gdr_map", gdr_map(g, mh, &va, 65536) },
        { "gdr_map_v2", gdr_map_v2(g, mh, &va, 65536, GDR_MAP_FLAG_REQ_WC_MAPPING) },
        { "gdr_unmap", gdr_unmap(g, mh, buf, sizeof(buf)) },
        { "gdr_copy_to_mapping", gdr_copy_to_mapping(mh, buf, buf + 8, 8) },
        { "gdr_copy_from_mapping", gdr_copy_from_mapping(mh, buf, buf + 8, 8) },
        { "gdr_copy_to_mapping(0 bytes)", gdr_copy_to_mapping(mh, buf, buf + 8, 0) },
        { "gdr_driver_get_version", gdr_driver_get_version(g, &major, &minor) },
        { "gdr_get_attribute", gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &v) },
        { "vramio_get_backend", vramio_get_backend(g, &be) },
        { "vramio_handle_backend", vramio_handle_backend(g, mh, &be) },
        { "vramio_backend_status", vramio_backend_status(g, VRAMIO_BACKEND_GDRDRV, reason,
                                                         sizeof(reason)) },
        { "gdr_close", gdr_close(g) },
    };
    size_t i;

    for (i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
        if (r[i].rc != EINVAL) {
            if (!*bad)
                snprintf(what, len, "%s returned %d", r[i].name, r[i].rc);
            (*bad)++;
        }
    }
}

int main(void)
{
    /* Memory that looks like an object but is not one of the library's. */
    unsigned long *junk = malloc(4096), *freed = malloc(256);
    gdr_t gvals[NVALS];
    unsigned long hvals[NVALS] = { 0, 1, 2, 0xffffffffUL, ~0UL, 0xdeadbeefcafef00dUL,
                                   (unsigned long)(uintptr_t)junk, 0x6d68000001000000UL };
    char name[96], what[128];
    int i, j, bad;
    gdr_t g;
    gdr_mh_t mh;

    memset(junk, 0xa5, 4096);
    gvals[0] = NULL;
    gvals[1] = (gdr_t)(uintptr_t)1;
    gvals[2] = (gdr_t)(uintptr_t)4096;
    gvals[3] = (gdr_t)(uintptr_t)~0UL;
    gvals[4] = (gdr_t)(uintptr_t)0xdeadbeefcafef00dUL;
    gvals[5] = (gdr_t)junk;
    gvals[6] = (gdr_t)freed;
    free(freed); /* from here on gvals[6] points to freed memory */
    gvals[7] = (gdr_t)(uintptr_t)0x6764000001000000UL;

    for (i = 0; i < NVALS; i++) {
        bad = 0;
        what[0] = '\0';
        for (j = 0; j < NVALS; j++) {
            mh.h = hvals[j];
            every_call(gvals[i], mh, &bad, what, sizeof(what));
        }
        snprintf(name, sizeof(name), "bad_gdr_%d_every_call_einval", i);
        t_check(bad == 0, name, "%d calls were not EINVAL, first: %s", bad, what);
    }

    /* With a live gdr_t (where a backend is usable): bad handles, then a stale gdr_t. */
    g = gdr_open();
    if (!g) {
        t_skip("bad_handles_on_live_gdr", "no backend is usable here");
        t_skip("stale_gdr_every_call_einval", "no backend is usable here");
    } else {
        bad = 0;
        for (j = 0; j < NVALS; j++) {
            int v;
            void *va;
            gdr_info_t info;

            mh.h = hvals[j];
            if (gdr_unpin_buffer(g, mh) != EINVAL || gdr_get_callback_flag(g, mh, &v) != EINVAL ||
                gdr_get_info_v2(g, mh, &info) != EINVAL || gdr_map(g, mh, &va, 65536) != EINVAL ||
                gdr_unmap(g, mh, &v, 4) != EINVAL)
                bad++;
        }
        t_check(bad == 0, "bad_handles_on_live_gdr", "%d handle values were accepted", bad);
        t_check(gdr_close(g) == 0, "close_live_gdr", "gdr_close failed");
        bad = 0;
        what[0] = '\0';
        mh.h = 0;
        every_call(g, mh, &bad, what, sizeof(what));
        t_check(bad == 0, "stale_gdr_every_call_einval", "%d calls, first: %s", bad, what);
    }

    /* NULL output pointers. */
    t_check(gdr_pin_buffer(gvals[0], 0x100000, 65536, 0, 0, NULL) == EINVAL, "pin_null_handle",
            "not EINVAL");
    t_check(gdr_driver_get_version(NULL, NULL, NULL) == EINVAL, "driver_version_null_outputs",
            "not EINVAL");
    t_check(gdr_get_attribute(NULL, GDR_ATTR_USE_PERSISTENT_MAPPING, NULL) == EINVAL,
            "attribute_null_output", "not EINVAL");
    t_check(vramio_get_backend(NULL, NULL) == EINVAL, "get_backend_null_output", "not EINVAL");
    mh.h = 0x1234;
    gdr_pin_buffer_v2(NULL, 0x100000, 65536, 0, &mh);
    t_check(mh.h == 0, "failed_pin_zeroes_handle", "handle left at %#lx", mh.h);
    free(junk);
    return t_status();
}

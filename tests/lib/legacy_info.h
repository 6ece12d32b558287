/* SPDX-License-Identifier: MIT */
/*
 * legacy_info.h - the 40-byte info struct of gdrapi 2.0 clients and the exported symbol that
 * fills it. include/gdrapi.h maps the name gdr_get_info to gdr_get_info_v2 (48 bytes), but a
 * program built against the 2.0 header calls the exported gdr_get_info with this layout, and
 * it must get exactly 40 bytes back (docs/gdrdrv-abi.md). Tests declare it here, once.
 */
#ifndef VRAMIO_TEST_LEGACY_INFO_H
#define VRAMIO_TEST_LEGACY_INFO_H

#include <stdint.h>

#include "gdrapi.h"

struct t_info_v1 {
    uint64_t va;
    uint64_t mapped_size;
    uint32_t page_size;
    uint64_t tm_cycles;
    uint32_t cycles_per_ms;
    unsigned mapped : 1;
    unsigned wc_mapping : 1;
};

_Static_assert(sizeof(struct t_info_v1) == 40, "the 2.0 gdr_info is 40 bytes");

/* The exported symbol gdr_get_info itself, under a name the header does not redefine. */
int t_get_info_v1(gdr_t g, gdr_mh_t handle, struct t_info_v1 *info) __asm__("gdr_get_info");

#endif /* VRAMIO_TEST_LEGACY_INFO_H */

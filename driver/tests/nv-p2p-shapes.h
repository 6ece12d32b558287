/* SPDX-License-Identifier: MIT */
/*
 * nv-p2p-shapes.h - stand-ins for the nv-p2p.h of the NVIDIA drivers gdrdrv builds against, in
 * that header's types; only the declarations gdrdrv uses. driver/tests/test_driver_builds.sh
 * cuts one header per shape out of this file by the tag that ends a line (untagged lines are
 * in every shape) and builds gdrdrv against each as against an installed driver's header:
 *   pt2-flags       current drivers: page table 2.x with its flags word, persistent API, FORCE_BAR1
 *   pt1-persistent  persistent API and FORCE_BAR1, but a 1.x page table (no flags word)
 *   pt1-legacy      a 1.x page table and callback pins only
 * Tags: [pt2] in pt2-flags only, [pt1] in the pt1 shapes only, [persistent] in both
 * persistent shapes.
 */
#ifndef NV_P2P_SHAPE_H
#define NV_P2P_SHAPE_H

#include <linux/types.h>

#define NVIDIA_P2P_PAGE_TABLE_VERSION 0x00020000 /* [pt2] */
#define NVIDIA_P2P_PAGE_TABLE_VERSION 0x00010002 /* [pt1] */

enum nvidia_p2p_page_size_type {
    NVIDIA_P2P_PAGE_SIZE_4KB = 0,
    NVIDIA_P2P_PAGE_SIZE_64KB,
    NVIDIA_P2P_PAGE_SIZE_128KB,
    NVIDIA_P2P_PAGE_SIZE_COUNT
};

typedef struct nvidia_p2p_page {
    uint64_t physical_address;
    union {
        struct {
            uint32_t fermi[6];
        } fermi;
    } registers;
} nvidia_p2p_page_t;

typedef struct nvidia_p2p_page_table {
    uint32_t version;
    uint32_t page_size;
    struct nvidia_p2p_page **pages;
    uint32_t entries;
    uint8_t *gpu_uuid;
    uint32_t flags; /* [pt2] */
} nvidia_p2p_page_table_t;

#define NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE 0x1 /* [pt2] */

#define NVIDIA_P2P_FLAGS_DEFAULT            0 /* [persistent] */
#define NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING 1 /* [persistent] */

int nvidia_p2p_get_pages(uint64_t p2p_token, uint32_t va_space, uint64_t virtual_address,
                         uint64_t length, struct nvidia_p2p_page_table **page_table,
                         void (*free_callback)(void *data), void *data);
int nvidia_p2p_put_pages(uint64_t p2p_token, uint32_t va_space, uint64_t virtual_address,
                         struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table);

#define NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API /* [persistent] */
int nvidia_p2p_get_pages_persistent(uint64_t virtual_address, uint64_t length, /* [persistent] */
    struct nvidia_p2p_page_table **page_table, uint32_t flags); /* [persistent] */
int nvidia_p2p_put_pages_persistent(uint64_t virtual_address, /* [persistent] */
    struct nvidia_p2p_page_table *page_table, uint32_t flags); /* [persistent] */

#endif

/* SPDX-License-Identifier: MIT */
/*
 * layout.c - the gdrapi 2.6 ABI (docs/gdrdrv-abi.md): sizes, offsets, enum and macro values
 * of include/gdrapi.h, the layout the legacy 40-byte gdr_info expects, and the ioctl codes
 * and structs of driver/uapi/gdrdrv.h.
 * Most checks are compile-time; the bitfield word is checked at run time.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <linux/types.h>
#include <sys/ioctl.h>
#include "gdrapi.h"
#include "uapi/gdrdrv.h"
#include "legacy_info.h"

#define SA(cond) _Static_assert(cond, #cond)

/* Section 2: constants. */
SA(GDR_API_MAJOR_VERSION == 2);
SA(GDR_API_MINOR_VERSION == 6);
SA(GDR_API_VERSION == ((2 << 16) | 6));
SA(MAJOR_VERSION_SHIFT == 16);
SA(MINOR_VERSION_MASK == 0xffff);
SA(MINIMUM_GDRDRV_MAJOR_VERSION == 2);
SA(MINIMUM_GDRDRV_MINOR_VERSION == 0);
SA(GPU_PAGE_SHIFT == 16);
SA(GPU_PAGE_SIZE == 65536UL);
SA(GPU_PAGE_OFFSET == 65535UL);
SA(GPU_PAGE_MASK == ~65535UL);
SA(sizeof(GPU_PAGE_SIZE) == sizeof(unsigned long));

/* Section 3: types. */
SA(sizeof(gdr_mh_t) == 8 && offsetof(gdr_mh_t, h) == 0);
SA(sizeof(((gdr_mh_t *)0)->h) == sizeof(unsigned long));
SA(GDR_PIN_FLAG_DEFAULT == 0 && GDR_PIN_FLAG_FORCE_PCIE == 1);
SA(GDR_MAPPING_TYPE_NONE == 0 && GDR_MAPPING_TYPE_WC == 1 && GDR_MAPPING_TYPE_CACHING == 2 &&
   GDR_MAPPING_TYPE_DEVICE == 3);
SA(GDR_MAP_FLAG_DEFAULT == 0 && GDR_MAP_FLAG_REQ_WC_MAPPING == 1 &&
   GDR_MAP_FLAG_REQ_CACHE_MAPPING == 2 && GDR_MAP_FLAG_REQ_DEVICE_MAPPING == 3);
SA(GDR_ATTR_USE_PERSISTENT_MAPPING == 1 && GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE == 2 &&
   GDR_ATTR_USING_DMA_BUF_MMAP == 3);
SA(sizeof(gdr_mapping_type_t) == sizeof(int));
SA(sizeof(gdr_info_t) == 48 && sizeof(gdr_info_v2_t) == 48);
SA(offsetof(gdr_info_v2_t, va) == 0);
SA(offsetof(gdr_info_v2_t, mapped_size) == 8);
SA(offsetof(gdr_info_v2_t, page_size) == 16);
SA(offsetof(gdr_info_v2_t, tm_cycles) == 24);
SA(offsetof(gdr_info_v2_t, cycles_per_ms) == 32);
SA(offsetof(gdr_info_v2_t, mapping_type) == 40);
SA(sizeof(((gdr_info_v2_t *)0)->va) == 8 && sizeof(((gdr_info_v2_t *)0)->mapped_size) == 8 &&
   sizeof(((gdr_info_v2_t *)0)->page_size) == 4 && sizeof(((gdr_info_v2_t *)0)->tm_cycles) == 8 &&
   sizeof(((gdr_info_v2_t *)0)->cycles_per_ms) == 4);

/* The legacy struct that the exported gdr_get_info fills (tests/lib/legacy_info.h). */
SA(offsetof(struct t_info_v1, cycles_per_ms) == offsetof(gdr_info_v2_t, cycles_per_ms));

/* Section 5: ioctl codes and structs. */
SA(GDRDRV_IOCTL_MAGIC == 0xDA);
SA(GDRDRV_IOC_PIN_BUFFER == 0xC028DA01u);
SA(GDRDRV_IOC_UNPIN_BUFFER == 0xC008DA02u);
SA(GDRDRV_IOC_GET_CB_FLAG == 0xC008DA03u);
SA(GDRDRV_IOC_GET_INFO == 0xC008DA04u);
SA(GDRDRV_IOC_GET_INFO_V2 == 0xC008DA05u);
SA(GDRDRV_IOC_GET_ATTR == 0xC008DA06u);
SA(GDRDRV_IOC_PIN_BUFFER_V2 == 0xC020DA07u);
SA(GDRDRV_IOC_REQ_MAPPING_TYPE == 0xC008DA08u);
SA(GDRDRV_IOC_GET_VERSION == 0xC008DAFFu);
SA(sizeof(struct gdrdrv_pin_buffer) == 40 && offsetof(struct gdrdrv_pin_buffer, size) == 8 &&
   offsetof(struct gdrdrv_pin_buffer, p2p_token) == 16 &&
   offsetof(struct gdrdrv_pin_buffer, va_space) == 24 &&
   offsetof(struct gdrdrv_pin_buffer, handle) == 32);
SA(sizeof(struct gdrdrv_unpin_buffer) == 8);
SA(sizeof(struct gdrdrv_get_cb_flag) == 16 && offsetof(struct gdrdrv_get_cb_flag, flag) == 8);
SA(sizeof(struct gdrdrv_get_info) == 48 && offsetof(struct gdrdrv_get_info, va) == 8 &&
   offsetof(struct gdrdrv_get_info, mapped_size) == 16 &&
   offsetof(struct gdrdrv_get_info, page_size) == 24 &&
   offsetof(struct gdrdrv_get_info, tsc_khz) == 28 &&
   offsetof(struct gdrdrv_get_info, tm_cycles) == 32 &&
   offsetof(struct gdrdrv_get_info, mapped) == 40 &&
   offsetof(struct gdrdrv_get_info, wc_mapping) == 44);
SA(sizeof(struct gdrdrv_get_info_v2) == 48 &&
   offsetof(struct gdrdrv_get_info_v2, tm_cycles) == 32 &&
   offsetof(struct gdrdrv_get_info_v2, mapping_type) == 40);
SA(sizeof(struct gdrdrv_get_attr) == 8 && offsetof(struct gdrdrv_get_attr, val) == 4);
SA(sizeof(struct gdrdrv_pin_buffer_v2) == 32 && offsetof(struct gdrdrv_pin_buffer_v2, flags) == 16 &&
   offsetof(struct gdrdrv_pin_buffer_v2, handle) == 24);
SA(offsetof(struct gdrdrv_req_mapping_type, mapping_type) == 8);
SA(sizeof(struct gdrdrv_get_version) == 8 &&
   offsetof(struct gdrdrv_get_version, minimum_gdr_api_version) == 4);

/* The word at offset 36 of a struct holding the two bitfields (mapped: bit 0, wc: bit 1). */
static uint32_t word36(const void *p)
{
    uint32_t w;

    memcpy(&w, (const char *)p + 36, sizeof(w));
    return w;
}

int main(void)
{
    gdr_info_v2_t v2;
    struct t_info_v1 v1;
    int ok = 1;

    memset(&v2, 0, sizeof(v2));
    v2.mapped = 1;
    ok &= word36(&v2) == 1;
    v2.mapped = 0;
    v2.wc_mapping = 1;
    ok &= word36(&v2) == 2;
    memset(&v1, 0, sizeof(v1));
    v1.mapped = 1;
    v1.wc_mapping = 1;
    ok &= word36(&v1) == 3;
    v2.mapping_type = GDR_MAPPING_TYPE_DEVICE;
    ok &= word36(&v2) == 2 && ((const unsigned char *)&v2)[40] == 3;
    printf("%s info_bitfield_word_at_36\n", ok ? "ok" : "not ok");
    return ok ? 0 : 1;
}

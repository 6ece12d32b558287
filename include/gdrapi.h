/* SPDX-License-Identifier: MIT */
/*
 * gdrapi.h - the GDRCopy 2.6 compatible API of libgdrapi.so.2 (vramio).
 *
 * A CPU mapping of GPU memory: pin a range of device virtual addresses, map it
 * into the process, then copy through the mapping with gdr_copy_*_mapping().
 * Every function returns 0 on success or a positive errno value unless noted.
 * Every function may be called concurrently from several threads on one gdr_t.
 */
#ifndef GDRAPI_H
#define GDRAPI_H

#include <stdint.h>
#include <stddef.h>
#include "gdrconfig.h"

#define MAJOR_VERSION_SHIFT 16
#define MINOR_VERSION_MASK  (((uint32_t)1 << MAJOR_VERSION_SHIFT) - 1)

#define GDR_API_MAJOR_VERSION 2
#define GDR_API_MINOR_VERSION 6
#define GDR_API_VERSION ((GDR_API_MAJOR_VERSION << MAJOR_VERSION_SHIFT) | GDR_API_MINOR_VERSION)

/* Oldest kernel module version this library talks to. */
#define MINIMUM_GDRDRV_MAJOR_VERSION 2
#define MINIMUM_GDRDRV_MINOR_VERSION 0
#define MINIMUM_GDRDRV_VERSION \
    ((MINIMUM_GDRDRV_MAJOR_VERSION << MAJOR_VERSION_SHIFT) | MINIMUM_GDRDRV_MINOR_VERSION)

/* Pins are made in units of GPU pages of 64 KiB. */
#define GPU_PAGE_SHIFT  16
#define GPU_PAGE_SIZE   (1UL << GPU_PAGE_SHIFT)
#define GPU_PAGE_OFFSET (GPU_PAGE_SIZE - 1)
#define GPU_PAGE_MASK   (~GPU_PAGE_OFFSET)

#ifdef __cplusplus
extern "C" {
#endif

/* An open library instance. */
struct gdr;
typedef struct gdr *gdr_t;

/* A pin handle: an opaque token, passed by value. A zeroed value means "no handle". */
typedef struct gdr_mh_s {
    unsigned long h;
} gdr_mh_t;

typedef enum gdr_pin_flags {
    GDR_PIN_FLAG_DEFAULT    = 0,
    GDR_PIN_FLAG_FORCE_PCIE = 1   /* map through PCIe BAR1 even where a coherent path exists */
} gdr_pin_flags_t;

typedef enum gdr_mapping_type {
    GDR_MAPPING_TYPE_NONE    = 0,
    GDR_MAPPING_TYPE_WC      = 1, /* write-combined: fast stores, slow uncached loads */
    GDR_MAPPING_TYPE_CACHING = 2, /* cacheable (coherent platforms) */
    GDR_MAPPING_TYPE_DEVICE  = 3, /* device memory: aligned accesses only */
    GDR_MAPPING_TYPE_MAX
} gdr_mapping_type_t;

typedef enum gdr_map_flags {
    GDR_MAP_FLAG_DEFAULT            = 0,
    GDR_MAP_FLAG_REQ_WC_MAPPING     = 1,
    GDR_MAP_FLAG_REQ_CACHE_MAPPING  = 2,
    GDR_MAP_FLAG_REQ_DEVICE_MAPPING = 3
} gdr_map_flags_t;

typedef enum gdr_attr {
    GDR_ATTR_USE_PERSISTENT_MAPPING      = 1, /* non-zero: pins stay valid until unpinned */
    GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE = 2, /* non-zero: GDR_PIN_FLAG_FORCE_PCIE may be passed */
    GDR_ATTR_USING_DMA_BUF_MMAP          = 3, /* non-zero: pins are served by dma-buf mmap */
    GDR_ATTR_MAX
} gdr_attr_t;

/* What gdr_get_info_v2() reports about a pin (48 bytes on LP64). */
typedef struct gdr_info_v2 {
    uint64_t va;            /* start of the pinned range, aligned down to its page */
    uint64_t mapped_size;   /* size of the pinned range, rounded up to whole pages */
    uint32_t page_size;     /* GPU page size of the pin */
    uint64_t tm_cycles;     /* how long pinning took, in CPU cycles (as gdrdrv reports it) */
    uint32_t cycles_per_ms; /* rate of tm_cycles: tm_cycles / cycles_per_ms is milliseconds */
    unsigned mapped : 1;    /* a CPU mapping exists */
    unsigned wc_mapping : 1;/* that mapping is write-combined */
    gdr_mapping_type_t mapping_type;
} gdr_info_v2_t;
typedef gdr_info_v2_t gdr_info_t;

/* Open the library: probes the backends. NULL when no backend is usable (the log says why). */
gdr_t gdr_open(void);

/* Close: unmaps and unpins everything still held through g. */
int gdr_close(gdr_t g);

/* Pin [addr, addr+size) of GPU memory, rounded out to GPU pages. p2p_token and va_space are
 * the legacy tokens of the kernel module's non-persistent mode; pass 0, 0. */
int gdr_pin_buffer(gdr_t g, unsigned long addr, size_t size, uint64_t p2p_token,
                   uint32_t va_space, gdr_mh_t *handle);

/* Pin with gdr_pin_flags_t flags. Unknown flags: EINVAL. */
int gdr_pin_buffer_v2(gdr_t g, unsigned long addr, size_t size, uint32_t flags, gdr_mh_t *handle);

/* Release a pin; a live mapping of it is torn down first. */
int gdr_unpin_buffer(gdr_t g, gdr_mh_t handle);

/* *flag = 1 when the GPU memory was freed or invalidated under the pin. */
int gdr_get_callback_flag(gdr_t g, gdr_mh_t handle, int *flag);

/* Describe a pin and its mapping. */
int gdr_get_info_v2(gdr_t g, gdr_mh_t handle, gdr_info_v2_t *info);
/* The exported symbol gdr_get_info is the legacy (2.0) one that fills a 40-byte struct without
 * mapping_type; code compiled against this header calls gdr_get_info_v2. */
#define gdr_get_info gdr_get_info_v2

/* Map the whole pinned range for the CPU; *va corresponds to info.va. */
int gdr_map(gdr_t g, gdr_mh_t handle, void **va, size_t size);

/* Map with a gdr_map_flags_t request. Already mapped: EAGAIN; a type that cannot be granted:
 * EINVAL. */
int gdr_map_v2(gdr_t g, gdr_mh_t handle, void **va, size_t size, int flags);

/* Remove the mapping made by gdr_map*(). Not mapped: EINVAL. */
int gdr_unmap(gdr_t g, gdr_mh_t handle, void *va, size_t size);

/* Copy size bytes from host memory into the mapping (map_d_ptr inside the mapping of handle). */
int gdr_copy_to_mapping(gdr_mh_t handle, void *map_d_ptr, const void *h_ptr, size_t size);

/* Copy size bytes from the mapping into host memory. */
int gdr_copy_from_mapping(gdr_mh_t handle, void *h_ptr, const void *map_d_ptr, size_t size);

/* The API version of this library: 2.6. */
void gdr_runtime_get_version(int *major, int *minor);

/* The kernel module's version, or the compatible version the active backend stands for. */
int gdr_driver_get_version(gdr_t g, int *major, int *minor);

/* Query a gdr_attr_t. Unknown attribute: EINVAL. */
int gdr_get_attribute(gdr_t g, gdr_attr_t attr, int *v);

/* A printable name of a mapping type. */
int gdr_get_mapping_type_string(gdr_mapping_type_t type, const char **type_str);

#ifdef __cplusplus
}
#endif

#endif /* GDRAPI_H */

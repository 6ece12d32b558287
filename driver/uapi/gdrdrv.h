/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * gdrdrv.h - the ioctl interface of /dev/gdrdrv, shared by the kernel module and by the
 * library's gdrdrv backend. Binary compatible with gdrdrv 2.6: the same codes, the same
 * struct layouts (fixed-width fields, explicit padding, 64-bit handles).
 *
 * Several codes were historically encoded with the size of a pointer (8) instead of the size
 * of their struct; they are kept as they are, so those codes are spelled out with _IOC().
 */
#ifndef GDRDRV_UAPI_H
#define GDRDRV_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define GDRDRV_IOCTL_MAGIC 0xDA

#define GDRDRV_MAJOR_VERSION 2
#define GDRDRV_MINOR_VERSION 6
#define GDRDRV_VERSION ((GDRDRV_MAJOR_VERSION << 16) | GDRDRV_MINOR_VERSION)
/* Oldest library version the module serves (major << 16 | minor). */
#define GDRDRV_MINIMUM_GDR_API_VERSION ((2 << 16) | 0)

/*
 * The module version that brought each code newer than 2.0 (PIN_BUFFER, UNPIN_BUFFER,
 * GET_CB_FLAG, GET_INFO and GET_VERSION are in every 2.x module). A library must not issue a
 * code to an older module, which answers it with ENOTTY.
 */
#define GDRDRV_VERSION_WITH_GET_INFO_V2      ((2 << 16) | 4)
#define GDRDRV_VERSION_WITH_GET_ATTR         ((2 << 16) | 5)
#define GDRDRV_VERSION_WITH_PIN_BUFFER_V2    ((2 << 16) | 5)
#define GDRDRV_VERSION_WITH_REQ_MAPPING_TYPE ((2 << 16) | 5)

/* Mapping types, as in gdr_mapping_type_t. */
#define GDRDRV_MAPPING_TYPE_NONE    0
#define GDRDRV_MAPPING_TYPE_WC      1
#define GDRDRV_MAPPING_TYPE_CACHING 2
#define GDRDRV_MAPPING_TYPE_DEVICE  3

/* Attributes for GET_ATTR. */
#define GDRDRV_ATTR_USE_PERSISTENT_MAPPING      1
#define GDRDRV_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE 2

/* Pin flags for PIN_BUFFER_V2. */
#define GDRDRV_PIN_FLAG_FORCE_PCIE 0x1U     /* bit 0 */

struct gdrdrv_pin_buffer {		/* 40 bytes */
	__u64 addr;			/* in */
	__u64 size;			/* in */
	__u64 p2p_token;		/* in */
	__u32 va_space;			/* in */
	__u32 pad;
	__u64 handle;			/* out */
};

struct gdrdrv_unpin_buffer {		/* 8 bytes */
	__u64 handle;			/* in */
};

struct gdrdrv_get_cb_flag {		/* 16 bytes */
	__u64 handle;			/* in */
	__u32 flag;			/* out */
	__u32 pad;
};

struct gdrdrv_get_info {		/* 48 bytes */
	__u64 handle;			/* in */
	__u64 va;			/* out */
	__u64 mapped_size;
	__u32 page_size;
	__u32 tsc_khz;
	__u64 tm_cycles;
	__u32 mapped;
	__u32 wc_mapping;
};

struct gdrdrv_get_info_v2 {		/* 48 bytes */
	__u64 handle;			/* in */
	__u64 va;			/* out */
	__u64 mapped_size;
	__u32 page_size;
	__u32 tsc_khz;
	__u64 tm_cycles;
	__u32 mapping_type;
	__u32 pad;
};

struct gdrdrv_get_attr {		/* 8 bytes */
	__u32 attr;			/* in */
	__u32 val;			/* out */
};

struct gdrdrv_pin_buffer_v2 {		/* 32 bytes */
	__u64 addr;			/* in */
	__u64 size;			/* in */
	__u32 flags;			/* in: GDRDRV_PIN_FLAG_* */
	__u32 pad;
	__u64 handle;			/* out */
};

struct gdrdrv_req_mapping_type {	/* 16 bytes */
	__u64 handle;			/* in */
	__u32 mapping_type;		/* in: GDRDRV_MAPPING_TYPE_* */
	__u32 pad;
};

struct gdrdrv_get_version {		/* 8 bytes */
	__u32 gdrdrv_version;		/* out */
	__u32 minimum_gdr_api_version;	/* out */
};

#define GDRDRV_IOC_RW(nr, size) _IOC(_IOC_READ | _IOC_WRITE, GDRDRV_IOCTL_MAGIC, (nr), (size))

/*
 * As numbers: PIN_BUFFER 0xC028DA01, UNPIN_BUFFER .. GET_ATTR 0xC008DA02 .. 0xC008DA06,
 * PIN_BUFFER_V2 0xC020DA07, REQ_MAPPING_TYPE 0xC008DA08, GET_VERSION 0xC008DAFF.
 */
#define GDRDRV_IOC_PIN_BUFFER		GDRDRV_IOC_RW(1, sizeof(struct gdrdrv_pin_buffer))
#define GDRDRV_IOC_UNPIN_BUFFER		GDRDRV_IOC_RW(2, 8)
#define GDRDRV_IOC_GET_CB_FLAG		GDRDRV_IOC_RW(3, 8)
#define GDRDRV_IOC_GET_INFO		GDRDRV_IOC_RW(4, 8)
#define GDRDRV_IOC_GET_INFO_V2		GDRDRV_IOC_RW(5, 8)
#define GDRDRV_IOC_GET_ATTR		GDRDRV_IOC_RW(6, 8)
#define GDRDRV_IOC_PIN_BUFFER_V2	GDRDRV_IOC_RW(7, sizeof(struct gdrdrv_pin_buffer_v2))
#define GDRDRV_IOC_REQ_MAPPING_TYPE	GDRDRV_IOC_RW(8, 8)
#define GDRDRV_IOC_GET_VERSION		GDRDRV_IOC_RW(255, 8)

/* The mmap offset of a pin's mapping is its handle in pages: handle << PAGE_SHIFT. */

#endif /* GDRDRV_UAPI_H */

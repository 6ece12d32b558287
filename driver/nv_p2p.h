/* SPDX-License-Identifier: MIT */
/*
 * nv_p2p.h - the NVIDIA GPUDirect RDMA kernel interface that gdrdrv calls, for builds with no
 * NVIDIA driver source. Layout-identical to the driver's nv-p2p.h (see docs/nv-p2p.md);
 * when the driver's own header is found the build uses it instead (NV_P2P_HEADER). The
 * emulated provider in tests/kernel/ implements these declarations.
 */
#ifndef GDRDRV_NV_P2P_H
#define GDRDRV_NV_P2P_H

#include <linux/types.h>

#define NVIDIA_P2P_PAGE_TABLE_VERSION 0x00020000

/* A version is major << 16 | minor; compatible = same major, minor at least the required. */
#define NVIDIA_P2P_MAJOR(v) ((v) >> 16)
#define NVIDIA_P2P_MINOR(v) ((v) & 0xffff)

enum nvidia_p2p_page_size_type {
	NVIDIA_P2P_PAGE_SIZE_4KB = 0,
	NVIDIA_P2P_PAGE_SIZE_64KB = 1,
	NVIDIA_P2P_PAGE_SIZE_128KB = 2,
	NVIDIA_P2P_PAGE_SIZE_COUNT
};

struct nvidia_p2p_page {
	u64 physical_address;
	union {				/* legacy mailbox registers, unused */
		struct {
			u32 fermi[6];
		} fermi;
	} registers;
};

#define NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE 0x1

struct nvidia_p2p_page_table {
	u32 version;
	u32 page_size;			/* enum nvidia_p2p_page_size_type */
	struct nvidia_p2p_page **pages;
	u32 entries;
	u8 *gpu_uuid;			/* 16 bytes */
	u32 flags;
};

#define NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING 0x1

int nvidia_p2p_get_pages(u64 p2p_token, u32 va_space, u64 virtual_address, u64 length,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data);
int nvidia_p2p_put_pages(u64 p2p_token, u32 va_space, u64 virtual_address,
			 struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_get_pages_persistent(u64 virtual_address, u64 length,
				    struct nvidia_p2p_page_table **page_table, u32 flags);
int nvidia_p2p_put_pages_persistent(u64 virtual_address,
				    struct nvidia_p2p_page_table *page_table, u32 flags);

#endif /* GDRDRV_NV_P2P_H */

/* SPDX-License-Identifier: MIT */
/*
 * dmabuf_policy.h - the decisions of the dma-buf backend that need no GPU: which CUDA driver
 * can mmap dma-buf exports, what an mmap errno means, and a pin's whole plan (which device,
 * range, export flags and mapping type, or why not), taken once from facts gathered first.
 * Kept apart from dmabuf.c so that they are unit-tested everywhere.
 */
#ifndef VRAMIO_DMABUF_POLICY_H
#define VRAMIO_DMABUF_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include "backend.h"
#include "gdrapi.h"

/* cuDriverGetVersion of the first driver that maps dma-buf exports of discrete GPUs for the
 * CPU (13.3, the 610 series); older ones allow it on integrated GPUs only. */
#define VR_DMABUF_MIN_DRIVER 13030

/* 0 when driver_version (cuDriverGetVersion's value) can mmap exports; else ENOTSUP and why. */
int vr_dmabuf_driver_check(int driver_version, char *why, size_t len);

/* The errno a failed mmap of an export is reported as, with why. 524 becomes ENOTSUP. */
int vr_dmabuf_mmap_error(int err, int driver_version, char *why, size_t len);

/* What a pin's decisions rest on, gathered once at its start (dmabuf.c) with nothing decided:
 * the request, the host, and what the driver says of the pointer and of its device. */
struct vr_dmabuf_pin_facts {
    uint64_t addr, size;        /* the range as the caller gave it */
    uint32_t pin_flags;         /* gdr_pin_flags_t */
    uint64_t host_page;         /* the host's page size, a power of two */
    int ptr_result;             /* CUresult of asking the pointer's device (SUCCESS: GPU memory) */
    int device;                 /* the ordinal of that device */
    int dmabuf_supported;       /* its CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED */
    int coherent;               /* its PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES (Grace) */
};

/* What a pin does: the rest is execution (a context of the device, the export, the fd). */
struct vr_dmabuf_plan {
    int device;                       /* export in a context of this device */
    uint64_t va, len;                 /* [addr, addr + size) in whole host pages, as GDRCopy:
                                       * what is exported and mapped */
    uint32_t page_size;               /* the host's page size, the pin's page_size */
    unsigned long long export_flags;  /* cuMemGetHandleForAddressRange flags */
    int pcie_flag;                    /* the export asks for the PCIE mapping type: its
                                       * CUDA_ERROR_NOT_SUPPORTED is the flag's refusal */
    gdr_mapping_type_t map_type;      /* what a mapping of the pin is */
};

/*
 * The plan of a pin, from its facts alone (no driver call): 0 and *plan, or the pin's refusal
 * with why: ENOTSUP for memory that is not the GPU's or a device without dma-buf (the next
 * backend is offered it), EINVAL for a range that wraps in whole host pages.
 *  - export flags: FORCE_PCIE asks for the PCIE mapping type, and the driver decides, as for
 *    upstream's dma-buf path: it takes the flag only on a coherent platform (C2C: Grace) and
 *    refuses it elsewhere, and that refusal is the pin's (vr_dmabuf_export_errno);
 *  - mapping type: CACHING on a coherent platform (the device reads pageable memory through the
 *    host's page tables: Grace), unless FORCE_PCIE asks for the BAR; WC otherwise.
 */
int vr_dmabuf_plan(const struct vr_dmabuf_pin_facts *f, struct vr_dmabuf_plan *plan,
                   char *why, size_t len);

/* The errno of a refused export (a CUresult): the one decision a pin takes after its plan, as
 * it rests on the driver's answer to the export. fd_errno is what opening a descriptor gives
 * right after it (0 when one could be had); pcie_flag the plan's. EMFILE / ENFILE where the
 * driver's CUDA_ERROR_OPERATING_SYSTEM comes from running out of descriptors, ENOMEM for
 * memory, EINVAL for CUDA_ERROR_NOT_SUPPORTED of an export with the PCIE flag (FORCE_PCIE
 * refused on a GPU without a coherent link, final: upstream's pin fails there, and clients
 * pin again without the flag), and ENOTSUP (memory this exporter does not serve: the next
 * backend is offered it) otherwise. */
int vr_dmabuf_export_errno(int cuda_result, int fd_errno, int pcie_flag);

/* Whether the forced probe's trial (its result rc) ended with the driver's verdict, kept for
 * the process: it mapped (0), or the export or its mmap was refused (ENOTSUP, EINVAL, ...).
 * 0 for a failure that may pass (out of memory or descriptors, EAGAIN, EBUSY, EINTR): a later
 * gdr_open tries again. */
int vr_dmabuf_trial_settled(int rc);

#endif /* VRAMIO_DMABUF_POLICY_H */

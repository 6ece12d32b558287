/* SPDX-License-Identifier: MIT */
/*
 * dmabuf_policy.h - the decisions of the dma-buf backend that need no GPU: which CUDA driver
 * can mmap dma-buf exports, what an mmap errno means, which export flags a pin asks for.
 * Kept apart from dmabuf.c so that they are unit-tested everywhere.
 */
#ifndef VRAMIO_DMABUF_POLICY_H
#define VRAMIO_DMABUF_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include "gdrapi.h"

/* cuDriverGetVersion of the first driver that maps dma-buf exports of discrete GPUs for the
 * CPU (13.3, the 610 series); older ones allow it on integrated GPUs only. */
#define VR_DMABUF_MIN_DRIVER 13030

/* The kernel's ENOTSUPP (not a user-space errno): what mmap of an export returns where the
 * driver does not allow CPU mappings. */
#define VR_KERNEL_ENOTSUPP 524

/* 0 when driver_version (cuDriverGetVersion's value) can mmap exports; else ENOTSUP and why. */
int vr_dmabuf_driver_check(int driver_version, char *why, size_t len);

/* The errno a failed mmap of an export is reported as, with why. 524 becomes ENOTSUP. */
int vr_dmabuf_mmap_error(int err, int driver_version, char *why, size_t len);

/* The cuMemGetHandleForAddressRange flags for gdr_pin_flags_t pin_flags. */
unsigned long long vr_dmabuf_export_flags(uint32_t pin_flags);

/* Whether an export refused with CUDA_ERROR_NOT_SUPPORTED under export_flags should be
 * retried without them: on x86 every BAR mapping goes through PCIe, so FORCE_PCIE is already
 * what the plain export gives (the driver accepts the PCIE flag only on coherent platforms). */
int vr_dmabuf_retry_without_pcie(unsigned long long export_flags);

/* The mapping type of a pin: CACHING on a coherent platform (the device reads pageable memory
 * through the host's page tables: Grace), unless FORCE_PCIE asks for the BAR; WC otherwise. */
gdr_mapping_type_t vr_dmabuf_map_type(int coherent, uint32_t pin_flags);

/* [addr, addr + size) in whole host pages of page bytes (a power of two): what is exported
 * and mapped, as GDRCopy does. EINVAL when it would wrap. */
int vr_dmabuf_host_range(uint64_t addr, uint64_t size, uint64_t page, uint64_t *va,
                         uint64_t *len);

/* The errno of a refused export (a CUresult), given fd_errno, what opening a descriptor gives
 * right after it (0 when one could be had): EMFILE / ENFILE where the driver's
 * CUDA_ERROR_OPERATING_SYSTEM comes from running out of descriptors, ENOMEM for memory, and
 * ENOTSUP (memory this exporter does not serve: the next backend is offered it) otherwise. */
int vr_dmabuf_export_errno(int cuda_result, int fd_errno);

/* Whether the forced probe's trial (its result rc) ended with the driver's verdict, kept for
 * the process: it mapped (0), or the export or its mmap was refused (ENOTSUP, EINVAL, ...).
 * 0 for a failure that may pass (out of memory or descriptors, EAGAIN, EBUSY, EINTR): a later
 * gdr_open tries again. */
int vr_dmabuf_trial_settled(int rc);

#endif /* VRAMIO_DMABUF_POLICY_H */

/* SPDX-License-Identifier: MIT */
/*
 * vulkan_export.h - the export of a CUDA allocation as a POSIX fd and its import into Vulkan,
 * with the reasons a pin gives when either fails (vulkan.c for pins inside one allocation,
 * vulkan_span.c for pins across several, vulkan_pool.c for its check of pools).
 */
#ifndef VRAMIO_VK_EXPORT_H
#define VRAMIO_VK_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include "cuda_loader.h"
#include "vulkan_device.h"

/* cuMemExportToShareableHandle of h as a POSIX fd in *fd, made close-on-exec under a mutex
 * that fork() takes first. */
CUresult vr_vk_export_fd(const struct vr_cuda *cu, CUmemGenericAllocationHandle h, int *fd);

/* The properties of allocation h (mapped at base, for the reason) in *prop: 0 when it is
 * device memory that can be exported as a POSIX fd, else an errno (ENOTSUP: memory the
 * backend does not serve) and why not. */
int vr_vk_exportable(const struct vr_cuda *cu, CUmemGenericAllocationHandle h, uint64_t base,
                     CUmemAllocationProp *prop, char *why, size_t len);

/* Export allocation h (size bytes, mapped at base) and import it whole into gpu's Vulkan
 * device, unmapped: 0 with the memory in *mem, else an errno and why (descriptors exhausted,
 * the import refused, BAR1 full). */
int vr_vk_export_import(const struct vr_cuda *cu, const struct vr_vk_gpu *gpu,
                        CUmemGenericAllocationHandle h, uint64_t base, uint64_t size,
                        VkDeviceMemory *mem, char *why, size_t len);

#endif /* VRAMIO_VK_EXPORT_H */

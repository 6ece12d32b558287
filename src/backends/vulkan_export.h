/* SPDX-License-Identifier: MIT */
/*
 * vulkan_export.h - the export of a CUDA allocation as a POSIX fd, which the vulkan backend
 * imports into Vulkan (vulkan.c for pins, vulkan_pool.c for its check of pools).
 */
#ifndef VRAMIO_VK_EXPORT_H
#define VRAMIO_VK_EXPORT_H

#include "cuda_loader.h"

/* cuMemExportToShareableHandle of h as a POSIX fd in *fd, made close-on-exec under a mutex
 * that fork() takes first. */
CUresult vr_vk_export_fd(const struct vr_cuda *cu, CUmemGenericAllocationHandle h, int *fd);

#endif /* VRAMIO_VK_EXPORT_H */

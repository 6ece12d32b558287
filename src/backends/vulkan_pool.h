/* SPDX-License-Identifier: MIT */
/*
 * vulkan_pool.h - the vulkan backend's check of where a stream-ordered pool's memory lies,
 * made before a pin of such memory is trusted (vulkan_pool.c, called by vulkan.c).
 */
#ifndef VRAMIO_VK_POOL_H
#define VRAMIO_VK_POOL_H

#include <stddef.h>
#include "cuda_loader.h"

/*
 * Whether, on CUDA device dev, a block of a stream-ordered pool lies in the pool's physical
 * allocation where the driver says: at its offset from CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR
 * in the allocation that cuMemRetainAllocationHandle gives, whose fd, imported into Vulkan
 * and mapped, then shows the block's bytes there. Asked once per device and process, of a
 * pool made for the purpose (a POSIX-fd handle type, two blocks of known bytes); the verdict
 * is kept. 0, or a positive errno with why.
 */
int vr_vk_pool_layout(const struct vr_cuda *cu, int dev, char *why, size_t len);

#endif /* VRAMIO_VK_POOL_H */

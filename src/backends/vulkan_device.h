/* SPDX-License-Identifier: MIT */
/*
 * vulkan_device.h - the process-wide Vulkan state of the vulkan backend: one instance, and one
 * VkDevice per CUDA device (the physical device whose UUID is the CUDA device's), with the
 * device-local host-visible memory type that imports go into.
 *
 * Everything is made lazily, at the first pin that needs it (instance and device creation
 * cost hundreds of milliseconds), once per process, and kept until the process ends, like
 * CUDA's own contexts. A failure is remembered with its reason and reported to every later
 * pin of that device.
 */
#ifndef VRAMIO_VK_DEVICE_H
#define VRAMIO_VK_DEVICE_H

#include <stddef.h>
#include "cuda_loader.h"
#include "vulkan_loader.h"

struct vr_vk_gpu {
    int cuda_dev;
    VkDevice dev;
    struct vr_vk_device fn;
    uint32_t memtype;       /* DEVICE_LOCAL | HOST_VISIBLE | HOST_COHERENT */
    VkDeviceSize heap_size; /* of that type's heap: what BAR1 can show */
};

/* The Vulkan device of CUDA device ordinal cuda_dev (CUDA already initialised). 0, or a
 * positive errno with the reason in why. */
int vr_vk_gpu_get(const struct vr_cuda *cu, int cuda_dev, const struct vr_vk_gpu **gpu,
                  char *why, size_t len);

/* Pick the memory type for imports: device-local, host-visible and host-coherent, preferring
 * uncached types (write-combined BAR) and the largest heap. -1 when there is none. */
int vr_vk_pick_memtype(const VkPhysicalDeviceMemoryProperties *mp);

#endif /* VRAMIO_VK_DEVICE_H */

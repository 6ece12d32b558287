/* SPDX-License-Identifier: MIT */
/*
 * vulkan_device.h - the process-wide Vulkan state of the vulkan backend: one instance, and one
 * VkDevice per CUDA device (the physical device whose UUID is the CUDA device's), with the
 * device-local host-visible memory type that imports go into.
 *
 * Everything is made lazily (instance and device creation cost hundreds of milliseconds),
 * once per process, and kept until the process ends, like CUDA's own contexts: the instance
 * and each GPU's check when gdr_open must know whether the backend can pin (vulkan.c's
 * confirm) or at the first pin, a GPU's VkDevice at its first pin. A failure is remembered
 * with its reason and reported to every later check or pin of that device.
 */
#ifndef VRAMIO_VK_DEVICE_H
#define VRAMIO_VK_DEVICE_H

#include <stddef.h>
#include <stdint.h>
#include "cuda_loader.h"
#include "vulkan_loader.h"

struct vr_vk_gpu {
    int cuda_dev;
    VkDevice dev;
    struct vr_vk_device fn;
    uint32_t memtype;       /* DEVICE_LOCAL | HOST_VISIBLE | HOST_COHERENT */
    VkDeviceSize heap_size; /* of that type's heap: what BAR1 can show */
    /* Placed maps (VK_KHR_map_memory2 and VK_EXT_map_memory_placed with memoryMapPlaced),
     * enabled at device creation where the device offers them: what lets a pin that spans
     * several CUDA allocations map their imports side by side (vulkan_span.c). 0 and NULL
     * where not offered; then nothing else about the device changes. */
    int placed;
    VkDeviceSize placed_align;             /* minPlacedMemoryMapAlignment */
    PFN_vkMapMemory2KHR vkMapMemory2KHR;
};

/* The Vulkan device of CUDA device ordinal cuda_dev (CUDA already initialised). 0, or a
 * positive errno with the reason in why. */
int vr_vk_gpu_get(const struct vr_cuda *cu, int cuda_dev, const struct vr_vk_gpu **gpu,
                  char *why, size_t len);

/* Whether the vulkan backend can pin memory of CUDA device ordinal cuda_dev (CUDA already
 * initialised): the Vulkan instance, the physical device with its UUID, the extension, a
 * device-local host-visible memory type and a large enough window (vr_vk_window_enough); its
 * VkDevice is not made. 0, or a positive errno with the reason in why. */
int vr_vk_gpu_check(const struct vr_cuda *cu, int cuda_dev, char *why, size_t len);

/* Whether a host-visible window (the heap of that memory type: BAR1) of window bytes serves a
 * GPU of total bytes (0: unknown, accepted): at least half of it. */
int vr_vk_window_enough(uint64_t window, uint64_t total);

/* Pick the memory type for imports: device-local, host-visible and host-coherent, preferring
 * uncached types (write-combined BAR) and the largest heap. -1 when there is none. */
int vr_vk_pick_memtype(const VkPhysicalDeviceMemoryProperties *mp);

#endif /* VRAMIO_VK_DEVICE_H */

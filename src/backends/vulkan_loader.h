/* SPDX-License-Identifier: MIT */
/*
 * vulkan_loader.h - the few Vulkan entry points the vulkan backend needs, loaded at run time
 * with dlopen("libvulkan.so.1"): the library never links Vulkan, so it loads on machines
 * without it. Global and instance functions come from vkGetInstanceProcAddr, device functions
 * from vkGetDeviceProcAddr (they skip the loader's dispatch).
 */
#ifndef VRAMIO_VULKAN_LOADER_H
#define VRAMIO_VULKAN_LOADER_H

#define VK_NO_PROTOTYPES
#include <stddef.h>
#include <vulkan/vulkan.h>
#include "vulkan_ext.h"

#define VR_VK_GLOBAL_FUNCS(X) \
    X(vkCreateInstance)       \
    X(vkEnumerateInstanceVersion)

#define VR_VK_INSTANCE_FUNCS(X)                 \
    X(vkDestroyInstance)                        \
    X(vkEnumeratePhysicalDevices)               \
    X(vkGetPhysicalDeviceProperties)            \
    X(vkGetPhysicalDeviceProperties2)           \
    X(vkGetPhysicalDeviceFeatures2)             \
    X(vkGetPhysicalDeviceMemoryProperties)      \
    X(vkGetPhysicalDeviceQueueFamilyProperties) \
    X(vkEnumerateDeviceExtensionProperties)     \
    X(vkCreateDevice)                           \
    X(vkGetDeviceProcAddr)

#define VR_VK_DEVICE_FUNCS(X) \
    X(vkDestroyDevice)        \
    X(vkAllocateMemory)       \
    X(vkFreeMemory)           \
    X(vkMapMemory)            \
    X(vkUnmapMemory)

struct vr_vk {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
#define VR_VK_MEMBER(fn) PFN_##fn fn;
    VR_VK_GLOBAL_FUNCS(VR_VK_MEMBER)
    VR_VK_INSTANCE_FUNCS(VR_VK_MEMBER)
#undef VR_VK_MEMBER
};

struct vr_vk_device {
#define VR_VK_MEMBER(fn) PFN_##fn fn;
    VR_VK_DEVICE_FUNCS(VR_VK_MEMBER)
#undef VR_VK_MEMBER
};

/* Load libvulkan.so.1 once per process and resolve the global functions (no instance is
 * made). NULL when it cannot be loaded; then why receives the reason. Cheap: fit for probe. */
const struct vr_vk *vr_vk_load(char *why, size_t len);

/* Resolve the instance functions of a new instance into vk (made by vr_vk_load's table
 * owner). 0, or ENOSYS with the missing name in why. */
int vr_vk_load_instance(struct vr_vk *vk, VkInstance inst, char *why, size_t len);

/* Resolve the device functions of dev. 0, or ENOSYS with the missing name in why. */
int vr_vk_load_device(const struct vr_vk *vk, VkDevice dev, struct vr_vk_device *fns,
                      char *why, size_t len);

/* "VK_ERROR_OUT_OF_DEVICE_MEMORY" and the like; "VkResult <n>" for unknown codes. */
const char *vr_vk_result_name(VkResult r);

/* A positive errno for a failed VkResult (0 for VK_SUCCESS). */
int vr_vk_errno(VkResult r);

#endif /* VRAMIO_VULKAN_LOADER_H */

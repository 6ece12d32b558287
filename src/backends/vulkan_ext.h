/* SPDX-License-Identifier: MIT */
/*
 * vulkan_ext.h - VK_KHR_map_memory2 and VK_EXT_map_memory_placed (what a pin spanning several
 * CUDA allocations needs: each import mapped at a CPU address we choose, side by side),
 * declared here where the Khronos headers are older than them (1.3.239 has neither). Their
 * values are the registry's (extensions 272 and 273); newer headers' declarations are used as
 * they are.
 * Included after <vulkan/vulkan.h> by vulkan_loader.h. Private to src/: the tests (the
 * stand-in driver that offers them, the GPU probe that asks for them) have their own copy,
 * tests/lib/vk_placed.h.
 */
#ifndef VRAMIO_VULKAN_EXT_H
#define VRAMIO_VULKAN_EXT_H

#include <vulkan/vulkan.h>

#ifndef VK_KHR_map_memory2
#define VK_KHR_map_memory2 1
#define VK_KHR_MAP_MEMORY_2_EXTENSION_NAME "VK_KHR_map_memory2"
#define VK_STRUCTURE_TYPE_MEMORY_MAP_INFO_KHR ((VkStructureType)1000271000)
#define VK_STRUCTURE_TYPE_MEMORY_UNMAP_INFO_KHR ((VkStructureType)1000271001)
typedef VkFlags VkMemoryUnmapFlagsKHR;
typedef struct VkMemoryMapInfoKHR {
    VkStructureType sType;
    const void *pNext;
    VkMemoryMapFlags flags;
    VkDeviceMemory memory;
    VkDeviceSize offset;
    VkDeviceSize size;
} VkMemoryMapInfoKHR;
typedef struct VkMemoryUnmapInfoKHR {
    VkStructureType sType;
    const void *pNext;
    VkMemoryUnmapFlagsKHR flags;
    VkDeviceMemory memory;
} VkMemoryUnmapInfoKHR;
typedef VkResult (VKAPI_PTR *PFN_vkMapMemory2KHR)(VkDevice device,
                                                  const VkMemoryMapInfoKHR *pMemoryMapInfo,
                                                  void **ppData);
typedef VkResult (VKAPI_PTR *PFN_vkUnmapMemory2KHR)(VkDevice device,
                                                    const VkMemoryUnmapInfoKHR *pMemoryUnmapInfo);
#endif
#ifndef VK_EXT_map_memory_placed
#define VK_EXT_map_memory_placed 1
#define VK_EXT_MAP_MEMORY_PLACED_EXTENSION_NAME "VK_EXT_map_memory_placed"
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAP_MEMORY_PLACED_FEATURES_EXT \
    ((VkStructureType)1000272000)
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAP_MEMORY_PLACED_PROPERTIES_EXT \
    ((VkStructureType)1000272001)
#define VK_STRUCTURE_TYPE_MEMORY_MAP_PLACED_INFO_EXT ((VkStructureType)1000272002)
#define VK_MEMORY_MAP_PLACED_BIT_EXT 0x00000001u
typedef struct VkPhysicalDeviceMapMemoryPlacedFeaturesEXT {
    VkStructureType sType;
    void *pNext;
    VkBool32 memoryMapPlaced;
    VkBool32 memoryMapRangePlaced;
    VkBool32 memoryUnmapReserve;
} VkPhysicalDeviceMapMemoryPlacedFeaturesEXT;
typedef struct VkPhysicalDeviceMapMemoryPlacedPropertiesEXT {
    VkStructureType sType;
    void *pNext;
    VkDeviceSize minPlacedMemoryMapAlignment;
} VkPhysicalDeviceMapMemoryPlacedPropertiesEXT;
typedef struct VkMemoryMapPlacedInfoEXT {
    VkStructureType sType;
    const void *pNext;
    void *pPlacedAddress;
} VkMemoryMapPlacedInfoEXT;
#endif

#endif /* VRAMIO_VULKAN_EXT_H */

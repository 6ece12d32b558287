/* SPDX-License-Identifier: MIT */
/*
 * vk_placed.h - VK_KHR_map_memory2 and VK_EXT_map_memory_placed (extensions 272 and 273) for
 * the tests: the stand-in Vulkan driver that offers them (tests/fake/fake_vulkan.c) and the
 * GPU probe that asks a real driver for them (tests/gpu/bridge/chunk_probe.cu, C++ under
 * nvcc). Debian 12's Khronos headers (1.3.239) have neither, so each is declared here under
 * its registry name and value, only where <vulkan/vulkan.h> does not declare it; newer
 * headers' declarations are used as they are. The library keeps its own copy
 * (src/backends/vulkan_ext.h), private to src/.
 */
#ifndef VRAMIO_TESTS_LIB_VK_PLACED_H
#define VRAMIO_TESTS_LIB_VK_PLACED_H

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

#endif /* VRAMIO_TESTS_LIB_VK_PLACED_H */

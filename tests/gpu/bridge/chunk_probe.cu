// SPDX-License-Identifier: MIT
/*
 * chunk_probe.cu - the driver facts that serving a large request as several physical chunks
 * mapped into one reservation waits for (docs/large-allocations.md), and what adding a
 * POSIX-fd handle type costs; run by tests/gpu/run_alloc_probe_on_gpu.sh without vramio-run.
 * Each fact is a line "# probe KEY: VALUE"; nothing is asserted but that the steps ran.
 *   reservation/*   two VMM allocations mapped side by side in one reservation: what
 *                   cuMemGetAddressRange, cuMemRetainAllocationHandle and MAPPING_BASE_ADDR /
 *                   _SIZE answer for an address in the second (the chunk's own, or the
 *                   reservation's)
 *   placed/*        whether the Vulkan device offers VK_EXT_map_memory_placed with
 *                   memoryMapPlaced, and whether two imported CUDA allocations map side by
 *                   side into one CPU range (vkMapMemory2KHR, VK_MEMORY_MAP_PLACED_BIT_EXT),
 *                   a CPU write across their seam seen by CUDA in both
 *   cost/*          cuMemCreate + cuMemMap + cuMemUnmap + cuMemRelease of 2, 64 and 512 MiB,
 *                   with and without the POSIX-fd type; the granularities; cudaMallocAsync +
 *                   cudaFreeAsync of 64 KiB from a pool with and without the type
 * The Vulkan structures of VK_KHR_map_memory2 and VK_EXT_map_memory_placed come from
 * tests/lib/vk_placed.h where the Khronos headers predate them (Debian 12's, 1.3.239).
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <vulkan/vulkan.h>
#include "bridge_gpu.h"
#include "vk_placed.h"

#define MIB (1ull << 20)

static CUdeviceptr vmm_map(CUdeviceptr at, size_t size, int fd_type, CUmemGenericAllocationHandle *h)
{
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.requestedHandleTypes = fd_type ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                                        : CU_MEM_HANDLE_TYPE_NONE;
    if (cuMemCreate(h, size, &prop, 0) != CUDA_SUCCESS)
        return 0;
    if (cuMemMap(at, size, 0, *h, 0) != CUDA_SUCCESS) {
        cuMemRelease(*h);
        return 0;
    }
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    cuMemSetAccess(at, size, &acc, 1);
    return at;
}

static void reservation(void)
{
    CUmemGenericAllocationHandle h1, h2, got = 0;
    CUdeviceptr r = 0, base = 0, mbase = 0;
    size_t size = 0, msize = 0;
    CUresult e;

    if (cuMemAddressReserve(&r, 4 * MIB, 2 * MIB, 0, 0) != CUDA_SUCCESS ||
        !vmm_map(r, 2 * MIB, 1, &h1) || !vmm_map(r + 2 * MIB, 2 * MIB, 1, &h2)) {
        printf("# probe reservation: cannot map two allocations in one reservation\n");
        return;
    }
    e = cuMemGetAddressRange(&base, &size, r + 3 * MIB);
    printf("# probe reservation/address_range_of_second: %d, [+%llu MiB, %zu MiB) (chunk: +2 MiB, 2 MiB)\n",
           (int)e, (unsigned long long)((base - r) / MIB), size / MIB);
    e = cuMemRetainAllocationHandle(&got, (void *)(r + 3 * MIB));
    printf("# probe reservation/retain_of_second: %d, %s\n", (int)e,
           e ? "-" : got == h2 ? "the second's handle" : got == h1 ? "the first's" : "another");
    if (e == CUDA_SUCCESS)
        cuMemRelease(got);
    cuPointerGetAttribute(&mbase, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, r + 3 * MIB);
    cuPointerGetAttribute(&msize, CU_POINTER_ATTRIBUTE_MAPPING_SIZE, r + 3 * MIB);
    printf("# probe reservation/mapping_of_second: [+%llu MiB, %zu MiB)\n",
           (unsigned long long)((mbase - r) / MIB), msize / MIB);
    cuMemUnmap(r, 2 * MIB);
    cuMemUnmap(r + 2 * MIB, 2 * MIB);
    cuMemRelease(h1);
    cuMemRelease(h2);
    cuMemAddressFree(r, 4 * MIB);
}

/* Two imported CUDA allocations mapped side by side with VK_EXT_map_memory_placed. */
static void placed(void)
{
    PFN_vkGetInstanceProcAddr gipa;
    VkInstance inst;
    VkPhysicalDevice pd[8];
    uint32_t n = 8, i, m = 512, memtype = UINT32_MAX, has = 0;
    VkExtensionProperties ext[512];
    VkPhysicalDeviceIDProperties idp = {};
    VkPhysicalDeviceProperties2 p2 = {};
    CUuuid uuid;

    if (bg_vk_instance(&gipa, &inst, "placed"))
        return;
#define VKF(i_, name) ((PFN_##name)gipa(i_, #name))
    VKF(inst, vkEnumeratePhysicalDevices)(inst, &n, pd);
    cuDeviceGetUuid(&uuid, 0);
    for (i = 0; i < n; i++) {
        idp.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES;
        p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
        p2.pNext = &idp;
        VKF(inst, vkGetPhysicalDeviceProperties2)(pd[i], &p2);
        if (!memcmp(idp.deviceUUID, uuid.bytes, 16))
            break;
    }
    if (i == n) {
        printf("# probe placed: no Vulkan device of CUDA device 0\n");
        VKF(inst, vkDestroyInstance)(inst, NULL);
        return;
    }
    VKF(inst, vkEnumerateDeviceExtensionProperties)(pd[i], NULL, &m, ext);
    for (uint32_t k = 0; k < m; k++)
        has += !strcmp(ext[k].extensionName, "VK_EXT_map_memory_placed") ||
               !strcmp(ext[k].extensionName, "VK_KHR_map_memory2");
    printf("# probe placed/extensions: %s\n", has == 2 ? "VK_KHR_map_memory2 and VK_EXT_map_memory_placed offered" : "not offered");
    if (has == 2) {
        VkPhysicalDeviceMapMemoryPlacedFeaturesEXT pf = {
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAP_MEMORY_PLACED_FEATURES_EXT, NULL, 0, 0, 0 };
        VkPhysicalDeviceFeatures2 f2 = {};
        VkPhysicalDeviceMemoryProperties mp;
        const char *exts[] = { "VK_KHR_external_memory_fd", "VK_KHR_map_memory2",
                               "VK_EXT_map_memory_placed" };
        float prio = 1.0f;
        VkDeviceQueueCreateInfo q = {};
        VkDeviceCreateInfo dci = {};
        VkDevice dev;

        f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
        f2.pNext = &pf;
        VKF(inst, vkGetPhysicalDeviceFeatures2)(pd[i], &f2);
        printf("# probe placed/memoryMapPlaced: %u\n", (unsigned)pf.memoryMapPlaced);
        VKF(inst, vkGetPhysicalDeviceMemoryProperties)(pd[i], &mp);
        for (uint32_t t = 0; t < mp.memoryTypeCount && memtype == UINT32_MAX; t++)
            if ((mp.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) &&
                (mp.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
                memtype = t;
        q.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
        q.queueCount = 1;
        q.pQueuePriorities = &prio;
        pf.pNext = NULL;
        dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
        dci.pNext = &pf;
        dci.queueCreateInfoCount = 1;
        dci.pQueueCreateInfos = &q;
        dci.enabledExtensionCount = 3;
        dci.ppEnabledExtensionNames = exts;
        if (pf.memoryMapPlaced && memtype != UINT32_MAX &&
            VKF(inst, vkCreateDevice)(pd[i], &dci, NULL, &dev) == VK_SUCCESS) {
            PFN_vkMapMemory2KHR map2 =
                (PFN_vkMapMemory2KHR)VKF(inst, vkGetDeviceProcAddr)(dev, "vkMapMemory2KHR");
            CUmemGenericAllocationHandle h[2];
            CUdeviceptr d[2] = { 0, 0 };
            VkDeviceMemory mem[2];
            int ok = 0, fd, k;
            char *cpu = (char *)mmap(NULL, 6 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            char *at = (char *)(((uintptr_t)cpu + 2 * MIB - 1) & ~(uintptr_t)(2 * MIB - 1));

            for (k = 0; k < 2 && map2; k++) {
                VkImportMemoryFdInfoKHR imp = {};
                VkMemoryAllocateInfo ai = {};
                VkMemoryMapPlacedInfoEXT pi = { VK_STRUCTURE_TYPE_MEMORY_MAP_PLACED_INFO_EXT, NULL,
                                                at + k * 2 * MIB };
                VkMemoryMapInfoKHR mi = { VK_STRUCTURE_TYPE_MEMORY_MAP_INFO_KHR, &pi,
                                          VK_MEMORY_MAP_PLACED_BIT_EXT, 0, 0, VK_WHOLE_SIZE };
                void *got = NULL;
                VkResult vr;

                if (cuMemAddressReserve(&d[k], 2 * MIB, 2 * MIB, 0, 0) || !vmm_map(d[k], 2 * MIB, 1, &h[k]) ||
                    cuMemExportToShareableHandle(&fd, h[k], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0))
                    break;
                imp.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR;
                imp.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
                imp.fd = fd;
                ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
                ai.pNext = &imp;
                ai.allocationSize = 2 * MIB;
                ai.memoryTypeIndex = memtype;
                vr = VKF(inst, vkAllocateMemory)(dev, &ai, NULL, &mem[k]);
                if (vr != VK_SUCCESS) {
                    printf("# probe placed/import: %d\n", (int)vr);
                    close(fd);
                    break;
                }
                mi.memory = mem[k];
                vr = map2(dev, &mi, &got);
                printf("# probe placed/map_%d: %d at %s\n", k, (int)vr,
                       got == at + k * 2 * MIB ? "the place asked" : "another place");
                if (vr != VK_SUCCESS)
                    break;
                ok = k + 1;
            }
            if (ok == 2) {
                unsigned char buf[2][4096];
                memset(at + 2 * MIB - 4096, 0xa5, 8192);   /* across the seam */
                cudaMemcpy(buf[0], (void *)(d[0] + 2 * MIB - 4096), 4096, cudaMemcpyDeviceToHost);
                cudaMemcpy(buf[1], (void *)d[1], 4096, cudaMemcpyDeviceToHost);
                printf("# probe placed/span_write_seen: %s\n",
                       buf[0][0] == 0xa5 && buf[0][4095] == 0xa5 && buf[1][0] == 0xa5 &&
                       buf[1][4095] == 0xa5 ? "yes" : "no");
            }
            for (k = 0; k < ok; k++) {
                VKF(inst, vkUnmapMemory)(dev, mem[k]);
                VKF(inst, vkFreeMemory)(dev, mem[k], NULL);
            }
            for (k = 0; k < 2; k++)
                if (d[k]) {
                    cuMemUnmap(d[k], 2 * MIB);
                    cuMemRelease(h[k]);
                    cuMemAddressFree(d[k], 2 * MIB);
                }
            munmap(cpu, 6 * MIB);
            VKF(inst, vkDestroyDevice)(dev, NULL);
        }
    }
    VKF(inst, vkDestroyInstance)(inst, NULL);
}

static void cost(void)
{
    static const size_t sizes[] = { 2 * MIB, 64 * MIB, 512 * MIB };
    CUmemAllocationProp prop;
    size_t g0 = 0, g1 = 0;
    cudaMemPoolProps pp;
    cudaMemPool_t pool[2];
    cudaStream_t s;
    int fd, i, k;

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    cuMemGetAllocationGranularity(&g0, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    cuMemGetAllocationGranularity(&g1, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    printf("# probe cost/granularity: %zu without the POSIX-fd type, %zu with\n", g0, g1);
    for (i = 0; i < 3; i++) {
        for (fd = 0; fd < 2; fd++) {
            CUmemGenericAllocationHandle h;
            CUdeviceptr d = 0;
            double t0 = bg_now_us();

            for (k = 0; k < 10; k++) {
                if (cuMemAddressReserve(&d, sizes[i], 2 * MIB, 0, 0) || !vmm_map(d, sizes[i], fd, &h))
                    break;
                cuMemUnmap(d, sizes[i]);
                cuMemRelease(h);
                cuMemAddressFree(d, sizes[i]);
            }
            printf("# probe cost/vmm_%zuMiB_%s_us: %.1f (%d of 10)\n", sizes[i] / MIB,
                   fd ? "fd" : "none", (bg_now_us() - t0) / (k ? k : 1), k);
        }
    }
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    for (fd = 0; fd < 2; fd++) {
        memset(&pp, 0, sizeof(pp));
        pp.allocType = cudaMemAllocationTypePinned;
        pp.handleTypes = fd ? cudaMemHandleTypePosixFileDescriptor : cudaMemHandleTypeNone;
        pp.location.type = cudaMemLocationTypeDevice;
        if (cudaMemPoolCreate(&pool[fd], &pp) != cudaSuccess) {
            printf("# probe cost/pool_%s: cannot be made\n", fd ? "fd" : "none");
            continue;
        }
    }
    for (k = 0; k < 3; k++) {
        for (fd = 0; fd < 2; fd++) {
            double t0 = bg_now_us();
            void *p;

            for (i = 0; i < 2000; i++) {
                cudaMallocFromPoolAsync(&p, 65536, pool[fd], s);
                cudaFreeAsync(p, s);
            }
            cudaStreamSynchronize(s);
            printf("# probe cost/pool_%s_mallocasync_freeasync_us: %.3f (round %d)\n",
                   fd ? "fd" : "none", (bg_now_us() - t0) / 2000, k);
        }
    }
    cudaMemPoolDestroy(pool[0]);
    cudaMemPoolDestroy(pool[1]);
    cudaStreamDestroy(s);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    cudaSetDevice(0);
    cudaFree(0);
    reservation();
    placed();
    cost();
    t_ok("chunk_probe/ran");
    return t_status();
}

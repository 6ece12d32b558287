// SPDX-License-Identifier: MIT
/*
 * alloc_probe.cu - what the driver allows, for making every allocator's memory pinnable by the
 * vulkan backend (run by tests/gpu/run_bridge_on_gpu.sh without vramio-run, with
 * GDRCOPY_BACKEND=vulkan). Each fact is a line "# probe KEY: VALUE"; a pin that works is
 * checked both ways (a CPU write seen by cudaMemcpy, a kernel's write seen by the CPU).
 *   stream-ordered memory: the device's default pool; a pool made with a POSIX-fd handle type,
 *     by name and as the device's current pool (cuDeviceSetMemPool), then plain
 *     cudaMallocAsync; what cuMemRetainAllocationHandle and cuMemGetAddressRange answer there;
 *     graph capture of cudaMallocAsync (memory nodes) with that pool current;
 *   VMM memory made with no handle type (export refused?); cudaMalloc memory (the code
 *     cuMemRetainAllocationHandle gives for it);
 *   the largest single allocation the vulkan backend imports (1, 4, 16, 64 GiB as memory
 *     allows) and what an import costs;
 *   whether the Vulkan device offers VK_EXT_map_memory_placed, and whether a vkMapMemory
 *     mapping can be moved with mremap (two imports side by side in one CPU range).
 * Every step is bounded by the caller's timeout; nothing here waits on its own.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <vulkan/vulkan.h>
#include "bridge_gpu.h"

__global__ void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = (unsigned char)(i * 7 + seed);
}

/* Pin [d, d+n) through the vulkan backend, check both directions; prints one result line. */
static int pin_both_ways(gdr_t g, void *d, size_t n, const char *name)
{
    struct bg_pin p;
    unsigned char *host = (unsigned char *)malloc(n), *back = (unsigned char *)malloc(n);
    size_t i, bad = 0;
    int rc;

    fill<<<64, 256>>>((unsigned char *)d, n, 9);
    cudaDeviceSynchronize();
    rc = bg_pin(g, (unsigned long long)(uintptr_t)d, n, &p);
    if (rc) {
        printf("# probe %s/pin: refused (%s)\n", name, vramio_last_error());
        free(host);
        free(back);
        return rc;
    }
    gdr_copy_from_mapping(p.mh, host, p.cpu, n);
    for (i = 0; i < n; i++)
        bad += host[i] != (unsigned char)(i * 7 + 9);
    for (i = 0; i < n; i++)
        host[i] = (unsigned char)(i * 3 + 1);
    gdr_copy_to_mapping(p.mh, p.cpu, host, n);
    cudaMemcpy(back, d, n, cudaMemcpyDeviceToHost);
    bad += memcmp(back, host, n) != 0;
    t_check(bad == 0, name, "%zu bytes differ", bad);
    printf("# probe %s/pin: pins and maps\n", name);
    bg_unpin(g, &p);
    free(host);
    free(back);
    return 0;
}

static void describe(CUdeviceptr d, const char *name)
{
    CUmemGenericAllocationHandle h;
    CUdeviceptr base = 0, mbase = 0;
    size_t size = 0, msize = 0;
    unsigned long long types = 0;
    CUresult r;
    int fd = -1;

    cuMemGetAddressRange(&base, &size, d);
    cuPointerGetAttribute(&mbase, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, d);
    cuPointerGetAttribute(&msize, CU_POINTER_ATTRIBUTE_MAPPING_SIZE, d);
    cuPointerGetAttribute(&types, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, d);
    printf("# probe %s/range: 0x%llx is in [0x%llx, +%zu); mapping [0x%llx, +%zu); handle types 0x%llx\n",
           name, (unsigned long long)d, (unsigned long long)base, size, (unsigned long long)mbase,
           msize, types);
    r = cuMemRetainAllocationHandle(&h, (void *)d);
    printf("# probe %s/retain: %d\n", name, (int)r);
    if (r == CUDA_SUCCESS) {
        r = cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        printf("# probe %s/export_fd: %d\n", name, (int)r);
        if (fd >= 0)
            close(fd);
        cuMemRelease(h);
    }
}

static void pool_probes(gdr_t g, int dev)
{
    cudaMemPool_t def, pool, cur;
    cudaMemPoolProps props;
    cudaStream_t s;
    void *a = NULL, *b = NULL, *c = NULL;
    cudaGraph_t graph;
    cudaGraphExec_t exec;

    cudaStreamCreate(&s);
    cudaDeviceGetDefaultMemPool(&def, dev);
    if (cudaMallocAsync(&a, 4 << 20, s) == cudaSuccess) {
        cudaStreamSynchronize(s);
        describe((CUdeviceptr)a, "default_pool");
        pin_both_ways(g, a, 4 << 20, "default_pool");
        cudaFreeAsync(a, s);
    }
    memset(&props, 0, sizeof(props));
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    if (cudaMemPoolCreate(&pool, &props) != cudaSuccess) {
        printf("# probe fd_pool: cudaMemPoolCreate failed\n");
        return;
    }
    if (cudaMallocFromPoolAsync(&a, 64 << 10, pool, s) == cudaSuccess &&
        cudaMallocFromPoolAsync(&b, 4 << 20, pool, s) == cudaSuccess) {
        cudaStreamSynchronize(s);
        describe((CUdeviceptr)a, "fd_pool_64KiB");
        describe((CUdeviceptr)b, "fd_pool_4MiB");
        pin_both_ways(g, a, 64 << 10, "fd_pool_64KiB");
        pin_both_ways(g, b, 4 << 20, "fd_pool_4MiB");
        cudaFreeAsync(a, s);
        cudaFreeAsync(b, s);
        cudaStreamSynchronize(s);
    }
    /* As the device's current pool: plain cudaMallocAsync takes from it. */
    printf("# probe set_mem_pool: %d\n", (int)cudaDeviceSetMemPool(dev, pool));
    cudaDeviceGetMemPool(&cur, dev);
    printf("# probe set_mem_pool/current_is_ours: %d\n", cur == pool);
    if (cudaMallocAsync(&a, 1 << 20, s) == cudaSuccess) {
        cudaStreamSynchronize(s);
        describe((CUdeviceptr)a, "current_pool");
        pin_both_ways(g, a, 1 << 20, "current_pool");
        cudaFreeAsync(a, s);
        cudaStreamSynchronize(s);
    }
    /* Graph capture: memory nodes. */
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess) {
        cudaError_t e = cudaMallocAsync(&c, 2 << 20, s);
        cudaStreamEndCapture(s, &graph);
        printf("# probe graph/malloc_in_capture: %d\n", (int)e);
        if (e == cudaSuccess && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess) {
            cudaGraphLaunch(exec, s);
            cudaStreamSynchronize(s);
            describe((CUdeviceptr)c, "graph_node");
            pin_both_ways(g, c, 2 << 20, "graph_node");
            cudaFreeAsync(c, s);
            cudaStreamSynchronize(s);
            cudaGraphExecDestroy(exec);
            cudaDeviceGraphMemTrim(dev);
        }
        cudaGraphDestroy(graph);
    }
    cudaDeviceSetMemPool(dev, def);
    printf("# probe trim: %d\n", (int)cudaMemPoolTrimTo(pool, 0));
    cudaMemPoolDestroy(pool);
    cudaStreamDestroy(s);
}

static CUdeviceptr vmm_alloc(int dev, size_t size, CUmemAllocationHandleType types,
                             CUmemGenericAllocationHandle *h)
{
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;
    CUdeviceptr d = 0;

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    prop.requestedHandleTypes = types;
    if (cuMemCreate(h, size, &prop, 0) != CUDA_SUCCESS)
        return 0;
    if (cuMemAddressReserve(&d, size, 2 << 20, 0, 0) != CUDA_SUCCESS ||
        cuMemMap(d, size, 0, *h, 0) != CUDA_SUCCESS) {
        cuMemRelease(*h);
        return 0;
    }
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    cuMemSetAccess(d, size, &acc, 1);
    return d;
}

static void vmm_free(CUdeviceptr d, size_t size, CUmemGenericAllocationHandle h)
{
    cuMemUnmap(d, size);
    cuMemAddressFree(d, size);
    cuMemRelease(h);
}

static void vmm_probes(gdr_t g, int dev)
{
    CUmemGenericAllocationHandle h;
    CUdeviceptr d;
    size_t fr = 0, tot = 0, gib;

    d = vmm_alloc(dev, 2 << 20, (CUmemAllocationHandleType)0, &h);
    if (d) {
        describe(d, "vmm_no_handle_type");
        pin_both_ways(g, (void *)d, 2 << 20, "vmm_no_handle_type");
        vmm_free(d, 2 << 20, h);
    }
    cuMemGetInfo(&fr, &tot);
    printf("# probe memory: %zu MiB free of %zu MiB\n", fr >> 20, tot >> 20);
    for (gib = 1; gib <= 64; gib *= 4) {
        size_t size = gib << 30;
        double t0;
        int rc;

        if (size > fr / 10 * 8)
            break;
        d = vmm_alloc(dev, size, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &h);
        if (!d) {
            printf("# probe import_%zuGiB: cuMemCreate failed\n", gib);
            continue;
        }
        t0 = bg_now_us();
        rc = pin_both_ways(g, (void *)(d + size - (2 << 20)), 1 << 20, "import_big");
        printf("# probe import_%zuGiB: 1 MiB pin at its end %s in %.0f us\n", gib,
               rc ? "refused" : "works", bg_now_us() - t0);
        vmm_free(d, size, h);
    }
}

/* Vulkan facts: VK_EXT_map_memory_placed offered? Can a mapping be moved by mremap? */
static void vulkan_probes(void)
{
    PFN_vkGetInstanceProcAddr gipa;
    VkInstance inst;
    VkPhysicalDevice pds[8];
    uint32_t n = 8, i, next, placed = 0;

    if (bg_vk_instance(&gipa, &inst, "vulkan"))
        return;
#define VKF(inst_, name) ((PFN_##name)gipa(inst_, #name))
    VKF(inst, vkEnumeratePhysicalDevices)(inst, &n, pds);
    for (i = 0; i < n; i++) {
        VkExtensionProperties ext[512];
        uint32_t m = 512, k;
        VkPhysicalDeviceProperties pr;

        VKF(inst, vkGetPhysicalDeviceProperties)(pds[i], &pr);
        VKF(inst, vkEnumerateDeviceExtensionProperties)(pds[i], NULL, &m, ext);
        for (k = 0; k < m; k++)
            if (!strcmp(ext[k].extensionName, "VK_EXT_map_memory_placed") ||
                !strcmp(ext[k].extensionName, "VK_KHR_map_memory2"))
                printf("# probe vulkan/%s: %s offered\n", pr.deviceName, ext[k].extensionName),
                    placed += !strcmp(ext[k].extensionName, "VK_EXT_map_memory_placed");
        printf("# probe vulkan/%s: driver 0x%x, %u extensions\n", pr.deviceName, pr.driverVersion, m);
    }
    printf("# probe vulkan/map_memory_placed: %s\n", placed ? "yes" : "no");
    /* mremap of a mapping: a device, 2 MiB of host-visible device-local memory, map, move. */
    if (n) {
        VkPhysicalDeviceMemoryProperties mp;
        float prio = 1.0f;
        VkDeviceQueueCreateInfo q = {};
        VkDeviceCreateInfo dci = {};
        VkDevice dev;
        uint32_t t = UINT32_MAX;

        VKF(inst, vkGetPhysicalDeviceMemoryProperties)(pds[0], &mp);
        for (next = 0; next < mp.memoryTypeCount; next++) {
            VkMemoryPropertyFlags f = mp.memoryTypes[next].propertyFlags;
            if ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) {
                t = next;
                break;
            }
        }
        q.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
        q.queueCount = 1;
        q.pQueuePriorities = &prio;
        dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
        dci.queueCreateInfoCount = 1;
        dci.pQueueCreateInfos = &q;
        if (t != UINT32_MAX && VKF(inst, vkCreateDevice)(pds[0], &dci, NULL, &dev) == VK_SUCCESS) {
            VkMemoryAllocateInfo mai = {};
            VkDeviceMemory mem;
            void *map = NULL, *to, *moved;
            size_t sz = 2 << 20;

            mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
            mai.allocationSize = sz;
            mai.memoryTypeIndex = t;
            if (VKF(inst, vkAllocateMemory)(dev, &mai, NULL, &mem) == VK_SUCCESS &&
                VKF(inst, vkMapMemory)(dev, mem, 0, sz, 0, &map) == VK_SUCCESS) {
                ((volatile unsigned *)map)[7] = 0x5eed1234u;
                to = mmap(NULL, 2 * sz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                moved = mremap(map, sz, sz, MREMAP_MAYMOVE | MREMAP_FIXED, (char *)to + sz);
                printf("# probe vulkan/mremap_mapping: %s%s\n",
                       moved == MAP_FAILED ? "refused: " : "moved",
                       moved == MAP_FAILED ? strerror(errno) : "");
                if (moved != MAP_FAILED) {
                    printf("# probe vulkan/mremap_reads_back: %s\n",
                           ((volatile unsigned *)moved)[7] == 0x5eed1234u ? "yes" : "no");
                    /* Put it back where the driver thinks it is, for vkUnmapMemory. */
                    mremap(moved, sz, sz, MREMAP_MAYMOVE | MREMAP_FIXED, map);
                }
                munmap(to, 2 * sz);
                VKF(inst, vkUnmapMemory)(dev, mem);
                VKF(inst, vkFreeMemory)(dev, mem, NULL);
            }
            VKF(inst, vkDestroyDevice)(dev, NULL);
        }
    }
    VKF(inst, vkDestroyInstance)(inst, NULL);
}

int main(void)
{
    gdr_t g;
    int dev = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    cudaSetDevice(dev);
    cudaFree(0);
    g = gdr_open();
    if (!g) {
        printf("not ok probe/open: %s\n", vramio_last_error());
        return 1;
    }
    {
        /* What cuMemRetainAllocationHandle answers for cudaMalloc memory: what the bridge
         * answers for its blocks (bridge/bridge_vmm.c asks the driver the same at run time). */
        void *plain = NULL;

        if (cudaMalloc(&plain, 4096) == cudaSuccess) {
            describe((CUdeviceptr)plain, "cudamalloc");
            cudaFree(plain);
        }
    }
    pool_probes(g, dev);
    vmm_probes(g, dev);
    gdr_close(g);
    vulkan_probes();
    return t_status();
}

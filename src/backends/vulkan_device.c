/* SPDX-License-Identifier: MIT */
/* vulkan_device.c - lazy, process-wide Vulkan instance and per-CUDA-device VkDevice. */
#include "vulkan_device.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "process/fork.h"
#include "process/log.h"
#include "reason.h"            /* util/: VR_REASON_LEN, vr_reason */

#define VR_VK_MAX_GPUS 64

/* One slot per CUDA device ordinal: advanced under vk_lock (untried, then its physical
 * device found and checked, then its VkDevice made), read without the lock once published.
 * A failure is final, its reason kept. */
enum { SLOT_FAILED = -1, SLOT_UNTRIED = 0, SLOT_FOUND = 1, SLOT_READY = 2 };
struct gpu_slot {
    _Atomic int state;
    int err;
    char why[VR_REASON_LEN];
    VkPhysicalDevice pd;    /* from SLOT_FOUND */
    int placed_offered;     /* from SLOT_FOUND: placed_offered() */
    struct vr_vk_gpu gpu;   /* memtype and heap_size from SLOT_FOUND, the rest SLOT_READY */
};

static pthread_mutex_t vk_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vr_vk vk;               /* global + instance functions, under vk_lock until ready */
static VkInstance vk_instance;
static int vk_instance_err = -1;      /* -1: not tried yet */
static char vk_instance_why[VR_REASON_LEN];
static struct gpu_slot slots[VR_VK_MAX_GPUS];

/* A fork while another thread makes a device must not leave vk_lock locked for ever in the
 * child (vr_fork_protect_mutex); and the child must never use its parent's VkDevice (the
 * driver's objects are the parent's): every device the child inherited reads as failed. */
static void vk_fork_child(void)
{
    int i;

    if (vk_instance_err < 0)
        return;
    vk_instance_err = EACCES;
    snprintf(vk_instance_why, sizeof(vk_instance_why), "Vulkan was started by the parent of "
             "this forked process, and cannot be used in the child");
    for (i = 0; i < VR_VK_MAX_GPUS; i++) {
        slots[i].err = EACCES;
        snprintf(slots[i].why, sizeof(slots[i].why), "%s", vk_instance_why);
        atomic_store_explicit(&slots[i].state, SLOT_FAILED, memory_order_relaxed);
    }
}

/* At load, not at the first use (fork.h). */
__attribute__((constructor)) static void vk_fork_register(void)
{
    vr_fork_protect_mutex(&vk_lock);
    vr_fork_on_child(vk_fork_child);
}

static int instance_start(void)
{
    const struct vr_vk *loaded = vr_vk_load(vk_instance_why, sizeof(vk_instance_why));
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "vramio",
        .pEngineName = "vramio",
        .apiVersion = VK_API_VERSION_1_1,
    };
    VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
    };
    uint32_t ver = VK_API_VERSION_1_0;
    VkResult r;

    if (!loaded)
        return ENODEV;
    vk = *loaded;
    /* Before the first call that loads the driver, not after vkCreateInstance returns: the
     * driver registers its exit handlers as it loads, so a fork by another thread during
     * vkCreateInstance already gives a child that must leave through _exit(). */
    vr_fork_guard_teardown("the Vulkan driver");
    if (vk.vkEnumerateInstanceVersion)
        vk.vkEnumerateInstanceVersion(&ver);
    if (ver < VK_API_VERSION_1_1) {
        snprintf(vk_instance_why, sizeof(vk_instance_why),
                 "the Vulkan loader offers version %u.%u; 1.1 is needed for external memory",
                 VK_API_VERSION_MAJOR(ver), VK_API_VERSION_MINOR(ver));
        return ENOTSUP;
    }
    r = vk.vkCreateInstance(&ci, NULL, &vk_instance);
    if (r != VK_SUCCESS) {
        snprintf(vk_instance_why, sizeof(vk_instance_why),
                 "vkCreateInstance failed: %s (is a Vulkan driver installed? VK_DRIVER_FILES "
                 "can point at NVIDIA's nvidia_icd.json)", vr_vk_result_name(r));
        return vr_vk_errno(r);
    }
    if (vr_vk_load_instance(&vk, vk_instance, vk_instance_why, sizeof(vk_instance_why))) {
        if (vk.vkDestroyInstance)
            vk.vkDestroyInstance(vk_instance, NULL);
        vk_instance = VK_NULL_HANDLE;
        return ENOSYS;
    }
    return 0;
}

int vr_vk_pick_memtype(const VkPhysicalDeviceMemoryProperties *mp)
{
    const VkMemoryPropertyFlags need = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                       VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int best = -1, best_cached = 1;
    VkDeviceSize best_heap = 0;
    uint32_t i;

    for (i = 0; i < mp->memoryTypeCount && i < VK_MAX_MEMORY_TYPES; i++) {
        VkMemoryPropertyFlags f = mp->memoryTypes[i].propertyFlags;
        uint32_t h = mp->memoryTypes[i].heapIndex;
        VkDeviceSize heap = h < mp->memoryHeapCount ? mp->memoryHeaps[h].size : 0;
        int cached = !!(f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT);

        if ((f & need) != need || (f & VK_MEMORY_PROPERTY_PROTECTED_BIT))
            continue;
        if (best < 0 || (best_cached && !cached) ||
            (cached == best_cached && heap > best_heap)) {
            best = (int)i;
            best_cached = cached;
            best_heap = heap;
        }
    }
    return best;
}

static int has_device_ext(VkPhysicalDevice pd, const char *name)
{
    uint32_t n = 0, i;
    VkExtensionProperties *ext;
    int found = 0;

    if (vk.vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || !n)
        return 0;
    ext = calloc(n, sizeof(*ext));
    if (!ext)
        return 0;
    if (vk.vkEnumerateDeviceExtensionProperties(pd, NULL, &n, ext) == VK_SUCCESS)
        for (i = 0; i < n && !found; i++)
            found = strcmp(ext[i].extensionName, name) == 0;
    free(ext);
    return found;
}

/*
 * Whether pd offers placed maps: both extensions, and the feature memoryMapPlaced (a device
 * may list the extension with the feature off). Fills *align with its
 * minPlacedMemoryMapAlignment. Asked once per GPU, at gpu_find.
 */
static int placed_offered(VkPhysicalDevice pd, VkDeviceSize *align)
{
    VkPhysicalDeviceMapMemoryPlacedFeaturesEXT pf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAP_MEMORY_PLACED_FEATURES_EXT };
    VkPhysicalDeviceFeatures2 f2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &pf };
    VkPhysicalDeviceMapMemoryPlacedPropertiesEXT pp = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAP_MEMORY_PLACED_PROPERTIES_EXT };
    VkPhysicalDeviceProperties2 p2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &pp };

    if (!has_device_ext(pd, VK_KHR_MAP_MEMORY_2_EXTENSION_NAME) ||
        !has_device_ext(pd, VK_EXT_MAP_MEMORY_PLACED_EXTENSION_NAME))
        return 0;
    vk.vkGetPhysicalDeviceFeatures2(pd, &f2);
    if (!pf.memoryMapPlaced)
        return 0;
    vk.vkGetPhysicalDeviceProperties2(pd, &p2);
    /* The alignment is a power of two by the spec; a page at least, as mmap needs. */
    *align = pp.minPlacedMemoryMapAlignment;
    if (*align < 4096 || (*align & (*align - 1)))
        return 0;
    return 1;
}

/* The physical device with this UUID, or VK_NULL_HANDLE; *index and *count say which of how
 * many (for the log: on a host with several GPUs, which one serves which CUDA device). */
static VkPhysicalDevice find_by_uuid(const uint8_t uuid[16], uint32_t *index, uint32_t *count)
{
    VkPhysicalDevice *pds, found = VK_NULL_HANDLE;
    uint32_t n = 0, i;

    if (vk.vkEnumeratePhysicalDevices(vk_instance, &n, NULL) != VK_SUCCESS || !n)
        return VK_NULL_HANDLE;
    pds = calloc(n, sizeof(*pds));
    if (!pds)
        return VK_NULL_HANDLE;
    if (vk.vkEnumeratePhysicalDevices(vk_instance, &n, pds) == VK_SUCCESS) {
        for (i = 0; i < n && !found; i++) {
            VkPhysicalDeviceIDProperties id = {
                .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES };
            VkPhysicalDeviceProperties2 p2 = {
                .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &id };
            VkPhysicalDeviceProperties p;

            vk.vkGetPhysicalDeviceProperties(pds[i], &p);
            if (p.apiVersion < VK_API_VERSION_1_1)
                continue;
            vk.vkGetPhysicalDeviceProperties2(pds[i], &p2);
            if (memcmp(id.deviceUUID, uuid, 16) == 0) {
                found = pds[i];
                *index = i;
            }
        }
    }
    *count = n;
    free(pds);
    return found;
}

/* Device memory of CUDA device d, for the BAR1 rule below; 0 when the driver does not say. */
static size_t cuda_total_mem(const struct vr_cuda *cu, CUdevice d)
{
    size_t bytes = 0;

    if (!cu->cuDeviceTotalMem || cu->cuDeviceTotalMem(&bytes, d) != CUDA_SUCCESS)
        return 0;
    return bytes;
}

/*
 * Whether the vulkan backend can pin memory of CUDA device cuda_dev, without making its
 * VkDevice: the physical device with its UUID, the external-memory extension, and a
 * device-local host-visible memory type whose heap (the BAR1 window) holds at least half of
 * the GPU's memory. A GPU whose BAR1 is a small window (256 MiB without resizable BAR) shows
 * such a type too, but imports beyond the window fail: a large cudaMalloc, or the pool's
 * memory once the window is full, could not be pinned. The rule is half, not all: the
 * driver keeps a little of BAR1 for itself, and a window of half the memory serves what a
 * program pins at once (GDRCopy's clients pin buffers, not the whole GPU). Fills s->pd,
 * s->gpu.memtype and s->gpu.heap_size; 0 or an errno with the reason in why.
 */
static int gpu_find(const struct vr_cuda *cu, int cuda_dev, struct gpu_slot *s,
                    char *why, size_t len)
{
    const char *ext_name = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
    VkPhysicalDeviceMemoryProperties mp;
    VkPhysicalDeviceProperties p;
    VkPhysicalDevice pd;
    uint32_t pd_index = 0, pd_count = 0;
    size_t total;
    CUdevice d;
    CUuuid uuid;
    CUresult cr;
    int t;

    cr = cu->cuDeviceGet(&d, cuda_dev);
    if (cr == CUDA_SUCCESS)
        cr = cu->cuDeviceGetUuid(&uuid, d);
    if (cr != CUDA_SUCCESS) {
        snprintf(why, len, "cannot read the UUID of CUDA device %d: %s", cuda_dev,
                 vr_cuda_errstr(cr));
        return vr_cuda_errno(cr);
    }
    pd = find_by_uuid((const uint8_t *)uuid.bytes, &pd_index, &pd_count);
    if (!pd) {
        snprintf(why, len, "no Vulkan 1.1 device has the UUID of CUDA device %d (%u Vulkan "
                 "device%s found): NVIDIA's Vulkan driver is not installed or not found "
                 "(VK_DRIVER_FILES)", cuda_dev, pd_count, pd_count == 1 ? "" : "s");
        return ENODEV;
    }
    vk.vkGetPhysicalDeviceProperties(pd, &p);
    {
        const unsigned char *u = (const unsigned char *)uuid.bytes;

        vr_dbg("vulkan: CUDA device %d is Vulkan physical device %u of %u, '%s', UUID "
               "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", cuda_dev,
               pd_index, pd_count, p.deviceName, u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
               u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    }
    if (!has_device_ext(pd, ext_name)) {
        snprintf(why, len, "the Vulkan device of CUDA device %d lacks %s", cuda_dev, ext_name);
        return ENOTSUP;
    }
    vk.vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    t = vr_vk_pick_memtype(&mp);
    if (t < 0) {
        snprintf(why, len, "the Vulkan device of CUDA device %d has no device-local "
                 "host-visible memory type (no BAR1 window for the CPU)", cuda_dev);
        return ENOTSUP;
    }
    s->gpu.memtype = (uint32_t)t;
    s->gpu.heap_size = mp.memoryHeaps[mp.memoryTypes[t].heapIndex].size;
    total = cuda_total_mem(cu, d);
    if (!vr_vk_window_enough(s->gpu.heap_size, total)) {
        snprintf(why, len, "the host-visible window of CUDA device %d's memory is %llu MiB "
                 "of its %llu MiB (BAR1 too small: enable resizable BAR / a large BAR1 in the "
                 "BIOS or the GPU's mode)", cuda_dev,
                 (unsigned long long)(s->gpu.heap_size >> 20),
                 (unsigned long long)(total >> 20));
        return ENOSPC;
    }
    s->placed_offered = placed_offered(pd, &s->gpu.placed_align);
    vr_dbg("vulkan: the Vulkan device of CUDA device %d %s placed maps (VK_EXT_map_memory_placed)",
           cuda_dev, s->placed_offered ? "offers" : "does not offer");
    s->pd = pd;
    return 0;
}

/* vkCreateDevice with the external-memory extension, and with placed maps (both extensions
 * and the feature) when placed is 1. */
static VkResult device_create(VkPhysicalDevice pd, int placed, VkDevice *dev)
{
    const char *ext_names[] = { VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME,
                                VK_KHR_MAP_MEMORY_2_EXTENSION_NAME,
                                VK_EXT_MAP_MEMORY_PLACED_EXTENSION_NAME };
    const float prio = 1.0f;
    VkPhysicalDeviceMapMemoryPlacedFeaturesEXT pf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAP_MEMORY_PLACED_FEATURES_EXT,
        .memoryMapPlaced = VK_TRUE,
    };
    VkDeviceQueueCreateInfo q = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = 0, .queueCount = 1, .pQueuePriorities = &prio,
    };
    VkDeviceCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = placed ? &pf : NULL,
        .queueCreateInfoCount = 1, .pQueueCreateInfos = &q,
        .enabledExtensionCount = placed ? 3 : 1, .ppEnabledExtensionNames = ext_names,
    };

    return vk.vkCreateDevice(pd, &dci, NULL, dev);
}

/* Make the VkDevice of a slot that gpu_find accepted. 0 or an errno with the reason in why. */
static int gpu_create(int cuda_dev, struct gpu_slot *s, char *why, size_t len)
{
    struct vr_vk_gpu *g = &s->gpu;
    VkResult r = VK_ERROR_FEATURE_NOT_PRESENT;

    if (s->placed_offered)
        r = device_create(s->pd, 1, &g->dev);
    /* A device that lists placed maps but will not make a device with them still pins as
     * before: spanning pins alone are refused there (g->placed stays 0). */
    if (r != VK_SUCCESS) {
        if (s->placed_offered)
            vr_info("vulkan: the Vulkan device of CUDA device %d offers placed maps, but "
                    "vkCreateDevice with them failed (%s): made without", cuda_dev,
                    vr_vk_result_name(r));
        s->placed_offered = 0;
        r = device_create(s->pd, 0, &g->dev);
    }
    if (r != VK_SUCCESS) {
        snprintf(why, len, "vkCreateDevice for CUDA device %d failed: %s", cuda_dev,
                 vr_vk_result_name(r));
        return vr_vk_errno(r);
    }
    if (vr_vk_load_device(&vk, g->dev, &g->fn, why, len)) {
        if (g->fn.vkDestroyDevice)
            g->fn.vkDestroyDevice(g->dev, NULL);
        return ENOSYS;
    }
    if (s->placed_offered)
        g->vkMapMemory2KHR = (PFN_vkMapMemory2KHR)vk.vkGetDeviceProcAddr(g->dev,
                                                                          "vkMapMemory2KHR");
    g->placed = g->vkMapMemory2KHR != NULL;
    g->cuda_dev = cuda_dev;
    return 0;
}

/* Bring slot s of cuda_dev to at least the state want (FOUND or READY) under vk_lock: the
 * instance first, then gpu_find, then (for READY) gpu_create. A failure is kept for good. */
static void slot_advance(const struct vr_cuda *cu, int cuda_dev, struct gpu_slot *s, int want)
{
    int st = atomic_load_explicit(&s->state, memory_order_relaxed), err = 0;

    if (st == SLOT_UNTRIED) {
        if (vk_instance_err < 0)
            vk_instance_err = instance_start();
        if (vk_instance_err) {
            err = vk_instance_err;
            snprintf(s->why, sizeof(s->why), "%s", vk_instance_why);
        } else {
            err = gpu_find(cu, cuda_dev, s, s->why, sizeof(s->why));
        }
        st = err ? SLOT_FAILED : SLOT_FOUND;
    }
    if (st == SLOT_FOUND && want == SLOT_READY) {
        err = gpu_create(cuda_dev, s, s->why, sizeof(s->why));
        st = err ? SLOT_FAILED : SLOT_READY;
    }
    if (err)
        s->err = err;
    atomic_store_explicit(&s->state, st, memory_order_release);
}

/* Slot of cuda_dev advanced to want (or failed): 0, or its errno with the reason in why. */
static int slot_get(const struct vr_cuda *cu, int cuda_dev, int want, struct gpu_slot **out,
                    char *why, size_t len)
{
    struct gpu_slot *s;
    int st;

    if (cuda_dev < 0 || cuda_dev >= VR_VK_MAX_GPUS) {
        snprintf(why, len, "CUDA device ordinal %d is beyond the %d the vulkan backend serves",
                 cuda_dev, VR_VK_MAX_GPUS);
        return ENODEV;
    }
    s = &slots[cuda_dev];
    st = atomic_load_explicit(&s->state, memory_order_acquire);
    if (st != SLOT_FAILED && st < want) {
        pthread_mutex_lock(&vk_lock);
        slot_advance(cu, cuda_dev, s, want);
        pthread_mutex_unlock(&vk_lock);
        st = atomic_load_explicit(&s->state, memory_order_acquire);
    }
    if (st == SLOT_FAILED) {
        vr_reason(why, len, "%s", s->why);
        return s->err;
    }
    *out = s;
    return 0;
}

int vr_vk_gpu_check(const struct vr_cuda *cu, int cuda_dev, char *why, size_t len)
{
    struct gpu_slot *s;

    return slot_get(cu, cuda_dev, SLOT_FOUND, &s, why, len);
}

int vr_vk_window_enough(uint64_t window, uint64_t total)
{
    /* The driver saying nothing of the memory is no reason to refuse. */
    return total == 0 || window >= total / 2;
}

int vr_vk_gpu_get(const struct vr_cuda *cu, int cuda_dev, const struct vr_vk_gpu **gpu,
                  char *why, size_t len)
{
    struct gpu_slot *s;
    int rc = slot_get(cu, cuda_dev, SLOT_READY, &s, why, len);

    if (!rc)
        *gpu = &s->gpu;
    return rc;
}

/* SPDX-License-Identifier: MIT */
/* vulkan_loader.c - dlopen of libvulkan.so.1 and its function tables (see vulkan_loader.h). */
#include "vulkan_loader.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include "reason.h"            /* util/: VR_REASON_LEN, vr_reason */

static struct vr_vk vk_table;
static const struct vr_vk *vk_loaded;
static char vk_load_error[VR_REASON_LEN];
static pthread_once_t vk_load_once = PTHREAD_ONCE_INIT;

static void vk_load(void)
{
    void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);

    if (!lib) {
        const char *e = dlerror();
        /* dlerror() may quote a path of up to PATH_MAX bytes: cut in its middle, the advice
         * after it stays. */
        vr_reason(vk_load_error, sizeof(vk_load_error),
                  "the Vulkan loader libvulkan.so.1 cannot be loaded (%s); install libvulkan1",
                  e ? e : "unknown");
        return;
    }
    vk_table.vkGetInstanceProcAddr = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr");
    if (!vk_table.vkGetInstanceProcAddr) {
        snprintf(vk_load_error, sizeof(vk_load_error),
                 "libvulkan.so.1 lacks vkGetInstanceProcAddr: not a Vulkan loader");
        dlclose(lib);
        return;
    }
#define VR_VK_RESOLVE(fn) \
    vk_table.fn = (PFN_##fn)vk_table.vkGetInstanceProcAddr(VK_NULL_HANDLE, #fn);
    VR_VK_GLOBAL_FUNCS(VR_VK_RESOLVE)
#undef VR_VK_RESOLVE
    if (!vk_table.vkCreateInstance) {
        snprintf(vk_load_error, sizeof(vk_load_error),
                 "libvulkan.so.1 does not give vkCreateInstance");
        dlclose(lib);
        return;
    }
    /* Stays loaded for the life of the process, like the driver it loads. */
    vk_loaded = &vk_table;
}

const struct vr_vk *vr_vk_load(char *why, size_t len)
{
    pthread_once(&vk_load_once, vk_load);
    if (!vk_loaded)
        vr_reason(why, len, "%s", vk_load_error);
    return vk_loaded;
}

int vr_vk_load_instance(struct vr_vk *vk, VkInstance inst, char *why, size_t len)
{
#define VR_VK_RESOLVE(fn)                                                         \
    vk->fn = (PFN_##fn)vk->vkGetInstanceProcAddr(inst, #fn);                      \
    if (!vk->fn) {                                                                \
        snprintf(why, len, "the Vulkan instance does not give %s (Vulkan 1.1 needed)", #fn); \
        return ENOSYS;                                                            \
    }
    VR_VK_INSTANCE_FUNCS(VR_VK_RESOLVE)
#undef VR_VK_RESOLVE
    return 0;
}

int vr_vk_load_device(const struct vr_vk *vk, VkDevice dev, struct vr_vk_device *fns,
                      char *why, size_t len)
{
#define VR_VK_RESOLVE(fn)                                                  \
    fns->fn = (PFN_##fn)vk->vkGetDeviceProcAddr(dev, #fn);                 \
    if (!fns->fn) {                                                        \
        snprintf(why, len, "the Vulkan device does not give %s", #fn);     \
        return ENOSYS;                                                     \
    }
    VR_VK_DEVICE_FUNCS(VR_VK_RESOLVE)
#undef VR_VK_RESOLVE
    return 0;
}

const char *vr_vk_result_name(VkResult r)
{
    static __thread char buf[32];

    switch (r) {
#define VR_VK_NAME(x) case x: return #x;
    VR_VK_NAME(VK_SUCCESS)
    VR_VK_NAME(VK_NOT_READY)
    VR_VK_NAME(VK_INCOMPLETE)
    VR_VK_NAME(VK_ERROR_OUT_OF_HOST_MEMORY)
    VR_VK_NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    VR_VK_NAME(VK_ERROR_INITIALIZATION_FAILED)
    VR_VK_NAME(VK_ERROR_DEVICE_LOST)
    VR_VK_NAME(VK_ERROR_MEMORY_MAP_FAILED)
    VR_VK_NAME(VK_ERROR_LAYER_NOT_PRESENT)
    VR_VK_NAME(VK_ERROR_EXTENSION_NOT_PRESENT)
    VR_VK_NAME(VK_ERROR_FEATURE_NOT_PRESENT)
    VR_VK_NAME(VK_ERROR_INCOMPATIBLE_DRIVER)
    VR_VK_NAME(VK_ERROR_TOO_MANY_OBJECTS)
    VR_VK_NAME(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    VR_VK_NAME(VK_ERROR_OUT_OF_POOL_MEMORY)
    VR_VK_NAME(VK_ERROR_UNKNOWN)
#undef VR_VK_NAME
    default:
        snprintf(buf, sizeof(buf), "VkResult %d", (int)r);
        return buf;
    }
}

int vr_vk_errno(VkResult r)
{
    switch (r) {
    case VK_SUCCESS:
        return 0;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_TOO_MANY_OBJECTS:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
        return ENOMEM;
    case VK_ERROR_INVALID_EXTERNAL_HANDLE:
        return EINVAL;
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_INITIALIZATION_FAILED:
    case VK_ERROR_DEVICE_LOST:
        return ENODEV;
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_LAYER_NOT_PRESENT:
        return ENOTSUP;
    case VK_ERROR_MEMORY_MAP_FAILED:
        return ENOMEM;
    default:
        return EIO;
    }
}

/* SPDX-License-Identifier: MIT */
/*
 * bridge_gpu.h - what the bridge's GPU programs share (CUDA runtime programs built by nvcc,
 * run by tests/gpu/run_bridge_on_gpu.sh and run_alloc_probe_on_gpu.sh): a clock, pin + map of
 * a device range through libgdrapi with the CPU address of its first byte, and for the probes
 * that include <vulkan/vulkan.h> a Vulkan instance. Result lines: the test kit's (t.h).
 */
#ifndef VRAMIO_BRIDGE_GPU_H
#define VRAMIO_BRIDGE_GPU_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include "gdrapi.h"
#include "vramio.h"
#include "t.h"

static double bg_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

struct bg_pin {
    gdr_mh_t mh;
    void *map;
    size_t map_len;
    char *cpu; /* the CPU address of the pinned device address */
};

/* Pin and map [d, d + n): 0 or the gdr error, with the reason printed. */
static int bg_pin(gdr_t g, unsigned long long d, size_t n, struct bg_pin *p)
{
    gdr_info_t info;
    int rc;

    p->mh.h = 0;
    rc = gdr_pin_buffer(g, d, n, 0, 0, &p->mh);
    if (!rc)
        rc = gdr_get_info(g, p->mh, &info);
    if (!rc) {
        p->map_len = info.mapped_size;
        rc = gdr_map(g, p->mh, &p->map, p->map_len);
        if (rc)
            gdr_unpin_buffer(g, p->mh);
    } else if (p->mh.h) {
        gdr_unpin_buffer(g, p->mh);
    }
    if (rc) {
        printf("# pin 0x%llx + %zu: %s (%s)\n", d, n, vramio_strerror(rc), vramio_last_error());
        return rc;
    }
    p->cpu = (char *)p->map + (d - info.va);
    return 0;
}

static void bg_unpin(gdr_t g, struct bg_pin *p)
{
    gdr_unmap(g, p->mh, p->map, p->map_len);
    gdr_unpin_buffer(g, p->mh);
}

#ifdef VK_VERSION_1_0
#include <dlfcn.h>
/* For the probes that include <vulkan/vulkan.h> first: a Vulkan 1.1 instance made through the
 * loader's vkGetInstanceProcAddr (in *gipa). 0, or -1 with "# probe WHO: why" printed. */
static int bg_vk_instance(PFN_vkGetInstanceProcAddr *gipa, VkInstance *inst, const char *who)
{
    void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    VkApplicationInfo app = {};
    VkInstanceCreateInfo ici = {};
    PFN_vkCreateInstance create;

    *gipa = lib ? (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr") : NULL;
    create = *gipa ? (PFN_vkCreateInstance)(*gipa)(NULL, "vkCreateInstance") : NULL;
    if (!create) {
        printf("# probe %s: no Vulkan loader\n", who);
        return -1;
    }
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.apiVersion = VK_API_VERSION_1_1;
    ici.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    ici.pApplicationInfo = &app;
    if (create(&ici, NULL, inst) != VK_SUCCESS) {
        printf("# probe %s: vkCreateInstance failed\n", who);
        return -1;
    }
    return 0;
}
#endif

#endif /* VRAMIO_BRIDGE_GPU_H */

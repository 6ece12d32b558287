/* SPDX-License-Identifier: MIT */
/* backend_vulkan.c - PLACEHOLDER until the real backend lands: reports itself unusable. */
#include <errno.h>
#include <stdio.h>
#include "backend.h"

static int vulkan_probe(char *why, size_t len)
{
    snprintf(why, len, "the vulkan backend is not built yet");
    return ENOSYS;
}
static int vulkan_open(void **ctx, char *why, size_t len) { *ctx = NULL; return vulkan_probe(why, len); }
static void vulkan_close(void *ctx) { (void)ctx; }
static int vulkan_pin(void *ctx, const struct vr_pin_req *req, void **pin, char *why, size_t len)
{ (void)ctx; (void)req; (void)pin; return vulkan_probe(why, len); }
static int vulkan_unpin(void *ctx, void *pin) { (void)ctx; (void)pin; return ENOSYS; }
static int vulkan_map(void *ctx, void *pin, size_t size, gdr_mapping_type_t want, void **ptr,
                    gdr_mapping_type_t *granted)
{ (void)ctx; (void)pin; (void)size; (void)want; (void)ptr; (void)granted; return ENOSYS; }
static int vulkan_unmap(void *ctx, void *pin, void *ptr, size_t size)
{ (void)ctx; (void)pin; (void)ptr; (void)size; return ENOSYS; }
static int vulkan_info(void *ctx, void *pin, struct vr_pin_info *info)
{ (void)ctx; (void)pin; (void)info; return ENOSYS; }
static int vulkan_cb_flag(void *ctx, void *pin, int *flag) { (void)ctx; (void)pin; *flag = 0; return ENOSYS; }
static int vulkan_get_attr(void *ctx, gdr_attr_t attr, int *value) { (void)ctx; (void)attr; *value = 0; return 0; }
static int vulkan_driver_version(void *ctx, int *major, int *minor) { (void)ctx; *major = 2; *minor = 6; return 0; }

const struct vr_backend_ops vr_backend_vulkan = {
    .id = VRAMIO_BACKEND_VULKAN, .name = "vulkan",
    .probe = vulkan_probe, .open = vulkan_open, .close = vulkan_close, .pin = vulkan_pin,
    .unpin = vulkan_unpin, .map = vulkan_map, .unmap = vulkan_unmap, .info = vulkan_info,
    .callback_flag = vulkan_cb_flag, .get_attr = vulkan_get_attr, .driver_version = vulkan_driver_version,
};

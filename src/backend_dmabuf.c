/* SPDX-License-Identifier: MIT */
/* backend_dmabuf.c - PLACEHOLDER until the real backend lands: reports itself unusable. */
#include <errno.h>
#include <stdio.h>
#include "backend.h"

static int dmabuf_probe(char *why, size_t len)
{
    snprintf(why, len, "the dmabuf backend is not built yet");
    return ENOSYS;
}
static int dmabuf_open(void **ctx, char *why, size_t len) { *ctx = NULL; return dmabuf_probe(why, len); }
static void dmabuf_close(void *ctx) { (void)ctx; }
static int dmabuf_pin(void *ctx, const struct vr_pin_req *req, void **pin, char *why, size_t len)
{ (void)ctx; (void)req; (void)pin; return dmabuf_probe(why, len); }
static int dmabuf_unpin(void *ctx, void *pin) { (void)ctx; (void)pin; return ENOSYS; }
static int dmabuf_map(void *ctx, void *pin, size_t size, gdr_mapping_type_t want, void **ptr,
                    gdr_mapping_type_t *granted)
{ (void)ctx; (void)pin; (void)size; (void)want; (void)ptr; (void)granted; return ENOSYS; }
static int dmabuf_unmap(void *ctx, void *pin, void *ptr, size_t size)
{ (void)ctx; (void)pin; (void)ptr; (void)size; return ENOSYS; }
static int dmabuf_info(void *ctx, void *pin, struct vr_pin_info *info)
{ (void)ctx; (void)pin; (void)info; return ENOSYS; }
static int dmabuf_cb_flag(void *ctx, void *pin, int *flag) { (void)ctx; (void)pin; *flag = 0; return ENOSYS; }
static int dmabuf_get_attr(void *ctx, gdr_attr_t attr, int *value) { (void)ctx; (void)attr; *value = 0; return 0; }
static int dmabuf_driver_version(void *ctx, int *major, int *minor) { (void)ctx; *major = 2; *minor = 6; return 0; }

const struct vr_backend_ops vr_backend_dmabuf = {
    .id = VRAMIO_BACKEND_DMABUF, .name = "dmabuf",
    .probe = dmabuf_probe, .open = dmabuf_open, .close = dmabuf_close, .pin = dmabuf_pin,
    .unpin = dmabuf_unpin, .map = dmabuf_map, .unmap = dmabuf_unmap, .info = dmabuf_info,
    .callback_flag = dmabuf_cb_flag, .get_attr = dmabuf_get_attr, .driver_version = dmabuf_driver_version,
};

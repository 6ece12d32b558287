/* SPDX-License-Identifier: MIT */
/* backend_gdrdrv.c - PLACEHOLDER until the real backend lands: reports itself unusable. */
#include <errno.h>
#include <stdio.h>
#include "backend.h"

static int gdrdrv_probe(char *why, size_t len)
{
    snprintf(why, len, "the gdrdrv backend is not built yet");
    return ENOSYS;
}
static int gdrdrv_open(void **ctx, char *why, size_t len) { *ctx = NULL; return gdrdrv_probe(why, len); }
static void gdrdrv_close(void *ctx) { (void)ctx; }
static int gdrdrv_pin(void *ctx, const struct vr_pin_req *req, void **pin, char *why, size_t len)
{ (void)ctx; (void)req; (void)pin; return gdrdrv_probe(why, len); }
static int gdrdrv_unpin(void *ctx, void *pin) { (void)ctx; (void)pin; return ENOSYS; }
static int gdrdrv_map(void *ctx, void *pin, size_t size, gdr_mapping_type_t want, void **ptr,
                    gdr_mapping_type_t *granted)
{ (void)ctx; (void)pin; (void)size; (void)want; (void)ptr; (void)granted; return ENOSYS; }
static int gdrdrv_unmap(void *ctx, void *pin, void *ptr, size_t size)
{ (void)ctx; (void)pin; (void)ptr; (void)size; return ENOSYS; }
static int gdrdrv_info(void *ctx, void *pin, struct vr_pin_info *info)
{ (void)ctx; (void)pin; (void)info; return ENOSYS; }
static int gdrdrv_cb_flag(void *ctx, void *pin, int *flag) { (void)ctx; (void)pin; *flag = 0; return ENOSYS; }
static int gdrdrv_get_attr(void *ctx, gdr_attr_t attr, int *value) { (void)ctx; (void)attr; *value = 0; return 0; }
static int gdrdrv_driver_version(void *ctx, int *major, int *minor) { (void)ctx; *major = 2; *minor = 6; return 0; }

const struct vr_backend_ops vr_backend_gdrdrv = {
    .id = VRAMIO_BACKEND_GDRDRV, .name = "gdrdrv",
    .probe = gdrdrv_probe, .open = gdrdrv_open, .close = gdrdrv_close, .pin = gdrdrv_pin,
    .unpin = gdrdrv_unpin, .map = gdrdrv_map, .unmap = gdrdrv_unmap, .info = gdrdrv_info,
    .callback_flag = gdrdrv_cb_flag, .get_attr = gdrdrv_get_attr, .driver_version = gdrdrv_driver_version,
};

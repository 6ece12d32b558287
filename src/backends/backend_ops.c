/* SPDX-License-Identifier: MIT */
/*
 * backend_ops.c - the defaults behind the slots a backend's table leaves out (backend.h),
 * and their merge. The core merges each backend's table once, when it opens a gdr_t
 * (instance.c), and calls only the merged copy: no call site tests a slot for NULL.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "backend.h"

/* A backend that leaves out a slot it should fill refuses what that slot does. */
static int refuse_probe(char *why, size_t len)
{
    return ENOTSUP;
}

static int refuse_pin(void *ctx, const struct vr_pin_req *req, void **pin,
                      struct vr_pin_info *info, char *why, size_t len)
{
    return ENOTSUP;                     /* the next backend is offered the range */
}

static int refuse_map(void *ctx, void *pin, size_t size, gdr_mapping_type_t want, void **ptr,
                      gdr_mapping_type_t *granted, char *why, size_t len)
{
    return ENOTSUP;
}

/* The probe's answer stands. */
static int probe_suffices(int every, char *why, size_t len)
{
    return 0;
}

/* No per-gdr_t state. */
static int no_ctx_open(void **ctx, char *why, size_t len)
{
    *ctx = NULL;
    return 0;
}

static void no_ctx_close(void *ctx)
{
}

/* Nothing to undo: unpin and unmap must not fail on a valid object. */
static int nothing_to_drop(void *ctx, void *pin)
{
    return 0;
}

static int nothing_to_unmap(void *ctx, void *pin, void *ptr, size_t size)
{
    return 0;
}

/* Pins that hold their pages until unpinned are never invalidated. */
static int never_invalidated(void *ctx, void *pin, int *flag)
{
    *flag = 0;
    return 0;
}

/* A pin lies in one allocation. */
static int spans_nothing(int gpu)
{
    (void)gpu;
    return 0;
}

/* The table's answers, which the core has put in the outputs, stand. */
static int table_attr(void *ctx, gdr_attr_t attr, int *value)
{
    return 0;
}

static int table_version(void *ctx, int *major, int *minor)
{
    return 0;
}

#define VR_DEFAULT(slot, fn) do { if (!out->slot) out->slot = (fn); } while (0)

void vr_backend_merge(struct vr_backend_ops *out, const struct vr_backend_ops *in)
{
    *out = *in;
    if (!out->version.major && !out->version.minor) {
        out->version.major = 2;
        out->version.minor = 6;
    }
    if (!out->map_types)
        out->map_types = VR_MAP_TYPES_ALL;
    VR_DEFAULT(map_types_why, "");
    VR_DEFAULT(probe, refuse_probe);
    VR_DEFAULT(confirm, probe_suffices);
    VR_DEFAULT(open, no_ctx_open);
    VR_DEFAULT(close, no_ctx_close);
    VR_DEFAULT(pin, refuse_pin);
    VR_DEFAULT(unpin, nothing_to_drop);
    VR_DEFAULT(map, refuse_map);
    VR_DEFAULT(unmap, nothing_to_unmap);
    VR_DEFAULT(callback_flag, never_invalidated);
    VR_DEFAULT(get_attr, table_attr);
    VR_DEFAULT(driver_version, table_version);
    VR_DEFAULT(spans, spans_nothing);
}

int vr_backend_forced(const struct vr_backend_ops *ops)
{
    const char *v = ops->force_env ? getenv(ops->force_env) : NULL;

    return v && strcmp(v, "1") == 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * gdrapi.c - the exported gdr_* and vramio_* entry points: argument checks at the API
 * boundary, then one call down to the object they concern: the gdr_t (instance.c), a pin
 * (pin.c), or the copy engine, reached lock-free (handles.h, vr_pin_mapping_try).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "core.h"
#include "arch/fence.h"
#include "copy/copy.h"
#include "nocancel.h"         /* util/: calls that are no cancellation points */

/* The exported gdr_get_info is the legacy (2.0) one; the header maps the name to _v2. */
#undef gdr_get_info

struct gdr_info_v1 {
    uint64_t va;
    uint64_t mapped_size;
    uint32_t page_size;
    uint64_t tm_cycles;
    uint32_t cycles_per_ms;
    unsigned mapped : 1;
    unsigned wc_mapping : 1;
};
_Static_assert(sizeof(struct gdr_info_v1) == 40, "legacy gdr_info is 40 bytes");

VR_EXPORT int gdr_get_info(gdr_t g, gdr_mh_t handle, struct gdr_info_v1 *info);

/* The backends, indexed by vramio_backend_t; probing order is the enum's order. */
static const struct vr_backend_ops *const backends[VRAMIO_BACKEND_COUNT] = {
    [VRAMIO_BACKEND_GDRDRV] = &vr_backend_gdrdrv,
    [VRAMIO_BACKEND_DMABUF] = &vr_backend_dmabuf,
    [VRAMIO_BACKEND_VULKAN] = &vr_backend_vulkan,
};

VR_EXPORT gdr_t gdr_open(void)
{
    struct vr_gdr *gdr;

    return VR_NOCANCEL(vr_instance_open(backends, &gdr)) ? NULL : (gdr_t)(uintptr_t)gdr->token;
}

static int close_instance(gdr_t g)
{
    struct vr_gdr *gdr;
    int rc = vr_instance_close_begin(g, &gdr);

    if (rc || !gdr)
        return rc;
    /* No call on g is in progress and none can start: release what it still holds. */
    vr_pins_release_owned(gdr->token);
    vr_instance_free(gdr);
    return 0;
}

VR_EXPORT int gdr_close(gdr_t g)
{
    return VR_NOCANCEL(close_instance(g));
}

static int backend_id_ok(vramio_backend_t backend, char *reason, size_t len, const char *fn)
{
    if (backend > VRAMIO_BACKEND_NONE && backend < VRAMIO_BACKEND_COUNT)
        return 0;
    vr_copy_reason(reason, len, "not a backend");
    return vr_fail(EINVAL, "%s: %d is not a backend", fn, (int)backend);
}

VR_EXPORT int vramio_get_backend(gdr_t g, vramio_backend_t *backend)
{
    if (!backend)
        return vr_fail(EINVAL, "vramio_get_backend: backend is NULL");
    return VR_NOCANCEL(vr_instance_backend(g, backend));
}

/* A backend's name is its table's; "none" for VRAMIO_BACKEND_NONE, NULL for no backend. */
VR_EXPORT const char *vramio_backend_name(vramio_backend_t backend)
{
    if (backend == VRAMIO_BACKEND_NONE)
        return "none";
    return (unsigned)backend < VRAMIO_BACKEND_COUNT ? backends[backend]->name : NULL;
}

VR_EXPORT int vramio_backend_status(gdr_t g, vramio_backend_t backend, char *reason, size_t len)
{
    int rc = backend_id_ok(backend, reason, len, "vramio_backend_status");

    return rc ? rc : VR_NOCANCEL(vr_instance_status(g, backend, reason, len));
}

VR_EXPORT int vramio_backend_probe(vramio_backend_t backend, char *reason, size_t len)
{
    int rc = backend_id_ok(backend, reason, len, "vramio_backend_probe");

    return rc ? rc : VR_NOCANCEL(vr_backends_probe(backends, backend, reason, len));
}

int vr_pins_can_span(int gpu)
{
    return VR_NOCANCEL(vr_backends_span(backends, gpu));
}

VR_EXPORT const char *vramio_copy_kernel(void)
{
    return vr_copy_kernel_name();
}

static int pin_common(gdr_t g, struct vr_pin_req *req, gdr_mh_t *handle, const char *fn)
{
    if (!handle)
        return vr_fail(EINVAL, "%s: handle is NULL", fn);
    handle->h = 0;
    if (req->size == 0)
        return vr_fail(EINVAL, "%s: size is 0", fn);
    if (req->addr + req->size < req->addr)
        return vr_fail(EINVAL, "%s: 0x%llx + %llu wraps around", fn,
                       (unsigned long long)req->addr, (unsigned long long)req->size);
    if (req->flags & ~(uint32_t)GDR_PIN_FLAG_FORCE_PCIE)
        return vr_fail(EINVAL, "%s: unknown flags 0x%x", fn, req->flags);
    return VR_NOCANCEL(vr_pin_create(g, req, handle, fn));
}

VR_EXPORT int gdr_pin_buffer(gdr_t g, unsigned long addr, size_t size, uint64_t p2p_token,
                             uint32_t va_space, gdr_mh_t *handle)
{
    struct vr_pin_req req = { .addr = addr, .size = size, .flags = 0, .p2p_token = p2p_token,
                              .va_space = va_space, .legacy = 1 };

    return pin_common(g, &req, handle, "gdr_pin_buffer");
}

VR_EXPORT int gdr_pin_buffer_v2(gdr_t g, unsigned long addr, size_t size, uint32_t flags,
                                gdr_mh_t *handle)
{
    struct vr_pin_req req = { .addr = addr, .size = size, .flags = flags, .legacy = 0 };

    return pin_common(g, &req, handle, "gdr_pin_buffer_v2");
}

VR_EXPORT int gdr_unpin_buffer(gdr_t g, gdr_mh_t handle)
{
    return VR_NOCANCEL(vr_pin_unpin(g, handle, "gdr_unpin_buffer"));
}

VR_EXPORT int gdr_get_callback_flag(gdr_t g, gdr_mh_t handle, int *flag)
{
    if (!flag)
        return vr_fail(EINVAL, "gdr_get_callback_flag: flag is NULL");
    return VR_NOCANCEL(vr_pin_callback_flag(g, handle, flag, "gdr_get_callback_flag"));
}

VR_EXPORT int gdr_get_info_v2(gdr_t g, gdr_mh_t handle, gdr_info_v2_t *info)
{
    if (!info)
        return vr_fail(EINVAL, "gdr_get_info_v2: info is NULL");
    return VR_NOCANCEL(vr_pin_info(g, handle, info, "gdr_get_info_v2"));
}

VR_EXPORT int gdr_get_info(gdr_t g, gdr_mh_t handle, struct gdr_info_v1 *info)
{
    gdr_info_v2_t v2;
    int rc;

    if (!info)
        return vr_fail(EINVAL, "gdr_get_info: info is NULL");
    rc = VR_NOCANCEL(vr_pin_info(g, handle, &v2, "gdr_get_info"));
    if (rc)
        return rc;
    *info = (struct gdr_info_v1){ .va = v2.va, .mapped_size = v2.mapped_size,
                                  .page_size = v2.page_size, .tm_cycles = v2.tm_cycles,
                                  .cycles_per_ms = v2.cycles_per_ms, .mapped = v2.mapped,
                                  .wc_mapping = v2.wc_mapping };
    return 0;
}

VR_EXPORT int gdr_map_v2(gdr_t g, gdr_mh_t handle, void **va, size_t size, int flags)
{
    if (!va)
        return vr_fail(EINVAL, "gdr_map: va is NULL");
    if (flags < GDR_MAP_FLAG_DEFAULT || flags > GDR_MAP_FLAG_REQ_DEVICE_MAPPING)
        return vr_fail(EINVAL, "gdr_map: unknown flags %d", flags);
    if (size == 0)
        return vr_fail(EINVAL, "gdr_map: size is 0");
    /* The request flags 1..3 are numbered like the mapping types WC, CACHING, DEVICE. */
    return VR_NOCANCEL(vr_pin_map(g, handle, va, size, (gdr_mapping_type_t)flags, "gdr_map"));
}

VR_EXPORT int gdr_map(gdr_t g, gdr_mh_t handle, void **va, size_t size)
{
    return gdr_map_v2(g, handle, va, size, GDR_MAP_FLAG_DEFAULT);
}

VR_EXPORT int gdr_unmap(gdr_t g, gdr_mh_t handle, void *va, size_t size)
{
    return VR_NOCANCEL(vr_pin_unmap(g, handle, va, size, "gdr_unmap"));
}

VR_EXPORT int vramio_handle_backend(gdr_t g, gdr_mh_t handle, vramio_backend_t *backend)
{
    if (!backend)
        return vr_fail(EINVAL, "vramio_handle_backend: backend is NULL");
    return VR_NOCANCEL(vr_pin_backend(g, handle, backend, "vramio_handle_backend"));
}

/*
 * The copies, both directions the same shape, read top to bottom: the lookup and the checks in
 * one place (handles.h, vr_copy_lookup: the pin's mapping read lock-free, the range inside it,
 * a host buffer, at least one byte, one mapping type live), then the copy engine, inline
 * (copy/copy.h: the fences it issues are named there). Whatever that straight path does not
 * take goes to copy_checked, out of line, so that the straight path needs no stack frame and
 * ends in the engine (the rule at the top of copy/copy.h): a refused or stale handle, a slot
 * being written, no bytes or no host buffer, a range outside the mapping, and a copy while
 * mappings of several types are live.
 */
#define VR_TO_MAP   1
#define VR_FROM_MAP 0
static int copy_checked(int to_map, gdr_mh_t handle, void *map, void *host, size_t size);

VR_EXPORT int gdr_copy_to_mapping(gdr_mh_t handle, void *map_d_ptr, const void *h_ptr,
                                  size_t size)
{
    struct vr_mapping m;

    if (__builtin_expect(!vr_copy_lookup(handle.h, map_d_ptr, h_ptr, size, &m), 0))
        return copy_checked(VR_TO_MAP, handle, map_d_ptr, (void *)(uintptr_t)h_ptr, size);
    return vr_copy_to_mapping((gdr_mapping_type_t)m.type, map_d_ptr, h_ptr, size);
}

VR_EXPORT int gdr_copy_from_mapping(gdr_mh_t handle, void *h_ptr, const void *map_d_ptr,
                                    size_t size)
{
    struct vr_mapping m;

    if (__builtin_expect(!vr_copy_lookup(handle.h, map_d_ptr, h_ptr, size, &m), 0))
        return copy_checked(VR_FROM_MAP, handle, (void *)(uintptr_t)map_d_ptr, h_ptr, size);
    return vr_copy_from_mapping((gdr_mapping_type_t)m.type, h_ptr, map_d_ptr, size);
}

/*
 * Everything the straight paths leave, both directions: the checks again, in the order that
 * says why a call is refused, then the copy. While mappings of more than one type are live
 * (vr_mappings_mixed) the copy ends with a full fence as well, as upstream GDRCopy's does: the
 * buffer it reached may be read or written next through a mapping of another type, whose
 * accesses the fence of this type does not order (a WC store fence does not order later cached
 * loads, and a read has no fence at its end).
 */
static __attribute__((noinline, cold)) int copy_checked(int to_map, gdr_mh_t handle, void *map,
                                                        void *host, size_t size)
{
    const char *fn = to_map ? "gdr_copy_to_mapping" : "gdr_copy_from_mapping";
    struct vr_mapping m;

    if (vr_pin_mapping(handle.h, &m) != 0)
        return vr_copy_fail(fn, handle.h, map, size, 1);
    if (size == 0)
        return 0;
    if (!vr_in_mapping(&m, map, size) || !host)
        return vr_copy_fail(fn, handle.h, map, size, 0);
    if (to_map)
        vr_copy_to_mapping((gdr_mapping_type_t)m.type, map, host, size);
    else
        vr_copy_from_mapping((gdr_mapping_type_t)m.type, host, map, size);
    if (vr_mappings_mixed())
        vr_full_fence();
    return 0;
}

/* Hidden aliases of the two copies, for the _auto copies (copy_dma.c): below every crossover
 * they take the same path and fences, by a direct jump into the same code, not a second trip
 * through the PLT. */
extern __typeof__(gdr_copy_to_mapping) vr_gdr_copy_to_mapping
    __attribute__((alias("gdr_copy_to_mapping"), visibility("hidden")));
extern __typeof__(gdr_copy_from_mapping) vr_gdr_copy_from_mapping
    __attribute__((alias("gdr_copy_from_mapping"), visibility("hidden")));

VR_EXPORT void gdr_runtime_get_version(int *major, int *minor)
{
    if (major)
        *major = GDR_API_MAJOR_VERSION;
    if (minor)
        *minor = GDR_API_MINOR_VERSION;
}

VR_EXPORT int gdr_driver_get_version(gdr_t g, int *major, int *minor)
{
    if (!major || !minor)
        return vr_fail(EINVAL, "gdr_driver_get_version: NULL output");
    return VR_NOCANCEL(vr_instance_driver_version(g, major, minor));
}

VR_EXPORT int gdr_get_attribute(gdr_t g, gdr_attr_t attr, int *v)
{
    if (!v)
        return vr_fail(EINVAL, "gdr_get_attribute: v is NULL");
    if (attr < GDR_ATTR_USE_PERSISTENT_MAPPING || attr >= GDR_ATTR_MAX)
        return vr_fail(EINVAL, "gdr_get_attribute: unknown attribute %d", (int)attr);
    return VR_NOCANCEL(vr_instance_attribute(g, attr, v));
}

VR_EXPORT int gdr_get_mapping_type_string(gdr_mapping_type_t type, const char **type_str)
{
    static const char *const names[GDR_MAPPING_TYPE_MAX] = {
        [GDR_MAPPING_TYPE_NONE] = "None", [GDR_MAPPING_TYPE_WC] = "Write Combining",
        [GDR_MAPPING_TYPE_CACHING] = "Caching", [GDR_MAPPING_TYPE_DEVICE] = "Device",
    };

    if (!type_str)
        return vr_fail(EINVAL, "gdr_get_mapping_type_string: type_str is NULL");
    if ((unsigned)type >= GDR_MAPPING_TYPE_MAX)
        return vr_fail(EINVAL, "gdr_get_mapping_type_string: unknown type %d", (int)type);
    *type_str = names[type];
    return 0;
}

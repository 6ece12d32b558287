/* SPDX-License-Identifier: MIT */
/*
 * gdrapi.c - the gdr_* entry points on pins: argument checks at the API boundary, handle
 * validation, dispatch to the backend that owns a pin, and the lock-free copy path.
 *
 * Every operation on one pin runs under that pin's slot lock (the backend contract: never two
 * ops at once on one pin); pins of one gdr_t never wait for each other, so a slow pin does not
 * hold up work on other pins. Copies take no lock at all (handles.h, vr_pin_mapping).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "core.h"
#include "copy/copy.h"

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

/* The pin slot of handle, locked, when handle is a live pin made through gdr; else NULL. */
static struct vr_slot *pin_lock(const struct vr_gdr *gdr, gdr_mh_t handle)
{
    struct vr_slot *s = vr_slot_lock(&vr_pins, handle.h);

    if (s && s->owner != gdr->token) {
        vr_slot_unlock(s);
        return NULL;
    }
    return s;
}

/*
 * Whether the pin is mapped in this process. A child of fork() inherits the pin's state but not
 * its mapping (gdrdrv mappings are not copied to a child; the other backends' may not be usable
 * there either): for the child the pin is unmapped, and the copy path has been told so by the
 * table's fork handler (handles.c).
 */
static int pin_mapped_here(const struct vr_pin *pin)
{
    return pin->map_ptr && pin->map_pid == vr_self_pid();
}

int vr_pin_release_locked(struct vr_slot *s)
{
    struct vr_pin *pin = s->obj;
    void *map = pin_mapped_here(pin) ? pin->map_ptr : NULL;
    int rc = 0, rc2;

    /* The handle goes stale before the pin is torn down, so that no process (a child forked
     * at any moment of this) can ever see a live handle naming a freed pin. No other call can
     * reach the pin once its token is stale: the backend still sees one call at a time. */
    if (map)
        vr_slot_set_mapping(s, NULL, 0, 0);
    vr_slot_free_locked(&vr_pins, s);
    if (map) {
        rc = pin->ops->unmap(pin->ctx, pin->bpin, map, pin->map_size);
        if (rc)
            vr_warn("unpin: %s could not unmap %p: %s", pin->ops->name, map,
                    vramio_strerror(rc));
    }
    rc2 = pin->ops->unpin(pin->ctx, pin->bpin);
    if (rc2)
        vr_warn("unpin: %s reported %s", pin->ops->name, vramio_strerror(rc2));
    free(pin);
    return rc2 ? rc2 : rc;
}

/* Offer req to each usable backend in turn; the first that accepts it owns the pin. */
static int pin_with_backends(struct vr_gdr *gdr, const struct vr_pin_req *req, const char *fn,
                             gdr_mh_t *handle)
{
    char why[VR_REASON_LEN], all[3 * VR_REASON_LEN] = "";
    struct vr_pin_info info;
    struct vr_pin *pin;
    size_t used = 0;
    int i, rc = ENOTSUP, first_rc = 0;
    void *bpin = NULL;

    for (i = 0; i < gdr->nactive; i++) {
        const struct vr_active *a = &gdr->active[i];

        why[0] = '\0';
        rc = a->ops->pin(a->ctx, req, &bpin, why, sizeof(why));
        if (rc == 0)
            break;
        if (!first_rc)
            first_rc = rc;
        if (used < sizeof(all))
            used += (size_t)snprintf(all + used, sizeof(all) - used, "%s%s: %s",
                                     used ? "; " : "", a->ops->name,
                                     why[0] ? why : vramio_strerror(rc));
        if (rc != ENOTSUP)
            break; /* a backend that serves this memory failed: final */
    }
    if (rc)
        return vr_fail_err(rc == ENOTSUP ? first_rc : rc, "%s(0x%llx, %llu): %s", fn,
                           (unsigned long long)req->addr, (unsigned long long)req->size, all);

    rc = gdr->active[i].ops->info(gdr->active[i].ctx, bpin, &info);
    pin = rc ? NULL : calloc(1, sizeof(*pin));
    if (pin) {
        *pin = (struct vr_pin){ .ops = gdr->active[i].ops, .ctx = gdr->active[i].ctx,
                                .bpin = bpin, .va = info.va, .mapped_size = info.mapped_size,
                                .dma_dev = VR_DMA_DEV_UNKNOWN };
        rc = vr_slot_alloc(&vr_pins, pin, gdr->token, &handle->h);
    } else if (!rc) {
        rc = ENOMEM;
    }
    if (rc) {
        gdr->active[i].ops->unpin(gdr->active[i].ctx, bpin);
        free(pin);
        return vr_fail_err(rc, "%s: cannot register the pin: %s", fn, vramio_strerror(rc));
    }
    vr_dbg("%s: 0x%llx+%llu pinned by %s as %#lx", fn, (unsigned long long)req->addr,
           (unsigned long long)req->size, gdr->active[i].ops->name, handle->h);
    return 0;
}

static int pin_common(gdr_t g, struct vr_pin_req *req, gdr_mh_t *handle, const char *fn)
{
    struct vr_gdr *gdr;
    int rc;

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
    rc = vr_gdr_get(g, fn, &gdr);
    if (rc)
        return rc;
    rc = pin_with_backends(gdr, req, fn, handle);
    vr_gdr_put(gdr);
    return rc;
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

/*
 * The shape of every per-pin call: take a reference on g, lock the pin, run op, unlock.
 * op returns with the slot still locked unless it retired it (unpin).
 */
typedef int (*pin_op_fn)(struct vr_slot *s, struct vr_pin *pin, void *arg, const char *fn);

static int with_pin(gdr_t g, gdr_mh_t handle, pin_op_fn op, void *arg, const char *fn)
{
    struct vr_gdr *gdr;
    struct vr_slot *s;
    int rc = vr_gdr_get(g, fn, &gdr);

    if (rc)
        return rc;
    s = pin_lock(gdr, handle);
    if (!s) {
        vr_gdr_put(gdr);
        return vr_fail(EINVAL, "%s: %#lx is not a live pin of this gdr_t", fn, handle.h);
    }
    rc = op(s, s->obj, arg, fn);
    vr_gdr_put(gdr);
    return rc;
}

static int op_unpin(struct vr_slot *s, struct vr_pin *pin, void *arg, const char *fn)
{
    (void)pin; (void)arg; (void)fn;
    return vr_pin_release_locked(s);
}

VR_EXPORT int gdr_unpin_buffer(gdr_t g, gdr_mh_t handle)
{
    return with_pin(g, handle, op_unpin, NULL, "gdr_unpin_buffer");
}

static int op_callback_flag(struct vr_slot *s, struct vr_pin *pin, void *arg, const char *fn)
{
    int rc = pin->ops->callback_flag(pin->ctx, pin->bpin, arg);

    vr_slot_unlock(s);
    return rc ? vr_fail(rc, "%s: %s", fn, vramio_strerror(rc)) : 0;
}

VR_EXPORT int gdr_get_callback_flag(gdr_t g, gdr_mh_t handle, int *flag)
{
    if (!flag)
        return vr_fail(EINVAL, "gdr_get_callback_flag: flag is NULL");
    return with_pin(g, handle, op_callback_flag, flag, "gdr_get_callback_flag");
}

static int op_info(struct vr_slot *s, struct vr_pin *pin, void *arg, const char *fn)
{
    gdr_info_v2_t *out = arg;
    struct vr_pin_info bi = { 0 };
    int rc = pin->ops->info(pin->ctx, pin->bpin, &bi);
    gdr_mapping_type_t type = pin_mapped_here(pin) ? pin->map_type : GDR_MAPPING_TYPE_NONE;

    vr_slot_unlock(s);
    if (rc)
        return vr_fail(rc, "%s: %s", fn, vramio_strerror(rc));
    *out = (gdr_info_v2_t){ .va = bi.va, .mapped_size = bi.mapped_size,
                            .page_size = bi.page_size, .tm_cycles = bi.tm_cycles,
                            .cycles_per_ms = bi.cycles_per_ms, .mapped = type != 0,
                            .wc_mapping = type == GDR_MAPPING_TYPE_WC, .mapping_type = type };
    return 0;
}

VR_EXPORT int gdr_get_info_v2(gdr_t g, gdr_mh_t handle, gdr_info_v2_t *info)
{
    if (!info)
        return vr_fail(EINVAL, "gdr_get_info_v2: info is NULL");
    return with_pin(g, handle, op_info, info, "gdr_get_info_v2");
}

VR_EXPORT int gdr_get_info(gdr_t g, gdr_mh_t handle, struct gdr_info_v1 *info)
{
    gdr_info_v2_t v2;
    int rc;

    if (!info)
        return vr_fail(EINVAL, "gdr_get_info: info is NULL");
    rc = with_pin(g, handle, op_info, &v2, "gdr_get_info");
    if (rc)
        return rc;
    *info = (struct gdr_info_v1){ .va = v2.va, .mapped_size = v2.mapped_size,
                                  .page_size = v2.page_size, .tm_cycles = v2.tm_cycles,
                                  .cycles_per_ms = v2.cycles_per_ms, .mapped = v2.mapped,
                                  .wc_mapping = v2.wc_mapping };
    return 0;
}

struct map_args {
    void **va;
    size_t size;
    gdr_mapping_type_t want;
};

static int op_map(struct vr_slot *s, struct vr_pin *pin, void *arg, const char *fn)
{
    struct map_args *a = arg;
    gdr_mapping_type_t granted = GDR_MAPPING_TYPE_NONE;
    void *ptr = NULL;
    int rc;

    if (pin_mapped_here(pin))
        rc = vr_fail(EAGAIN, "%s: the handle is already mapped", fn);
    else if (a->size > pin->mapped_size)
        rc = vr_fail(EINVAL, "%s: size %zu exceeds the pinned %llu bytes", fn, a->size,
                     (unsigned long long)pin->mapped_size);
    else if ((rc = pin->ops->map(pin->ctx, pin->bpin, a->size, a->want, &ptr, &granted)))
        vr_fail_err(rc, "%s: %s could not map %zu bytes: %s", fn, pin->ops->name, a->size,
                    vramio_strerror(rc));
    else if (!ptr || granted <= GDR_MAPPING_TYPE_NONE || granted >= GDR_MAPPING_TYPE_MAX) {
        pin->ops->unmap(pin->ctx, pin->bpin, ptr, a->size);
        rc = vr_fail_err(EIO, "%s: %s returned an invalid mapping", fn, pin->ops->name);
    } else {
        pin->map_ptr = ptr;
        pin->map_pid = vr_self_pid();
        pin->map_size = a->size;
        pin->map_type = granted;
        vr_slot_set_mapping(s, ptr, a->size, granted);
        *a->va = ptr;
    }
    vr_slot_unlock(s);
    return rc;
}

VR_EXPORT int gdr_map_v2(gdr_t g, gdr_mh_t handle, void **va, size_t size, int flags)
{
    struct map_args a = { va, size, (gdr_mapping_type_t)flags };

    if (!va)
        return vr_fail(EINVAL, "gdr_map: va is NULL");
    if (flags < GDR_MAP_FLAG_DEFAULT || flags > GDR_MAP_FLAG_REQ_DEVICE_MAPPING)
        return vr_fail(EINVAL, "gdr_map: unknown flags %d", flags);
    if (size == 0)
        return vr_fail(EINVAL, "gdr_map: size is 0");
    /* The request flags 1..3 are numbered like the mapping types WC, CACHING, DEVICE. */
    return with_pin(g, handle, op_map, &a, "gdr_map");
}

VR_EXPORT int gdr_map(gdr_t g, gdr_mh_t handle, void **va, size_t size)
{
    return gdr_map_v2(g, handle, va, size, GDR_MAP_FLAG_DEFAULT);
}

struct unmap_args {
    void *va;
    size_t size;
    unsigned long h;
};

static int op_unmap(struct vr_slot *s, struct vr_pin *pin, void *arg, const char *fn)
{
    struct unmap_args *a = arg;
    int rc = 0;

    if (!pin_mapped_here(pin)) {
        vr_slot_unlock(s);
        return vr_fail(EINVAL, "%s: the handle is not mapped", fn);
    }
    /* Upstream munmaps whatever it is given and returns 0, and clients rely on that: DPDK
     * passes the device address, then unpins and frees. Release this handle's own mapping
     * (never an address it was not given by us) and say so. */
    if (a->va != pin->map_ptr || a->size != pin->map_size)
        vr_warn("%s: %p+%zu is not the mapping of handle %#lx (expected %p+%zu); releasing that "
                "mapping",
                fn, a->va, a->size, a->h, pin->map_ptr, pin->map_size);
    /* Hide the mapping from the copy path before it goes away. */
    vr_slot_set_mapping(s, NULL, 0, 0);
    rc = pin->ops->unmap(pin->ctx, pin->bpin, pin->map_ptr, pin->map_size);
    pin->map_ptr = NULL;
    pin->map_size = 0;
    vr_slot_unlock(s);
    return rc ? vr_fail_err(rc, "%s: %s", fn, vramio_strerror(rc)) : 0;
}

VR_EXPORT int gdr_unmap(gdr_t g, gdr_mh_t handle, void *va, size_t size)
{
    struct unmap_args a = { va, size, handle.h };

    return with_pin(g, handle, op_unmap, &a, "gdr_unmap");
}

static int op_handle_backend(struct vr_slot *s, struct vr_pin *pin, void *arg, const char *fn)
{
    (void)fn;
    *(vramio_backend_t *)arg = pin->ops->id;
    vr_slot_unlock(s);
    return 0;
}

VR_EXPORT int vramio_handle_backend(gdr_t g, gdr_mh_t handle, vramio_backend_t *backend)
{
    if (!backend)
        return vr_fail(EINVAL, "vramio_handle_backend: backend is NULL");
    return with_pin(g, handle, op_handle_backend, backend, "vramio_handle_backend");
}

/* Cold: kept out of line so that the copy path stays a handful of instructions. */
__attribute__((noinline, cold))
static int copy_fail(const char *fn, unsigned long h, const void *p, size_t n, int not_pin)
{
    if (not_pin)
        return vr_fail(EINVAL, "%s: %#lx is not a live pin handle", fn, h);
    return vr_fail(EINVAL, "%s: %p+%zu is not inside the mapping of handle %#lx", fn, p, n, h);
}

/* [p, p+n) inside the mapping m (never true while unmapped: len is 0 and base 0, so any p
 * gives off > 0 = len, or p = 0 and then n > 0 = len). A p below base wraps off around to more
 * than any len, so two comparisons cover both ends. */
static inline int in_mapping(const struct vr_mapping *m, const void *p, size_t n)
{
    uintptr_t off = (uintptr_t)p - m->base;

    return off <= m->len && n <= m->len - off;
}

VR_EXPORT int gdr_copy_to_mapping(gdr_mh_t handle, void *map_d_ptr, const void *h_ptr,
                                  size_t size)
{
    struct vr_mapping m;

    if (__builtin_expect(vr_pin_mapping(handle.h, &m) != 0, 0))
        return copy_fail("gdr_copy_to_mapping", handle.h, map_d_ptr, size, 1);
    if (size == 0)
        return 0;
    if (__builtin_expect(!in_mapping(&m, map_d_ptr, size) || !h_ptr, 0))
        return copy_fail("gdr_copy_to_mapping", handle.h, map_d_ptr, size, 0);
    return vr_copy_to_mapping((gdr_mapping_type_t)m.type, map_d_ptr, h_ptr, size);
}

VR_EXPORT int gdr_copy_from_mapping(gdr_mh_t handle, void *h_ptr, const void *map_d_ptr,
                                    size_t size)
{
    struct vr_mapping m;

    if (__builtin_expect(vr_pin_mapping(handle.h, &m) != 0, 0))
        return copy_fail("gdr_copy_from_mapping", handle.h, map_d_ptr, size, 1);
    if (size == 0)
        return 0;
    if (__builtin_expect(!in_mapping(&m, map_d_ptr, size) || !h_ptr, 0))
        return copy_fail("gdr_copy_from_mapping", handle.h, map_d_ptr, size, 0);
    return vr_copy_from_mapping((gdr_mapping_type_t)m.type, h_ptr, map_d_ptr, size);
}

/* Hidden aliases of the two copies, for the _auto copies below their crossover (copy_dma.c):
 * a direct jump into the same code, not a second trip through the PLT. */
extern __typeof__(gdr_copy_to_mapping) vr_gdr_copy_to_mapping
    __attribute__((alias("gdr_copy_to_mapping"), visibility("hidden")));
extern __typeof__(gdr_copy_from_mapping) vr_gdr_copy_from_mapping
    __attribute__((alias("gdr_copy_from_mapping"), visibility("hidden")));

/*
 * For the copy engine (copy_dma.c): [p, p+n) checked as gdr_copy_*_mapping checks it, and
 * where it lies in GPU memory. The mapping starts at the pin's info.va, so map_ptr + off is
 * va + off on the GPU. Takes the slot lock for a moment: the pin's va is not published to the
 * lock-free path, and a copy big enough for the copy engine does not notice the lock.
 */
int vr_pin_dma_range(gdr_mh_t handle, const void *p, size_t n, const void *host,
                     struct vr_dma_range *r, const char *fn)
{
    struct vr_slot *s = vr_slot_lock(&vr_pins, handle.h);
    struct vr_pin *pin;
    struct vr_mapping m;
    int ok;

    if (!s)
        return copy_fail(fn, handle.h, p, n, 1);
    pin = s->obj;
    if (!pin) {                 /* a test-only mapping (vr_handles_test_insert): no GPU behind */
        vr_slot_unlock(s);
        return copy_fail(fn, handle.h, p, n, 1);
    }
    ok = pin_mapped_here(pin) && host;
    if (ok) {
        m = (struct vr_mapping){ (uintptr_t)pin->map_ptr, pin->map_size, (int)pin->map_type };
        ok = in_mapping(&m, p, n);
    }
    if (ok)
        *r = (struct vr_dma_range){ .dev_addr = pin->va + ((uintptr_t)p - m.base),
                                    .type = pin->map_type, .dma_dev = pin->dma_dev,
                                    .avail = m.len - ((uintptr_t)p - m.base) };
    vr_slot_unlock(s);
    return ok ? 0 : copy_fail(fn, handle.h, p, n, 0);
}

void vr_pin_set_dma_dev(gdr_mh_t handle, int dma_dev)
{
    struct vr_slot *s = vr_slot_lock(&vr_pins, handle.h);

    if (s) {
        if (s->obj)
            ((struct vr_pin *)s->obj)->dma_dev = dma_dev;
        vr_slot_unlock(s);
    }
}

VR_EXPORT void gdr_runtime_get_version(int *major, int *minor)
{
    if (major)
        *major = GDR_API_MAJOR_VERSION;
    if (minor)
        *minor = GDR_API_MINOR_VERSION;
}

VR_EXPORT int gdr_driver_get_version(gdr_t g, int *major, int *minor)
{
    struct vr_gdr *gdr;
    int rc;

    if (!major || !minor)
        return vr_fail(EINVAL, "gdr_driver_get_version: NULL output");
    *major = 0;
    *minor = 0;
    rc = vr_gdr_get(g, "gdr_driver_get_version", &gdr);
    if (rc)
        return rc;
    rc = gdr->active[0].ops->driver_version(gdr->active[0].ctx, major, minor);
    vr_gdr_put(gdr);
    return rc ? vr_fail(rc, "gdr_driver_get_version: %s", vramio_strerror(rc)) : 0;
}

VR_EXPORT int gdr_get_attribute(gdr_t g, gdr_attr_t attr, int *v)
{
    struct vr_gdr *gdr;
    int rc;

    if (!v)
        return vr_fail(EINVAL, "gdr_get_attribute: v is NULL");
    if (attr < GDR_ATTR_USE_PERSISTENT_MAPPING || attr >= GDR_ATTR_MAX)
        return vr_fail(EINVAL, "gdr_get_attribute: unknown attribute %d", (int)attr);
    rc = vr_gdr_get(g, "gdr_get_attribute", &gdr);
    if (rc)
        return rc;
    rc = gdr->active[0].ops->get_attr(gdr->active[0].ctx, attr, v);
    vr_gdr_put(gdr);
    return rc ? vr_fail(rc, "gdr_get_attribute: %s", vramio_strerror(rc)) : 0;
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

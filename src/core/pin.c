/* SPDX-License-Identifier: MIT */
/*
 * pin.c - the pin object behind gdr_mh_t: offering a range to the usable backends of a
 * gdr_t, and every per-pin operation (unpin, info, map, unmap, callback flag) under the pin
 * slot's lock.
 *
 * Every operation on one pin runs under that pin's slot lock (the backend contract: never two
 * ops at once on one pin); pins of one gdr_t never wait for each other, so a slow pin does not
 * hold up work on other pins. Copies take no lock at all (handles.h, vr_pin_mapping). Calls
 * here hold a reference on their gdr_t (instance.c) for their whole duration.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "arch/cycles.h"
#include "core.h"

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

/* Unmap (if mapped) and unpin the pin of a locked slot, then retire the slot (unlocks it). */
static int pin_release_locked(struct vr_slot *s)
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
        rc = pin->ops->unmap(pin->ctx, pin->backend_pin, map, pin->map_size);
        if (rc)
            vr_warn("unpin: %s could not unmap %p: %s", pin->ops->name, map,
                    vramio_strerror(rc));
    }
    rc2 = pin->ops->unpin(pin->ctx, pin->backend_pin);
    if (rc2)
        vr_warn("unpin: %s reported %s", pin->ops->name, vramio_strerror(rc2));
    free(pin);
    return rc2 ? rc2 : rc;
}

/* Offer req to each usable backend in turn; the first that accepts it owns the pin. */
static int pin_with_backends(struct vr_gdr *gdr, const struct vr_pin_req *req, const char *fn,
                             gdr_mh_t *handle)
{
    char why[VR_REASON_LEN], all[VR_REASONS_LEN] = "";
    struct vr_pin_info info;
    struct vr_pin *pin;
    size_t used = 0;
    int i, rc = ENOTSUP, first_rc = 0;
    void *backend_pin = NULL;

    uint64_t t0 = 0, took = 0;

    for (i = 0; i < gdr->nactive; i++) {
        const struct vr_active *a = &gdr->active[i];

        why[0] = '\0';
        info = (struct vr_pin_info){ 0 };
        /* A backend probed only now (backend.h, lazy) that is unusable declines the range. */
        if (vr_active_ready(gdr, i, why, sizeof(why))) {
            rc = ENOTSUP;
        } else {
            t0 = vr_cycles_now();
            rc = a->ops->pin(a->ctx, req, &backend_pin, &info, why, sizeof(why));
            took = vr_cycles_now() - t0;
        }
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

    pin = calloc(1, sizeof(*pin));
    if (pin) {
        *pin = (struct vr_pin){ .ops = gdr->active[i].ops, .ctx = gdr->active[i].ctx,
                                .backend_pin = backend_pin, .addr = req->addr, .info = info,
                                .pin_cycles = took,
                                .dma_dev = VR_DMA_DEV_UNKNOWN };
        rc = vr_slot_alloc(&vr_pins, pin, gdr->token, &handle->h);
    } else {
        rc = ENOMEM;
    }
    if (rc) {
        gdr->active[i].ops->unpin(gdr->active[i].ctx, backend_pin);
        free(pin);
        return vr_fail_err(rc, "%s: cannot register the pin: %s", fn, vramio_strerror(rc));
    }
    /* Which backend serves which pin: said where it is not the one gdr_open chose first (whose
     * answers gdr_get_attribute and gdr_driver_get_version give); vramio_handle_backend too. */
    if (i > 0)
        vr_info("%s: 0x%llx+%llu pinned by %s as %#lx (%s)", fn, (unsigned long long)req->addr,
                (unsigned long long)req->size, gdr->active[i].ops->name, handle->h, all);
    else
        vr_dbg("%s: 0x%llx+%llu pinned by %s as %#lx", fn, (unsigned long long)req->addr,
               (unsigned long long)req->size, gdr->active[i].ops->name, handle->h);
    return 0;
}

int vr_gpu_page_range(uint64_t addr, uint64_t size, uint64_t *va, uint64_t *len)
{
    uint64_t start = addr & GPU_PAGE_MASK;
    uint64_t last;

    if (size == 0 || size - 1 > UINT64_MAX - addr)
        return EINVAL;
    last = addr + (size - 1);            /* last byte: cannot wrap, checked above */
    if ((last | GPU_PAGE_OFFSET) == UINT64_MAX)
        return EINVAL;                   /* the rounded end would be 2^64 */
    *va = start;
    *len = (last | GPU_PAGE_OFFSET) + 1 - start;
    return 0;
}

int vr_pin_create(gdr_t g, const struct vr_pin_req *asked, gdr_mh_t *handle, const char *fn)
{
    struct vr_pin_req req = *asked;
    struct vr_gdr *gdr;
    int rc;

    /* Every backend pins whole GPU pages: the range is rounded once, here. */
    if (vr_gpu_page_range(req.addr, req.size, &req.va, &req.len))
        return vr_fail(EINVAL, "%s: 0x%llx + %llu wraps around in whole GPU pages", fn,
                       (unsigned long long)req.addr, (unsigned long long)req.size);
    rc = vr_gdr_get(g, fn, &gdr);
    if (rc)
        return rc;
    rc = pin_with_backends(gdr, &req, fn, handle);
    vr_gdr_put(gdr);
    return rc;
}

/* The live pin handle of g, its slot locked, with a reference on g's instance taken. */
static int pin_get(gdr_t g, gdr_mh_t handle, const char *fn, struct vr_gdr **gdr,
                   struct vr_slot **s)
{
    int rc = vr_gdr_get(g, fn, gdr);

    if (rc)
        return rc;
    *s = pin_lock(*gdr, handle);
    if (!*s) {
        vr_gdr_put(*gdr);
        return vr_fail(EINVAL, "%s: %#lx is not a live pin of this gdr_t", fn, handle.h);
    }
    return 0;
}

/*
 * The shape of every per-pin call but unpin: take a reference on g, lock the pin, run op,
 * unlock. op runs with the slot locked and leaves it locked: the caller unlocks.
 */
typedef int (*pin_op_fn)(struct vr_slot *s, struct vr_pin *pin, void *arg, const char *fn);

static int with_pin(gdr_t g, gdr_mh_t handle, pin_op_fn op, void *arg, const char *fn)
{
    struct vr_gdr *gdr;
    struct vr_slot *s;
    int rc = pin_get(g, handle, fn, &gdr, &s);

    if (rc)
        return rc;
    rc = op(s, s->obj, arg, fn);
    vr_slot_unlock(s);
    vr_gdr_put(gdr);
    return rc;
}

int vr_pin_unpin(gdr_t g, gdr_mh_t handle, const char *fn)
{
    struct vr_gdr *gdr;
    struct vr_slot *s;
    int rc = pin_get(g, handle, fn, &gdr, &s);

    if (rc)
        return rc;
    rc = pin_release_locked(s);             /* retires the slot, which unlocks it */
    vr_gdr_put(gdr);
    return rc;
}

static void release_pin(struct vr_slot *s, void *arg)
{
    pin_release_locked(s);
}

void vr_pins_release_owned(unsigned long owner)
{
    vr_slot_foreach_owned(&vr_pins, owner, release_pin, NULL);
}

struct gpu_range {
    uint64_t base, size;
};

static void forget_gpu_range(struct vr_slot *s, void *arg)
{
    const struct gpu_range *r = arg;
    struct vr_pin *pin = s->obj;

    if (pin->info.va < r->base + r->size && r->base < pin->info.va + pin->info.mapped_size)
        pin->dma_dev = VR_DMA_DEV_NONE;
    vr_slot_unlock(s);
}

void vr_pins_gpu_released(uint64_t base, uint64_t size)
{
    struct gpu_range r = { base, size };

    vr_slot_foreach(&vr_pins, forget_gpu_range, &r);
}

static int op_callback_flag(struct vr_slot *s, struct vr_pin *pin, void *arg, const char *fn)
{
    int rc = pin->ops->callback_flag(pin->ctx, pin->backend_pin, arg);

    return rc ? vr_fail(rc, "%s: %s", fn, vramio_strerror(rc)) : 0;
}

int vr_pin_callback_flag(gdr_t g, gdr_mh_t handle, int *flag, const char *fn)
{
    return with_pin(g, handle, op_callback_flag, flag, fn);
}

static int op_info(struct vr_slot *s, struct vr_pin *pin, void *arg, const char *fn)
{
    gdr_info_v2_t *out = arg;
    struct vr_pin_info bi = pin->info;
    gdr_mapping_type_t type = pin_mapped_here(pin) ? pin->map_type : GDR_MAPPING_TYPE_NONE;

    /* tm_cycles is how long the pin took, as gdrdrv has always reported it (its get_pages
     * time, at the module's rate). A backend that measures nothing leaves it 0: the core's
     * own measurement of its pin call stands in, at the rate of that clock, unless the
     * backend's table says the zeros are its answer (untimed). */
    if (!bi.tm_cycles && !pin->ops->untimed) {
        bi.tm_cycles = pin->pin_cycles;
        bi.cycles_per_ms = vr_cycles_per_ms();
    }
    *out = (gdr_info_v2_t){ .va = bi.va, .mapped_size = bi.mapped_size,
                            .page_size = bi.page_size, .tm_cycles = bi.tm_cycles,
                            .cycles_per_ms = bi.cycles_per_ms, .mapped = type != 0,
                            .wc_mapping = type == GDR_MAPPING_TYPE_WC, .mapping_type = type };
    return 0;
}

int vr_pin_info(gdr_t g, gdr_mh_t handle, gdr_info_v2_t *info, const char *fn)
{
    return with_pin(g, handle, op_info, info, fn);
}

struct map_args {
    void **va;
    size_t size;
    gdr_mapping_type_t want;
};

/*
 * Upstream's gdr_map refuses a pin whose address is not aligned: gdrdrv's mmap one not on a GPU
 * page (64 KiB), its dma-buf path one not on a host page (GDRCopy 2.6's sanity tests
 * basic_unaligned_mapping and basic_small_buffers_mapping assert it). No client relies on the
 * refusal (UCX, libfabric, NCCL and mscclpp pin GPU-page-aligned addresses; docs/dmabuf.md), so
 * every backend that can maps such a pin, at map + (addr - info.va). VRAMIO_UPSTREAM_ALIGNMENT=1
 * asks for upstream's refusal, on every backend alike: the pinned address must be a multiple
 * of the pin's page size, or of 64 KiB where that is larger. Where the kernel module refuses
 * by itself this changes nothing. The alignment required, or 0 when none is.
 */
static uint64_t map_alignment(const struct vr_pin *pin)
{
    const char *e = getenv("VRAMIO_UPSTREAM_ALIGNMENT");
    uint64_t page = pin->info.page_size;

    if (!e || strcmp(e, "1") != 0)
        return 0;
    return page && page < GPU_PAGE_SIZE ? page : GPU_PAGE_SIZE;
}

static int op_map(struct vr_slot *s, struct vr_pin *pin, void *arg, const char *fn)
{
    struct map_args *a = arg;
    gdr_mapping_type_t granted = GDR_MAPPING_TYPE_NONE;
    char why[VR_REASON_LEN] = "";
    uint64_t align = map_alignment(pin);
    void *ptr = NULL;
    int rc;

    if (pin_mapped_here(pin))
        rc = vr_fail(EAGAIN, "%s: the handle is already mapped", fn);
    else if (align && (pin->addr & (align - 1)))
        rc = vr_fail_err(EINVAL, "%s: the pinned address 0x%llx is not %llu-byte aligned, as "
                         "GDRCopy's gdr_map requires (VRAMIO_UPSTREAM_ALIGNMENT=1)", fn,
                         (unsigned long long)pin->addr, (unsigned long long)align);
    else if (a->size > pin->info.mapped_size)
        rc = vr_fail(EINVAL, "%s: size %zu exceeds the pinned %llu bytes", fn, a->size,
                     (unsigned long long)pin->info.mapped_size);
    else if (a->want != GDR_MAPPING_TYPE_NONE &&
             !(pin->ops->map_types & VR_MAP_TYPE_BIT(a->want)))
        rc = vr_fail_err(EINVAL, "%s: %s could not map %zu bytes: %s", fn, pin->ops->name,
                         a->size, pin->ops->map_types_why);
    else if ((rc = pin->ops->map(pin->ctx, pin->backend_pin, a->size, a->want, &ptr, &granted, why,
                                 sizeof(why))))
        vr_fail_err(rc, "%s: %s could not map %zu bytes: %s", fn, pin->ops->name, a->size,
                    why[0] ? why : vramio_strerror(rc));
    else if (!ptr || granted <= GDR_MAPPING_TYPE_NONE || granted >= GDR_MAPPING_TYPE_MAX) {
        pin->ops->unmap(pin->ctx, pin->backend_pin, ptr, a->size);
        rc = vr_fail_err(EIO, "%s: %s returned an invalid mapping", fn, pin->ops->name);
    } else {
        pin->map_ptr = ptr;
        pin->map_pid = vr_self_pid();
        pin->map_size = a->size;
        pin->map_copy_len = pin->ops->maps_whole_pin ? pin->info.mapped_size : a->size;
        pin->map_type = granted;
        vr_slot_set_mapping(s, ptr, pin->map_copy_len, granted);
        *a->va = ptr;
    }
    return rc;
}

int vr_pin_map(gdr_t g, gdr_mh_t handle, void **va, size_t size, gdr_mapping_type_t want,
               const char *fn)
{
    struct map_args a = { va, size, want };

    return with_pin(g, handle, op_map, &a, fn);
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

    if (!pin_mapped_here(pin))
        return vr_fail(EINVAL, "%s: the handle is not mapped", fn);
    /* Upstream munmaps whatever it is given and returns 0, and clients rely on that: DPDK
     * passes the device address, then unpins and frees. Release this handle's own mapping
     * (never an address it was not given by us) and say so. */
    if (a->va != pin->map_ptr || a->size != pin->map_size)
        vr_warn("%s: %p+%zu is not the mapping of handle %#lx (expected %p+%zu); releasing that "
                "mapping",
                fn, a->va, a->size, a->h, pin->map_ptr, pin->map_size);
    /* Hide the mapping from the copy path before it goes away. */
    vr_slot_set_mapping(s, NULL, 0, 0);
    rc = pin->ops->unmap(pin->ctx, pin->backend_pin, pin->map_ptr, pin->map_size);
    pin->map_ptr = NULL;
    pin->map_size = 0;
    return rc ? vr_fail_err(rc, "%s: %s", fn, vramio_strerror(rc)) : 0;
}

int vr_pin_unmap(gdr_t g, gdr_mh_t handle, void *va, size_t size, const char *fn)
{
    struct unmap_args a = { va, size, handle.h };

    return with_pin(g, handle, op_unmap, &a, fn);
}

static int op_handle_backend(struct vr_slot *s, struct vr_pin *pin, void *arg, const char *fn)
{
    *(vramio_backend_t *)arg = pin->ops->id;
    return 0;
}

int vr_pin_backend(gdr_t g, gdr_mh_t handle, vramio_backend_t *backend, const char *fn)
{
    return with_pin(g, handle, op_handle_backend, backend, fn);
}

/* Cold: kept out of line so that the copy path stays a handful of instructions. */
__attribute__((noinline, cold))
int vr_copy_fail(const char *fn, unsigned long h, const void *p, size_t n, int not_pin)
{
    if (not_pin)
        return vr_fail(EINVAL, "%s: %#lx is not a live pin handle", fn, h);
    return vr_fail(EINVAL, "%s: %p+%zu is not inside the mapping of handle %#lx", fn, p, n, h);
}

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
        return vr_copy_fail(fn, handle.h, p, n, 1);
    pin = s->obj;
    ok = pin_mapped_here(pin) && host;
    if (ok) {
        m = (struct vr_mapping){ (uintptr_t)pin->map_ptr, pin->map_copy_len, (int)pin->map_type };
        ok = vr_in_mapping(&m, p, n);
    }
    if (ok)
        *r = (struct vr_dma_range){ .dev_addr = pin->info.va + ((uintptr_t)p - m.base),
                                    .type = pin->map_type, .dma_dev = pin->dma_dev,
                                    .avail = m.len - ((uintptr_t)p - m.base),
                                    .mixed = vr_mappings_mixed() };
    vr_slot_unlock(s);
    return ok ? 0 : vr_copy_fail(fn, handle.h, p, n, 0);
}

int vr_pin_dma_start(gdr_mh_t handle, struct vr_dma_range *r, const char *fn)
{
    struct vr_mapping m;

    if (vr_pin_mapping(handle.h, &m) || !m.len)
        return vr_fail(EINVAL, "%s: %#lx is not a mapped pin", fn, handle.h);
    return vr_pin_dma_range(handle, (const void *)m.base, 1, &m, r, fn);
}

void vr_pin_set_dma_dev(gdr_mh_t handle, int dma_dev)
{
    struct vr_slot *s = vr_slot_lock(&vr_pins, handle.h);

    if (s) {
        ((struct vr_pin *)s->obj)->dma_dev = dma_dev;
        vr_slot_unlock(s);
    }
}

/* SPDX-License-Identifier: MIT */
/*
 * backend.h - the interface between the core and a backend: core/instance.c probes and opens
 * the backends through it, core/pin.c pins, maps and unpins through it.
 *
 * A backend is one way of giving the CPU a mapping of GPU memory. Each backend file defines
 * one `const struct vr_backend_ops`: what it can do that never changes as data (the attribute
 * answers, the gdrdrv version it behaves like, the mapping types it grants), and the ops it
 * implements. A slot it leaves out (NULL, 0) takes the default of backend_ops.c: the core
 * merges each table over the defaults once, when it opens a gdr_t, and calls only merged
 * tables, so no call site tests a slot for NULL (rdma-core's verbs_set_ops does the same).
 * The core owns handles, argument checks, locking and the copy engine; a backend owns its
 * per-gdr_t context and its per-pin state, and is told only about valid objects.
 *
 * The core, not the backend: rounds the range to whole GPU pages (vr_pin_req.va, .len);
 * refuses a forked child's use of its parent's gdr_t and pins (instance.c, vr_gdr_get), so
 * every op runs in the process that opened the context it is given; times each pin call
 * (tm_cycles, unless the backend measured it or is untimed); refuses a mapping type the
 * table's map_types does not list.
 *
 * Conventions: every int-returning op returns 0 or a positive errno. Ops that can fail for a
 * reason worth telling the user take (why, len) and write one line there: the core gives
 * VR_REASON_LEN bytes, and a reason that wraps another's or quotes text from outside is written
 * with vr_reason, which cuts it in its middle, never its end (util/reason.h). Ops may be called
 * concurrently from several threads, but never twice at once on the same pin (the core
 * serialises calls per pin); a backend protects its own shared state (caches, counters).
 */
#ifndef VRAMIO_BACKEND_H
#define VRAMIO_BACKEND_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include "gdrapi.h"
#include "vramio.h"

/* What the caller asked to pin. */
struct vr_pin_req {
    uint64_t addr;       /* as given */
    uint64_t size;       /* as given, > 0 */
    uint64_t va, len;    /* [addr, addr + size) in whole GPU pages (the core rounds it) */
    uint32_t flags;      /* gdr_pin_flags_t, already checked against known flags */
    uint64_t p2p_token;  /* legacy gdr_pin_buffer tokens; 0 from gdr_pin_buffer_v2 */
    uint32_t va_space;
    int legacy;          /* 1: came through gdr_pin_buffer, 0: gdr_pin_buffer_v2 */
};

/* What a backend's pin reports about the pin, true for its whole life (the core keeps it and
 * builds gdr_info_v2_t from it; whether and how it is mapped is the core's own record). */
struct vr_pin_info {
    uint64_t va;                     /* start of the pinned range, page aligned */
    uint64_t mapped_size;            /* rounded size of the pinned range */
    uint32_t page_size;
    uint64_t tm_cycles;              /* cycles the pin took, if measured here (gdrdrv), else 0 */
    uint32_t cycles_per_ms;          /* their rate; the core fills both when tm_cycles is 0 */
};

/* The kernel's ENOTSUPP (not a user-space errno), which NVIDIA's driver gives for its
 * NV_ERR_NOT_SUPPORTED: what mmap of a dma-buf export returns where the driver does not allow
 * CPU mappings, and what nvidia_p2p_get_pages returns, through gdrdrv, for a FORCE_BAR1 pin on
 * a GPU without a coherent link. */
#define VR_KERNEL_ENOTSUPP 524

/* vr_backend_ops.map_types: a set of gdr_mapping_type_t, bit (1 << type). */
#define VR_MAP_TYPE_BIT(t) (1u << (t))
#define VR_MAP_TYPES_ALL   (VR_MAP_TYPE_BIT(GDR_MAPPING_TYPE_WC) | \
                            VR_MAP_TYPE_BIT(GDR_MAPPING_TYPE_CACHING) | \
                            VR_MAP_TYPE_BIT(GDR_MAPPING_TYPE_DEVICE))

struct vr_backend_ops {
    vramio_backend_t id;
    const char *name;

    /* A backend that serves only some kinds of GPU memory sets both: gdr_open then does not
     * rely on it alone (a client reads a non-NULL gdr_open as "cudaMalloc memory can be
     * pinned") unless the user opted in through GDRCOPY_BACKEND=<name> or opt_in_env=1.
     * serves says which memory it pins, for the reason shown when it is left out. NULL for a
     * backend that pins whatever CUDA allocates. */
    const char *opt_in_env;
    const char *serves;
    /* The environment variable that, set to exactly "1" (GDRCopy's rule for its
     * GDRCOPY_USE_DMABUF_MMAP), makes this the only backend gdr_open considers; NULL: none.
     * vr_backend_forced() reads it, for the core and the backend alike. */
    const char *force_env;
    /* 1: where a backend before it in the order is usable, gdr_open does not probe this one
     * (its probe starts a driver the program may never have asked for: cuInit); it is probed
     * at the first pin those refuse as not theirs (ENOTSUP), once per gdr_t, and then serves
     * what they refuse. Alone, or chosen by name or force_env, it is probed by gdr_open. */
    int lazy;

    /* ---- static capabilities (data) ---- */

    /* gdr_get_attribute's answer for each attribute; 0 where left out. */
    int attr[GDR_ATTR_MAX];
    /* gdr_driver_get_version's answer: the kernel module version this backend behaves like.
     * Left out ({0, 0}): 2.6, a persistent-mode gdrdrv, so that clients comparing the version
     * against 2.1 / 2.5 take modern paths. */
    struct { int major, minor; } version;
    /* The mapping types map can grant when asked for one (VR_MAP_TYPE_BIT); the core refuses
     * the others with EINVAL and map_types_why. Left out (0): all of them, map decides. */
    unsigned map_types;
    const char *map_types_why;
    /* 1: map always maps the whole pinned range [info.va, info.va + mapped_size), whatever
     * size it is given, so copies may reach any of it (not only the size the caller mapped). */
    int maps_whole_pin;
    /* 1: the pin's tm_cycles and cycles_per_ms are reported as the backend gives them, 0 included
     * (GDRCopy documents 0 for both on dma-buf); 0: the core times a pin that reports none. */
    int untimed;

    /* ---- ops ---- */

    /* Is this backend usable in this process? Cheap (no GPU context creation where avoidable);
     * the backend may cache the answer. 0 if usable, else an errno and why. */
    int (*probe)(char *why, size_t len);

    /* For a narrow backend (opt_in_env set) that gdr_open would keep with no broad backend
     * beside it: make sure, whatever that costs (the vulkan backend makes its Vulkan instance
     * here), that it can pin the memory a client will trust it with: that of every GPU
     * (every = 1: opted in by its variable, which promises what upstream's module promises,
     * "cudaMalloc memory can be pinned", vramio-run making that memory pinnable), or of at
     * least one (every = 0: chosen by name, the user knowing which memory they pin). A
     * failure leaves the backend out, so gdr_open fails as upstream's does without its
     * module. Not called where a broad backend is usable: there the narrow one only takes
     * what that one refuses, and finds out at the first such pin. 0, or an errno and why.
     * Left out: the probe's answer stands. */
    int (*confirm)(int every, char *why, size_t len);

    /* Per-gdr_t state, made by gdr_open after a successful probe; *ctx may be NULL.
     * Left out: no state (*ctx NULL, close does nothing). */
    int (*open)(void **ctx, char *why, size_t len);
    void (*close)(void *ctx);

    /* Pin a range and fill *info about the pin. ENOTSUP (== EOPNOTSUPP) means "not memory
     * this backend serves": the core then offers the range to the next backend. Any other
     * error is final. */
    int (*pin)(void *ctx, const struct vr_pin_req *req, void **pin, struct vr_pin_info *info,
               char *why, size_t len);
    /* Drop a pin. The core has already unmapped it. Must not fail on a valid pin
     * (returns an errno only when the driver reports one; the pin is gone either way). */
    int (*unpin)(void *ctx, void *pin);

    /* Map the pinned range for the CPU: size is what the caller passed (the core checks it
     * against mapped_size), want is the requested type (NONE = backend's choice; otherwise
     * one of map_types). Returns the pointer that corresponds to info.va and the type
     * granted; EINVAL if want cannot be had. A failure may say why (one line in why, as pin
     * does); the core logs it. */
    int (*map)(void *ctx, void *pin, size_t size, gdr_mapping_type_t want,
               void **ptr, gdr_mapping_type_t *granted, char *why, size_t len);
    /* ptr and size: what map returned and the size the caller mapped. Called only on a mapped
     * pin: the core keeps the mapping's state, the backend needs none.
     * Left out: nothing to undo. */
    int (*unmap)(void *ctx, void *pin, void *ptr, size_t size);

    /* 1 in *flag when the memory was invalidated under the pin.
     * Left out: pins are never invalidated (0). */
    int (*callback_flag)(void *ctx, void *pin, int *flag);

    /* For answers that depend on the driver at hand rather than the backend: called with
     * the table's attr[attr] (a known attribute: the core rejects unknown ones), or its
     * version, already in the outputs, to change them. Must leave sensible values even when
     * returning an error (clients ignore driver_version's return code).
     * Left out: the table's answers stand. */
    int (*get_attr)(void *ctx, gdr_attr_t attr, int *value);
    int (*driver_version)(void *ctx, int *major, int *minor);

    /* Whether this backend pins a range that spans several VMM allocations mapped side by
     * side in one reservation of GPU gpu (device ordinal) as one pin with one contiguous
     * mapping: 1 or 0, or -1 when it cannot say now (its check failed for now:
     * vr_failed_for_now) and will be asked again. vramio_alloc's pool makes its large
     * allocations of such chunks only where the first usable backend says 1 (core/pins.h,
     * vr_pins_can_span), so that a pin inside one chunk costs that chunk alone and a pin across
     * chunks still works. May be slow the first time (the vulkan backend asks its Vulkan
     * device); cached after. Left out: 0. */
    int (*spans)(int gpu);
};

/*
 * backend_ops.c: *out = *in with every slot that in leaves out set to its default (above);
 * the op slots a backend must fill (probe, pin, map) default to a refusal (ENOTSUP), so that
 * even a partial table cannot make the core call through NULL.
 */
void vr_backend_merge(struct vr_backend_ops *out, const struct vr_backend_ops *in);

/* 1 when ops->force_env is set to exactly "1" (not "01", not "2"), else 0. */
int vr_backend_forced(const struct vr_backend_ops *ops);

/* The backends, defined one per file; each is always compiled in and reports itself
 * unusable (with the reason) where its requirements are missing. */
extern const struct vr_backend_ops vr_backend_gdrdrv;
extern const struct vr_backend_ops vr_backend_dmabuf;
extern const struct vr_backend_ops vr_backend_vulkan;

/* Whether rc, the failure of a check or trial whose answer a backend keeps for the process
 * (dmabuf's trial export, the vulkan backend's checks of placed maps and of pools), is this
 * moment's rather than the machine's: memory (the GPU's, BAR1's) or descriptors ran out, or
 * something was busy or interrupted. Such an answer is not kept: the next call tries again,
 * where a kept one would refuse every such call for the rest of the process. */
static inline int vr_failed_for_now(int rc)
{
    return rc == ENOMEM || rc == EMFILE || rc == ENFILE || rc == EAGAIN || rc == EBUSY ||
           rc == EINTR;
}

#endif /* VRAMIO_BACKEND_H */

/* SPDX-License-Identifier: MIT */
/*
 * core.h - what the core files of the library (gdrapi.c, instance.c, pin.c) share: the
 * objects behind gdr_t and gdr_mh_t and the calls between those files, over export.h (the
 * export macro, error reporting) and pins.h (what the directories beside the core, alloc/
 * and dma/, call in it).
 */
#ifndef VRAMIO_CORE_H
#define VRAMIO_CORE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include "backends/backend.h"
#include "export.h"
#include "handles.h"
#include "process/log.h"
#include "pins.h"

/* The reasons of every backend joined ("name: reason; name: reason"), as a failed gdr_open
 * (instance.c) and a pin that no backend took (pin.c) give them, whole in the call's line. */
#define VR_REASONS_LEN ((VRAMIO_BACKEND_COUNT - VRAMIO_BACKEND_GDRDRV) * (VR_REASON_LEN + 16))
_Static_assert(VR_REASONS_LEN + 128 <= VR_LINE_LEN,
               "a failed call's line holds its words and every backend's reason");

/* One usable backend of an open gdr_t: ops is one of the instance's merged tables. state:
 * VR_ACTIVE_READY, or for a lazy backend (backend.h) not probed yet VR_ACTIVE_DEFERRED, then
 * READY or VR_ACTIVE_FAILED once its first pin probed it (vr_active_ready); ctx is set before
 * state becomes READY (read and written with __atomic, acquire / release). */
enum { VR_ACTIVE_READY, VR_ACTIVE_DEFERRED, VR_ACTIVE_FAILED };
struct vr_active {
    const struct vr_backend_ops *ops;
    void *ctx;
    int state;
};

/* What a gdr_t names. Freed only by gdr_close, after every call using it has returned. */
struct vr_gdr {
    unsigned long token;                   /* the gdr_t value handed out */
    pid_t pid;                             /* the process that opened it */
    struct vr_slot *slot;                  /* its slot in vr_gdrs */
    int nactive;
    struct vr_active active[VRAMIO_BACKEND_COUNT];   /* usable backends, in priority order */
    /* By vramio_backend_t: each backend's table merged over the defaults (backend.h), what
     * every call on this instance and its pins goes through; 0 usable, else an errno. */
    struct vr_backend_ops ops[VRAMIO_BACKEND_COUNT];
    int status[VRAMIO_BACKEND_COUNT];
    char why[VRAMIO_BACKEND_COUNT][VR_REASON_LEN];
    pthread_mutex_t lazy_lock;             /* a deferred probe, and status / why of it */
};

/* What a pin handle names; every field is under the pin slot's lock. */
struct vr_pin {
    const struct vr_backend_ops *ops;      /* its instance's merged table (freed after it) */
    void *ctx;
    void *backend_pin;                     /* the backend's pin */
    uint64_t addr;                         /* the address the caller pinned */
    struct vr_pin_info info;               /* what the backend's pin reported */
    uint64_t pin_cycles;                   /* how long the backend took to pin (arch/cycles.h) */
    void *map_ptr;                         /* NULL when not mapped */
    pid_t map_pid;                         /* the process that made the mapping */
    size_t map_size;                       /* as the caller mapped it */
    size_t map_copy_len;                   /* the bytes copies may reach: see maps_whole_pin */
    gdr_mapping_type_t map_type;
    int dma_dev;                           /* the copy engine's finding: VR_DMA_DEV_* (pins.h) */
};

/*
 * The object of a live gdr_t of this process, with a reference taken (gdr_close waits for
 * it): 0, or EINVAL (not an open gdr_t) or EACCES (opened by the parent of this forked
 * process), recorded as the last error of fn. The fork check is here, once, before any
 * backend code can run on objects that belong to another process.
 */
int vr_gdr_get(gdr_t g, const char *fn, struct vr_gdr **gdr);
void vr_gdr_put(struct vr_gdr *gdr);

/*
 * gdr_open's choice, for table (indexed by vramio_backend_t, probed in that order): merges
 * each table into gdr->ops, fills gdr->status and gdr->why for every backend and, when open
 * is set, the usable ones' contexts in gdr->active. Reads the environment on every call. 0,
 * or EINVAL for an unknown GDRCOPY_BACKEND (the reason in reason).
 */
int vr_choose_backends(const struct vr_backend_ops *const table[VRAMIO_BACKEND_COUNT],
                       struct vr_gdr *gdr, int open, char *reason, size_t len);
/* gdr->active[i] ready to pin: 0, probing and opening a deferred backend first (once, under
 * gdr->lazy_lock). An errno with why when its probe or open failed (then or before). */
int vr_active_ready(struct vr_gdr *gdr, int i, char *why, size_t len);

/*
 * ---- instance.c: the gdr_t object ----
 * gdr_open with the backends of table (indexed by vramio_backend_t): 0 and the registered
 * instance in *gdr, or an errno recorded as the last error.
 */
int vr_instance_open(const struct vr_backend_ops *const table[VRAMIO_BACKEND_COUNT],
                     struct vr_gdr **gdr);
/* The first half of gdr_close: mark g closing and wait until no call uses it. 0 with the
 * instance in *gdr (its pins are then released and vr_instance_free ends the close), 0 with
 * *gdr NULL when there is nothing to release in this process (a forked child), or EINVAL. */
int vr_instance_close_begin(gdr_t g, struct vr_gdr **gdr);
void vr_instance_free(struct vr_gdr *gdr);
/* vramio_get_backend, vramio_backend_status, vramio_backend_probe, gdr_driver_get_version
 * and gdr_get_attribute past their checks: the first usable backend's answers, its table's
 * data changed by its ops (backend.h). */
int vr_instance_backend(gdr_t g, vramio_backend_t *backend);
int vr_instance_driver_version(gdr_t g, int *major, int *minor);
int vr_instance_attribute(gdr_t g, gdr_attr_t attr, int *v);
int vr_instance_status(gdr_t g, vramio_backend_t backend, char *reason, size_t len);
int vr_backends_probe(const struct vr_backend_ops *const table[VRAMIO_BACKEND_COUNT],
                      vramio_backend_t backend, char *reason, size_t len);
/* vr_pins_can_span (pins.h) for a table of backends. */
int vr_backends_span(const struct vr_backend_ops *const table[VRAMIO_BACKEND_COUNT], int gpu);

/*
 * ---- pin.c: the pins of a gdr_t ----
 * Each takes a reference on g for its duration and names fn in its errors; arguments are
 * checked by the caller (gdrapi.c).
 */
int vr_pin_create(gdr_t g, const struct vr_pin_req *req, gdr_mh_t *handle, const char *fn);
/* Round [addr, addr+size) out to whole GPU pages (GPU_PAGE_SIZE). 0, or EINVAL when size is
 * 0 or the range, rounded, wraps around the end of the address space. */
int vr_gpu_page_range(uint64_t addr, uint64_t size, uint64_t *va, uint64_t *len);
int vr_pin_unpin(gdr_t g, gdr_mh_t handle, const char *fn);
int vr_pin_callback_flag(gdr_t g, gdr_mh_t handle, int *flag, const char *fn);
int vr_pin_info(gdr_t g, gdr_mh_t handle, gdr_info_v2_t *info, const char *fn);
int vr_pin_map(gdr_t g, gdr_mh_t handle, void **va, size_t size, gdr_mapping_type_t want,
               const char *fn);
int vr_pin_unmap(gdr_t g, gdr_mh_t handle, void *va, size_t size, const char *fn);
int vr_pin_backend(gdr_t g, gdr_mh_t handle, vramio_backend_t *backend, const char *fn);
/* Unmap and unpin every pin of the instance whose token is owner (gdr_close). */
void vr_pins_release_owned(unsigned long owner);

/* The error of a copy whose handle is not a live pin (not_pin) or whose range is not inside
 * its mapping: recorded, logged at debug level, EINVAL. Cold, out of line (the copy path). */
__attribute__((noinline, cold))
int vr_copy_fail(const char *fn, unsigned long h, const void *p, size_t n, int not_pin);

#endif /* VRAMIO_CORE_H */

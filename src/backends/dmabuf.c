/* SPDX-License-Identifier: MIT */
/*
 * dmabuf.c - GPU memory mapped for the CPU through a CUDA dma-buf export, as GDRCopy 2.6
 * does it: cuMemGetHandleForAddressRange(DMA_BUF_FD) per pin (one fd per pin) in a context of
 * the pointer's device, mmap of the fd for the mapping, exported and mapped in whole host
 * pages, FORCE_PCIE passed as the export's PCIE mapping flag, CACHING on a coherent platform.
 *
 * gdr_open uses it when the driver says it can (version 13.3 or newer, cuInit, some device
 * with DMA_BUF_SUPPORTED), as upstream decides; where gdrdrv opened, not before a pin gdrdrv
 * refuses (the table's lazy: CUDA is not touched behind a program that upstream would leave
 * alone). Where the user forces it (GDRCOPY_USE_DMABUF_MMAP=1) on an older driver, a trial
 * export and mmap decides instead, so gdr_open never promises what a 580 driver (exports,
 * refuses every mmap with errno 524) cannot keep; its verdict is kept for the process only
 * when the driver gave one (mapped, or refused), not after a failure that may pass (out of
 * memory or descriptors). A buffer whose mmap alone is refused fails its gdr_map.
 *
 * A primary context it has to retain (a thread with no context of the memory's device, memory
 * no context owns) is held by the pin that needed it and released at unpin; the trial's is
 * released at once. Nothing of CUDA but cuInit stays behind a gdr_open that fails.
 *
 * Unlike upstream it asserts nothing, answers the driver version and the legacy get_info,
 * maps unaligned pins, exports in the memory's device even when another device's context is
 * current, and keeps its fds and mappings out of forked and exec'd children: the fds are
 * close-on-exec, and closed in a forked child as it starts (docs/dmabuf.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "backend.h"
#include "process/cuda_ctx.h"
#include "cuda_loader.h"
#include "dmabuf_policy.h"
#include "process/fds.h"
#include "process/fork.h"
#include "reason.h"            /* util/: VR_REASON_LEN, vr_reason */

struct dmabuf_pin {
    int fd;
    uint64_t va, len;                /* the exported range, whole host pages */
    gdr_mapping_type_t type;         /* what a mapping of it is */
    int ctx_dev;                     /* the device whose primary context it holds, or -1 */
    const struct vr_cuda *cu;
    struct dmabuf_pin *prev, *next;  /* in live_pins, under export_lock */
};

typedef CUresult (*export_fn)(void *out, CUdeviceptr ptr, size_t size,
                              CUmemRangeHandleType type, unsigned long long flags);

/* cuMemGetHandleForAddressRange as cuGetProcAddress gives it for the 13.3 ABI (the first whose
 * exports the CPU may map), as GDRCopy asks for it; resolved once. An older driver (only a
 * forced trial runs on one) is asked at its own version, one it knows. */
static export_fn export_entry;
static char export_why[VR_REASON_LEN];
static pthread_once_t export_once = PTHREAD_ONCE_INIT;
/* Set by every export_get (the same driver table each time) and read by export_resolve
 * inside the once: atomic, since pins on several threads store it while the once reads it. */
static const struct vr_cuda *_Atomic export_cu;

/* The forced probe's trial on a driver older than 13.3: 0 unknown (or not settled: tried
 * again), 1 maps, -1 refused. */
static _Atomic int trial_state;
static int trial_err;
static char trial_why[VR_REASON_LEN];
static pthread_mutex_t trial_lock = PTHREAD_MUTEX_INITIALIZER;

/* Held from an export until its fd is close-on-exec and listed in live_pins, and by every fork
 * (fork.h): a child forked meanwhile, which might exec, cannot inherit the fd (and the GPU
 * pages it holds), and every fd a child inherits is in the list it closes. */
static pthread_mutex_t export_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dmabuf_pin *live_pins;

/* In a forked child, before it runs on: the pins are the parent's (every call on them is
 * refused here), but their fds would keep the exports, and the GPU pages, alive for as long as
 * the child lives. Closed, so that the parent's unpin frees them. */
static void fork_child_close_exports(void)
{
    for (struct dmabuf_pin *p = live_pins; p; p = p->next) {
        close(p->fd);
        p->fd = -1;
    }
    live_pins = NULL;
}

/* At load, not at the first use (fork.h). */
__attribute__((constructor)) static void fork_register(void)
{
    vr_fork_protect_mutex(&trial_lock);
    vr_fork_protect_mutex(&export_lock);
    vr_fork_on_child(fork_child_close_exports);
}

static int driver_version(const struct vr_cuda *cu)
{
    int v = 0;

    if (cu->cuDriverGetVersion(&v) != CUDA_SUCCESS)
        return 0;
    return v;
}

static void export_resolve(void)
{
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    void *fn = NULL;
    const struct vr_cuda *cu = atomic_load_explicit(&export_cu, memory_order_relaxed);
    int v = driver_version(cu);
    CUresult r;

    if (v <= 0 || v > VR_DMABUF_MIN_DRIVER)
        v = VR_DMABUF_MIN_DRIVER;
    r = cu->cuGetProcAddress("cuMemGetHandleForAddressRange", &fn, v,
                             CU_GET_PROC_ADDRESS_DEFAULT, &st);
    if (r == CUDA_SUCCESS && fn && st == CU_GET_PROC_ADDRESS_SUCCESS)
        export_entry = (export_fn)fn;
    else
        snprintf(export_why, sizeof(export_why), "cuGetProcAddress(cuMemGetHandleForAddressRange, "
                 "%d) found nothing: %s (status %d)", v, vr_cuda_errstr(r), (int)st);
}

static int export_get(const struct vr_cuda *cu, export_fn *fn, char *why, size_t len)
{
    atomic_store_explicit(&export_cu, cu, memory_order_relaxed);
    pthread_once(&export_once, export_resolve);
    if (!export_entry) {
        vr_reason(why, len, "%s", export_why);
        return ENOSYS;
    }
    *fn = export_entry;
    return 0;
}

/* A CUdevice attribute, 0 when the driver cannot say. */
static int dev_attr(const struct vr_cuda *cu, CUdevice_attribute a, CUdevice d)
{
    int v = 0;

    return cu->cuDeviceGetAttribute(&v, a, d) == CUDA_SUCCESS ? v : 0;
}

/* The first device with DMA_BUF_SUPPORTED in *dev; ENOTSUP (or the error) when none has it. */
static int dmabuf_device(const struct vr_cuda *cu, int *dev, char *why, size_t len)
{
    int n = 0, i;
    CUdevice d;
    CUresult r = cu->cuDeviceGetCount(&n);

    if (r != CUDA_SUCCESS || n <= 0) {
        snprintf(why, len, "no CUDA device (%s)",
                 r == CUDA_SUCCESS ? "count 0" : vr_cuda_errstr(r));
        return ENODEV;
    }
    for (i = 0; i < n; i++) {
        if (cu->cuDeviceGet(&d, i) == CUDA_SUCCESS &&
            dev_attr(cu, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, d)) {
            *dev = i;
            return 0;
        }
    }
    snprintf(why, len, "none of the %d CUDA device%s supports dma-buf "
             "(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0)", n, n > 1 ? "s" : "");
    return ENOTSUP;
}

/* Try mmap of an export of a small allocation of device dev: the forced probe's trial. */
static int mmap_trial(const struct vr_cuda *cu, export_fn fn, int dev, char *why, size_t len)
{
    struct vr_cuda_ctx_guard guard;
    CUdeviceptr d = 0;
    CUresult r;
    int fd = -1, rc;
    const size_t sz = 2u << 20;
    void *m;

    rc = vr_cuda_ctx_borrow_device(cu, dev, NULL, &guard, why, len);
    if (rc)
        return rc;
    r = cu->cuMemAlloc(&d, sz);
    if (r != CUDA_SUCCESS) {
        snprintf(why, len, "the trial's allocation of %zu bytes on device %d failed: %s", sz, dev,
                 vr_cuda_errstr(r));
        rc = vr_cuda_errno(r);
    } else if ((r = fn(&fd, d, sz, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0)) != CUDA_SUCCESS) {
        snprintf(why, len, "the CUDA driver does not export device memory as dma-buf: %s",
                 vr_cuda_errstr(r));
        rc = vr_cuda_errno(r);
    } else {
        m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED)
            rc = vr_dmabuf_mmap_error(errno, driver_version(cu), why, len);
        else
            munmap(m, sz);
    }
    if (fd >= 0)
        close(fd);
    if (d)
        cu->cuMemFree(d);
    vr_cuda_ctx_leave(cu, &guard);
    return rc;
}

/* The trial's outcome, learnt once per process where the driver settled it. */
static int mmap_trial_once(const struct vr_cuda *cu, export_fn fn, int dev, char *why,
                           size_t len)
{
    int st, err = 0;

    pthread_mutex_lock(&trial_lock);
    st = atomic_load_explicit(&trial_state, memory_order_relaxed);
    if (st == 0) {
        err = mmap_trial(cu, fn, dev, why, len);
        if (vr_dmabuf_trial_settled(err)) {
            trial_err = err;
            snprintf(trial_why, sizeof(trial_why), "%s", err ? why : "");
            st = err ? -1 : 1;
            atomic_store_explicit(&trial_state, st, memory_order_release);
        }
    } else if (st < 0) {
        err = trial_err;
        vr_reason(why, len, "%s", trial_why);
    }
    pthread_mutex_unlock(&trial_lock);
    return err;
}

/* The driver entry points this backend calls beyond cuInit. */
static int cuda_has_dmabuf(const struct vr_cuda *cu, char *why, size_t len)
{
    int rc = 0;

#define VR_NEED(fn) if (!rc) rc = vr_cuda_require(cu, fn, why, len);
    VR_NEED(cuGetProcAddress) VR_NEED(cuCtxGetCurrent) VR_NEED(cuCtxGetDevice)
    VR_NEED(cuCtxPushCurrent) VR_NEED(cuCtxPopCurrent) VR_NEED(cuDeviceGet)
    VR_NEED(cuDeviceGetCount) VR_NEED(cuDeviceGetAttribute) VR_NEED(cuPointerGetAttribute)
    VR_NEED(cuDevicePrimaryCtxRetain) VR_NEED(cuDevicePrimaryCtxRelease) VR_NEED(cuMemAlloc)
    VR_NEED(cuMemFree)
#undef VR_NEED
    return rc;
}

static int dmabuf_probe(char *why, size_t len)
{
    const struct vr_cuda *cu = vr_cuda_load(why, len);
    int rc, forced = vr_backend_forced(&vr_backend_dmabuf), old, dev = 0;
    export_fn fn;

    if (!cu)
        return ENODEV;
    rc = cuda_has_dmabuf(cu, why, len);
    if (rc)
        return rc;
    old = vr_dmabuf_driver_check(driver_version(cu), why, len);
    if (old && !forced)
        return old;
    rc = vr_cuda_init(&cu, why, len);
    if (!rc)
        rc = export_get(cu, &fn, why, len);
    if (!rc)
        rc = dmabuf_device(cu, &dev, why, len);
    /* Forced on a driver that does not say it maps exports: find out (once) whether it does. */
    if (!rc && old)
        rc = mmap_trial_once(cu, fn, dev, why, len);
    return rc;
}

static int export_refused(CUresult r, const struct vr_dmabuf_plan *plan, char *why, size_t wlen)
{
    const unsigned long long va = plan->va, len = plan->len;
    const int dev = plan->device;
    int fde = r == CUDA_ERROR_OPERATING_SYSTEM ? vr_fds_exhausted() : 0;
    int rc = vr_dmabuf_export_errno(r, fde, plan->pcie_flag);

    if (rc == EMFILE || rc == ENFILE) {
        /* The advice ends the reason, and stays however short the buffer (vr_reason). */
        vr_reason(why, wlen, "dma-buf export of 0x%llx + %llu failed: %s: the %s is out of file "
                  "descriptors (%s; each pin holds one dma-buf fd, the limit is %llu: raise it "
                  "with ulimit -n, or unpin)", va, len,
                  vr_cuda_errstr(r), rc == EMFILE ? "process" : "system",
                  rc == EMFILE ? "EMFILE" : "ENFILE", vr_fds_limit());
    } else if (rc == EINVAL) {
        snprintf(why, wlen, "GDR_PIN_FLAG_FORCE_PCIE refused for device %d (%s): the driver "
                 "maps through the PCIe BAR on request only on a platform with a coherent "
                 "(C2C) link; pin without the flag", dev, vr_cuda_errstr(r));
    } else {
        snprintf(why, wlen, "dma-buf export of 0x%llx + %llu (device %d) refused: %s",
                 va, len, dev, vr_cuda_errstr(r));
    }
    return rc;
}

/* The plan's export into p->fd; the fd is close-on-exec, and p listed for a forked child to
 * close, before any fork can copy it. */
static int dmabuf_export(export_fn fn, const struct vr_dmabuf_plan *plan, struct dmabuf_pin *p,
                         char *why, size_t wlen)
{
    const CUdeviceptr va = (CUdeviceptr)plan->va;
    CUresult r;
    int err = 0;

    pthread_mutex_lock(&export_lock);
    r = fn(&p->fd, va, plan->len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, plan->export_flags);
    if (r == CUDA_SUCCESS && fcntl(p->fd, F_SETFD, FD_CLOEXEC) != 0) {
        err = errno;
        close(p->fd);
    } else if (r == CUDA_SUCCESS) {
        p->next = live_pins;
        if (live_pins)
            live_pins->prev = p;
        live_pins = p;
    }
    pthread_mutex_unlock(&export_lock);
    if (r != CUDA_SUCCESS)
        return export_refused(r, plan, why, wlen);
    if (err)
        snprintf(why, wlen, "cannot make the dma-buf fd close-on-exec: %s", strerror(err));
    return err;
}

/* What the pin's plan rests on, asked of the driver once and nothing decided; owner: the
 * memory's context (NULL when none owns it), for the export's context. The device is asked
 * about only when the pointer names one. */
static void pin_facts(const struct vr_cuda *cu, const struct vr_pin_req *req,
                      struct vr_dmabuf_pin_facts *f, CUcontext *owner)
{
    const CUdeviceptr addr = (CUdeviceptr)req->addr;
    CUdevice dev;
    int ord = -1;

    *f = (struct vr_dmabuf_pin_facts){ .addr = req->addr, .size = req->size,
                                       .pin_flags = req->flags,
                                       .host_page = (uint64_t)sysconf(_SC_PAGESIZE),
                                       .device = -1 };
    *owner = NULL;
    f->ptr_result = cu->cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, addr);
    if (f->ptr_result == CUDA_SUCCESS)
        f->ptr_result = cu->cuDeviceGet(&dev, ord);
    if (f->ptr_result != CUDA_SUCCESS)
        return;
    f->device = ord;
    f->dmabuf_supported = dev_attr(cu, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev);
    f->coherent = dev_attr(cu, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
                           dev);
    if (cu->cuPointerGetAttribute(owner, CU_POINTER_ATTRIBUTE_CONTEXT, addr) != CUDA_SUCCESS)
        *owner = NULL;
}

/* The plan carried out: the export made in a context of the plan's device. A primary context
 * retained for it (no context of the device current, memory no context owns) stays with the
 * pin: the export was made in it. */
static int pin_execute(const struct vr_cuda *cu, export_fn fn, const struct vr_dmabuf_plan *plan,
                       CUcontext owner, struct dmabuf_pin **out, char *why, size_t len)
{
    struct vr_cuda_ctx_guard guard;
    struct dmabuf_pin *p = calloc(1, sizeof(*p));
    int rc;

    if (!p) {
        snprintf(why, len, "out of memory");
        return ENOMEM;
    }
    *p = (struct dmabuf_pin){ .fd = -1, .va = plan->va, .len = plan->len, .ctx_dev = -1,
                              .cu = cu, .type = plan->map_type };
    rc = vr_cuda_ctx_borrow_device(cu, plan->device, owner, &guard, why, len);
    if (!rc) {
        rc = dmabuf_export(fn, plan, p, why, len);
        if (!rc)
            p->ctx_dev = vr_cuda_ctx_keep(&guard);
        vr_cuda_ctx_leave(cu, &guard);
    }
    if (rc) {
        free(p);
        return rc;
    }
    *out = p;
    return 0;
}

/* Facts gathered, one plan made of them (dmabuf_policy.c), the plan carried out. */
static int dmabuf_pin(void *ctx, const struct vr_pin_req *req, void **pin,
                      struct vr_pin_info *info, char *why, size_t len)
{
    struct vr_dmabuf_pin_facts facts;
    struct vr_dmabuf_plan plan;
    const struct vr_cuda *cu;
    struct dmabuf_pin *p;
    CUcontext owner;
    export_fn fn;
    int rc;

    rc = vr_cuda_init(&cu, why, len);
    if (!rc)
        rc = export_get(cu, &fn, why, len);
    if (rc)
        return rc;
    pin_facts(cu, req, &facts, &owner);
    rc = vr_dmabuf_plan(&facts, &plan, why, len);
    if (!rc)
        rc = pin_execute(cu, fn, &plan, owner, &p, why, len);
    if (rc)
        return rc;
    /* tm_cycles and cycles_per_ms stay 0, as GDRCopy documents them here (untimed). */
    *info = (struct vr_pin_info){ .va = plan.va, .mapped_size = plan.len,
                                  .page_size = plan.page_size };
    *pin = p;
    return 0;
}

static int dmabuf_unpin(void *ctx, void *pin)
{
    struct dmabuf_pin *p = pin;

    pthread_mutex_lock(&export_lock);
    if (p->prev)
        p->prev->next = p->next;
    else
        live_pins = p->next;
    if (p->next)
        p->next->prev = p->prev;
    pthread_mutex_unlock(&export_lock);
    close(p->fd);
    vr_cuda_primary_release(p->cu, p->ctx_dev);
    free(p);
    return 0;
}

static const char *type_name(gdr_mapping_type_t t)
{
    return t == GDR_MAPPING_TYPE_CACHING ? "cached (a coherent platform)" : "write-combined";
}

static int dmabuf_map(void *ctx, void *pin, size_t size, gdr_mapping_type_t want,
                      void **ptr, gdr_mapping_type_t *granted, char *why, size_t len)
{
    struct dmabuf_pin *p = pin;
    const struct vr_cuda *cu;
    void *m;

    /* size: the whole pinned range is mapped (maps_whole_pin) */
    if (want != GDR_MAPPING_TYPE_NONE && want != p->type) {
        snprintf(why, len, "this pin's mapping can only be %s%s", type_name(p->type),
                 p->type == GDR_MAPPING_TYPE_WC ? "" : "; pin with GDR_PIN_FLAG_FORCE_PCIE for "
                 "a write-combined one");
        return EINVAL;
    }
    m = mmap(NULL, (size_t)p->len, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
    if (m == MAP_FAILED) {
        int err = errno;

        return vr_dmabuf_mmap_error(err, vr_cuda_init(&cu, NULL, 0) ? 0 : driver_version(cu),
                                    why, len);
    }
    /* The exporter's mapping would be copied into a forked child; gdrdrv's is not. */
    vr_fork_dontfork(m, (size_t)p->len);
    *ptr = m;
    *granted = p->type;
    return 0;
}

static int dmabuf_unmap(void *ctx, void *pin, void *ptr, size_t size)
{
    const struct dmabuf_pin *p = pin;

    munmap(ptr, (size_t)p->len);         /* size: the whole pinned range was mapped */
    return 0;
}

const struct vr_backend_ops vr_backend_dmabuf = {
    .id = VRAMIO_BACKEND_DMABUF,
    .name = "dmabuf",
    .force_env = "GDRCOPY_USE_DMABUF_MMAP",
    /* An export holds its pages until its fd is closed: pins are persistent, never
     * invalidated (callback_flag left out), and FORCE_PCIE is passed to the export. */
    .attr = { [GDR_ATTR_USE_PERSISTENT_MAPPING] = 1, [GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE] = 1,
              [GDR_ATTR_USING_DMA_BUF_MMAP] = 1 },
    /* .version left out: gdrdrv 2.6 (upstream aborts in gdr_driver_get_version here). */
    .map_types = VR_MAP_TYPE_BIT(GDR_MAPPING_TYPE_WC) | VR_MAP_TYPE_BIT(GDR_MAPPING_TYPE_CACHING),
    .map_types_why = "a dma-buf export maps write-combined (cached on a coherent platform), "
                     "never as device memory",
    .maps_whole_pin = 1,
    .untimed = 1,
    .lazy = 1,                           /* cuInit only where gdrdrv refuses a pin */
    .probe = dmabuf_probe,               /* no per-gdr_t state: open and close left out */
    .pin = dmabuf_pin,
    .unpin = dmabuf_unpin,
    .map = dmabuf_map,
    .unmap = dmabuf_unmap,
};

/* SPDX-License-Identifier: MIT */
/*
 * dmabuf.c - GPU memory mapped for the CPU through a CUDA dma-buf export, as GDRCopy 2.6
 * does it: cuMemGetHandleForAddressRange(DMA_BUF_FD) per pin (one fd per pin), mmap of
 * the fd for the mapping, FORCE_PCIE passed as the export's PCIE mapping flag.
 *
 * Unlike upstream it asserts nothing, answers the driver version and the legacy get_info, and
 * finds out once per process whether the driver really lets the CPU map exports: drivers
 * before the 610 series export discrete-GPU memory but refuse the mmap with errno 524. The
 * probe turns that into a reason; a pin that meets it first says so and returns ENOTSUP, so
 * the core offers the pin to the next backend.
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
#include "cuda_ctx.h"
#include "cuda_loader.h"
#include "dmabuf_policy.h"
#include "fork.h"

struct dmabuf_pin {
    int fd;
    uint64_t va, len;
    void *map;
};

/* Whether mmap of an export works in this process: learnt once, by the forced probe's trial
 * or by the first pin, and kept. */
static _Atomic int mmap_state;          /* 0 unknown, 1 works, -1 refused */
static int mmap_err;
static char mmap_why[320];
static pthread_mutex_t mmap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t mmap_fork_once = PTHREAD_ONCE_INIT;

static void mmap_fork_register(void)
{
    vr_fork_protect_mutex(&mmap_lock);
}

static int driver_version(const struct vr_cuda *cu)
{
    int v = 0;

    if (cu->cuDriverGetVersion(&v) != CUDA_SUCCESS)
        return 0;
    return v;
}

/* Try mmap on an exported fd and record the outcome; 0, or the errno with why. */
static int mmap_learn(const struct vr_cuda *cu, int fd, size_t len, char *why, size_t wlen)
{
    void *m;
    int st, err = 0;

    pthread_once(&mmap_fork_once, mmap_fork_register);
    pthread_mutex_lock(&mmap_lock);
    st = atomic_load_explicit(&mmap_state, memory_order_relaxed);
    if (st == 0) {
        m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            err = errno;
            mmap_err = vr_dmabuf_mmap_error(err, driver_version(cu), mmap_why, sizeof(mmap_why));
            st = -1;
        } else {
            munmap(m, len);
            st = 1;
        }
        atomic_store_explicit(&mmap_state, st, memory_order_release);
    }
    pthread_mutex_unlock(&mmap_lock);
    if (st < 0) {
        snprintf(why, wlen, "%s", mmap_why);
        return mmap_err;
    }
    return 0;
}

/* The forced probe's trial: export a small allocation of device 0 and mmap it. */
static int mmap_trial(const struct vr_cuda *cu, char *why, size_t len)
{
    struct vr_cuda_ctx_guard guard;
    CUdeviceptr d = 0;
    CUresult r;
    int fd = -1, rc;
    const size_t sz = 2u << 20;

    rc = vr_cuda_ctx_enter(cu, 0, &guard, why, len);
    if (rc)
        return rc;
    r = cu->cuMemAlloc(&d, sz);
    if (r == CUDA_SUCCESS)
        r = cu->cuMemGetHandleForAddressRange(&fd, d, sz, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (r != CUDA_SUCCESS) {
        snprintf(why, len, "the CUDA driver does not export device memory as dma-buf: %s",
                 vr_cuda_errstr(r));
        rc = vr_cuda_errno(r);
    } else {
        rc = mmap_learn(cu, fd, sz, why, len);
    }
    if (fd >= 0)
        close(fd);
    if (d)
        cu->cuMemFree(d);
    vr_cuda_ctx_leave(cu, &guard);
    return rc;
}

/* The driver entry points this backend calls beyond cuInit. */
static int cuda_has_dmabuf(const struct vr_cuda *cu, char *why, size_t len)
{
    int rc = 0;

#define VR_NEED(fn) if (!rc) rc = vr_cuda_require(cu, fn, why, len);
    VR_NEED(cuMemGetHandleForAddressRange) VR_NEED(cuCtxGetCurrent) VR_NEED(cuCtxPushCurrent)
    VR_NEED(cuCtxPopCurrent) VR_NEED(cuDeviceGet) VR_NEED(cuDevicePrimaryCtxRetain)
    VR_NEED(cuMemAlloc) VR_NEED(cuMemFree)
#undef VR_NEED
    return rc;
}

static int dmabuf_probe(char *why, size_t len)
{
    const struct vr_cuda *cu = vr_cuda_load(why, len);
    int rc;

    if (!cu)
        return ENODEV;
    rc = cuda_has_dmabuf(cu, why, len);
    if (rc)
        return rc;
    if (atomic_load_explicit(&mmap_state, memory_order_acquire) < 0) {
        snprintf(why, len, "%s", mmap_why);
        return mmap_err;
    }
    if (!vr_dmabuf_forced())
        return vr_dmabuf_driver_check(driver_version(cu), why, len);
    /* Forced: the user asked for this backend, so find out now (once) whether it works. */
    rc = vr_cuda_init(&cu, why, len);
    if (rc)
        return rc;
    if (atomic_load_explicit(&mmap_state, memory_order_acquire) == 0)
        return mmap_trial(cu, why, len);
    return 0;
}

static int dmabuf_export(const struct vr_cuda *cu, uint64_t va, uint64_t len, uint32_t flags,
                         int *fd, char *why, size_t wlen)
{
    unsigned long long ef = vr_dmabuf_export_flags(flags);
    CUresult r;

    r = cu->cuMemGetHandleForAddressRange(fd, (CUdeviceptr)va, len,
                                          CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, ef);
    if (r == CUDA_ERROR_NOT_SUPPORTED && vr_dmabuf_retry_without_pcie(ef))
        r = cu->cuMemGetHandleForAddressRange(fd, (CUdeviceptr)va, len,
                                              CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (r == CUDA_SUCCESS) {
        /* Ours alone: a program that forks and execs must not pass it on (it holds the
         * pages). */
        fcntl(*fd, F_SETFD, FD_CLOEXEC);
        return 0;
    }
    snprintf(why, wlen, "dma-buf export of 0x%llx + %llu failed: %s (not one CUDA allocation, "
             "or not exportable)", (unsigned long long)va, (unsigned long long)len,
             vr_cuda_errstr(r));
    return ENOTSUP;
}

static int dmabuf_pin(void *ctx, const struct vr_pin_req *req, void **pin, char *why, size_t len)
{
    struct vr_cuda_ctx_guard guard;
    const struct vr_cuda *cu;
    struct dmabuf_pin *p;
    uint64_t va = req->va, plen = req->len;
    int rc, fd = -1;

    (void)ctx;
    if (atomic_load_explicit(&mmap_state, memory_order_acquire) < 0) {
        snprintf(why, len, "%s", mmap_why);
        return ENOTSUP;
    }
    rc = vr_cuda_init(&cu, why, len);
    if (rc)
        return rc;
    rc = vr_cuda_ctx_enter(cu, 0, &guard, why, len);
    if (rc)
        return rc;
    rc = dmabuf_export(cu, va, plen, req->flags, &fd, why, len);
    vr_cuda_ctx_leave(cu, &guard);
    if (rc)
        return rc;
    /* Not "== 0": another thread may have learnt of a refusal since the check above. */
    if (atomic_load_explicit(&mmap_state, memory_order_acquire) != 1) {
        rc = mmap_learn(cu, fd, (size_t)plen, why, len);
        if (rc) {
            close(fd);
            return ENOTSUP; /* the next backend may still map it */
        }
    }
    p = calloc(1, sizeof(*p));
    if (!p) {
        close(fd);
        snprintf(why, len, "out of memory");
        return ENOMEM;
    }
    p->fd = fd;
    p->va = va;
    p->len = plen;
    *pin = p;
    return 0;
}

static int dmabuf_unpin(void *ctx, void *pin)
{
    struct dmabuf_pin *p = pin;

    (void)ctx;
    close(p->fd);
    free(p);
    return 0;
}

static int dmabuf_map(void *ctx, void *pin, size_t size, gdr_mapping_type_t want,
                      void **ptr, gdr_mapping_type_t *granted, char *why, size_t len)
{
    struct dmabuf_pin *p = pin;
    void *m;

    (void)ctx; (void)size; (void)want; /* want is NONE or WC: the table's map_types */
    m = mmap(NULL, (size_t)p->len, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
    if (m == MAP_FAILED)
        return vr_dmabuf_mmap_error(errno, 0, why, len);
    /* The exporter's mapping would be copied into a forked child; gdrdrv's is not. */
    vr_fork_dontfork(m, (size_t)p->len);
    p->map = m;
    *ptr = m;
    *granted = GDR_MAPPING_TYPE_WC;
    return 0;
}

static int dmabuf_unmap(void *ctx, void *pin, void *ptr, size_t size)
{
    struct dmabuf_pin *p = pin;

    (void)ctx; (void)ptr; (void)size;
    if (!p->map)
        return EINVAL;
    munmap(p->map, (size_t)p->len);
    p->map = NULL;
    return 0;
}

static int dmabuf_info(void *ctx, void *pin, struct vr_pin_info *info)
{
    struct dmabuf_pin *p = pin;

    (void)ctx;
    info->va = p->va;
    info->mapped_size = p->len;
    info->page_size = GPU_PAGE_SIZE;
    info->tm_cycles = 0;                 /* the core times the pin */
    info->cycles_per_ms = 0;
    info->mapping_type = p->map ? GDR_MAPPING_TYPE_WC : GDR_MAPPING_TYPE_NONE;
    return 0;
}

const struct vr_backend_ops vr_backend_dmabuf = {
    .id = VRAMIO_BACKEND_DMABUF,
    .name = "dmabuf",
    /* An export holds its pages until its fd is closed: pins are persistent, never
     * invalidated (callback_flag left out), and FORCE_PCIE is passed to the export. */
    .attr = { [GDR_ATTR_USE_PERSISTENT_MAPPING] = 1, [GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE] = 1,
              [GDR_ATTR_USING_DMA_BUF_MMAP] = 1 },
    /* .version left out: gdrdrv 2.6 (upstream aborts in gdr_driver_get_version here). */
    .map_types = VR_MAP_TYPE_BIT(GDR_MAPPING_TYPE_WC),
    .map_types_why = "the dma-buf exporter maps BAR1 write-combined only",
    .probe = dmabuf_probe,               /* no per-gdr_t state: open and close left out */
    .pin = dmabuf_pin,
    .unpin = dmabuf_unpin,
    .map = dmabuf_map,
    .unmap = dmabuf_unmap,
    .info = dmabuf_info,
};

/* SPDX-License-Identifier: MIT */
/* cuda_ctx.c - borrow a primary context when the calling thread has none (see cuda_ctx.h). */
#include "cuda_ctx.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "fork.h"

#define VR_MAX_CUDA_DEVICES 64

static pthread_mutex_t primary_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext primary[VR_MAX_CUDA_DEVICES];

/* A fork while another thread retains a context must not deadlock the child (the lock is
 * fresh there); the contexts are the parent's, so the child forgets them (CUDA refuses to
 * work in a child forked after cuInit anyway). */
static void primary_fork_child(void)
{
    memset(primary, 0, sizeof(primary));
}

/* At load, not at the first use (fork.h). */
__attribute__((constructor)) static void primary_fork_register(void)
{
    vr_fork_protect_mutex(&primary_lock);
    vr_fork_on_child(primary_fork_child);
}

/* One more reference on the primary context of device dev, in *out. */
static int primary_retain(const struct vr_cuda *cu, int dev, CUcontext *out, char *why,
                          size_t len)
{
    CUdevice d;
    CUresult r = cu->cuDeviceGet(&d, dev);

    if (r == CUDA_SUCCESS)
        r = cu->cuDevicePrimaryCtxRetain(out, d);
    if (r != CUDA_SUCCESS) {
        *out = NULL;
        snprintf(why, len, "cannot retain the primary context of CUDA device %d: %s", dev,
                 vr_cuda_errstr(r));
        return vr_cuda_errno(r);
    }
    return 0;
}

/* The primary context of dev, retained once per process and kept. */
static int primary_get(const struct vr_cuda *cu, int dev, CUcontext *out, char *why, size_t len)
{
    int rc = 0;

    if (dev < 0 || dev >= VR_MAX_CUDA_DEVICES) {
        snprintf(why, len, "CUDA device ordinal %d out of range", dev);
        return EINVAL;
    }
    pthread_mutex_lock(&primary_lock);
    if (!primary[dev])
        rc = primary_retain(cu, dev, &primary[dev], why, len);
    *out = primary[dev];
    pthread_mutex_unlock(&primary_lock);
    return rc;
}

void vr_cuda_primary_release(const struct vr_cuda *cu, int dev)
{
    CUdevice d;

    if (dev >= 0 && cu->cuDeviceGet(&d, dev) == CUDA_SUCCESS)
        cu->cuDevicePrimaryCtxRelease(d);
}

int vr_cuda_ctx_enter(const struct vr_cuda *cu, int dev, struct vr_cuda_ctx_guard *g,
                      char *why, size_t len)
{
    CUcontext cur = NULL, ctx;
    CUresult r;
    int rc;

    g->pushed = 0;
    g->retained = -1;
    if (cu->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur)
        return 0;
    rc = primary_get(cu, dev, &ctx, why, len);
    if (rc)
        return rc;
    r = cu->cuCtxPushCurrent(ctx);
    if (r != CUDA_SUCCESS) {
        snprintf(why, len, "cuCtxPushCurrent failed: %s", vr_cuda_errstr(r));
        return vr_cuda_errno(r);
    }
    g->pushed = 1;
    return 0;
}

/* enter_device and borrow_device: scoped, a primary context needed is the guard's own. */
static int enter_device(const struct vr_cuda *cu, int dev, CUcontext owner, int scoped,
                        struct vr_cuda_ctx_guard *g, char *why, size_t len)
{
    CUcontext cur = NULL, ctx = owner;
    CUdevice cd = -1;
    CUresult r;
    int rc;

    g->pushed = 0;
    g->retained = -1;
    if (cu->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur &&
        cu->cuCtxGetDevice(&cd) == CUDA_SUCCESS && cd == dev)
        return 0;
    if (!ctx) {
        rc = scoped ? primary_retain(cu, dev, &ctx, why, len)
                    : primary_get(cu, dev, &ctx, why, len);
        if (rc)
            return rc;
        g->retained = scoped ? dev : -1;
    }
    r = cu->cuCtxPushCurrent(ctx);
    if (r != CUDA_SUCCESS) {
        snprintf(why, len, "cuCtxPushCurrent (device %d) failed: %s", dev, vr_cuda_errstr(r));
        vr_cuda_ctx_leave(cu, g);
        return vr_cuda_errno(r);
    }
    g->pushed = 1;
    return 0;
}

int vr_cuda_ctx_enter_device(const struct vr_cuda *cu, int dev, CUcontext owner,
                             struct vr_cuda_ctx_guard *g, char *why, size_t len)
{
    return enter_device(cu, dev, owner, 0, g, why, len);
}

int vr_cuda_ctx_borrow_device(const struct vr_cuda *cu, int dev, CUcontext owner,
                              struct vr_cuda_ctx_guard *g, char *why, size_t len)
{
    return enter_device(cu, dev, owner, 1, g, why, len);
}

void vr_cuda_ctx_leave(const struct vr_cuda *cu, struct vr_cuda_ctx_guard *g)
{
    CUcontext popped;

    if (g->pushed)
        cu->cuCtxPopCurrent(&popped);
    g->pushed = 0;
    vr_cuda_primary_release(cu, vr_cuda_ctx_keep(g));
}

int vr_cuda_ctx_keep(struct vr_cuda_ctx_guard *g)
{
    int dev = g->retained;

    g->retained = -1;
    return dev;
}

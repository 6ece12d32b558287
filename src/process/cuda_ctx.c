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
static pthread_once_t primary_fork_once = PTHREAD_ONCE_INIT;

/* A fork while another thread retains a context must not deadlock the child (the lock is
 * fresh there); the contexts are the parent's, so the child forgets them (CUDA refuses to
 * work in a child forked after cuInit anyway). */
static void primary_fork_child(void)
{
    memset(primary, 0, sizeof(primary));
}

static void primary_fork_register(void)
{
    vr_fork_protect_mutex(&primary_lock);
    vr_fork_on_child(primary_fork_child);
}

static int primary_get(const struct vr_cuda *cu, int dev, CUcontext *out, char *why, size_t len)
{
    CUdevice d;
    CUresult r;

    if (dev < 0 || dev >= VR_MAX_CUDA_DEVICES) {
        snprintf(why, len, "CUDA device ordinal %d out of range", dev);
        return EINVAL;
    }
    pthread_once(&primary_fork_once, primary_fork_register);
    pthread_mutex_lock(&primary_lock);
    r = CUDA_SUCCESS;
    if (!primary[dev]) {
        r = cu->cuDeviceGet(&d, dev);
        if (r == CUDA_SUCCESS)
            r = cu->cuDevicePrimaryCtxRetain(&primary[dev], d);
        if (r != CUDA_SUCCESS)
            primary[dev] = NULL;
    }
    *out = primary[dev];
    pthread_mutex_unlock(&primary_lock);
    if (r != CUDA_SUCCESS) {
        snprintf(why, len, "cannot retain the primary context of CUDA device %d: %s", dev,
                 vr_cuda_errstr(r));
        return vr_cuda_errno(r);
    }
    return 0;
}

int vr_cuda_ctx_enter(const struct vr_cuda *cu, int dev, struct vr_cuda_ctx_guard *g,
                      char *why, size_t len)
{
    CUcontext cur = NULL, ctx;
    CUresult r;
    int rc;

    g->pushed = 0;
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

int vr_cuda_ctx_enter_device(const struct vr_cuda *cu, int dev, CUcontext owner,
                             struct vr_cuda_ctx_guard *g, char *why, size_t len)
{
    CUcontext cur = NULL, ctx = owner;
    CUdevice cd = -1;
    CUresult r;
    int rc;

    g->pushed = 0;
    if (cu->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur &&
        cu->cuCtxGetDevice(&cd) == CUDA_SUCCESS && cd == dev)
        return 0;
    if (!ctx) {
        rc = primary_get(cu, dev, &ctx, why, len);
        if (rc)
            return rc;
    }
    r = cu->cuCtxPushCurrent(ctx);
    if (r != CUDA_SUCCESS) {
        snprintf(why, len, "cuCtxPushCurrent (device %d) failed: %s", dev, vr_cuda_errstr(r));
        return vr_cuda_errno(r);
    }
    g->pushed = 1;
    return 0;
}

void vr_cuda_ctx_leave(const struct vr_cuda *cu, struct vr_cuda_ctx_guard *g)
{
    CUcontext popped;

    if (g->pushed)
        cu->cuCtxPopCurrent(&popped);
    g->pushed = 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * cuda_ctx.h - a CUDA context for the driver calls that need one (cuMemGetAddressRange,
 * cuMemGetHandleForAddressRange), without disturbing the caller's.
 *
 * Most callers already have a context current (they allocated the memory they pin); then
 * nothing is changed. A thread with none gets the primary context of a device pushed for the
 * duration of the call and popped afterwards. vr_cuda_ctx_enter and vr_cuda_ctx_enter_device
 * retain that primary context once per process and device and keep it (creating it costs
 * hundreds of milliseconds, and what they make in it, allocations and streams, lives on);
 * vr_cuda_ctx_borrow_device retains it for the guard alone: released at vr_cuda_ctx_leave
 * unless the caller keeps the reference (vr_cuda_ctx_keep) for something that needs the
 * context as long as it lives, and releases it then (vr_cuda_primary_release).
 */
#ifndef VRAMIO_CUDA_CTX_H
#define VRAMIO_CUDA_CTX_H

#include <stddef.h>
#include "cuda_loader.h"

struct vr_cuda_ctx_guard {
    int pushed;
    int retained;       /* the device whose primary context this guard retained, or -1 */
};

/* Make a context current if the thread has none (dev: the device whose primary context to
 * use then). 0, or a positive errno with the reason in why. */
int vr_cuda_ctx_enter(const struct vr_cuda *cu, int dev, struct vr_cuda_ctx_guard *g,
                      char *why, size_t len);
/* Make a context of device dev current for a call on memory of dev: the thread's own if it
 * is one of dev's; else owner (the memory's context, CU_POINTER_ATTRIBUTE_CONTEXT) when not
 * NULL; else dev's primary context. Never a context of another device. 0, or a positive errno
 * with the reason in why. */
int vr_cuda_ctx_enter_device(const struct vr_cuda *cu, int dev, CUcontext owner,
                             struct vr_cuda_ctx_guard *g, char *why, size_t len);
/* As vr_cuda_ctx_enter_device, but a primary context it needs is retained for this guard only
 * (cuDevicePrimaryCtxRelease at vr_cuda_ctx_leave), so that nothing stays behind. */
int vr_cuda_ctx_borrow_device(const struct vr_cuda *cu, int dev, CUcontext owner,
                              struct vr_cuda_ctx_guard *g, char *why, size_t len);
/* Pop what the guard pushed and release what it retained. */
void vr_cuda_ctx_leave(const struct vr_cuda *cu, struct vr_cuda_ctx_guard *g);
/* Take over the guard's reference on a primary context: the device whose primary context the
 * caller must release later (vr_cuda_primary_release), or -1 when the guard holds none. */
int vr_cuda_ctx_keep(struct vr_cuda_ctx_guard *g);
void vr_cuda_primary_release(const struct vr_cuda *cu, int dev);

#endif /* VRAMIO_CUDA_CTX_H */

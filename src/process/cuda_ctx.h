/* SPDX-License-Identifier: MIT */
/*
 * cuda_ctx.h - a CUDA context for the driver calls that need one (cuMemGetAddressRange,
 * cuMemGetHandleForAddressRange), without disturbing the caller's.
 *
 * Most callers already have a context current (they allocated the memory they pin); then
 * nothing is changed. A thread with none gets the primary context of a device pushed for the
 * duration of the call and popped afterwards; the primary context is retained once per
 * process and device and kept (creating it costs hundreds of milliseconds).
 */
#ifndef VRAMIO_CUDA_CTX_H
#define VRAMIO_CUDA_CTX_H

#include <stddef.h>
#include "cuda_loader.h"

struct vr_cuda_ctx_guard {
    int pushed;
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
void vr_cuda_ctx_leave(const struct vr_cuda *cu, struct vr_cuda_ctx_guard *g);

#endif /* VRAMIO_CUDA_CTX_H */

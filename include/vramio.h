/* SPDX-License-Identifier: MIT */
/*
 * vramio.h - vramio's additions to the gdrapi interface (all names start with vramio_).
 *
 * Which backend serves a gdr_t or a pin, why the other backends are unusable, error
 * strings, and device memory that every backend can pin.
 */
#ifndef VRAMIO_H
#define VRAMIO_H

#include <stddef.h>
#include "gdrapi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VRAMIO_VERSION_MAJOR 2
#define VRAMIO_VERSION_MINOR 6

/* The ways GPU memory can be mapped for the CPU, in probing order. */
typedef enum vramio_backend {
    VRAMIO_BACKEND_NONE   = 0,
    VRAMIO_BACKEND_GDRDRV = 1, /* the gdrdrv kernel module (/dev/gdrdrv) */
    VRAMIO_BACKEND_DMABUF = 2, /* CUDA dma-buf export + mmap, no module */
    VRAMIO_BACKEND_VULKAN = 3, /* CUDA VMM -> Vulkan import -> vkMapMemory, no module */
    VRAMIO_BACKEND_COUNT
} vramio_backend_t;

/* "gdrdrv", "dmabuf", "vulkan", or "none"; NULL for an out-of-range value. */
const char *vramio_backend_name(vramio_backend_t backend);

/* The highest-priority usable backend of g (the one a pin tries first). */
int vramio_get_backend(gdr_t g, vramio_backend_t *backend);

/* The backend that owns a pin. */
int vramio_handle_backend(gdr_t g, gdr_mh_t handle, vramio_backend_t *backend);

/* Whether backend is usable through g: 0 if it is, else a positive errno, and in both cases a
 * one-line explanation copied into reason (always NUL-terminated when len > 0). */
int vramio_backend_status(gdr_t g, vramio_backend_t backend, char *reason, size_t len);

/* Probe one backend without an open gdr_t (what gdr_open would decide), same convention.
 * A backend that works but that gdr_open leaves out (vulkan alone, without
 * VRAMIO_ENABLE_VULKAN=1 or GDRCOPY_BACKEND=vulkan) gives ENODEV and a reason that starts
 * "usable, not enabled:" and says how to opt in. */
int vramio_backend_probe(vramio_backend_t backend, char *reason, size_t len);

/* The one-line reason of the last failing gdr_* / vramio_* call in this thread ("" if none). */
const char *vramio_last_error(void);

/* A message for a return code of a gdr_* or vramio_* function (0 included). Never NULL. */
const char *vramio_strerror(int err);

/* The name of the CPU copy kernel in use ("avx512", "avx2", "sse41", "movdir64b", "neon", "c"). */
const char *vramio_copy_kernel(void);

/*
 * Device memory that every backend can pin: size bytes on CUDA device ordinal gpu, returned as
 * an ordinary CUdeviceptr (a CUDA VMM allocation with a POSIX-fd handle type and, where the GPU
 * supports it, GPUDirect RDMA capability), usable by the caller's kernels. The size is rounded
 * up to the allocation granularity. Free it with vramio_free().
 */
int vramio_alloc(int gpu, size_t size, unsigned long long *dptr);
int vramio_free(unsigned long long dptr);

#ifdef __cplusplus
}
#endif

#endif /* VRAMIO_H */

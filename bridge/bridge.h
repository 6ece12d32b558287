/* SPDX-License-Identifier: MIT */
/*
 * bridge.h - what the two halves of libvramio_bridge.so share: the real CUDA driver's entry
 * points (bridge_resolve.c finds them, and hands out ours in their place) and the
 * replacements (bridge_mem.c, which routes device allocations to vramio_alloc's pool).
 */
#ifndef VRAMIO_BRIDGE_H
#define VRAMIO_BRIDGE_H

#include "cuda_types.h"     /* util/: the CUDA driver API, declared by vramio */

#define VB_EXPORT __attribute__((visibility("default")))

typedef CUresult (*vb_gpa_v1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*vb_gpa_v2_fn)(const char *, void **, int, cuuint64_t,
                                 CUdriverProcAddressQueryResult *);

/* The driver's own functions (libcuda.so.1, looked up past any interposition). */
struct vb_real {
    vb_gpa_v1_fn gpa_v1;          /* "cuGetProcAddress" (cuda.h renames that name) */
    vb_gpa_v2_fn gpa_v2;          /* "cuGetProcAddress_v2" */
    CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
    CUresult (*cuMemAllocPitch_v2)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
    CUresult (*cuMemFree_v2)(CUdeviceptr);
    CUresult (*cuMemGetAddressRange_v2)(CUdeviceptr *, size_t *, CUdeviceptr);
    CUresult (*cuCtxGetDevice)(CUdevice *);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
};

/* The table, loaded at first use; NULL when libcuda.so.1 cannot be loaded. */
const struct vb_real *vb_real(void);

/* VRAMIO_BRIDGE_LOG=1: one stderr line per interception. */
extern int vb_log_on;
__attribute__((format(printf, 1, 2))) void vb_log(const char *fmt, ...);

/* The replacements of bridge_mem.c, by the ABI they implement. */
CUresult vb_mem_alloc(CUdeviceptr *dptr, size_t size);
CUresult vb_mem_alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                            unsigned int elem);
CUresult vb_mem_free(CUdeviceptr dptr);
CUresult vb_mem_get_address_range(CUdeviceptr *base, size_t *size, CUdeviceptr dptr);

#endif /* VRAMIO_BRIDGE_H */

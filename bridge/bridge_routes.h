/* SPDX-License-Identifier: MIT */
/*
 * bridge_routes.h - the one list of the CUDA driver entry points that vramio-run replaces.
 *
 * Each row: X(exported name, base name that cuGetProcAddress is asked for, first CUDA
 * version whose ABI the replacement implements, the replacement in libvramio_bridge.so,
 * return type, parameters, arguments). From this list:
 *   shim_entry.S (x86_64) or shim.c (elsewhere) defines each exported name in the
 *   libcuda.so.1 shim, an entry that UCM's bistro can patch, jumping to the replacement;
 *   shim.c's cuGetProcAddress(_v2) answers those entries for the base and exported names;
 *   bridge_resolve.c hands the replacements to the shim by name, type-checked against the
 *   row. Every other name is the real driver's own function (see shim.c).
 * Adding a replacement is adding a row here (and its function, declared in bridge.h).
 * Included by assembly too: nothing but the macro below.
 */
#ifndef VRAMIO_BRIDGE_ROUTES_H
#define VRAMIO_BRIDGE_ROUTES_H

#define VB_ROUTES(X)                                                                         \
    X(cuMemAlloc_v2, cuMemAlloc, 3020, vb_mem_alloc, CUresult,                               \
      (CUdeviceptr *dptr, size_t size), (dptr, size))                                        \
    X(cuMemAllocPitch_v2, cuMemAllocPitch, 3020, vb_mem_alloc_pitch, CUresult,               \
      (CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height, unsigned int elem),    \
      (dptr, pitch, width, height, elem))                                                    \
    X(cuMemFree_v2, cuMemFree, 3020, vb_mem_free, CUresult, (CUdeviceptr dptr), (dptr))      \
    X(cuMemGetAddressRange_v2, cuMemGetAddressRange, 3020, vb_mem_get_address_range,         \
      CUresult, (CUdeviceptr *base, size_t *size, CUdeviceptr dptr), (base, size, dptr))

#endif /* VRAMIO_BRIDGE_ROUTES_H */

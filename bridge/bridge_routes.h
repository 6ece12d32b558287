/* SPDX-License-Identifier: MIT */
/*
 * bridge_routes.h - the one list of the CUDA driver entry points that vramio-run replaces.
 *
 * Each row: X(exported name, base name that cuGetProcAddress is asked for, first CUDA
 * version whose ABI the replacement implements, the last CUDA version known to keep that ABI
 * (the newest cudaTypedefs.h checked has no later PFN_<base>_vNNNNN: test_bridge.sh checks
 * the toolkit's), which of the driver's answers for the base name it replaces, the
 * replacement in libvramio_bridge.so, return type, parameters, arguments). From this list:
 *   shim_entry.S (x86_64) or shim.c (elsewhere) defines each exported name in the
 *   libcuda.so.1 shim, an entry that UCM's bistro can patch, jumping to the replacement;
 *   shim.c's cuGetProcAddress(_v2) answers those entries for the base and exported names;
 *   bridge.h declares each replacement from its row; bridge_resolve.c hands them to the
 *   shim by name, and checks that the row's prototype is that of the driver's function of
 *   the base name in util/cuda_api.h's VR_CUDA_FUNCS (the one list of CUDA functions, which
 *   the replacements call for the driver's own). Every other name is the real driver's own
 *   function (see shim.c).
 * Asked for a version past the last known one, the shim replaces the driver's answer only when
 * the driver gives the same function for that version as for the last known one: a new ABI
 * of the name stays the driver's (the replacement would misread its arguments).
 * VB_ANY: whatever the driver answers for the base name at that version. VB_EXACT: only when
 * the driver answers its exported function of that name; the copies and memsets also have
 * per-thread-default-stream variants (_ptds), which the driver hands out for the same base
 * name under CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, and those stay the driver's. A
 * base name may have two VB_EXACT rows, its function and its per-thread variant (_ptsz, the
 * stream-ordered calls, whose stream 0 is the calling thread's stream): the row whose
 * exported function the driver answered replaces it.
 * Adding a replacement is adding a row here and writing its function (a row whose driver
 * function VR_CUDA_FUNCS lacks does not compile: add it there).
 * Included by assembly too: nothing but the macro and the two constants below.
 */
#ifndef VRAMIO_BRIDGE_ROUTES_H
#define VRAMIO_BRIDGE_ROUTES_H

#define VB_ANY   0
#define VB_EXACT 1

#define VB_ROUTES(X)                                                                             \
    X(cuMemAlloc_v2, cuMemAlloc, 3020, 13000, VB_ANY, vb_mem_alloc, CUresult,                    \
      (CUdeviceptr *dptr, size_t size), (dptr, size))                                            \
    X(cuMemAllocPitch_v2, cuMemAllocPitch, 3020, 13000, VB_ANY, vb_mem_alloc_pitch, CUresult,    \
      (CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height, unsigned int elem),        \
      (dptr, pitch, width, height, elem))                                                        \
    X(cuMemFree_v2, cuMemFree, 3020, 13000, VB_ANY, vb_mem_free, CUresult,                       \
      (CUdeviceptr dptr), (dptr))                                                                \
    X(cuMemGetAddressRange_v2, cuMemGetAddressRange, 3020, 13000, VB_ANY,                        \
      vb_mem_get_address_range, CUresult,                                                        \
      (CUdeviceptr *base, size_t *size, CUdeviceptr dptr), (base, size, dptr))                   \
    X(cuPointerGetAttribute, cuPointerGetAttribute, 4000, 13000, VB_ANY,                         \
      vb_pointer_get_attribute, CUresult,                                                        \
      (void *data, CUpointer_attribute attr, CUdeviceptr ptr), (data, attr, ptr))                \
    X(cuPointerGetAttributes, cuPointerGetAttributes, 7000, 13000, VB_ANY,                       \
      vb_pointer_get_attributes, CUresult,                                                       \
      (unsigned int n, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr),                \
      (n, attrs, data, ptr))                                                                     \
    X(cuPointerSetAttribute, cuPointerSetAttribute, 6000, 13000, VB_ANY,                         \
      vb_pointer_set_attribute, CUresult,                                                        \
      (const void *value, CUpointer_attribute attr, CUdeviceptr ptr), (value, attr, ptr))        \
    X(cuMemcpy, cuMemcpy, 4000, 13000, VB_EXACT, vb_memcpy, CUresult,                            \
      (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n))                               \
    X(cuMemcpyHtoD_v2, cuMemcpyHtoD, 3020, 13000, VB_EXACT, vb_memcpy_htod, CUresult,            \
      (CUdeviceptr dst, const void *src, size_t n), (dst, src, n))                               \
    X(cuMemcpyDtoD_v2, cuMemcpyDtoD, 3020, 13000, VB_EXACT, vb_memcpy_dtod, CUresult,            \
      (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n))                               \
    X(cuMemsetD8_v2, cuMemsetD8, 3020, 13000, VB_EXACT, vb_memset_d8, CUresult,                  \
      (CUdeviceptr dst, unsigned char v, size_t n), (dst, v, n))                                 \
    X(cuMemsetD16_v2, cuMemsetD16, 3020, 13000, VB_EXACT, vb_memset_d16, CUresult,               \
      (CUdeviceptr dst, unsigned short v, size_t n), (dst, v, n))                                \
    X(cuMemsetD32_v2, cuMemsetD32, 3020, 13000, VB_EXACT, vb_memset_d32, CUresult,               \
      (CUdeviceptr dst, unsigned int v, size_t n), (dst, v, n))                                  \
    X(cuIpcGetMemHandle, cuIpcGetMemHandle, 4010, 13000, VB_ANY, vb_ipc_get_mem_handle,          \
      CUresult, (CUipcMemHandle *out, CUdeviceptr dptr), (out, dptr))                            \
    X(cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle, 11000, 13000, VB_ANY,                           \
      vb_ipc_open_mem_handle, CUresult,                                                          \
      (CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int flags),                           \
      (pdptr, handle, flags))                                                                    \
    X(cuIpcCloseMemHandle, cuIpcCloseMemHandle, 4010, 13000, VB_ANY, vb_ipc_close_mem_handle,    \
      CUresult, (CUdeviceptr dptr), (dptr))                                                      \
    X(cuMemFreeAsync, cuMemFreeAsync, 11020, 13000, VB_EXACT, vb_mem_free_async, CUresult,       \
      (CUdeviceptr dptr, CUstream stream), (dptr, stream))                                       \
    X(cuMemFreeAsync_ptsz, cuMemFreeAsync, 11020, 13000, VB_EXACT, vb_mem_free_async_ptsz,       \
      CUresult, (CUdeviceptr dptr, CUstream stream), (dptr, stream))                             \
    X(cuMemAllocAsync, cuMemAllocAsync, 11020, 13000, VB_EXACT, vb_mem_alloc_async, CUresult,    \
      (CUdeviceptr *dptr, size_t size, CUstream stream), (dptr, size, stream))                   \
    X(cuMemAllocAsync_ptsz, cuMemAllocAsync, 11020, 13000, VB_EXACT, vb_mem_alloc_async_ptsz,    \
      CUresult, (CUdeviceptr *dptr, size_t size, CUstream stream), (dptr, size, stream))         \
    X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020, 13000, VB_EXACT,                  \
      vb_mem_alloc_from_pool_async, CUresult,                                                    \
      (CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream stream),                      \
      (dptr, size, pool, stream))                                                                \
    X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 11020, 13000, VB_EXACT,             \
      vb_mem_alloc_from_pool_async_ptsz, CUresult,                                               \
      (CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream stream),                      \
      (dptr, size, pool, stream))                                                                \
    X(cuMemPoolCreate, cuMemPoolCreate, 11020, 13000, VB_ANY, vb_mem_pool_create, CUresult,      \
      (CUmemoryPool *pool, const CUmemPoolProps *props), (pool, props))                          \
    X(cuMemPoolSetAttribute, cuMemPoolSetAttribute, 11020, 13000, VB_ANY,                        \
      vb_mem_pool_set_attribute, CUresult,                                                       \
      (CUmemoryPool pool, CUmemPool_attribute attr, void *value), (pool, attr, value))           \
    X(cuMemPoolGetAttribute, cuMemPoolGetAttribute, 11020, 13000, VB_ANY,                        \
      vb_mem_pool_get_attribute, CUresult,                                                       \
      (CUmemoryPool pool, CUmemPool_attribute attr, void *value), (pool, attr, value))           \
    X(cuMemPoolTrimTo, cuMemPoolTrimTo, 11020, 13000, VB_ANY, vb_mem_pool_trim_to, CUresult,     \
      (CUmemoryPool pool, size_t keep), (pool, keep))                                            \
    X(cuMemPoolSetAccess, cuMemPoolSetAccess, 11020, 13000, VB_ANY, vb_mem_pool_set_access,      \
      CUresult, (CUmemoryPool pool, const CUmemAccessDesc *desc, size_t count),                  \
      (pool, desc, count))                                                                       \
    X(cuMemCreate, cuMemCreate, 10020, 13000, VB_ANY, vb_mem_create, CUresult,                   \
      (CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop,            \
       unsigned long long flags), (h, size, prop, flags))                                        \
    X(cuMemRetainAllocationHandle, cuMemRetainAllocationHandle, 11000, 13000, VB_ANY,            \
      vb_mem_retain_allocation_handle, CUresult,                                                 \
      (CUmemGenericAllocationHandle *h, void *addr), (h, addr))

#endif /* VRAMIO_BRIDGE_ROUTES_H */

/* SPDX-License-Identifier: MIT */
/*
 * cuda_api.h - the CUDA driver entry points vramio calls: one X-macro list of
 * (name, symbol, parameter list), every one returning CUresult.
 *
 * The name is what the code writes (cu->cuMemAlloc); the symbol is what libcuda.so.1 exports
 * for it, which for older entry points is a versioned one (cuMemAlloc_v2): the driver keeps
 * the unversioned symbol for binaries of an older ABI. cuda_loader.h turns the list into a
 * table of function pointers filled by dlsym. The one list of the library, the tools and the
 * bridge (bridge/bridge_resolve.c checks each replacement's row against its entry here).
 *
 * The types come from cuda_types.h; tests/abi/test_cuda_api.sh includes the toolkit's cuda.h
 * instead (VR_CUDA_TOOLKIT_TYPES) and checks each entry's type and symbol against it.
 */
#ifndef VRAMIO_CUDA_API_H
#define VRAMIO_CUDA_API_H

#ifdef VR_CUDA_TOOLKIT_TYPES
#include <cuda.h>
#else
#include "cuda_types.h"
#endif

#define VR_CUDA_FUNCS(X)                                                                    \
    /* initialisation, errors */                                                            \
    X(cuInit,                   "cuInit",                   (unsigned int flags))           \
    X(cuDriverGetVersion,       "cuDriverGetVersion",       (int *version))                 \
    X(cuGetErrorString,         "cuGetErrorString",         (CUresult rc, const char **s))  \
    X(cuGetErrorName,           "cuGetErrorName",           (CUresult rc, const char **s))  \
    X(cuGetProcAddress,         "cuGetProcAddress_v2",                                      \
      (const char *symbol, void **pfn, int cuda_version, cuuint64_t flags,                  \
       CUdriverProcAddressQueryResult *status))                                             \
    /* devices */                                                                           \
    X(cuDeviceGet,              "cuDeviceGet",              (CUdevice *dev, int ordinal))   \
    X(cuDeviceGetCount,         "cuDeviceGetCount",         (int *count))                   \
    X(cuDeviceGetName,          "cuDeviceGetName",          (char *name, int len, CUdevice dev)) \
    X(cuDeviceGetUuid,          "cuDeviceGetUuid_v2",       (CUuuid *uuid, CUdevice dev))   \
    X(cuDeviceGetAttribute,     "cuDeviceGetAttribute",                                     \
      (int *value, CUdevice_attribute attr, CUdevice dev))                                  \
    X(cuDeviceTotalMem,         "cuDeviceTotalMem_v2",      (size_t *bytes, CUdevice dev))  \
    X(cuDeviceGetPCIBusId,      "cuDeviceGetPCIBusId",      (char *id, int len, CUdevice dev)) \
    X(cuDeviceCanAccessPeer,    "cuDeviceCanAccessPeer",                                    \
      (int *can, CUdevice dev, CUdevice peer))                                              \
    /* contexts */                                                                          \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext *ctx, CUdevice dev)) \
    X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice dev))            \
    X(cuCtxSetCurrent,          "cuCtxSetCurrent",          (CUcontext ctx))                \
    X(cuCtxGetCurrent,          "cuCtxGetCurrent",          (CUcontext *ctx))               \
    X(cuCtxGetDevice,           "cuCtxGetDevice",           (CUdevice *dev))                \
    X(cuCtxSynchronize,         "cuCtxSynchronize",         (void))                         \
    X(cuCtxPushCurrent,         "cuCtxPushCurrent_v2",      (CUcontext ctx))                \
    X(cuCtxPopCurrent,          "cuCtxPopCurrent_v2",       (CUcontext *ctx))               \
    /* pointers and ordinary allocations */                                                 \
    X(cuPointerGetAttribute,    "cuPointerGetAttribute",                                    \
      (void *data, CUpointer_attribute attr, CUdeviceptr ptr))                              \
    X(cuMemGetAddressRange,     "cuMemGetAddressRange_v2",                                  \
      (CUdeviceptr *base, size_t *size, CUdeviceptr ptr))                                   \
    X(cuMemAlloc,               "cuMemAlloc_v2",            (CUdeviceptr *ptr, size_t size)) \
    X(cuMemFree,                "cuMemFree_v2",             (CUdeviceptr ptr))              \
    X(cuMemAllocHost,           "cuMemAllocHost_v2",        (void **p, size_t size))        \
    X(cuMemFreeHost,            "cuMemFreeHost",            (void *p))                      \
    X(cuMemHostAlloc,           "cuMemHostAlloc",                                           \
      (void **p, size_t size, unsigned int flags))                                          \
    X(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2",                            \
      (CUdeviceptr *ptr, void *p, unsigned int flags))                                      \
    X(cuMemcpyHtoD,             "cuMemcpyHtoD_v2",                                          \
      (CUdeviceptr dst, const void *src, size_t n))                                         \
    X(cuMemcpyDtoH,             "cuMemcpyDtoH_v2",                                          \
      (void *dst, CUdeviceptr src, size_t n))                                               \
    X(cuMemsetD8,               "cuMemsetD8_v2",                                            \
      (CUdeviceptr dst, unsigned char byte, size_t n))                                      \
    X(cuMemHostGetFlags,        "cuMemHostGetFlags",        (unsigned int *flags, void *p)) \
    /* the GPU's copy engine: asynchronous copies, streams, events (src/dma/) */            \
    X(cuMemcpyHtoDAsync,        "cuMemcpyHtoDAsync_v2",                                     \
      (CUdeviceptr dst, const void *src, size_t n, CUstream stream))                        \
    X(cuMemcpyDtoHAsync,        "cuMemcpyDtoHAsync_v2",                                     \
      (void *dst, CUdeviceptr src, size_t n, CUstream stream))                              \
    X(cuStreamCreate,           "cuStreamCreate",                                           \
      (CUstream *stream, unsigned int flags))                                               \
    X(cuStreamDestroy,          "cuStreamDestroy_v2",       (CUstream stream))              \
    X(cuEventCreate,            "cuEventCreate",            (CUevent *event, unsigned int flags)) \
    X(cuEventRecord,            "cuEventRecord",            (CUevent event, CUstream stream)) \
    X(cuEventSynchronize,       "cuEventSynchronize",       (CUevent event))                \
    X(cuEventDestroy,           "cuEventDestroy_v2",        (CUevent event))                \
    X(cuMemAllocAsync,          "cuMemAllocAsync",                                          \
      (CUdeviceptr *ptr, size_t size, CUstream stream))                                     \
    X(cuMemFreeAsync,           "cuMemFreeAsync",           (CUdeviceptr ptr, CUstream stream)) \
    X(cuLaunchHostFunc,         "cuLaunchHostFunc",                                         \
      (CUstream stream, CUhostFn fn, void *data))                                           \
    X(cuStreamIsCapturing,      "cuStreamIsCapturing",                                      \
      (CUstream stream, CUstreamCaptureStatus *status))                                     \
    X(cuStreamGetCtx,           "cuStreamGetCtx",           (CUstream stream, CUcontext *ctx)) \
    X(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode",               \
      (CUstreamCaptureMode *mode))                                                          \
    /* stream-ordered memory pools (the bridge's, bridge/bridge_mempool.c) */               \
    X(cuMemAllocFromPoolAsync,  "cuMemAllocFromPoolAsync",                                  \
      (CUdeviceptr *ptr, size_t size, CUmemoryPool pool, CUstream stream))                  \
    X(cuMemPoolCreate,          "cuMemPoolCreate",                                          \
      (CUmemoryPool *pool, const CUmemPoolProps *props))                                    \
    X(cuMemPoolDestroy,         "cuMemPoolDestroy",         (CUmemoryPool pool))            \
    X(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", (CUmemoryPool *pool, CUdevice dev)) \
    X(cuDeviceGetMemPool,       "cuDeviceGetMemPool",       (CUmemoryPool *pool, CUdevice dev)) \
    X(cuMemPoolSetAttribute,    "cuMemPoolSetAttribute",                                    \
      (CUmemoryPool pool, CUmemPool_attribute attr, void *value))                           \
    X(cuMemPoolGetAttribute,    "cuMemPoolGetAttribute",                                    \
      (CUmemoryPool pool, CUmemPool_attribute attr, void *value))                           \
    X(cuMemPoolTrimTo,          "cuMemPoolTrimTo",          (CUmemoryPool pool, size_t keep)) \
    X(cuMemPoolSetAccess,       "cuMemPoolSetAccess",                                       \
      (CUmemoryPool pool, const CUmemAccessDesc *desc, size_t count))                       \
    X(cuMemPoolGetAccess,       "cuMemPoolGetAccess",                                       \
      (CUmemAccess_flags *flags, CUmemoryPool pool, CUmemLocation *location))               \
    /* virtual memory management */                                                         \
    X(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity",                       \
      (size_t *gran, const CUmemAllocationProp *prop, CUmemAllocationGranularity_flags opt)) \
    X(cuMemCreate,              "cuMemCreate",                                              \
      (CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop,       \
       unsigned long long flags))                                                           \
    X(cuMemRelease,             "cuMemRelease",             (CUmemGenericAllocationHandle h)) \
    X(cuMemAddressReserve,      "cuMemAddressReserve",                                      \
      (CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr, unsigned long long flags)) \
    X(cuMemAddressFree,         "cuMemAddressFree",         (CUdeviceptr ptr, size_t size)) \
    X(cuMemMap,                 "cuMemMap",                                                 \
      (CUdeviceptr ptr, size_t size, size_t off, CUmemGenericAllocationHandle h,            \
       unsigned long long flags))                                                           \
    X(cuMemUnmap,               "cuMemUnmap",               (CUdeviceptr ptr, size_t size)) \
    X(cuMemSetAccess,           "cuMemSetAccess",                                           \
      (CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count))            \
    X(cuMemRetainAllocationHandle, "cuMemRetainAllocationHandle",                           \
      (CUmemGenericAllocationHandle *h, void *addr))                                        \
    X(cuMemExportToShareableHandle, "cuMemExportToShareableHandle",                         \
      (void *out, CUmemGenericAllocationHandle h, CUmemAllocationHandleType type,           \
       unsigned long long flags))                                                           \
    X(cuMemGetAllocationPropertiesFromHandle, "cuMemGetAllocationPropertiesFromHandle",     \
      (CUmemAllocationProp *prop, CUmemGenericAllocationHandle h))                          \
    X(cuMemGetHandleForAddressRange, "cuMemGetHandleForAddressRange",                       \
      (void *out, CUdeviceptr ptr, size_t size, CUmemRangeHandleType type,                  \
       unsigned long long flags))                                                           \
    /* modules and launches (pplat's GPU kernel) */                                         \
    X(cuModuleLoadData,         "cuModuleLoadData",         (CUmodule *mod, const void *image)) \
    X(cuModuleUnload,           "cuModuleUnload",           (CUmodule mod))                 \
    X(cuModuleGetFunction,      "cuModuleGetFunction",                                      \
      (CUfunction *fn, CUmodule mod, const char *name))                                     \
    X(cuLaunchKernel,           "cuLaunchKernel",                                           \
      (CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,   \
       unsigned int by, unsigned int bz, unsigned int shared_bytes, CUstream stream,        \
       void **params, void **extra))                                                        \
    X(cuStreamQuery,            "cuStreamQuery",            (CUstream stream))              \
    X(cuStreamSynchronize,      "cuStreamSynchronize",      (CUstream stream))              \
    /* what vramio-run replaces (bridge/bridge_routes.h; the bridge calls the driver's own) */ \
    X(cuMemAllocPitch,          "cuMemAllocPitch_v2",                                       \
      (CUdeviceptr *ptr, size_t *pitch, size_t width, size_t height, unsigned int elem))    \
    X(cuPointerGetAttributes,   "cuPointerGetAttributes",                                   \
      (unsigned int n, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr))           \
    X(cuPointerSetAttribute,    "cuPointerSetAttribute",                                    \
      (const void *value, CUpointer_attribute attr, CUdeviceptr ptr))                       \
    X(cuMemcpy,                 "cuMemcpy",                                                 \
      (CUdeviceptr dst, CUdeviceptr src, size_t n))                                         \
    X(cuMemcpyDtoD,             "cuMemcpyDtoD_v2",                                          \
      (CUdeviceptr dst, CUdeviceptr src, size_t n))                                         \
    X(cuMemsetD16,              "cuMemsetD16_v2",                                           \
      (CUdeviceptr dst, unsigned short v, size_t n))                                        \
    X(cuMemsetD32,              "cuMemsetD32_v2",                                           \
      (CUdeviceptr dst, unsigned int v, size_t n))                                          \
    X(cuIpcGetMemHandle,        "cuIpcGetMemHandle",                                        \
      (CUipcMemHandle *out, CUdeviceptr ptr))                                               \
    X(cuIpcOpenMemHandle,       "cuIpcOpenMemHandle_v2",                                    \
      (CUdeviceptr *ptr, CUipcMemHandle handle, unsigned int flags))                        \
    X(cuIpcCloseMemHandle,      "cuIpcCloseMemHandle",      (CUdeviceptr ptr))              \
    X(cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle",                     \
      (CUmemGenericAllocationHandle *h, void *os_handle, CUmemAllocationHandleType type))

#endif /* VRAMIO_CUDA_API_H */

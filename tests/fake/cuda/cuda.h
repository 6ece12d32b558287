/* SPDX-License-Identifier: MIT */
/*
 * tests/fake/cuda/cuda.h - TEST ONLY: what the stand-in drivers (tests/fake/fake_cuda_vmm.c,
 * tests/fake/fake_cuda_dmabuf.c) and their clients include as <cuda.h> on a machine without
 * the CUDA toolkit (TEST_CUDA_CPPFLAGS in tests/fake/fake.mk picks it; the toolkit's header
 * wins where one is installed). It is the project's own declarations of the driver API
 * (util/cuda_types.h, util/cuda_api.h, checked against the toolkit by
 * tests/abi/test_cuda_api.sh): the entry points' prototypes from the one list, and the
 * versioned symbols that the toolkit's header maps the plain names to, so a stand-in built
 * either way exports the same symbols.
 */
#ifndef VRAMIO_TEST_CUDA_H
#define VRAMIO_TEST_CUDA_H

#include "cuda_api.h"

/* The entry points whose exported symbol is versioned, as the toolkit's cuda.h (12.x) maps
 * them: those of VR_CUDA_FUNCS's second column, and cuGetProcAddress. One missing here would
 * make a stand-in export the plain name, which the library never looks up, and the tests
 * built on it would fail. */
#define cuCtxPopCurrent              cuCtxPopCurrent_v2
#define cuCtxPushCurrent             cuCtxPushCurrent_v2
#define cuDeviceGetUuid              cuDeviceGetUuid_v2
#define cuDevicePrimaryCtxRelease    cuDevicePrimaryCtxRelease_v2
#define cuGetProcAddress             cuGetProcAddress_v2
#define cuDeviceTotalMem             cuDeviceTotalMem_v2
#define cuEventDestroy               cuEventDestroy_v2
#define cuMemAllocHost               cuMemAllocHost_v2
#define cuMemAlloc                   cuMemAlloc_v2
#define cuMemFree                    cuMemFree_v2
#define cuMemGetAddressRange         cuMemGetAddressRange_v2
#define cuMemHostGetDevicePointer    cuMemHostGetDevicePointer_v2
#define cuMemcpyDtoHAsync            cuMemcpyDtoHAsync_v2
#define cuMemcpyDtoH                 cuMemcpyDtoH_v2
#define cuMemcpyHtoDAsync            cuMemcpyHtoDAsync_v2
#define cuMemcpyHtoD                 cuMemcpyHtoD_v2
#define cuMemsetD8                   cuMemsetD8_v2
#define cuStreamDestroy              cuStreamDestroy_v2

#define VR_TEST_CUDA_PROTO(name, symbol, params) CUresult name params;
VR_CUDA_FUNCS(VR_TEST_CUDA_PROTO)
#undef VR_TEST_CUDA_PROTO

/* What the stand-ins and the bridge's tests use that the library does not (the driver's
 * names and values). */
#define CU_MEMORYTYPE_DEVICE 2
#define CUDA_ERROR_UNKNOWN   999
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2
#define cuMemcpyDtoD                 cuMemcpyDtoD_v2
#define cuMemsetD16                  cuMemsetD16_v2
#define cuMemsetD32                  cuMemsetD32_v2
CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data,
                                CUdeviceptr ptr);
CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute attr, CUdeviceptr ptr);
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult cuMemsetD16(CUdeviceptr dst, unsigned short v, size_t n);
CUresult cuMemsetD32(CUdeviceptr dst, unsigned int v, size_t n);

#endif

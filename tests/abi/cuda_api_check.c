/* SPDX-License-Identifier: MIT */
/*
 * cuda_api_check.c - vramio's CUDA declarations (util/cuda_types.h, util/cuda_api.h) against
 * the toolkit's cuda.h. test_cuda_api.sh compiles it twice and compares the two outputs:
 *   -DVR_CUDA_TOOLKIT_TYPES  cuda.h's types; the compile fails unless every entry of
 *                            VR_CUDA_FUNCS has cuda.h's prototype, and at run time each
 *                            entry's symbol must be the one cuda.h maps its name to;
 *   (plain)                  our types.
 * Both print every constant of cuda_types.h (the list the script generates, CONSTS_FILE) and
 * the sizes and member offsets of the types, one "name value" line each.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cuda_api.h"

#define STR_(x) #x
#define STR(x) STR_(x)

#ifdef VR_CUDA_TOOLKIT_TYPES
/* The argument is macro-expanded first, so cuMemAlloc is cuda.h's cuMemAlloc_v2 here. */
#define CHECK_PROTO(name, symbol, params)                                                   \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&name), CUresult (*) params),    \
                   "prototype of " #name " differs from cuda.h");
VR_CUDA_FUNCS(CHECK_PROTO)
#endif

#define SIZE(T) printf("sizeof(%s) %zu\n", #T, sizeof(T));
#define OFF(T, m) printf("offsetof(%s, %s) %zu\n", #T, #m, offsetof(T, m));
#define SIGNED(T) { T m1 = (T)-1, zero = 0; printf("signed(%s) %d\n", #T, m1 < zero + 0); }
#define CONST(c) printf("%s %lld\n", #c, (long long)(c));

int main(void)
{
    int bad = 0;

#ifdef VR_CUDA_TOOLKIT_TYPES
#define CHECK_SYMBOL(name, symbol, params)                                                  \
    if (strcmp(STR(name), symbol) != 0) {                                                   \
        printf("symbol %s: cuda.h maps %s to %s\n", symbol, #name, STR(name));              \
        bad = 1;                                                                            \
    }
    VR_CUDA_FUNCS(CHECK_SYMBOL)
#endif
#include CONSTS_FILE
    SIGNED(CUdeviceptr) SIZE(CUdeviceptr)
    SIGNED(CUdevice) SIZE(CUdevice)
    SIGNED(CUmemGenericAllocationHandle) SIZE(CUmemGenericAllocationHandle)
    SIZE(CUcontext) SIZE(CUmodule) SIZE(CUfunction) SIZE(CUstream) SIZE(CUevent)
    SIZE(CUmemorytype) SIZE(CUstream_flags) SIZE(CUevent_flags)
    SIZE(cuuint64_t) SIZE(CUdriverProcAddressQueryResult)
    SIZE(CUresult) SIZE(CUdevice_attribute) SIZE(CUpointer_attribute)
    SIZE(CUmemAllocationType) SIZE(CUmemAllocationHandleType) SIZE(CUmemLocationType)
    SIZE(CUmemAccess_flags) SIZE(CUmemAllocationGranularity_flags)
    SIZE(CUmemRangeHandleType) SIZE(CUmemRangeFlags)
    SIZE(CUuuid) OFF(CUuuid, bytes) SIZE(CUipcMemHandle)
    SIZE(CUDA_POINTER_ATTRIBUTE_P2P_TOKENS)
    OFF(CUDA_POINTER_ATTRIBUTE_P2P_TOKENS, p2pToken)
    OFF(CUDA_POINTER_ATTRIBUTE_P2P_TOKENS, vaSpaceToken)
    SIZE(CUmemLocation) OFF(CUmemLocation, type) OFF(CUmemLocation, id)
    SIZE(CUmemAccessDesc) OFF(CUmemAccessDesc, location) OFF(CUmemAccessDesc, flags)
    SIZE(CUmemAllocationProp)
    OFF(CUmemAllocationProp, type) OFF(CUmemAllocationProp, requestedHandleTypes)
    OFF(CUmemAllocationProp, location) OFF(CUmemAllocationProp, location.id)
    OFF(CUmemAllocationProp, win32HandleMetaData)
    OFF(CUmemAllocationProp, allocFlags.compressionType)
    OFF(CUmemAllocationProp, allocFlags.gpuDirectRDMACapable)
    OFF(CUmemAllocationProp, allocFlags.usage) OFF(CUmemAllocationProp, allocFlags.reserved)
    SIZE(CUmemPoolProps) OFF(CUmemPoolProps, allocType) OFF(CUmemPoolProps, handleTypes)
    OFF(CUmemPoolProps, location) OFF(CUmemPoolProps, win32SecurityAttributes)
    OFF(CUmemPoolProps, maxSize) OFF(CUmemPoolProps, usage) OFF(CUmemPoolProps, reserved)
    SIZE(CUmemPool_attribute) SIZE(CUstreamCaptureStatus) SIZE(CUstreamCaptureMode)
    SIZE(CUmemoryPool) SIZE(CUhostFn)
    return bad;
}

/* SPDX-License-Identifier: MIT */
/*
 * cuda_types.h - the types and constants of the CUDA driver API that vramio uses, declared
 * here so that the library and the tools build without a CUDA toolkit: CUDA is reached only
 * through dlopen (cuda_loader.h), so no cuda.h and no libcuda are needed at build time.
 *
 * Only what the code uses is here, spelled as the driver's ABI has it (names, values, sizes,
 * member order). tests/abi/test_cuda_api.sh compares every constant and layout with the
 * toolkit's cuda.h wherever one is installed; add a name here and that test checks it.
 */
#ifndef VRAMIO_CUDA_TYPES_H
#define VRAMIO_CUDA_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* A device address is 64 bits wide on every 64-bit target (the only ones vramio builds for). */
#if defined(__LP64__)
typedef unsigned long long CUdeviceptr;
#else
typedef unsigned int CUdeviceptr;
#endif

typedef uint64_t cuuint64_t;
typedef int CUdevice;                              /* a device ordinal's handle */
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct vr_cu_context *CUcontext;           /* opaque driver objects */
typedef struct vr_cu_module *CUmodule;
typedef struct vr_cu_function *CUfunction;
typedef struct vr_cu_stream *CUstream;
typedef struct vr_cu_event *CUevent;
typedef struct vr_cu_mempool *CUmemoryPool;        /* a stream-ordered memory pool */

typedef struct {
    char bytes[16];
} CUuuid;

/* The results vramio tells apart; any other value is still a valid CUresult. */
typedef enum {
    CUDA_SUCCESS                = 0,
    CUDA_ERROR_INVALID_VALUE    = 1,
    CUDA_ERROR_OUT_OF_MEMORY    = 2,
    CUDA_ERROR_NOT_INITIALIZED  = 3,
    CUDA_ERROR_DEINITIALIZED    = 4,
    CUDA_ERROR_NO_DEVICE        = 100,
    CUDA_ERROR_INVALID_DEVICE   = 101,
    CUDA_ERROR_INVALID_CONTEXT  = 201,
    CUDA_ERROR_ALREADY_MAPPED   = 208,
    CUDA_ERROR_OPERATING_SYSTEM = 304,
    CUDA_ERROR_INVALID_HANDLE   = 400,
    CUDA_ERROR_NOT_FOUND        = 500,
    CUDA_ERROR_NOT_PERMITTED    = 800,
    CUDA_ERROR_NOT_SUPPORTED    = 801,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
} CUresult;

typedef enum {
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID                                  = 33,
    CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID                               = 34,
    CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID                               = 50,
    CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT                     = 51,
    CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES = 100,
    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED         = 102,
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103,
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED     = 110,
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED                      = 115,
    CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES              = 119,
    CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED                           = 124,
} CUdevice_attribute;

typedef enum {
    CU_POINTER_ATTRIBUTE_CONTEXT        = 1,
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE    = 2,
    CU_POINTER_ATTRIBUTE_P2P_TOKENS     = 5,
    CU_POINTER_ATTRIBUTE_SYNC_MEMOPS    = 6,
    CU_POINTER_ATTRIBUTE_BUFFER_ID      = 7,
    CU_POINTER_ATTRIBUTE_IS_MANAGED     = 8,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
    CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE = 10,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
    CU_POINTER_ATTRIBUTE_RANGE_SIZE     = 12,
    CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES = 14,
    CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE = 17,
    CU_POINTER_ATTRIBUTE_MAPPING_SIZE   = 18,
    CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR = 19,
} CUpointer_attribute;

/* What CU_POINTER_ATTRIBUTE_MEMORY_TYPE answers. */
typedef enum {
    CU_MEMORYTYPE_HOST = 0x01,
} CUmemorytype;

/* The legacy default stream, by its handle (what the synchronous copies run on), and the
 * calling thread's default stream. */
#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

/* What cuLaunchHostFunc runs in stream order (the bridge's stream-ordered free). */
typedef void (*CUhostFn)(void *userData);

/* Stream capture (CUDA graphs): a stream's state, and a thread's interaction mode. */
typedef enum {
    CU_STREAM_CAPTURE_STATUS_NONE        = 0,
    CU_STREAM_CAPTURE_STATUS_ACTIVE      = 1,
    CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2,
} CUstreamCaptureStatus;

typedef enum {
    CU_STREAM_CAPTURE_MODE_GLOBAL       = 0,
    CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
    CU_STREAM_CAPTURE_MODE_RELAXED      = 2,
} CUstreamCaptureMode;

/* cuStreamCreate and cuEventCreate flags (the copy engine's streams and events). */
typedef enum {
    CU_STREAM_NON_BLOCKING = 0x1,
} CUstream_flags;

typedef enum {
    CU_EVENT_DISABLE_TIMING = 0x2,
} CUevent_flags;

/* What cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_P2P_TOKENS) fills in (gdr_pin_buffer's
 * p2p_token and va_space arguments come from here). */
typedef struct {
    unsigned long long p2pToken;
    unsigned int vaSpaceToken;
} CUDA_POINTER_ATTRIBUTE_P2P_TOKENS;

/* What cuGetProcAddress_v2 says about a lookup (the bridge answers it for the runtime). */
typedef enum {
    CU_GET_PROC_ADDRESS_SUCCESS                = 0,
    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND       = 1,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
} CUdriverProcAddressQueryResult;

/* cuIpcGetMemHandle's handle: 64 bytes the driver fills (the bridge fills its own). */
#define CU_IPC_HANDLE_SIZE 64
typedef struct {
    char reserved[CU_IPC_HANDLE_SIZE];
} CUipcMemHandle;

/* cuIpcOpenMemHandle's one flag. */
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 0x1

/* cuMemHostAlloc flags. */
#define CU_MEMHOSTALLOC_PORTABLE  0x01
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02

/* ---- virtual memory management (cuMemCreate and friends) ---- */
typedef enum {
    CU_MEM_ALLOCATION_TYPE_PINNED = 0x1,
} CUmemAllocationType;

typedef enum {
    CU_MEM_HANDLE_TYPE_NONE                  = 0x0,
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1,
} CUmemAllocationHandleType;

typedef enum {
    CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
} CUmemLocationType;

typedef enum {
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3,
} CUmemAccess_flags;

typedef enum {
    CU_MEM_ALLOC_GRANULARITY_MINIMUM     = 0x0,
    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1,
} CUmemAllocationGranularity_flags;

typedef struct {
    CUmemLocationType type;
    int id;                     /* the device ordinal for CU_MEM_LOCATION_TYPE_DEVICE */
} CUmemLocation;

typedef struct {
    CUmemAllocationType type;
    CUmemAllocationHandleType requestedHandleTypes;
    CUmemLocation location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} CUmemAllocationProp;

typedef struct {
    CUmemLocation location;
    CUmemAccess_flags flags;
} CUmemAccessDesc;

/* ---- stream-ordered memory pools (cuMemAllocAsync and friends) ---- */
typedef struct {
    CUmemAllocationType allocType;
    CUmemAllocationHandleType handleTypes;
    CUmemLocation location;
    void *win32SecurityAttributes;
    size_t maxSize;
    unsigned short usage;
    unsigned char reserved[54];
} CUmemPoolProps;

typedef enum {
    CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES   = 1,
    CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC         = 2,
    CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES = 3,
    CU_MEMPOOL_ATTR_RELEASE_THRESHOLD                 = 4,
    CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT              = 5,
    CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH                 = 6,
    CU_MEMPOOL_ATTR_USED_MEM_CURRENT                  = 7,
    CU_MEMPOOL_ATTR_USED_MEM_HIGH                     = 8,
} CUmemPool_attribute;

/* cuMemGetHandleForAddressRange: the dma-buf export. */
typedef enum {
    CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 0x1,
} CUmemRangeHandleType;

typedef enum {
    CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE = 0x1,
} CUmemRangeFlags;

/* cuGetProcAddress's search flags. */
typedef enum {
    CU_GET_PROC_ADDRESS_DEFAULT = 0,
    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 2,
} CUdriverProcAddress_flags;

#endif /* VRAMIO_CUDA_TYPES_H */

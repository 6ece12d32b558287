/* SPDX-License-Identifier: MIT */
/*
 * bridge.h - what the pieces of the bridge share: the real CUDA driver's entry points
 * (bridge_resolve.c finds them), the replacements (bridge_mem.c, which routes device
 * allocations to vramio_alloc's pool, bridge_attr.c, which makes pool blocks answer like
 * cuMemAlloc allocations, and bridge_ipc.c, their CUDA IPC handles; listed in
 * bridge_routes.h), and the names by which the libcuda.so.1 shim (shim.c, libvramio_cuda.so)
 * and vramio-run find the bridge and the driver; bridge_ipc_server.c serves the IPC handles.
 */
#ifndef VRAMIO_BRIDGE_H
#define VRAMIO_BRIDGE_H

#include <stdint.h>
#include "cuda_types.h"     /* util/: the CUDA driver API, declared by vramio */

#define VB_EXPORT __attribute__((visibility("default")))

/* The bridge, found beside the shim's real file (or VRAMIO_BRIDGE_LIB). */
#define VB_BRIDGE_NAME "libvramio_bridge.so"
/* The shim's DT_NEEDED: in vramio-run's directory, a link to the real driver. The shim's
 * link (bridge.mk) names it too. */
#define VB_REAL_DRIVER "libcuda.so.1.real"

typedef CUresult (*vb_gpa_v1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*vb_gpa_v2_fn)(const char *, void **, int, cuuint64_t,
                                 CUdriverProcAddressQueryResult *);

/* The driver's own functions (the real libcuda.so.1, behind the shim when it is there). */
struct vb_real {
    CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
    CUresult (*cuMemAllocPitch_v2)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
    CUresult (*cuMemFree_v2)(CUdeviceptr);
    CUresult (*cuMemGetAddressRange_v2)(CUdeviceptr *, size_t *, CUdeviceptr);
    CUresult (*cuCtxGetDevice)(CUdevice *);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*cuCtxGetCurrent)(CUcontext *);
    CUresult (*cuCtxPushCurrent_v2)(CUcontext);
    CUresult (*cuCtxPopCurrent_v2)(CUcontext *);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuPointerGetAttribute)(void *, CUpointer_attribute, CUdeviceptr);
    CUresult (*cuPointerGetAttributes)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr);
    CUresult (*cuPointerSetAttribute)(const void *, CUpointer_attribute, CUdeviceptr);
    CUresult (*cuMemcpy)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void *, size_t);
    CUresult (*cuMemcpyDtoD_v2)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*cuMemsetD8_v2)(CUdeviceptr, unsigned char, size_t);
    CUresult (*cuMemsetD16_v2)(CUdeviceptr, unsigned short, size_t);
    CUresult (*cuMemsetD32_v2)(CUdeviceptr, unsigned int, size_t);
    CUresult (*cuIpcGetMemHandle)(CUipcMemHandle *, CUdeviceptr);
    CUresult (*cuIpcOpenMemHandle_v2)(CUdeviceptr *, CUipcMemHandle, unsigned int);
    CUresult (*cuIpcCloseMemHandle)(CUdeviceptr);
    CUresult (*cuMemRetainAllocationHandle)(CUmemGenericAllocationHandle *, void *);
    CUresult (*cuMemExportToShareableHandle)(void *, CUmemGenericAllocationHandle,
                                             CUmemAllocationHandleType, unsigned long long);
    CUresult (*cuMemImportFromShareableHandle)(CUmemGenericAllocationHandle *, void *,
                                               CUmemAllocationHandleType);
    CUresult (*cuMemRelease)(CUmemGenericAllocationHandle);
    CUresult (*cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
                                    unsigned long long);
    CUresult (*cuMemAddressFree)(CUdeviceptr, size_t);
    CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                         unsigned long long);
    CUresult (*cuMemUnmap)(CUdeviceptr, size_t);
    CUresult (*cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
};

/* The table, loaded at first use; NULL when libcuda.so.1 cannot be loaded. */
const struct vb_real *vb_real(void);

/* VRAMIO_BRIDGE_LOG=1: one stderr line per interception (the shim logs through it too). */
extern int vb_log_on;
__attribute__((format(printf, 1, 2))) void vb_log(const char *fmt, ...);

/* What the bridge exports to the shim: the replacement of an exported driver name (a row of
 * bridge_routes.h), NULL for any other; and vb_log. */
VB_EXPORT void *vramio_bridge_impl(const char *name);

/* The replacements of bridge_mem.c, by the ABI they implement. */
CUresult vb_mem_alloc(CUdeviceptr *dptr, size_t size);
CUresult vb_mem_alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                            unsigned int elem);
CUresult vb_mem_free(CUdeviceptr dptr);
CUresult vb_mem_get_address_range(CUdeviceptr *base, size_t *size, CUdeviceptr dptr);

/* bridge_attr.c: what the bridge knows of each pool block it handed out (the context current
 * at its allocation, its buffer id, its SYNC_MEMOPS flag), kept from allocation to free. */
void vb_block_add(CUdeviceptr base, CUcontext ctx);
void vb_block_forget(CUdeviceptr base);
/* The context the block at base was allocated in: 1, or 0 when the bridge did not record it. */
int vb_block_ctx(CUdeviceptr base, CUcontext *ctx);

/* The replacements of bridge_attr.c. */
CUresult vb_pointer_get_attribute(void *data, CUpointer_attribute attr, CUdeviceptr ptr);
CUresult vb_pointer_get_attributes(unsigned int n, CUpointer_attribute *attrs, void **data,
                                   CUdeviceptr ptr);
CUresult vb_pointer_set_attribute(const void *value, CUpointer_attribute attr, CUdeviceptr ptr);
CUresult vb_memcpy(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult vb_memcpy_htod(CUdeviceptr dst, const void *src, size_t n);
CUresult vb_memcpy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult vb_memset_d8(CUdeviceptr dst, unsigned char v, size_t n);
CUresult vb_memset_d16(CUdeviceptr dst, unsigned short v, size_t n);
CUresult vb_memset_d32(CUdeviceptr dst, unsigned int v, size_t n);

/* The replacements of bridge_ipc.c: CUDA IPC handles for pool blocks. */
CUresult vb_ipc_get_mem_handle(CUipcMemHandle *out, CUdeviceptr dptr);
CUresult vb_ipc_open_mem_handle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int flags);
CUresult vb_ipc_close_mem_handle(CUdeviceptr dptr);

/* bridge_ipc_server.c: an importer asks the exporting process for a slab's POSIX fd. */
struct vb_ipc_req {
    uint64_t base, id, size; /* the slab: its address, the driver's BUFFER_ID for it, size */
};
/* The exporter's answer to a request: a new fd of the slab, or a positive errno. */
typedef int (*vb_ipc_export_fn)(const struct vb_ipc_req *req, int *fd);
/* Start this process's server (once; again in a forked child): 0 with its nonce, or errno. */
int vb_ipc_server_start(vb_ipc_export_fn export_fd, uint64_t *nonce);
/* Whether pid and nonce name this process's own server. */
int vb_ipc_is_self(uint32_t pid, uint64_t nonce);
/* Ask the server of process pid (user uid, nonce) for req's fd: 0 with *fd, or errno. */
int vb_ipc_fetch(uint32_t uid, uint32_t pid, uint64_t nonce, const struct vb_ipc_req *req,
                 int *fd);

#endif /* VRAMIO_BRIDGE_H */

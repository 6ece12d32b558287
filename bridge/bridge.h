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
#include "bridge_routes.h"
#include "cuda_loader.h"    /* util/: the CUDA driver API as vramio declares and loads it */

#define VB_EXPORT __attribute__((visibility("default")))

/* The bridge, found beside the shim's real file (or VRAMIO_BRIDGE_LIB). */
#define VB_BRIDGE_NAME "libvramio_bridge.so"
/* The shim's DT_NEEDED: in vramio-run's directory, a link to the real driver. The shim's
 * link (bridge.mk) names it too. */
#define VB_REAL_DRIVER "libcuda.so.1.real"

typedef CUresult (*vb_gpa_v1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*vb_gpa_v2_fn)(const char *, void **, int, cuuint64_t,
                                 CUdriverProcAddressQueryResult *);

/* The driver's own functions (the real libcuda.so.1, behind the shim when it is there): the
 * table of util/cuda_api.h's one list, loaded at first use; NULL when libcuda.so.1 cannot be
 * loaded. */
const struct vr_cuda *vb_real(void);

/* VRAMIO_BRIDGE_LOG=1: one stderr line per interception (the shim logs through it too). */
extern int vb_log_on;
__attribute__((format(printf, 1, 2))) void vb_log(const char *fmt, ...);

/* What the bridge exports to the shim: the replacement of an exported driver name (a row of
 * bridge_routes.h), NULL for any other; and vb_log. */
VB_EXPORT void *vramio_bridge_impl(const char *name);

/* The replacements (bridge_mem.c: device allocations; bridge_attr.c: attributes, copies and
 * memsets; bridge_ipc.c: IPC handles), declared from their rows of bridge_routes.h. */
#define VB_DECLARE(exp, base, since, until, only, impl, ret, params, args) ret impl params;
VB_ROUTES(VB_DECLARE)
#undef VB_DECLARE

/* bridge_attr.c: what the bridge knows of each pool block it handed out (the context current
 * at its allocation, its buffer id, its SYNC_MEMOPS flag), kept from allocation to free. */
void vb_block_add(CUdeviceptr base, CUcontext ctx);
void vb_block_forget(CUdeviceptr base);
/* The context the block at base was allocated in: 1, or 0 when the bridge did not record it. */
int vb_block_ctx(CUdeviceptr base, CUcontext *ctx);

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

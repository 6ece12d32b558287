/* SPDX-License-Identifier: MIT */
/*
 * bridge.h - what the pieces of the bridge share: the real CUDA driver's entry points
 * (bridge_resolve.c finds them), the replacements (bridge_mem.c, which routes device
 * allocations to vramio_alloc's pool, bridge_attr.c, which makes pool blocks answer like
 * cuMemAlloc allocations, and bridge_ipc.c, their CUDA IPC handles; bridge_async.c, the
 * stream-ordered free of blocks; bridge_mempool.c, stream-ordered memory made pinnable;
 * bridge_vmm.c, the program's VMM calls; listed in bridge_routes.h), and the names by which
 * the libcuda.so.1 shim (shim.c, libvramio_cuda.so) and vramio-run find the bridge and the
 * driver; bridge_ipc_server.c serves the IPC handles, bridge_ipc_open.c opens them;
 * bridge_mempool_check.c asks the driver whether stream-ordered memory can be pinned;
 * bridge_fork.c keeps the bridge's locks and state right across fork().
 */
#ifndef VRAMIO_BRIDGE_H
#define VRAMIO_BRIDGE_H

#include <pthread.h>
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
/* The block's identity: the BUFFER_ID the bridge answers for the block at base, new for each
 * allocation. 1 with *id; 0 when the block has no record (make 0) or no memory (make 1). */
int vb_block_id(CUdeviceptr base, int make, unsigned long long *id);
/* bridge_block_id.c, bridge_attr.c's lock held: a new identity, unique in this process, at or
 * above 2^63 and not to be guessed from others; and the new key each side of a fork takes. */
unsigned long long vb_block_id_next(void);
void vb_block_id_forked(void);

/* bridge_ipc_server.c: an importer asks the exporting process whether a block it has a
 * handle of is still that block, and for its slab's POSIX fd when it has not mapped the slab
 * yet. The request's bytes, as sent (both ends are one build of the bridge: a request of
 * another size is refused). A slab that is a pool block of several chunks (alloc.c: VMM
 * allocations side by side in one reservation) is asked about with VB_IPC_CHUNKS: its answer
 * is a struct vb_ipc_chunks_reply with one fd per chunk, where a slab's is a status alone. */
struct vb_ipc_req {
    uint64_t base, id, size;  /* the slab: its address, the driver's BUFFER_ID for it, size */
    uint64_t offset, bsize;   /* the block: from the slab's start, its size */
    uint64_t block_id;        /* and its identity (vb_block_id) */
    uint32_t flags;           /* VB_IPC_WANT_FD, VB_IPC_CHUNKS, or 0 */
    uint32_t zero;            /* 0 */
};
#define VB_IPC_WANT_FD 1u
#define VB_IPC_CHUNKS  2u
/* Chunks of one block that one answer carries: the kernel passes at most 253 descriptors in
 * one message (SCM_MAX_FD); 240 GiB at the pool's default chunk of 1 GiB. */
#define VB_IPC_MAX_CHUNKS 240u
struct vb_ipc_chunks_reply {
    int32_t status;           /* 0 or a positive errno */
    uint32_t nfd;             /* the fds that come with it: one per chunk, in address order */
    uint64_t chunk;           /* each chunk's size but the last's, which is the rest */
};
/* What the exporter gives: n new fds (each listed by vb_ipc_fd_list_locked), the chunk size
 * when they are a block's chunks. */
struct vb_ipc_fds {
    int fd[VB_IPC_MAX_CHUNKS];
    unsigned n;
    uint64_t chunk;
};
/* The exporter's answer to a request: 0 (with the slab's new fds in *out when the request
 * wants them: one for a slab, one per chunk with VB_IPC_CHUNKS) or a positive errno. */
typedef int (*vb_ipc_export_fn)(const struct vb_ipc_req *req, struct vb_ipc_fds *out);
/* Start this process's server (once; again in a forked child): 0 with its nonce, or errno. */
int vb_ipc_server_start(vb_ipc_export_fn export_fd, uint64_t *nonce);
/* Answer one connection c (a request, then the reply) with the started server's export
 * function; c stays open. The server's thread runs it for each peer;
 * tests/bridge/fuzz_ipc_handle.c calls it directly. */
void vb_ipc_serve_one(int c);
/* Whether pid and nonce name this process's own server. */
int vb_ipc_is_self(uint32_t pid, uint64_t nonce);
/* Ask the server of process pid (user uid, nonce) about req: 0 (with *fd when req wants
 * one, listed), or a positive errno (the server's, or of the exchange). */
int vb_ipc_fetch(uint32_t uid, uint32_t pid, uint64_t nonce, const struct vb_ipc_req *req,
                 int *fd);
/* The same for a block of chunks (req has VB_IPC_CHUNKS): 0 with, when req wants them, the
 * chunks' fds (each listed) and the chunk size in *out, or a positive errno. Only the shape of
 * the answer is checked here: its sizes are the exporter's word. */
int vb_ipc_fetch_chunks(uint32_t uid, uint32_t pid, uint64_t nonce, const struct vb_ipc_req *req,
                        struct vb_ipc_fds *out);
/* The slabs' fds on their way between processes, listed so that a fork's child closes them
 * (bridge_ipc_server.c says why): made and listed under vb_ipc_fds_take (the list's lock,
 * never held while waiting for another process; vb_ipc_fd_list_locked: 0, or errno with fd
 * closed), unlisted and closed by vb_ipc_fd_close. */
void vb_ipc_fds_take(void);
void vb_ipc_fds_drop(void);
int vb_ipc_fd_list_locked(int fd);
void vb_ipc_fd_close(int fd);

/* The driver's per-thread-default-stream variant (_ptsz) of base at version ver (what
 * cuGetProcAddress gives under CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM), or NULL;
 * asked once per name (bridge_resolve.c). */
void *vb_real_ptsz(const char *base, int ver);

/* bridge_mem.c: whether the pool serves in this process (the vulkan backend can pin here:
 * decided at the first call that asks, vramio_backend_probe). */
int vb_pinnable(void);

/* bridge_async.c: blocks freed with cuMemFreeAsync. Give back to the pool those whose stream
 * got there (on a thread of the program: returning a block may call CUDA); whether the block
 * at base is freed already, its stream not there yet; how many went back. */
void vb_async_drain(void);
int vb_async_pending(CUdeviceptr base);
unsigned long vb_async_freed(void);

/* bridge_vmm.c: ask the driver, once, what cuMemRetainAllocationHandle answers for cuMemAlloc
 * memory (a context current: called at the pool's allocations). */
void vb_vmm_learn(void);

/* bridge_mempool.c: the pool the program knows for pool (the default pool that the bridge's
 * pool serves for, else pool itself). bridge_mempool_check.c: whether stream-ordered memory
 * of GPU dev can be pinned on this driver, shown with a pool of the bridge's (made like def's,
 * with a POSIX-fd handle type) from which two blocks are pinned and mapped: 0 with the pool in
 * *pool, or 1 with why. */
CUmemoryPool vb_mempool_program_view(CUmemoryPool pool);
int vb_mempool_check(const struct vr_cuda *t, int dev, int ndev, CUmemoryPool def,
                     CUmemoryPool *pool, char *why, size_t len);

/* bridge_ipc.c: whether cuIpcGetMemHandle of the pool block [bbase, bbase + bsize) makes a
 * handle of the bridge's (every block but one of more chunks than one answer carries): what
 * its IS_LEGACY_CUDA_IPC_CAPABLE says (bridge_attr.c). */
int vb_ipc_block_has_handle(CUdeviceptr bbase, size_t bsize);

/* bridge_ipc_open.c: where ptr lies among the blocks this process opened from IPC handles:
 * 1 in an open block (its start and size in *base and *size, the context it was opened in
 * in *ctx unless ctx is NULL), VB_IPC_UNOPENED in a slab mapped for them but in no open
 * block, 0 elsewhere. */
#define VB_IPC_UNOPENED (-1)
int vb_ipc_range(CUdeviceptr ptr, CUdeviceptr *base, size_t *size, CUcontext *ctx);

/* bridge_fork.c: at each fork, the handlers registered as the bridge loads call each part
 * that has locks or state of the process (the functions below) with the fork's phase: before
 * it, the part takes its locks; after it, in the parent it drops them, and in the child it
 * makes them fresh and forgets what was the parent's alone. */
enum vb_fork_phase { VB_FORK_PREPARE, VB_FORK_PARENT, VB_FORK_CHILD };
/* What a part does with one of its mutexes at phase: takes, drops or makes it fresh. */
void vb_fork_lock(pthread_mutex_t *m, enum vb_fork_phase phase);
void vb_ipc_server_fork(enum vb_fork_phase phase); /* bridge_ipc_server.c */
void vb_ipc_fd_fork(enum vb_fork_phase phase);     /* bridge_ipc_server.c: the fds on their way */
void vb_ipc_export_fork(enum vb_fork_phase phase); /* bridge_ipc.c */
void vb_ipc_open_fork(enum vb_fork_phase phase);   /* bridge_ipc_open.c */
void vb_block_fork(enum vb_fork_phase phase);      /* bridge_attr.c */
void vb_async_fork(enum vb_fork_phase phase);      /* bridge_async.c */
void vb_resolve_fork(enum vb_fork_phase phase);    /* bridge_resolve.c: vb_real_ptsz's table */

#endif /* VRAMIO_BRIDGE_H */

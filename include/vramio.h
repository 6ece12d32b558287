/* SPDX-License-Identifier: MIT */
/*
 * vramio.h - vramio's additions to the gdrapi interface (all names start with vramio_).
 *
 * Which backend serves a gdr_t or a pin, why the other backends are unusable, error
 * strings, and device memory that every backend can pin.
 */
#ifndef VRAMIO_H
#define VRAMIO_H

#include <stddef.h>
#include <sys/types.h>
#include "gdrapi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VRAMIO_VERSION_MAJOR 2
#define VRAMIO_VERSION_MINOR 6

/* The ways GPU memory can be mapped for the CPU, in probing order. */
typedef enum vramio_backend {
    VRAMIO_BACKEND_NONE   = 0,
    VRAMIO_BACKEND_GDRDRV = 1, /* the gdrdrv kernel module (/dev/gdrdrv) */
    VRAMIO_BACKEND_DMABUF = 2, /* CUDA dma-buf export + mmap, no module */
    VRAMIO_BACKEND_VULKAN = 3, /* CUDA VMM -> Vulkan import -> vkMapMemory, no module */
    VRAMIO_BACKEND_COUNT
} vramio_backend_t;

/* "gdrdrv", "dmabuf", "vulkan", or "none"; NULL for an out-of-range value. */
const char *vramio_backend_name(vramio_backend_t backend);

/* The highest-priority usable backend of g (the one a pin tries first). */
int vramio_get_backend(gdr_t g, vramio_backend_t *backend);

/* The backend that owns a pin. */
int vramio_handle_backend(gdr_t g, gdr_mh_t handle, vramio_backend_t *backend);

/* Whether backend is usable through g: 0 if it is, else a positive errno, and in both cases a
 * one-line explanation copied into reason (always NUL-terminated when len > 0; one longer
 * than len - 1 keeps its beginning and its end, where the advice is, around "..."). */
int vramio_backend_status(gdr_t g, vramio_backend_t backend, char *reason, size_t len);

/* Probe one backend without an open gdr_t (what gdr_open would decide), same convention.
 * A backend that works but that gdr_open leaves out (vulkan alone, without
 * VRAMIO_ENABLE_VULKAN=1 or GDRCOPY_BACKEND=vulkan) gives ENODEV and a reason that starts
 * "usable, not enabled:" and says how to opt in. */
int vramio_backend_probe(vramio_backend_t backend, char *reason, size_t len);

/* The one-line reason of the last failing gdr_* / vramio_* call in this thread ("" if none). */
const char *vramio_last_error(void);

/* A message for a return code of a gdr_* or vramio_* function (0 included). Never NULL. */
const char *vramio_strerror(int err);

/* The name of the CPU copy kernel in use ("avx512", "avx2", "sse41", "movdir64b", "neon", "c"). */
const char *vramio_copy_kernel(void);

/*
 * Copies that use the GPU's copy engine where it is faster than the CPU through the BAR.
 * The contract of gdr_copy_to_mapping / gdr_copy_from_mapping: synchronous, the same checks
 * and the same errors (plus a positive errno when the copy engine fails). From a crossover size
 * up (per GPU and direction; VRAMIO_DMA_CROSSOVER_READ / _WRITE, in bytes with an optional
 * K/M/G suffix or "never", else measured once per process by the first such read of at least
 * 4 KiB or write of at least 64 KiB, in one to two milliseconds; smaller writes always take the
 * BAR) the copy runs on a private non-blocking stream of the pin's GPU, so it neither waits
 * for the program's kernels nor blocks them; pageable host memory goes through pinned bounce
 * buffers; the thread's current CUDA context is left as it was.
 * Without CUDA, or for memory of a non-primary CUDA context, they copy through the BAR.
 */
int vramio_copy_to_mapping_auto(gdr_mh_t handle, void *map_d_ptr, const void *h_ptr,
                                size_t size);
int vramio_copy_from_mapping_auto(gdr_mh_t handle, void *h_ptr, const void *map_d_ptr,
                                  size_t size);

/* The crossovers of the _auto copies for a mapped pin's GPU, in bytes, for page-locked host
 * memory (pageable memory, copied through bounce buffers, crosses later: the info-level log
 * shows both): 0 while not yet set or measured, SIZE_MAX when the copy engine is not used
 * (never faster, or no CUDA). */
int vramio_copy_auto_crossover(gdr_mh_t handle, size_t *read_bytes, size_t *write_bytes);

/*
 * Device memory that every backend can pin: size bytes on CUDA device ordinal gpu, returned as
 * an ordinary CUdeviceptr, usable by the caller's kernels. It lies in a CUDA VMM allocation
 * with a POSIX-fd handle type and, where the GPU supports it, GPUDirect RDMA capability.
 * Requests up to 1 MiB are carved from shared 2 MiB slabs (aligned to at least 512 bytes, as
 * cudaMalloc's); larger ones are rounded up to the allocation granularity, and those above
 * VRAMIO_POOL_CHUNK_MB (default 1024; 0: never) are made of VMM allocations of that size side
 * by side in one reservation where a backend can pin across them (still one address, one
 * size, one free; a pin inside one chunk costs that chunk). Free it with
 * vramio_free(), which returns the memory for reuse at once: like cudaFree, it must not be
 * called while GPU work still uses the memory (vramio_free does not wait for it).
 * Thread-safe. VRAMIO_POOL_CACHE_MB (default 64) bounds the emptied slabs kept per GPU.
 */
int vramio_alloc(int gpu, size_t size, unsigned long long *dptr);
int vramio_free(unsigned long long dptr);

/* The live vramio_alloc allocation that holds ptr: its start and size (rounded to its size
 * class or granularity); either output may be NULL. 0; EFAULT when ptr lies in the pools'
 * memory but in no live allocation (a freed block: the CUDA driver would still describe the
 * slab around it); ENOENT when ptr is not the pools' memory at all. */
int vramio_alloc_range(unsigned long long ptr, unsigned long long *base, size_t *size);

/* What the pools hold, for one GPU or (gpu -1) all of them. */
struct vramio_pool_stats {
    size_t slabs;         /* shared slabs for small requests, cached ones included */
    size_t cached_slabs;  /* of those, empty ones kept for reuse */
    size_t slab_bytes;    /* bytes of the shared slabs */
    size_t small_allocs;  /* live small allocations */
    size_t small_bytes;   /* their bytes, rounded to their size classes */
    size_t large_allocs;  /* live allocations with VMM allocations of their own (chunks: one) */
    size_t large_bytes;   /* their bytes, rounded to the granularity */
};
int vramio_pool_stats(int gpu, struct vramio_pool_stats *stats);

/* Release the cached empty slabs of one GPU or (gpu -1) all of them. */
int vramio_pool_trim(int gpu);

/*
 * The allocator interface of PyTorch's torch.cuda.memory.CUDAPluggableAllocator (stream is a
 * cudaStream_t): vramio_alloc memory, NULL on failure. The free waits for the work queued on
 * stream before the memory is reused, since the caller hands memory back as soon as its last
 * use is queued.
 */
void *vramio_pluggable_alloc(ssize_t size, int device, void *stream);
void vramio_pluggable_free(void *ptr, ssize_t size, int device, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* VRAMIO_H */

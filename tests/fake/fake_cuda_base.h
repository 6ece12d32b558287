/* SPDX-License-Identifier: MIT */
/*
 * fake_cuda_base.h - the base of the stand-in libcuda.so.1 drivers (fake_cuda_base.c), linked
 * into each of them (fake.mk): fake_cuda_dmabuf.c (the dma-buf backend's) and fake_cuda_vmm.c
 * with fake_cuda_ptr.c and fake_cuda_pool.c (the bridge's and the vulkan backend's).
 *
 * The base answers the calls both drivers make the same way: cuInit and the version, devices,
 * one context model (a primary context per device, a per-thread stack of current contexts),
 * the synchronizations, streams and events, the copies, pinned host memory, pointer attributes,
 * cuMemFree and cuMemGetAddressRange over one table of device memory, and cuGetProcAddress_v2
 * over a lookup each driver supplies. A driver adds how its memory is made (cuMemAlloc, VMM,
 * exports) and the counters its tests read, under names of its own.
 *
 * Environment read here, for both drivers: FAKE_CUDA_DEVICES=N (N devices, default 1, at most
 * FAKE_GPU_MAX); FAKE_CUDA_NO_CTX=1 (threads start with no current context; otherwise device
 * 0's primary context is current, as after cudaSetDevice(0)); FAKE_CUDA_VERSION
 * (cuDriverGetVersion, default the driver's own); FAKE_CUDA_INIT=<CUresult> (cuInit fails);
 * FAKE_CUDA_SYNC_ERROR=<CUresult> (cuCtxSynchronize and cuStreamSynchronize fail);
 * FAKE_CUDA_FAIL_DMA=<CUresult> (the asynchronous copies fail); FAKE_CUDA_NO_OWNER=1
 * (CU_POINTER_ATTRIBUTE_CONTEXT fails for device memory, as for VMM memory that no context
 * owns); FAKE_CUDA_OTHER_CTX=1 (device memory belongs to a context of device 0 that is not its
 * primary one); FAKE_CUDA_FORK_REFUSE=1 (in a forked child, fake_child_refused);
 * FAKE_CUDA_ERROR_TEXT=driver (cuGetErrorString gives the real driver's texts).
 */
#ifndef VRAMIO_FAKE_CUDA_BASE_H
#define VRAMIO_FAKE_CUDA_BASE_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>
#include "fake_gpu.h"

/* The base's helpers are hidden: a driver exports CUDA's names and its own counters only. */
#define FAKE_HIDDEN __attribute__((visibility("hidden")))
#define FAKE_COUNT(x) __atomic_add_fetch(&(x), 1, __ATOMIC_RELAXED)

/* One piece of device memory: a plain allocation (vmm FAKE_PLAIN), a VMM mapping (FAKE_VMM,
 * handle the index of its allocation handle in fake_cuda_vmm.c), or an allocation of a
 * stream-ordered pool (FAKE_POOLED, fake_cuda_pool.c: handle the pool chunk's allocation
 * handle, map_base and map_size the chunk's mapping). Device memory is host memory here: base
 * is both its device and its host address. span: the bytes the driver took for it (whole
 * units of its layout), size: those asked for. */
enum { FAKE_PLAIN = 0, FAKE_VMM = 1, FAKE_POOLED = 2 };
struct fake_range {
    uintptr_t base;
    size_t size, span;
    int dev, vmm, handle, fd;
    int nommap;       /* fake_cuda_dmabuf.c: exports of it cannot be mapped */
    int sync_memops;  /* CU_POINTER_ATTRIBUTE_SYNC_MEMOPS set (plain memory only) */
    int graph;        /* a CUDA graph's allocation (made during a stream capture) */
    unsigned handle_types;   /* CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES */
    void *pool;              /* CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE (FAKE_POOLED) */
    uintptr_t map_base;      /* CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR and _SIZE, when set */
    size_t map_size;
};

/* What the base counts, for the drivers' own counter functions. */
struct fake_counts {
    int inits;                          /* cuInit calls */
    int syncs, legacy_syncs;            /* cuCtxSynchronize; cuStreamSynchronize(legacy) */
    int syncs_on[FAKE_GPU_MAX];         /* cuCtxSynchronize in a context of device i */
    int stream_syncs_on[FAKE_GPU_MAX];  /* cuStreamSynchronize likewise */
    int device_syncs;                   /* cuMemFree, which waits for the whole device */
    int dma_calls, dma_legacy, dma_blocking, dma_pageable; /* asynchronous copies */
    size_t dma_bytes;
};
FAKE_HIDDEN extern struct fake_counts fake_counts;

/* ---- supplied by each driver ---------------------------------------------------------- */
/* cuDriverGetVersion's answer when FAKE_CUDA_VERSION is unset. */
FAKE_HIDDEN extern const int fake_default_version;
/* cuGetProcAddress_v2: the entry point of sym at version ver, or NULL and why in *st. */
FAKE_HIDDEN void *fake_proc_lookup(const char *sym, int ver, cuuint64_t flags,
                                   CUdriverProcAddressQueryResult *st);
/* Give back the memory of plain allocation r, which cuMemFree is removing (the lock held). */
FAKE_HIDDEN void fake_release_plain(const struct fake_range *r);

/* ---- environment ---------------------------------------------------------------------- */
FAKE_HIDDEN int fake_env_int(const char *name, int dflt);
FAKE_HIDDEN int fake_env_is(const char *name, const char *value);
/* Entry i of a colon-separated list in the environment, dflt where it has none. */
FAKE_HIDDEN int fake_env_at(const char *name, int i, int dflt);

/* ---- devices and contexts ------------------------------------------------------------- */
FAKE_HIDDEN int fake_ndev(void);
FAKE_HIDDEN int fake_dev_ok(int dev);
/* The device of the calling thread's current context, or -1 when it has none. */
FAKE_HIDDEN int fake_current_device(void);
FAKE_HIDDEN CUcontext fake_primary_ctx(int dev);
/* Primary-context references held now, and retains made so far; -1 for no such device. */
FAKE_HIDDEN int fake_primary_refs(int dev);
FAKE_HIDDEN int fake_primary_retains(int dev);

/* ---- the table of device memory (fake_lock held around the use of a record) ----------- */
FAKE_HIDDEN void fake_lock(void);
FAKE_HIDDEN void fake_unlock(void);
/* Index of a new record holding *r, or -1 when the table is full. */
FAKE_HIDDEN int fake_range_add(const struct fake_range *r);
/* Index of the record p lies in (within its size, or with whole, its span), or -1. */
FAKE_HIDDEN int fake_range_find(uintptr_t p, int whole);
FAKE_HIDDEN struct fake_range *fake_range_at(int i);
FAKE_HIDDEN void fake_range_del(int i);
/* A copy of the record p lies in (within its size): 1, or 0 when none. Takes the lock. */
FAKE_HIDDEN int fake_range_of(uintptr_t p, struct fake_range *out);
/* Live records of plain memory (vmm 0) or of VMM mappings (vmm 1). Takes the lock. */
FAKE_HIDDEN int fake_range_count(int vmm);
/* Record plain allocation r and give its address in *d; when the table is full, give its
 * memory back (fake_release_plain) and say CUDA_ERROR_OUT_OF_MEMORY. Takes the lock. */
FAKE_HIDDEN CUresult fake_add_plain(const struct fake_range *r, CUdeviceptr *d);
/* Free plain allocation d (cuMemFree without its wait): CUDA_ERROR_INVALID_VALUE if none. */
FAKE_HIDDEN CUresult fake_free_plain(CUdeviceptr d);

/* ---- fork ------------------------------------------------------------------------------ */
/* 1 in a child forked from the process that loaded the stand-in, with
 * FAKE_CUDA_FORK_REFUSE=1: the calls that make or map memory then say
 * CUDA_ERROR_NOT_INITIALIZED, as the real driver refuses CUDA in such a child. */
FAKE_HIDDEN int fake_child_refused(void);

/* ---- stream order (fake_cuda_pool.c in the VMM stand-in; nothing in the dma-buf one) ---- */
/* Run the host functions queued on stream s (every stream when all), as its synchronization
 * reaches them. */
FAKE_HIDDEN void fake_stream_reached(CUstream s, int all);
/* Free pool or graph allocation d (cuMemFree of stream-ordered memory): CUDA_SUCCESS, or
 * CUDA_ERROR_INVALID_VALUE when d is none. */
FAKE_HIDDEN CUresult fake_free_pooled(CUdeviceptr d);
/* 1 while the calling thread runs a host function (cuLaunchHostFunc): the CUDA calls that the
 * real driver forbids there fail, and are counted. */
FAKE_HIDDEN int fake_forbidden_in_host_fn(void);

/* ---- pinned host memory --------------------------------------------------------------- */
/* 1 when [p, p + n) lies in memory of cuMemHostAlloc / cuMemAllocHost. */
FAKE_HIDDEN int fake_host_pinned(const void *p, size_t n);

#endif /* VRAMIO_FAKE_CUDA_BASE_H */

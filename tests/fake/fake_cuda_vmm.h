/* SPDX-License-Identifier: MIT */
/*
 * fake_cuda_vmm.h - what the two halves of the VMM stand-in driver's memory share
 * (fake_cuda_vmm.c: cuMemCreate and its handles; fake_cuda_pool.c: stream-ordered pools,
 * whose chunks are such handles), and the per-thread-stream variants of its stream-ordered
 * calls that cuGetProcAddress hands out (the real driver exports them under these names).
 */
#ifndef VRAMIO_FAKE_CUDA_VMM_H
#define VRAMIO_FAKE_CUDA_VMM_H

#include "fake_cuda_base.h"

#define FAKE_GRAN (2u << 20)

/* A new allocation handle owning fd (a memfd of size bytes, named after its GPU), with
 * properties p; closes fd when no handle is left. */
FAKE_HIDDEN CUresult fake_vmm_handle_new(int fd, size_t size, const CUmemAllocationProp *p,
                                         CUmemGenericAllocationHandle *h);

/* cuGetProcAddress of the stream-ordered calls (fake_cuda_pool.c): the function for sym, its
 * per-thread-default-stream variant when ptsz; NULL for a name it does not have. */
FAKE_HIDDEN void *fake_pool_lookup(const char *sym, int ptsz);

#endif /* VRAMIO_FAKE_CUDA_VMM_H */

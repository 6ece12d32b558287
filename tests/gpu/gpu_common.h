/* SPDX-License-Identifier: MIT */
/*
 * gpu_common.h - what the GPU test programs and the GPU benchmark (bench/gpu_bench.c) share:
 * CUDA set-up through the driver API, NCCL-style VMM allocations and timing (result lines and
 * the fill pattern are the test kit's, tests/lib/t.h). These programs use the library through
 * its public headers only (gdrapi.h, vramio.h) and check it against cuMemcpy.
 */
#ifndef VRAMIO_GPU_COMMON_H
#define VRAMIO_GPU_COMMON_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>
#include "gdrapi.h"
#include "vramio.h"
#include "t.h"

/* Abort the program with a message when a CUDA call that set-up depends on fails. */
#define CU_MUST(call) gpu_cu_must((call), #call, __FILE__, __LINE__)
void gpu_cu_must(CUresult r, const char *what, const char *file, int line);

/* cuInit, device 0, its primary context made current in this thread. */
void gpu_cuda_setup(void);
/* Make the primary context of device 0 current in the calling thread. */
void gpu_cuda_thread(void);

/* An allocation the way NCCL makes one: cuMemCreate with a POSIX-fd handle type (and RDMA
 * capability where supported), reserved, mapped and opened to the device. */
struct gpu_vmm {
    CUdeviceptr ptr;
    size_t size;
    CUmemGenericAllocationHandle handle;
};
int gpu_vmm_alloc(size_t size, struct gpu_vmm *v);
void gpu_vmm_free(struct gpu_vmm *v);

/* Pin [addr, addr+size), map it, and return the CPU address of addr itself. */
int gpu_pin_map(gdr_t g, CUdeviceptr addr, size_t size, gdr_mh_t *mh, void **map,
                size_t *map_len, void **at);

/* Monotonic time in nanoseconds. */
uint64_t gpu_now_ns(void);

#endif /* VRAMIO_GPU_COMMON_H */

/* SPDX-License-Identifier: MIT */
/* gpu_common.c - CUDA set-up, VMM allocations and timing for tests/gpu and bench/gpu_bench.c */
#include "gpu_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static CUcontext ctx0;
static CUdevice dev0;

void gpu_cu_must(CUresult r, const char *what, const char *file, int line)
{
    const char *name = NULL;

    if (r == CUDA_SUCCESS)
        return;
    cuGetErrorName(r, &name);
    t_fail("setup", "%s:%d: %s failed: %s", file, line, what, name ? name : "?");
    fflush(stdout);
    exit(1);
}

void gpu_cuda_setup(void)
{
    CU_MUST(cuInit(0));
    CU_MUST(cuDeviceGet(&dev0, 0));
    CU_MUST(cuDevicePrimaryCtxRetain(&ctx0, dev0));
    CU_MUST(cuCtxSetCurrent(ctx0));
}

void gpu_cuda_thread(void)
{
    CU_MUST(cuCtxSetCurrent(ctx0));
}

int gpu_vmm_alloc(size_t size, struct gpu_vmm *v)
{
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;
    size_t gran = 0;
    int rdma = 0;

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    cuDeviceGetAttribute(&rdma, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, dev0);
    prop.allocFlags.gpuDirectRDMACapable = rdma ? 1 : 0;
    if (cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ||
        gran == 0)
        return 1;
    v->size = (size + gran - 1) / gran * gran;
    if (cuMemCreate(&v->handle, v->size, &prop, 0))
        return 1;
    if (cuMemAddressReserve(&v->ptr, v->size, gran, 0, 0)) {
        cuMemRelease(v->handle);
        return 1;
    }
    memset(&acc, 0, sizeof(acc));
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (cuMemMap(v->ptr, v->size, 0, v->handle, 0) || cuMemSetAccess(v->ptr, v->size, &acc, 1)) {
        cuMemUnmap(v->ptr, v->size);
        cuMemAddressFree(v->ptr, v->size);
        cuMemRelease(v->handle);
        return 1;
    }
    return 0;
}

void gpu_vmm_free(struct gpu_vmm *v)
{
    cuMemUnmap(v->ptr, v->size);
    cuMemAddressFree(v->ptr, v->size);
    cuMemRelease(v->handle);
    memset(v, 0, sizeof(*v));
}

int gpu_pin_map(gdr_t g, CUdeviceptr addr, size_t size, gdr_mh_t *mh, void **map,
                size_t *map_len, void **at)
{
    gdr_info_t info;
    int rc;

    rc = gdr_pin_buffer_v2(g, (unsigned long)addr, size, 0, mh);
    if (rc)
        return rc;
    rc = gdr_get_info(g, *mh, &info);
    if (!rc)
        rc = gdr_map(g, *mh, map, info.mapped_size);
    if (rc) {
        gdr_unpin_buffer(g, *mh);
        return rc;
    }
    *map_len = info.mapped_size;
    *at = (char *)*map + (addr - info.va);
    return 0;
}

uint64_t gpu_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* SPDX-License-Identifier: MIT */
/*
 * alloc.c - vramio_alloc / vramio_free: device memory that every backend can pin.
 *
 * A plain CUDA VMM allocation (cuMemCreate + cuMemAddressReserve + cuMemMap + cuMemSetAccess)
 * requesting a POSIX-fd handle type (so the vulkan backend can export it) and GPUDirect RDMA
 * capability (so the kernel module can pin it) wherever the device offers them. CUDA memory
 * imported into Vulkan maps exactly as fast as Vulkan's own memory exported to CUDA, so the
 * simple direction is the one taken. Our allocations are recorded, so vramio_free of
 * anything else is a clean EINVAL.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "cuda_loader.h"
#include "fork.h"
#include "vramio.h"

struct vr_alloc {
    CUdeviceptr ptr;
    size_t size;
    CUmemGenericAllocationHandle handle;
    struct vr_alloc *next;
};

static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vr_alloc *allocs;
static pthread_once_t alloc_fork_once = PTHREAD_ONCE_INIT;

/* The list is held only for a pointer swap; a fork meanwhile must not leave the child a
 * lock that no thread will release. */
static void alloc_fork_register(void)
{
    vr_fork_protect_mutex(&alloc_lock);
}

static void alloc_lock_take(void)
{
    pthread_once(&alloc_fork_once, alloc_fork_register);
    pthread_mutex_lock(&alloc_lock);
}

static int dev_attr(const struct vr_cuda *cu, CUdevice d, CUdevice_attribute a)
{
    int v = 0;

    if (cu->cuDeviceGetAttribute(&v, a, d) != CUDA_SUCCESS)
        return 0;
    return v;
}

static int cuda_fail(const char *what, CUresult r)
{
    return vr_fail_err(vr_cuda_errno(r), "vramio_alloc/free: %s failed: %s", what,
                       vr_cuda_errstr(r));
}

/* Reserve, map and open access to handle h of size bytes on device gpu. */
static int map_allocation(const struct vr_cuda *cu, int gpu, CUmemGenericAllocationHandle h,
                          size_t size, size_t align, CUdeviceptr *out)
{
    CUmemAccessDesc access;
    CUdeviceptr ptr = 0;
    CUresult r;

    r = cu->cuMemAddressReserve(&ptr, size, align, 0, 0);
    if (r != CUDA_SUCCESS)
        return cuda_fail("cuMemAddressReserve", r);
    r = cu->cuMemMap(ptr, size, 0, h, 0);
    if (r != CUDA_SUCCESS) {
        cu->cuMemAddressFree(ptr, size);
        return cuda_fail("cuMemMap", r);
    }
    memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = gpu;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r = cu->cuMemSetAccess(ptr, size, &access, 1);
    if (r != CUDA_SUCCESS) {
        cu->cuMemUnmap(ptr, size);
        cu->cuMemAddressFree(ptr, size);
        return cuda_fail("cuMemSetAccess", r);
    }
    *out = ptr;
    return 0;
}

VR_EXPORT int vramio_alloc(int gpu, size_t size, unsigned long long *dptr)
{
    const struct vr_cuda *cu;
    CUmemAllocationProp prop;
    CUmemGenericAllocationHandle h;
    struct vr_alloc *a;
    CUdeviceptr ptr = 0;
    size_t gran = 0;
    char why[256];
    int count = 0, rc;
    CUdevice d;
    CUresult r;

    if (!dptr || size == 0 || gpu < 0)
        return vr_fail(EINVAL, "vramio_alloc: %s", !dptr ? "dptr is NULL" :
                       size == 0 ? "size is 0" : "negative GPU ordinal");
    *dptr = 0;
    rc = vr_cuda_init(&cu, why, sizeof(why));
    if (rc)
        return vr_fail_err(rc, "vramio_alloc: %s", why);
    if (cu->cuDeviceGetCount(&count) != CUDA_SUCCESS || gpu >= count)
        return vr_fail(ENODEV, "vramio_alloc: there is no CUDA device %d (%d found)", gpu, count);
    r = cu->cuDeviceGet(&d, gpu);
    if (r != CUDA_SUCCESS)
        return cuda_fail("cuDeviceGet", r);
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = gpu;
    if (dev_attr(cu, d, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED))
        prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    if (dev_attr(cu, d, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED))
        prop.allocFlags.gpuDirectRDMACapable = 1;
    r = cu->cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    if (r != CUDA_SUCCESS || gran == 0)
        return r != CUDA_SUCCESS ? cuda_fail("cuMemGetAllocationGranularity", r) : EIO;
    if (size > SIZE_MAX - (gran - 1))
        return vr_fail(EINVAL, "vramio_alloc: size %zu too large", size);
    size = (size + gran - 1) / gran * gran;
    a = calloc(1, sizeof(*a));
    if (!a)
        return ENOMEM;
    r = cu->cuMemCreate(&h, size, &prop, 0);
    if (r != CUDA_SUCCESS) {
        free(a);
        return cuda_fail("cuMemCreate", r);
    }
    rc = map_allocation(cu, gpu, h, size, gran, &ptr);
    if (rc) {
        cu->cuMemRelease(h);
        free(a);
        return rc;
    }
    a->ptr = ptr;
    a->size = size;
    a->handle = h;
    alloc_lock_take();
    a->next = allocs;
    allocs = a;
    pthread_mutex_unlock(&alloc_lock);
    *dptr = (unsigned long long)ptr;
    return 0;
}

VR_EXPORT int vramio_free(unsigned long long dptr)
{
    const struct vr_cuda *cu = vr_cuda_load(NULL, 0);
    struct vr_alloc **p, *a = NULL;
    CUresult r1, r2, r3;

    alloc_lock_take();
    for (p = &allocs; *p; p = &(*p)->next) {
        if ((*p)->ptr == (CUdeviceptr)dptr) {
            a = *p;
            *p = a->next;
            break;
        }
    }
    pthread_mutex_unlock(&alloc_lock);
    if (!a || !cu)
        return vr_fail(EINVAL, "vramio_free: 0x%llx is not memory from vramio_alloc (or was "
                       "freed already)", dptr);
    /* Pins of it stay valid: a backend's import holds the pages until it is unpinned. */
    r1 = cu->cuMemUnmap(a->ptr, a->size);
    r2 = cu->cuMemAddressFree(a->ptr, a->size);
    r3 = cu->cuMemRelease(a->handle);
    free(a);
    if (r1 != CUDA_SUCCESS)
        return cuda_fail("cuMemUnmap", r1);
    if (r2 != CUDA_SUCCESS)
        return cuda_fail("cuMemAddressFree", r2);
    if (r3 != CUDA_SUCCESS)
        return cuda_fail("cuMemRelease", r3);
    return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * vulkan_pool.c - before the vulkan backend pins stream-ordered memory (cudaMallocAsync,
 * cuMemAllocFromPoolAsync of a pool with a POSIX-fd handle type), the check, once per GPU,
 * that it finds such memory where the driver puts it.
 *
 * For such memory cuMemGetAddressRange gives the block the program got, while
 * cuMemRetainAllocationHandle gives the pool's physical allocation the block is carved from,
 * and an import of that allocation's fd maps the allocation from its start. So the backend
 * imports the allocation and finds the block in it by CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR
 * (where the driver says the allocation is mapped). That the block's bytes are then at that
 * offset of the import is what this file checks on the driver itself, before any pin relies
 * on it: a pool made for the purpose, two blocks of it given distinct bytes through the copy
 * engine on a stream of its own, the second's allocation imported and mapped as a pin would,
 * and both read through the mapping. A driver that answers otherwise (or refuses a step)
 * gets its stream-ordered memory refused, with the reason, rather than a mapping of other
 * bytes. The thread's capture mode is relaxed meanwhile, so another thread's capture is not
 * disturbed by the check's synchronizations.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "process/cuda_ctx.h"
#include "process/fork.h"
#include "process/log.h"
#include "backend.h"
#include "reason.h"            /* util/: VR_REASON_LEN, vr_reason */
#include "vulkan_device.h"
#include "vulkan_export.h"
#include "vulkan_pool.h"

#define LAYOUT_GPUS  64
#define LAYOUT_BYTES (64u << 10)

/* The verdicts' lock, held only to read or write one (fork.h protects it). */
static pthread_mutex_t layout_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { int done, rc; char why[VR_REASON_LEN]; } layout[LAYOUT_GPUS];

/* At load, not at the first use (fork.h). */
__attribute__((constructor)) static void layout_lock_register(void)
{
    vr_fork_protect_mutex(&layout_lock);
}

/* Import the allocation behind h (mapped at [mb, mb + ms)) and compare what the mapping shows
 * at a and b with want_a and want_b. 0, or an errno with why. */
static int compare_import(const struct vr_cuda *cu, int dev, CUmemGenericAllocationHandle h,
                          CUdeviceptr mb, size_t ms, CUdeviceptr a, CUdeviceptr b,
                          const unsigned char *want_a, const unsigned char *want_b, char *why,
                          size_t len)
{
    const struct vr_vk_gpu *gpu;
    VkDeviceMemory mem;
    VkResult vr;
    void *cpu = NULL;
    int rc;

    rc = vr_vk_gpu_get(cu, dev, &gpu, why, len);
    if (!rc)
        rc = vr_vk_export_import(cu, gpu, h, mb, ms, &mem, why, len);
    if (rc)
        return rc;
    vr = gpu->fn.vkMapMemory(gpu->dev, mem, 0, VK_WHOLE_SIZE, 0, &cpu);
    if (vr != VK_SUCCESS || !cpu) {
        snprintf(why, len, "vkMapMemory of its allocation failed: %s", vr_vk_result_name(vr));
        rc = EIO;
    } else {
        /* Volatile reads of a BAR mapping: only what is compared. */
        const volatile unsigned char *m = cpu;
        size_t i, bad_a = 0, bad_b = 0, in_a = a >= mb && a - mb < ms;

        for (i = 0; i < LAYOUT_BYTES; i++) {
            bad_b += m[(b - mb) + i] != want_b[i];
            if (in_a)
                bad_a += m[(a - mb) + i] != want_a[i];
        }
        if (bad_a || bad_b) {
            snprintf(why, len, "the import of its allocation does not show a block's bytes at "
                     "the block's offset from MAPPING_BASE_ADDR (%zu and %zu bytes differ)",
                     bad_b, bad_a);
            rc = ENOTSUP;
        }
        gpu->fn.vkUnmapMemory(gpu->dev, mem);
    }
    gpu->fn.vkFreeMemory(gpu->dev, mem, NULL);
    return rc;
}

/* Where the pool puts block b: retained handle, mapping, its handle type. 0 or errno, why. */
static int locate(const struct vr_cuda *cu, CUdeviceptr b, CUmemGenericAllocationHandle *h,
                  CUdeviceptr *mb, size_t *ms, char *why, size_t len)
{
    CUmemAllocationProp prop;
    CUresult cr;

    cr = cu->cuMemRetainAllocationHandle(h, (void *)(uintptr_t)b);
    if (cr != CUDA_SUCCESS) {
        snprintf(why, len, "cuMemRetainAllocationHandle of its memory: %s", vr_cuda_errstr(cr));
        return vr_cuda_errno(cr);
    }
    memset(&prop, 0, sizeof(prop));
    if (cu->cuPointerGetAttribute(mb, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, b) != CUDA_SUCCESS ||
        cu->cuPointerGetAttribute(ms, CU_POINTER_ATTRIBUTE_MAPPING_SIZE, b) != CUDA_SUCCESS ||
        b < *mb || b - *mb > *ms || *ms - (b - *mb) < LAYOUT_BYTES ||
        cu->cuMemGetAllocationPropertiesFromHandle(&prop, *h) != CUDA_SUCCESS ||
        !(prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) {
        snprintf(why, len, "the driver does not say where its memory is mapped, or not with a "
                 "POSIX-fd handle type");
        cu->cuMemRelease(*h);
        return ENOTSUP;
    }
    return 0;
}

static int check(const struct vr_cuda *cu, int dev, char *why, size_t len)
{
    unsigned char *want = malloc(2 * LAYOUT_BYTES);
    CUmemGenericAllocationHandle h;
    CUmemPoolProps props;
    CUmemoryPool pool = NULL;
    CUdeviceptr a = 0, b = 0, mb = 0;
    CUstream s = NULL;
    CUresult cr;
    size_t i, ms = 0;
    int rc;

    if (!want) {
        snprintf(why, len, "out of memory");
        return ENOMEM;
    }
    for (i = 0; i < LAYOUT_BYTES; i++) {
        want[i] = (unsigned char)(i * 5 + 1);
        want[LAYOUT_BYTES + i] = (unsigned char)(i * 11 + 7);
    }
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = dev;
    cr = cu->cuMemPoolCreate(&pool, &props);
    if (cr == CUDA_SUCCESS)
        cr = cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    if (cr == CUDA_SUCCESS)
        cr = cu->cuMemAllocFromPoolAsync(&a, LAYOUT_BYTES, pool, s);
    if (cr == CUDA_SUCCESS)
        cr = cu->cuMemAllocFromPoolAsync(&b, LAYOUT_BYTES, pool, s);
    if (cr == CUDA_SUCCESS)
        cr = cu->cuMemcpyHtoDAsync(a, want, LAYOUT_BYTES, s);
    if (cr == CUDA_SUCCESS)
        cr = cu->cuMemcpyHtoDAsync(b, want + LAYOUT_BYTES, LAYOUT_BYTES, s);
    if (cr == CUDA_SUCCESS)
        cr = cu->cuStreamSynchronize(s);
    if (cr != CUDA_SUCCESS) {
        snprintf(why, len, "a pool with a POSIX-fd handle type and blocks of it: %s",
                 vr_cuda_errstr(cr));
        rc = vr_cuda_errno(cr);
    } else {
        rc = locate(cu, b, &h, &mb, &ms, why, len);
        if (!rc) {
            rc = compare_import(cu, dev, h, mb, ms, a, b, want, want + LAYOUT_BYTES, why, len);
            cu->cuMemRelease(h);
        }
    }
    if (a)
        cu->cuMemFreeAsync(a, s);
    if (b)
        cu->cuMemFreeAsync(b, s);
    if (s) {
        cu->cuStreamSynchronize(s);
        cu->cuStreamDestroy(s);
    }
    if (pool)
        cu->cuMemPoolDestroy(pool);
    free(want);
    return rc;
}

int vr_vk_pool_layout(const struct vr_cuda *cu, int dev, char *why, size_t len)
{
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    struct vr_cuda_ctx_guard guard;
    char one[VR_REASON_LEN];
    int rc, done;

    if (dev < 0 || dev >= LAYOUT_GPUS) {
        snprintf(why, len, "CUDA device %d is past the backend's table", dev);
        return ENODEV;
    }
    pthread_mutex_lock(&layout_lock);
    done = layout[dev].done;
    rc = layout[dev].rc;
    if (rc)
        vr_reason(why, len, "%s", layout[dev].why);
    pthread_mutex_unlock(&layout_lock);
    if (done)
        return rc;
    /* Checked with no lock held (the check takes the export lock, and a fork takes the
     * protected locks in their order of registration): two first pins may both check. */
    rc = 0;
#define VR_NEED(fn) if (!rc) rc = vr_cuda_require(cu, fn, one, sizeof(one));
    VR_NEED(cuMemPoolCreate) VR_NEED(cuMemPoolDestroy) VR_NEED(cuMemAllocFromPoolAsync)
    VR_NEED(cuMemFreeAsync) VR_NEED(cuStreamCreate) VR_NEED(cuStreamDestroy)
    VR_NEED(cuStreamSynchronize) VR_NEED(cuMemcpyHtoDAsync) VR_NEED(cuPointerGetAttribute)
    VR_NEED(cuThreadExchangeStreamCaptureMode)
#undef VR_NEED
    if (!rc)
        rc = vr_cuda_ctx_enter_device(cu, dev, NULL, &guard, one, sizeof(one));
    if (!rc) {
        cu->cuThreadExchangeStreamCaptureMode(&mode);
        rc = check(cu, dev, one, sizeof(one));
        cu->cuThreadExchangeStreamCaptureMode(&mode);
        vr_cuda_ctx_leave(cu, &guard);
    }
    if (rc)
        vr_info("vulkan: stream-ordered memory of GPU %d cannot be pinned%s: %s", dev,
                vr_failed_for_now(rc) ? " for now" : "", one);
    else
        vr_dbg("vulkan: stream-ordered memory of GPU %d lies where the driver says", dev);
    if (vr_failed_for_now(rc)) {
        vr_reason(why, len, "%s", one);
        return rc;
    }
    pthread_mutex_lock(&layout_lock);
    layout[dev].done = 1;
    layout[dev].rc = rc;
    snprintf(layout[dev].why, sizeof(layout[dev].why), "%s", rc ? one : "");
    pthread_mutex_unlock(&layout_lock);
    if (rc)
        vr_reason(why, len, "%s", one);
    return rc;
}

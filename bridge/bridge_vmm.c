/* SPDX-License-Identifier: MIT */
/*
 * bridge_vmm.c - the program's own VMM calls where the bridge changes an answer:
 *
 * cuMemCreate of device memory without a POSIX-fd handle type (PyTorch's expandable segments
 * as some versions make them, XLA's and TensorRT's VMM allocators) asks the driver for the
 * same allocation with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR added, which the vulkan
 * backend needs to import it; where the driver refuses that (another granularity, a type it
 * cannot combine) the request is made again exactly as the program gave it. Only while the
 * pool serves at all (the vulkan backend can pin here, vb_pinnable). The allocation's
 * properties then say POSIX fd too (cuMemGetAllocationPropertiesFromHandle,
 * CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES): keeping the program's answer would need every
 * handle's life followed (retains, imports, mappings that outlive cuMemRelease), and a stale
 * record would take the type away from a handle that has it.
 *
 * cuMemRetainAllocationHandle of a bridged block (or of a block opened from a bridge IPC
 * handle) answers what the driver answers for cuMemAlloc memory, which the block stands in
 * for: the driver would give the handle of the whole slab (or, for a large block, of a VMM
 * allocation that a program would then export and map as its own), and NCCL's user-buffer
 * registration and UCX's VMM route would map the wrong range. The blocks offer CUDA IPC
 * handles instead, as cuMemAlloc memory does (bridge_ipc.c). That answer is the driver's own:
 * asked once, at the bridge's first allocation (vb_vmm_learn), of a cuMemAlloc allocation of
 * the driver's; CUDA_ERROR_INVALID_VALUE (the first the documentation lists) until then. A
 * driver that gives cuMemAlloc memory a handle leaves the call to the driver. libgdrapi and
 * the bridge ask the real driver (vb_real) and still find the slab.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include "bridge.h"
#include "vramio.h"

#define VB_PLAIN_UNKNOWN (-1)

static atomic_int plain_retain = VB_PLAIN_UNKNOWN;   /* the driver's answer, once asked */

static void learn(void)
{
    const struct vr_cuda *t = vb_real();
    CUmemGenericAllocationHandle h;
    CUdeviceptr p = 0;
    CUresult r;

    if (!t || !t->cuMemAlloc || !t->cuMemFree || !t->cuMemRetainAllocationHandle ||
        t->cuMemAlloc(&p, 512) != CUDA_SUCCESS)
        return;
    r = t->cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)p);
    if (r == CUDA_SUCCESS && t->cuMemRelease)
        t->cuMemRelease(h);
    t->cuMemFree(p);
    atomic_store(&plain_retain, (int)r);
    vb_log("cuMemRetainAllocationHandle of cuMemAlloc memory: %d (what bridged blocks answer)",
           (int)r);
}

void vb_vmm_learn(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, learn);
}

CUresult vb_mem_retain_allocation_handle(CUmemGenericAllocationHandle *h, void *addr)
{
    const struct vr_cuda *t = vb_real();
    CUdeviceptr a = (CUdeviceptr)(uintptr_t)addr, b;
    unsigned long long base = 0;
    size_t size;
    int plain = atomic_load_explicit(&plain_retain, memory_order_relaxed), rc;

    if (!t || !t->cuMemRetainAllocationHandle)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (plain == CUDA_SUCCESS || !a)
        return t->cuMemRetainAllocationHandle(h, addr);
    /* A live block, a freed one in a slab still held (EFAULT), a block opened from a
     * handle or the rest of its slab (bridge_ipc_open.c). */
    rc = vramio_alloc_range(a, &base, NULL);
    if (rc == 0 || rc == EFAULT || vb_ipc_range(a, &b, &size, NULL) != 0) {
        vb_log("cuMemRetainAllocationHandle(0x%llx): a bridged block, answered as cuMemAlloc "
               "memory", (unsigned long long)a);
        return plain == VB_PLAIN_UNKNOWN ? CUDA_ERROR_INVALID_VALUE : (CUresult)plain;
    }
    return t->cuMemRetainAllocationHandle(h, addr);
}

/* Whether device dev makes POSIX-fd handles of its VMM allocations (asked once per device). */
static int fd_handles(const struct vr_cuda *t, int dev)
{
    static atomic_schar known[64];           /* 0 not asked, 1 yes, -1 no */
    int v = 0, k = dev >= 0 && dev < 64 ? atomic_load(&known[dev]) : 0;

    if (k)
        return k > 0;
    if (!t->cuDeviceGetAttribute ||
        t->cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                                dev) != CUDA_SUCCESS)
        v = 0;
    if (dev >= 0 && dev < 64)
        atomic_store(&known[dev], v ? 1 : -1);
    return v != 0;
}

CUresult vb_mem_create(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop,
                       unsigned long long flags)
{
    const struct vr_cuda *t = vb_real();
    CUmemAllocationProp with;
    CUresult r;

    if (!t || !t->cuMemCreate)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!h || !prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        (prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ||
        !fd_handles(t, prop->location.id) || !vb_pinnable())
        return t->cuMemCreate(h, size, prop, flags);
    memcpy(&with, prop, sizeof(with));
    with.requestedHandleTypes =
        (CUmemAllocationHandleType)(with.requestedHandleTypes | CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    r = t->cuMemCreate(h, size, &with, flags);
    if (r == CUDA_SUCCESS) {
        vb_log("cuMemCreate(%zu, handle types %#x): made with a POSIX-fd handle type as well",
               size, (unsigned)prop->requestedHandleTypes);
        return r;
    }
    vb_log("cuMemCreate(%zu) with a POSIX-fd handle type added: error %d; made as asked", size,
           (int)r);
    return t->cuMemCreate(h, size, prop, flags);
}

/* SPDX-License-Identifier: MIT */
/*
 * vulkan.c - GPU memory mapped for the CPU without a kernel module, through
 * Vulkan/CUDA interop.
 *
 * A pin finds the CUDA VMM allocation that holds its address (cuMemRetainAllocationHandle,
 * cuMemGetAddressRange), exports it as a POSIX fd, imports the fd into a device-local
 * host-visible memory type of the Vulkan device whose UUID is the CUDA device's, and maps it
 * with vkMapMemory. The mapping is BAR1, write-combined. One import per allocation, shared by
 * every pin inside it (vulkan_import_cache.c) and released with the last; the import keeps the
 * physical pages alive, and we keep a reference on the CUDA allocation handle, so freeing
 * the memory in CUDA while it is pinned neither crashes nor lets the pages be reused.
 *
 * Plain cudaMalloc memory has no exportable handle (and the NVIDIA driver has no
 * VK_EXT_external_memory_dma_buf): such pins are refused with a reason that names the
 * alternatives. CUDA and Vulkan start at the first pin, never in gdr_open.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "backend.h"
#include "process/cuda_ctx.h"
#include "cuda_loader.h"
#include "process/fds.h"
#include "process/fork.h"
#include "process/log.h"
#include "vulkan_device.h"
#include "vulkan_import_cache.h"
#include "vulkan_loader.h"

struct vk_ctx {
    struct vr_icache cache;
};

struct vk_pin {
    struct vr_import *imp;
    uint64_t va;                /* the pinned range's start, a GPU page */
};

static int cuda_has_vmm(const struct vr_cuda *cu, char *why, size_t len);

static int vulkan_probe(char *why, size_t len)
{
    const struct vr_cuda *cu;

    /* Only that both libraries load: creating an instance or calling cuInit would cost
     * hundreds of milliseconds in every gdr_open; they happen at the first pin. */
    if (!vr_vk_load(why, len))
        return ENODEV;
    cu = vr_cuda_load(why, len);
    if (!cu)
        return ENODEV;
    return cuda_has_vmm(cu, why, len);
}

static int vulkan_open(void **ctx, char *why, size_t len)
{
    struct vk_ctx *c = calloc(1, sizeof(*c));

    if (!c) {
        snprintf(why, len, "out of memory");
        return ENOMEM;
    }
    vr_icache_init(&c->cache);
    *ctx = c;
    return 0;
}

/* Free an import's Vulkan memory and our reference on the CUDA allocation. Only ever in the
 * process that made them: the core never passes a forked child's call on to a backend. */
static void import_release(struct vr_import *e)
{
    const struct vr_vk_gpu *gpu = e->owner;
    const struct vr_cuda *cu = vr_cuda_load(NULL, 0);

    if (gpu) {
        VkDeviceMemory mem = (VkDeviceMemory)(uintptr_t)e->mem;

        gpu->fn.vkUnmapMemory(gpu->dev, mem);
        gpu->fn.vkFreeMemory(gpu->dev, mem, NULL);
    }
    if (cu)
        cu->cuMemRelease((CUmemGenericAllocationHandle)e->key.handle);
    vr_dbg("vulkan: released the import of 0x%llx + %llu", (unsigned long long)e->key.base,
           (unsigned long long)e->key.size);
    free(e);
}

static void vulkan_close(void *ctx)
{
    struct vk_ctx *c = ctx;
    struct vr_import *e, *next;

    /* The core unpinned everything first; whatever is left would be a leak, so free it. */
    for (e = vr_icache_take_all(&c->cache); e; e = next) {
        next = e->next;
        import_release(e);
    }
    vr_icache_destroy(&c->cache);
    free(c);
}

/* The exported fd may come without FD_CLOEXEC (no flag asks the driver for it). Until set, a
 * fork() in another thread (then exec) would inherit the fd and keep the GPU memory alive in
 * that program: the export and the flag happen under a mutex that fork() takes first
 * (fork.h). posix_spawn and vfork run no fork handlers; nothing in user space closes that
 * window for an fd the driver creates. */
static pthread_mutex_t export_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t export_once = PTHREAD_ONCE_INIT;

static void export_lock_register(void)
{
    vr_fork_protect_mutex(&export_lock);
}

static CUresult export_fd(const struct vr_cuda *cu, CUmemGenericAllocationHandle h, int *fd)
{
    CUresult cr;

    pthread_once(&export_once, export_lock_register);
    pthread_mutex_lock(&export_lock);
    cr = cu->cuMemExportToShareableHandle(fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (cr == CUDA_SUCCESS)
        fcntl(*fd, F_SETFD, FD_CLOEXEC);
    pthread_mutex_unlock(&export_lock);
    return cr;
}

/* The properties of the CUDA allocation behind e, in *prop: 0 when it is device memory that
 * can be exported as a POSIX fd, else an errno and why not. */
static int exportable_allocation(const struct vr_cuda *cu, const struct vr_import *e,
                                 CUmemAllocationProp *prop, char *why, size_t len)
{
    CUresult cr;

    memset(prop, 0, sizeof(*prop));
    cr = cu->cuMemGetAllocationPropertiesFromHandle(prop,
                                                    (CUmemGenericAllocationHandle)e->key.handle);
    if (cr != CUDA_SUCCESS) {
        snprintf(why, len, "cannot read the properties of the CUDA allocation at 0x%llx: %s",
                 (unsigned long long)e->key.base, vr_cuda_errstr(cr));
        return vr_cuda_errno(cr);
    }
    if (!(prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) {
        snprintf(why, len, "the CUDA VMM allocation at 0x%llx was created without "
                 "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, so it cannot be exported to Vulkan: "
                 "add that handle type to cuMemCreate, or allocate with vramio_alloc()",
                 (unsigned long long)e->key.base);
        return ENOTSUP;
    }
    if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
        snprintf(why, len, "the CUDA VMM allocation at 0x%llx is not device memory",
                 (unsigned long long)e->key.base);
        return ENOTSUP;
    }
    return 0;
}

/* Import fd (the exported allocation of e) into gpu's Vulkan device and map all of it: 0 with
 * the memory and the CPU address, else an errno and why. The fd is the import's from the
 * call on, closed here when the import fails. */
static int import_and_map(const struct vr_vk_gpu *gpu, const struct vr_import *e, int fd,
                          VkDeviceMemory *mem, void **cpu, char *why, size_t len)
{
    VkImportMemoryFdInfoKHR imp = {
        .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
        .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
        .fd = fd,
    };
    VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .pNext = &imp,
        .allocationSize = e->key.size,
        .memoryTypeIndex = gpu->memtype,
    };
    VkResult vr = gpu->fn.vkAllocateMemory(gpu->dev, &ai, NULL, mem);

    if (vr != VK_SUCCESS) {
        close(fd); /* a successful import owns the fd; a failed one leaves it to us */
        snprintf(why, len, "Vulkan import of the %llu-byte CUDA allocation at 0x%llx failed: %s%s",
                 (unsigned long long)e->key.size, (unsigned long long)e->key.base,
                 vr_vk_result_name(vr),
                 e->key.size > gpu->heap_size ? " (larger than the host-visible heap: BAR1)" : "");
        return vr_vk_errno(vr);
    }
    *cpu = NULL;
    vr = gpu->fn.vkMapMemory(gpu->dev, *mem, 0, VK_WHOLE_SIZE, 0, cpu);
    if (vr != VK_SUCCESS || !*cpu) {
        gpu->fn.vkFreeMemory(gpu->dev, *mem, NULL);
        snprintf(why, len, "vkMapMemory of the CUDA allocation at 0x%llx failed: %s",
                 (unsigned long long)e->key.base, vr_vk_result_name(vr));
        return vr != VK_SUCCESS ? vr_vk_errno(vr) : EIO;
    }
    return 0;
}

/* Import the allocation of a pending entry: export, import, map. Fills e; 0 or an errno. */
static int import_allocation(const struct vr_cuda *cu, struct vr_import *e, char *why, size_t len)
{
    CUmemAllocationProp prop;
    const struct vr_vk_gpu *gpu;
    VkDeviceMemory mem;
    size_t gran = 0;
    void *cpu = NULL;
    CUresult cr;
    int fd = -1, rc;

    rc = exportable_allocation(cu, e, &prop, why, len);
    if (rc)
        return rc;
    e->device = prop.location.id;
    if (cu->cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
            CUDA_SUCCESS || gran == 0 || gran > UINT32_MAX)
        gran = GPU_PAGE_SIZE;
    rc = vr_vk_gpu_get(cu, e->device, &gpu, why, len);
    if (rc)
        return rc;
    cr = export_fd(cu, (CUmemGenericAllocationHandle)e->key.handle, &fd);
    if (cr != CUDA_SUCCESS) {
        /* The export is a descriptor: at the process's limit the driver says only that some
         * call failed (CUDA_ERROR_OPERATING_SYSTEM where it was seen). */
        int fde = vr_fds_exhausted();

        if (fde)
            snprintf(why, len, "cuMemExportToShareableHandle of the allocation at 0x%llx failed: "
                     "%s: the %s is out of file descriptors (%s; the import to Vulkan needs one "
                     "for a moment, the limit is %llu: raise it with ulimit -n)",
                     (unsigned long long)e->key.base, vr_cuda_errstr(cr),
                     fde == EMFILE ? "process" : "system", fde == EMFILE ? "EMFILE" : "ENFILE",
                     vr_fds_limit());
        else
            snprintf(why, len, "cuMemExportToShareableHandle of the allocation at 0x%llx "
                     "failed: %s", (unsigned long long)e->key.base, vr_cuda_errstr(cr));
        return fde ? fde : vr_cuda_errno(cr);
    }
    rc = import_and_map(gpu, e, fd, &mem, &cpu, why, len);
    if (rc)
        return rc;
    /* The NVIDIA driver's BAR mapping would be copied by fork (gdrdrv's is not): mark it
     * so that a forked child faults on it instead of reaching the parent's memory. */
    vr_fork_dontfork(cpu, (size_t)e->key.size);
    vr_dbg("vulkan: imported 0x%llx + %llu (GPU %d, memory type %u)",
           (unsigned long long)e->key.base, (unsigned long long)e->key.size, e->device,
           gpu->memtype);
    e->mem = (uint64_t)(uintptr_t)mem;
    e->cpu = cpu;
    e->page_size = (uint32_t)gran;
    e->owner = gpu;
    return 0;
}

/* The driver entry points a pin needs beyond cuInit (a driver older than VMM lacks some). */
static int cuda_has_vmm(const struct vr_cuda *cu, char *why, size_t len)
{
    int rc = 0;

#define VR_NEED(fn) if (!rc) rc = vr_cuda_require(cu, fn, why, len);
    VR_NEED(cuMemGetAddressRange) VR_NEED(cuMemRetainAllocationHandle) VR_NEED(cuMemRelease)
    VR_NEED(cuMemGetAllocationPropertiesFromHandle) VR_NEED(cuMemGetAllocationGranularity)
    VR_NEED(cuMemExportToShareableHandle) VR_NEED(cuCtxGetCurrent) VR_NEED(cuCtxPushCurrent)
    VR_NEED(cuCtxPopCurrent) VR_NEED(cuDeviceGet) VR_NEED(cuDeviceGetUuid)
    VR_NEED(cuDevicePrimaryCtxRetain)
#undef VR_NEED
    return rc;
}

/* Find the allocation holding addr: its retained handle (a reference we own) and range. */
static int find_allocation(const struct vr_cuda *cu, uint64_t addr, struct vr_import_key *key,
                           char *why, size_t len)
{
    CUmemGenericAllocationHandle h;
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult cr;

    cr = cu->cuMemGetAddressRange(&base, &size, (CUdeviceptr)addr);
    if (cr != CUDA_SUCCESS) {
        snprintf(why, len, "0x%llx is not CUDA device memory (%s)", (unsigned long long)addr,
                 vr_cuda_errstr(cr));
        return ENOTSUP;
    }
    cr = cu->cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)addr);
    if (cr != CUDA_SUCCESS) {
        snprintf(why, len, "0x%llx is plain cudaMalloc memory (no exportable handle): "
                 "allocate with vramio_alloc() or cuMemCreate with a POSIX-fd handle type, "
                 "or load the gdrdrv module", (unsigned long long)addr);
        return ENOTSUP;
    }
    key->handle = (uint64_t)h;
    key->base = (uint64_t)base;
    key->size = (uint64_t)size;
    return 0;
}

static int vulkan_pin(void *ctx, const struct vr_pin_req *req, void **pin,
                      struct vr_pin_info *info, char *why, size_t len)
{
    struct vk_ctx *c = ctx;
    const struct vr_cuda *cu;
    struct vr_cuda_ctx_guard guard;
    struct vr_import_key key;
    struct vr_import *e;
    struct vk_pin *p;
    uint64_t va = req->va, plen = req->len;
    int rc, created;

    /* FORCE_PCIE needs nothing: this mapping is always through the PCIe BAR1. The legacy
     * p2p tokens only matter to the kernel module's non-persistent mode. */
    rc = vr_cuda_init(&cu, why, len);
    if (!rc)
        rc = cuda_has_vmm(cu, why, len);
    if (rc)
        return rc;
    rc = vr_cuda_ctx_enter(cu, 0, &guard, why, len);
    if (rc)
        return rc;
    rc = find_allocation(cu, req->addr, &key, why, len);
    vr_cuda_ctx_leave(cu, &guard);
    if (rc)
        return rc;
    if (!vr_range_inside(va, plen, key.base, key.size)) {
        snprintf(why, len, "the range 0x%llx + %llu (GPU pages 0x%llx + %llu) does not lie "
                 "inside its CUDA allocation 0x%llx + %llu", (unsigned long long)req->addr,
                 (unsigned long long)req->size, (unsigned long long)va,
                 (unsigned long long)plen, (unsigned long long)key.base,
                 (unsigned long long)key.size);
        cu->cuMemRelease((CUmemGenericAllocationHandle)key.handle);
        return EINVAL;
    }
    p = calloc(1, sizeof(*p));
    if (!p) {
        cu->cuMemRelease((CUmemGenericAllocationHandle)key.handle);
        snprintf(why, len, "out of memory");
        return ENOMEM;
    }
    rc = vr_icache_acquire(&c->cache, &key, &e, &created);
    if (rc == 0 && created) {
        /* Our reference on the handle moves to the entry, for as long as it lives. */
        rc = import_allocation(cu, e, why, len);
        vr_icache_publish(&c->cache, e, rc);
        if (rc)
            cu->cuMemRelease((CUmemGenericAllocationHandle)key.handle);
    } else {
        /* The entry holds a reference already, or the import failed in another thread. */
        cu->cuMemRelease((CUmemGenericAllocationHandle)key.handle);
        if (rc)
            snprintf(why, len, "the import of the CUDA allocation at 0x%llx failed in another "
                     "thread (%s)", (unsigned long long)key.base, strerror(rc));
    }
    if (rc) {
        free(p);
        return rc;
    }
    p->imp = e;
    p->va = va;
    /* tm_cycles left 0: the core times the pin. */
    *info = (struct vr_pin_info){ .va = va, .mapped_size = plen, .page_size = e->page_size };
    *pin = p;
    return 0;
}

static int vulkan_unpin(void *ctx, void *pin)
{
    struct vk_ctx *c = ctx;
    struct vk_pin *p = pin;

    if (vr_icache_release(&c->cache, p->imp))
        import_release(p->imp);
    free(p);
    return 0;
}

static int vulkan_map(void *ctx, void *pin, size_t size, gdr_mapping_type_t want,
                      void **ptr, gdr_mapping_type_t *granted, char *why, size_t len)
{
    struct vk_pin *p = pin;

    /* The core checked size against mapped_size, and want against the table's map_types.
     * The allocation is mapped whole once, at import; a pin's mapping is its window. */
    *ptr = (char *)p->imp->cpu + (p->va - p->imp->key.base);
    *granted = GDR_MAPPING_TYPE_WC;
    return 0;
}

/* 1 once the pinned address no longer belongs to the allocation we imported (CUDA unmapped
 * or freed it). The pages stay valid for us either way; this only tells the caller. Our
 * reference keeps the handle value from being reused, so comparing it is sound. */
static int vulkan_cb_flag(void *ctx, void *pin, int *flag)
{
    struct vk_pin *p = pin;
    const struct vr_cuda *cu = vr_cuda_load(NULL, 0);
    CUmemGenericAllocationHandle h;

    *flag = 0;
    if (!cu)
        return 0;
    if (cu->cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)p->va) != CUDA_SUCCESS) {
        *flag = 1;
        return 0;
    }
    *flag = (uint64_t)h != p->imp->key.handle;
    cu->cuMemRelease(h);
    return 0;
}

const struct vr_backend_ops vr_backend_vulkan = {
    .id = VRAMIO_BACKEND_VULKAN,
    .name = "vulkan",
    .opt_in_env = "VRAMIO_ENABLE_VULKAN",
    .serves = "VMM with a POSIX-fd handle (NCCL, PyTorch with expandable segments, vramio_alloc)",
    /* The import keeps the pages until unpin (persistent); the mapping is always BAR1 over
     * PCIe, so FORCE_PCIE is satisfied by construction. */
    .attr = { [GDR_ATTR_USE_PERSISTENT_MAPPING] = 1, [GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE] = 1 },
    /* .version left out: gdrdrv 2.6. */
    .map_types = VR_MAP_TYPE_BIT(GDR_MAPPING_TYPE_WC),
    .map_types_why = "the vulkan backend maps write-combined only (a BAR1 window)",
    .probe = vulkan_probe,
    .open = vulkan_open,
    .close = vulkan_close,
    .pin = vulkan_pin,
    .unpin = vulkan_unpin,
    .map = vulkan_map,
    /* .unmap left out: the window stays valid until the last pin of the allocation goes. */
    .callback_flag = vulkan_cb_flag,
};

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
 * A pin whose pages run past its allocation into allocations mapped right after it in the same
 * reservation (vramio_alloc's chunked large allocations) imports each of them on its own and
 * maps them side by side into one CPU window with placed maps, where the device offers them
 * and their check passed (vulkan_span.c; the spans op says so to the pool).
 *
 * Stream-ordered memory of a pool with a POSIX-fd handle type is found in the pool's
 * allocation that holds it, once the driver is known to put it there (vulkan_pool.c).
 * Plain cudaMalloc memory has no exportable handle (and the NVIDIA driver has no
 * VK_EXT_external_memory_dma_buf), nor has managed memory, nor VMM memory made without a
 * POSIX-fd handle type, nor a default pool's stream-ordered memory: such pins are refused with
 * a reason that says which the memory is and names the alternatives. CUDA and Vulkan start at the first pin, or in gdr_open when this backend
 * would serve alone (vulkan_confirm: then gdr_open must know that it can pin).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "backend.h"
#include "process/cuda_ctx.h"
#include "cuda_loader.h"
#include "process/fork.h"
#include "process/log.h"
#include "reason.h"            /* util/: VR_REASON_LEN, vr_reason */
#include "vulkan_device.h"
#include "vulkan_import_cache.h"
#include "vulkan_loader.h"
#include "vulkan_export.h"
#include "vulkan_pool.h"
#include "vulkan_span.h"

struct vk_ctx {
    struct vr_icache cache;
};

struct vk_pin {
    struct vr_import *imp;      /* a pin inside one allocation: the shared import */
    struct vr_span *span;       /* a pin across several: its own imports and window */
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

/* Whether device d (an ordinal) can have memory this backend pins: VMM allocations with a
 * POSIX-fd handle (what vramio_alloc and vramio-run's pool make there). */
static int device_has_vmm_fd(const struct vr_cuda *cu, int d, char *why, size_t len)
{
    const CUdevice_attribute vmm_attr = CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED;
    const CUdevice_attribute fd_attr =
        CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED;
    int vmm = 0, fd = 0;
    CUdevice dev;

    if (cu->cuDeviceGet(&dev, d) != CUDA_SUCCESS || !cu->cuDeviceGetAttribute ||
        cu->cuDeviceGetAttribute(&vmm, vmm_attr, dev) != CUDA_SUCCESS ||
        cu->cuDeviceGetAttribute(&fd, fd_attr, dev) != CUDA_SUCCESS)
        vmm = fd = 0;
    if (vmm && fd)
        return 0;
    snprintf(why, len, "CUDA device %d has no %s", d,
             vmm ? "POSIX-fd handles for its VMM allocations" : "virtual memory management (VMM)");
    return ENOTSUP;
}

/*
 * gdr_open's question when this backend would serve alone (backend.h): can it pin? CUDA is
 * initialised and the Vulkan instance made here, so that a machine without a Vulkan driver
 * (no ICD: a container started with NVIDIA_DRIVER_CAPABILITIES=compute,utility), a GPU that
 * no Vulkan device matches by UUID, one without a host-visible device-local memory type, or
 * one whose BAR1 window is too small is found out at gdr_open, which then fails as upstream's
 * does without its module, instead of at every pin. Each GPU is judged on its own and logged;
 * every = 1 needs all of them (a client aborts at the first refused pin, whichever GPU it is
 * on), every = 0 one.
 */
static int vulkan_confirm(int every, char *why, size_t len)
{
    const struct vr_cuda *cu;
    char one[VR_REASON_LEN], first[VR_REASON_LEN] = "";
    int n = 0, d, rc, good = 0, first_rc = 0;

    rc = vr_cuda_init(&cu, why, len);
    if (!rc)
        rc = cuda_has_vmm(cu, why, len);
    if (!rc && (!cu->cuDeviceGetCount || cu->cuDeviceGetCount(&n) != CUDA_SUCCESS || n <= 0)) {
        snprintf(why, len, "the CUDA driver lists no device");
        rc = ENODEV;
    }
    if (rc)
        return rc;
    for (d = 0; d < n; d++) {
        rc = device_has_vmm_fd(cu, d, one, sizeof(one));
        if (!rc)
            rc = vr_vk_gpu_check(cu, d, one, sizeof(one));
        if (rc) {
            vr_info("vulkan: GPU %d cannot be pinned through Vulkan: %s", d, one);
            if (!first_rc) {
                first_rc = rc;
                snprintf(first, sizeof(first), "%s", one);
            }
        } else {
            vr_dbg("vulkan: GPU %d can be pinned through Vulkan", d);
            good++;
        }
    }
    if (good == n || (!every && good > 0))
        return 0;
    if (good)
        vr_reason(why, len, "%d of %d GPUs can be pinned through Vulkan, and a client may pin "
                  "memory of any of them (%s)", good, n, first);
    else
        vr_reason(why, len, "%s", first);
    return first_rc;
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

/* Free an import's Vulkan memory and our reference on the CUDA allocation (the entry is the
 * caller's to free). Only ever in the process that made them: the core never passes a forked
 * child's call on to a backend. */
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
}

static void vulkan_close(void *ctx)
{
    struct vk_ctx *c = ctx;
    struct vr_import *e, *next;

    /* The core unpinned everything first; whatever is left would be a leak, so free it. */
    for (e = vr_icache_take_all(&c->cache); e; e = next) {
        next = e->next;
        import_release(e);
        free(e);
    }
    vr_icache_destroy(&c->cache);
    free(c);
}

/* Import the allocation of a pending entry: export, import, map all of it. Fills e; 0 or an
 * errno. */
static int import_allocation(const struct vr_cuda *cu, struct vr_import *e, char *why, size_t len)
{
    const CUmemGenericAllocationHandle h = (CUmemGenericAllocationHandle)e->key.handle;
    CUmemAllocationProp prop;
    const struct vr_vk_gpu *gpu;
    VkDeviceMemory mem;
    VkResult vr;
    void *cpu = NULL;
    int rc;

    rc = vr_vk_exportable(cu, h, e->key.base, &prop, why, len);
    if (rc)
        return rc;
    e->device = prop.location.id;
    rc = vr_vk_gpu_get(cu, e->device, &gpu, why, len);
    if (!rc)
        rc = vr_vk_export_import(cu, gpu, h, e->key.base, e->key.size, &mem, why, len);
    if (rc)
        return rc;
    vr = gpu->fn.vkMapMemory(gpu->dev, mem, 0, VK_WHOLE_SIZE, 0, &cpu);
    if (vr != VK_SUCCESS || !cpu) {
        gpu->fn.vkFreeMemory(gpu->dev, mem, NULL);
        snprintf(why, len, "vkMapMemory of the CUDA allocation at 0x%llx failed: %s",
                 (unsigned long long)e->key.base, vr_vk_result_name(vr));
        return vr != VK_SUCCESS ? vr_vk_errno(vr) : EIO;
    }
    /* The NVIDIA driver's BAR mapping would be copied by fork (gdrdrv's is not): mark it
     * so that a forked child faults on it instead of reaching the parent's memory. */
    vr_fork_dontfork(cpu, (size_t)e->key.size);
    vr_dbg("vulkan: imported 0x%llx + %llu (GPU %d, memory type %u)",
           (unsigned long long)e->key.base, (unsigned long long)e->key.size, e->device,
           gpu->memtype);
    e->mem = (uint64_t)(uintptr_t)mem;
    e->cpu = cpu;
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
    VR_NEED(cuDevicePrimaryCtxRetain) VR_NEED(cuPointerGetAttribute)
#undef VR_NEED
    return rc;
}

/* Why memory at addr that has no allocation handle cannot be pinned: what it is, named by
 * what the driver says of it (pool: its CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE; range, retain:
 * what cuMemGetAddressRange and cuMemRetainAllocationHandle answered). ENOTSUP. */
static int refuse_unexportable(const struct vr_cuda *cu, uint64_t addr, void *pool,
                               CUresult range, CUresult retain, char *why, size_t len)
{
    unsigned long long a = (unsigned long long)addr;
    unsigned int managed = 0;

    if (pool)
        snprintf(why, len, "0x%llx is stream-ordered memory (cudaMallocAsync, "
                 "cuMemAllocFromPoolAsync or a CUDA graph's memory node) whose allocation this "
                 "driver does not give (cuMemRetainAllocationHandle: %s), so it cannot be "
                 "exported to Vulkan: allocate with vramio_alloc() or cuMemCreate with a POSIX-fd "
                 "handle type, or load the gdrdrv module", a, vr_cuda_errstr(retain));
    else if (cu->cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                       (CUdeviceptr)addr) == CUDA_SUCCESS && managed)
        snprintf(why, len, "0x%llx is managed memory (cudaMallocManaged), which has no "
                 "exportable handle: allocate with vramio_alloc(), or load the gdrdrv module", a);
    else if (range != CUDA_SUCCESS)
        snprintf(why, len, "0x%llx is not CUDA device memory (%s)", a, vr_cuda_errstr(range));
    else
        snprintf(why, len, "0x%llx is plain cudaMalloc/cuMemAlloc memory (no exportable "
                 "handle): allocate with vramio_alloc() or cuMemCreate with a POSIX-fd handle "
                 "type, run the program under vramio-run, or load the gdrdrv module", a);
    return ENOTSUP;
}

/* Stream-ordered memory at addr (allocation handle h): the pool's physical allocation it lies
 * in, from where the driver says it is mapped, once the driver is known to put a block there
 * (vulkan_pool.c). 0 with *base and *size, or ENOTSUP with why. */
static int pool_allocation(const struct vr_cuda *cu, uint64_t addr, CUmemGenericAllocationHandle h,
                           CUdeviceptr *base, size_t *size, char *why, size_t len)
{
    unsigned long long a = (unsigned long long)addr;
    CUmemAllocationProp prop;
    CUdeviceptr mb = 0;
    size_t ms = 0;
    char one[VR_REASON_LEN];
    int rc;

    memset(&prop, 0, sizeof(prop));
    if (cu->cuMemGetAllocationPropertiesFromHandle(&prop, h) == CUDA_SUCCESS &&
        !(prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) {
        snprintf(why, len, "0x%llx is stream-ordered memory (cudaMallocAsync, "
                 "cuMemAllocFromPoolAsync or a CUDA graph's memory node) of a pool made without "
                 "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (a device's default pool has none), "
                 "so it cannot be exported to Vulkan: allocate from a pool made with that handle "
                 "type (cuMemPoolCreate), or run the program under vramio-run (which serves the "
                 "default pool's allocations from such a pool where the driver allows it)", a);
        return ENOTSUP;
    }
    if (cu->cuPointerGetAttribute(&mb, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
                                  (CUdeviceptr)addr) != CUDA_SUCCESS ||
        cu->cuPointerGetAttribute(&ms, CU_POINTER_ATTRIBUTE_MAPPING_SIZE,
                                  (CUdeviceptr)addr) != CUDA_SUCCESS ||
        addr < mb || addr - mb >= ms) {
        snprintf(why, len, "0x%llx is stream-ordered memory, and this driver does not say where "
                 "its pool's allocation is mapped (CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR), so "
                 "the vulkan backend cannot find it in an import", a);
        return ENOTSUP;
    }
    rc = prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE ?
         vr_vk_pool_layout(cu, prop.location.id, one, sizeof(one)) : 0;
    if (rc && vr_failed_for_now(rc)) {
        vr_reason(why, len, "0x%llx is stream-ordered memory of GPU %d, whose check (run again "
                  "at the next pin) could not finish now: %s", a, prop.location.id, one);
        return rc;
    }
    if (rc) {
        vr_reason(why, len, "0x%llx is stream-ordered memory of GPU %d, which the vulkan backend "
                  "cannot pin with this driver: %s", a, prop.location.id, one);
        return ENOTSUP;
    }
    *base = mb;
    *size = ms;
    return 0;
}

/* Find the allocation holding addr: its retained handle (a reference we own) and range: the
 * VMM mapping that cuMemGetAddressRange gives, or for stream-ordered memory (which that call
 * answers with the block alone) the pool's allocation around it. */
static int find_allocation(const struct vr_cuda *cu, uint64_t addr, struct vr_import_key *key,
                           int *pooled, char *why, size_t len)
{
    CUmemGenericAllocationHandle h;
    CUdeviceptr base = 0;
    size_t size = 0;
    void *pool = NULL;
    CUresult range, retain;
    int rc;

    range = cu->cuMemGetAddressRange(&base, &size, (CUdeviceptr)addr);
    if (cu->cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
                                  (CUdeviceptr)addr) != CUDA_SUCCESS)
        pool = NULL; /* a driver older than the attribute, or memory it does not know */
    retain = cu->cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)addr);
    if (retain != CUDA_SUCCESS)
        return refuse_unexportable(cu, addr, pool, range, retain, why, len);
    rc = 0;
    if (pool)
        rc = pool_allocation(cu, addr, h, &base, &size, why, len);
    else if (range != CUDA_SUCCESS)
        rc = refuse_unexportable(cu, addr, NULL, range, CUDA_SUCCESS, why, len);
    if (rc) {
        cu->cuMemRelease(h);
        return rc;
    }
    key->handle = (uint64_t)h;
    key->base = (uint64_t)base;
    key->size = (uint64_t)size;
    *pooled = pool != NULL;
    return 0;
}

/*
 * GDR_PIN_FLAG_FORCE_PCIE asks for a BAR1 mapping where the CPU could otherwise reach the
 * memory through a coherent link (C2C: Grace). Upstream GDRCopy 2.6 documents it for coherent
 * platforms only, and both of its paths refuse it on a GPU without such a link: the module's
 * nvidia_p2p_get_pages with FORCE_BAR1_MAPPING is refused by NVIDIA's driver (not supported),
 * the dma-buf export with the PCIE mapping flag fails (CUDA_ERROR_NOT_SUPPORTED). Clients rely
 * on that refusal (UCX's USE_PCIE=yes expects a failed registration there; its try mode,
 * aws-ofi-nccl and others pin again without the flag), so this backend refuses it the same
 * way, final (EINVAL: not offered to another backend), although its mapping is a BAR1 window
 * anyway. On a coherent GPU it is taken (the mapping is the Vulkan driver's host-visible
 * window, WC). 0, or EINVAL with why.
 */
static int force_pcie_refused(const struct vr_cuda *cu, const struct vr_pin_req *req,
                              const struct vr_import_key *key, char *why, size_t len)
{
    CUmemAllocationProp prop;
    int coherent = 0;
    CUdevice dev;

    if (!(req->flags & GDR_PIN_FLAG_FORCE_PCIE))
        return 0;
    memset(&prop, 0, sizeof(prop));
    if (cu->cuMemGetAllocationPropertiesFromHandle(&prop,
                                                   (CUmemGenericAllocationHandle)key->handle) ==
            CUDA_SUCCESS && prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
        cu->cuDeviceGet(&dev, prop.location.id) == CUDA_SUCCESS && cu->cuDeviceGetAttribute &&
        cu->cuDeviceGetAttribute(&coherent,
                                 CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
                                 dev) == CUDA_SUCCESS && coherent)
        return 0;
    snprintf(why, len, "GDR_PIN_FLAG_FORCE_PCIE is for GPUs with a coherent (C2C) link to the "
             "CPU, and CUDA device %d has none (upstream's module and dma-buf path refuse it "
             "there too): pin without the flag", (int)prop.location.id);
    return EINVAL;
}

/*
 * A pin that ran out of room pays for the whole allocation it lies in, not for what it asked:
 * say so after the reason, since the numbers of the import alone point at the wrong cause (a
 * 1 MiB pin inside JAX's one allocation of most of the GPU's memory fails this way). The note
 * explains the reason, so it stays whole where both do not fit (vr_reason).
 */
static void note_whole_import(char *why, size_t len, uint64_t plen, uint64_t size, unsigned n)
{
    char was[VR_REASON_LEN];

    vr_reason(was, sizeof(was), "%s", why);
    vr_reason(why, len, "%s (a pin imports all of %s: %llu of %llu bytes were asked for)", was,
              n == 1 ? "its allocation" : "each allocation it touches", (unsigned long long)plen,
              (unsigned long long)size);
}

/* The span of allocations from key's on that covers [va, va + plen): walked with a context of
 * the allocations' GPU current, once that GPU is known to map spans right. key's handle
 * reference is the span's, or released. 0 with *out, else an errno and why. */
static int span_find(const struct vr_cuda *cu, const struct vr_import_key *key, int pooled,
                     uint64_t end, struct vr_span **out, char *why, size_t len)
{
    const CUmemGenericAllocationHandle h = (CUmemGenericAllocationHandle)key->handle;
    struct vr_cuda_ctx_guard guard;
    CUmemAllocationProp prop;
    char one[VR_REASON_LEN];
    int rc = 0;

    if (pooled) {
        snprintf(why, len, "it is stream-ordered memory, and a pin does not run past the "
                 "pool's allocation");
        rc = EINVAL;
    }
    if (!rc)
        rc = vr_vk_exportable(cu, h, key->base, &prop, why, len);
    if (!rc && (rc = vr_vk_spans(cu, prop.location.id, one, sizeof(one))) != 0)
        vr_reason(why, len, "a pin across several allocations needs placed maps that work: %s",
                  one);
    if (!rc)
        rc = vr_cuda_ctx_enter_device(cu, prop.location.id, NULL, &guard, why, len);
    if (rc) {
        cu->cuMemRelease(h);
        return rc;
    }
    rc = vr_vk_span_walk(cu, key, prop.location.id, end, out, why, len);
    vr_cuda_ctx_leave(cu, &guard);
    return rc;
}

/* A pin whose GPU pages run past the allocation at its address (key, retained): one span of
 * the allocations side by side that cover them, each imported on its own and mapped into one
 * window (vulkan_span.c). 0 with *out, else an errno and why. */
static int pin_span(const struct vr_cuda *cu, const struct vr_pin_req *req,
                    const struct vr_import_key *key, int pooled, struct vr_span **out,
                    char *why, size_t len)
{
    char one[VR_REASON_LEN];
    unsigned n;
    int rc;

    /* Each reason wraps a reason of its own (span_find's the check's, around the export's): it
     * loses its middle where the whole does not fit, never its end (vr_reason). */
    rc = span_find(cu, key, pooled, req->va + req->len, out, one, sizeof(one));
    if (rc) {
        vr_reason(why, len, "the range 0x%llx + %llu runs past its CUDA allocation 0x%llx + "
                  "%llu: %s", (unsigned long long)req->addr, (unsigned long long)req->size,
                  (unsigned long long)key->base, (unsigned long long)key->size, one);
        return rc;
    }
    n = (*out)->n;
    rc = vr_vk_span_map(cu, *out, one, sizeof(one));
    if (rc == ENOMEM)
        note_whole_import(one, sizeof(one), req->len, (*out)->size, n);
    if (rc) {
        vr_vk_span_free(cu, *out);
        vr_reason(why, len, "the pin 0x%llx + %llu spans %u allocations: %s",
                  (unsigned long long)req->addr, (unsigned long long)req->size, n, one);
    }
    return rc;
}

static int vulkan_pin(void *ctx, const struct vr_pin_req *req, void **pin,
                      struct vr_pin_info *info, char *why, size_t len)
{
    struct vk_ctx *c = ctx;
    const struct vr_cuda *cu;
    struct vr_cuda_ctx_guard guard;
    struct vr_import_key key;
    struct vr_import *e = NULL;
    struct vr_span *span = NULL;
    struct vk_pin *p;
    uint64_t va = req->va, plen = req->len;
    int rc, created, pooled = 0;

    /* The legacy p2p tokens only matter to the kernel module's non-persistent mode. */
    rc = vr_cuda_init(&cu, why, len);
    if (!rc)
        rc = cuda_has_vmm(cu, why, len);
    if (rc)
        return rc;
    rc = vr_cuda_ctx_enter(cu, 0, &guard, why, len);
    if (rc)
        return rc;
    rc = find_allocation(cu, req->addr, &key, &pooled, why, len);
    vr_cuda_ctx_leave(cu, &guard);
    if (rc)
        return rc;
    rc = force_pcie_refused(cu, req, &key, why, len);
    if (rc) {
        cu->cuMemRelease((CUmemGenericAllocationHandle)key.handle);
        return rc;
    }
    if (!vr_range_inside(va, plen, key.base, key.size)) {
        /* Our reference on the handle moves to the span. */
        rc = pin_span(cu, req, &key, pooled, &span, why, len);
        if (rc)
            return rc;
        p = calloc(1, sizeof(*p));
        if (!p) {
            vr_vk_span_free(cu, span);
            snprintf(why, len, "out of memory");
            return ENOMEM;
        }
        p->span = span;
        goto pinned;
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
        if (rc == ENOMEM && plen < key.size)
            note_whole_import(why, len, plen, key.size, 1);
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
pinned:
    p->va = va;
    /* tm_cycles left 0: the core times the pin. */
    *info = (struct vr_pin_info){ .va = va, .mapped_size = plen,
                                  /* the page va and plen count, as gdrdrv's, not the VMM
                                   * granularity (2 MiB) of the allocation around it */
                                  .page_size = GPU_PAGE_SIZE };
    *pin = p;
    return 0;
}

static int vulkan_unpin(void *ctx, void *pin)
{
    struct vk_ctx *c = ctx;
    struct vk_pin *p = pin;

    if (p->span) {
        /* The library loaded CUDA to make the span: vr_cuda_load only finds it. */
        vr_vk_span_free(vr_cuda_load(NULL, 0), p->span);
        free(p);
        return 0;
    }
    if (vr_icache_release(&c->cache, p->imp)) {
        /* A pin of the allocation made meanwhile waits until this import is gone. */
        import_release(p->imp);
        vr_icache_retire(&c->cache, p->imp);
        free(p->imp);
    }
    free(p);
    return 0;
}

static int vulkan_map(void *ctx, void *pin, size_t size, gdr_mapping_type_t want,
                      void **ptr, gdr_mapping_type_t *granted, char *why, size_t len)
{
    struct vk_pin *p = pin;

    /* The core checked size against mapped_size, and want against the table's map_types.
     * The allocation is mapped whole once, at import (a span's allocations side by side, at
     * its pin); a pin's mapping is its window. */
    if (p->span)
        *ptr = p->span->cpu + (p->va - p->span->base);
    else
        *ptr = (char *)p->imp->cpu + (p->va - p->imp->key.base);
    *granted = GDR_MAPPING_TYPE_WC;
    return 0;
}

/* 1 once the pinned address no longer belongs to the allocation we imported (CUDA unmapped
 * or freed it). Our reference keeps the handle value from being reused, so comparing it is
 * sound. */
static int import_moved(const struct vr_cuda *cu, const struct vk_pin *p)
{
    CUmemGenericAllocationHandle h;
    int moved;

    if (cu->cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)p->va) != CUDA_SUCCESS)
        return 1;
    moved = (uint64_t)h != p->imp->key.handle;
    cu->cuMemRelease(h);
    return moved;
}

/* 1 once the memory under the pin is no longer all where it was: the allocation of a pin
 * inside one, any of a span's. The pages stay valid for us either way; this only tells the
 * caller. */
static int vulkan_cb_flag(void *ctx, void *pin, int *flag)
{
    struct vk_pin *p = pin;
    const struct vr_cuda *cu = vr_cuda_load(NULL, 0);
    int moved = 0;

    if (cu && p->span)
        moved = vr_vk_span_moved(cu, p->span);
    else if (cu)
        moved = import_moved(cu, p);
    *flag = moved;
    return 0;
}

/* backend.h's spans: the vulkan backend pins a range across allocations side by side where
 * GPU gpu's Vulkan device offers placed maps and the check of them passed (vulkan_span.c);
 * -1 when the check ran out of memory or descriptors (it runs again at the next question).
 * 0 where CUDA or Vulkan cannot start: what cannot be checked is not relied on. */
static int vulkan_spans(int gpu)
{
    const struct vr_cuda *cu;
    char why[VR_REASON_LEN];
    int rc;

    if (vr_cuda_init(&cu, why, sizeof(why)) || cuda_has_vmm(cu, why, sizeof(why)))
        return 0;
    rc = vr_vk_spans(cu, gpu, NULL, 0);
    return rc == 0 ? 1 : vr_failed_for_now(rc) ? -1 : 0;
}

const struct vr_backend_ops vr_backend_vulkan = {
    .id = VRAMIO_BACKEND_VULKAN,
    .name = "vulkan",
    .opt_in_env = "VRAMIO_ENABLE_VULKAN",
    .serves = "VMM or stream-ordered pool memory with a POSIX-fd handle (NCCL, vramio_alloc, "
              "programs under vramio-run)",
    /* The import keeps the pages until unpin (persistent). FORCE_PCIE is known (the
     * attribute says 1, as upstream's module and dma-buf path say on every GPU) and taken on
     * coherent GPUs only, as theirs (force_pcie_refused). */
    .attr = { [GDR_ATTR_USE_PERSISTENT_MAPPING] = 1, [GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE] = 1 },
    /* .version left out: gdrdrv 2.6. */
    .map_types = VR_MAP_TYPE_BIT(GDR_MAPPING_TYPE_WC),
    .map_types_why = "the vulkan backend maps write-combined only (a BAR1 window)",
    .probe = vulkan_probe,
    .confirm = vulkan_confirm,
    .open = vulkan_open,
    .close = vulkan_close,
    .pin = vulkan_pin,
    .unpin = vulkan_unpin,
    .map = vulkan_map,
    /* .unmap left out: the window stays valid until the last pin of the allocation goes. */
    .callback_flag = vulkan_cb_flag,
    .spans = vulkan_spans,
};

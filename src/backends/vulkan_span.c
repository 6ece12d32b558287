/* SPDX-License-Identifier: MIT */
/*
 * vulkan_span.c - a pin across several CUDA allocations mapped side by side (vulkan_span.h).
 *
 * A VkDeviceMemory is mapped once, and the import cache's imports of whole allocations are
 * mapped where the driver chose: a span cannot be made of them. So a spanning pin imports each
 * allocation it touches on its own, reserves one CPU range (mmap PROT_NONE) and places each
 * import's mapping at its offset in it (vkMapMemory2KHR, VK_MEMORY_MAP_PLACED_BIT_EXT), which
 * replaces that part of the reservation. Undone in reverse: vkUnmapMemory of a placed map
 * leaves its range unmapped (the spec, without VK_MEMORY_UNMAP_RESERVE_BIT_EXT), so what is
 * munmap()ed by us is only the part of the reservation no import was placed on; never a range
 * the driver may have given back, which another thread's mmap may have taken since.
 */
#include "vulkan_span.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "arch/fence.h"
#include "process/cuda_ctx.h"
#include "process/fork.h"
#include "process/log.h"
#include "backend.h"
#include "reason.h"            /* util/: VR_REASON_LEN, vr_reason */
#include "vulkan_export.h"

/* ---- the walk ----------------------------------------------------------------------- */

/* The allocation mapped at at, right after the previous part, in *p: see vr_vk_span_walk. */
static int next_part(const struct vr_cuda *cu, uint64_t at, int dev, struct vr_span_part *p,
                     char *why, size_t len)
{
    unsigned long long a = (unsigned long long)at;
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop;
    CUdeviceptr b = 0;
    size_t size = 0;
    void *pool = NULL;
    CUresult cr;
    int rc;

    cr = cu->cuMemGetAddressRange(&b, &size, (CUdeviceptr)at);
    if (cr != CUDA_SUCCESS) {
        snprintf(why, len, "0x%llx, right after it, is not CUDA memory (%s)", a,
                 vr_cuda_errstr(cr));
        return EINVAL;
    }
    if (cu->cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
                                  (CUdeviceptr)at) == CUDA_SUCCESS && pool) {
        snprintf(why, len, "0x%llx, right after it, is stream-ordered memory, which a pin does "
                 "not run into", a);
        return EINVAL;
    }
    if ((uint64_t)b != at) {
        snprintf(why, len, "0x%llx, right after it, lies in memory that begins at 0x%llx", a,
                 (unsigned long long)b);
        return EINVAL;
    }
    cr = cu->cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)at);
    if (cr != CUDA_SUCCESS) {
        snprintf(why, len, "0x%llx, right after it, is CUDA memory without an allocation "
                 "handle (plain cudaMalloc/cuMemAlloc memory: %s)", a, vr_cuda_errstr(cr));
        return EINVAL;
    }
    rc = vr_vk_exportable(cu, h, at, &prop, why, len);
    if (!rc && prop.location.id != dev) {
        snprintf(why, len, "0x%llx, right after it, is memory of CUDA device %d, and the range "
                 "begins on device %d", a, prop.location.id, dev);
        rc = EINVAL;
    }
    if (rc) {
        cu->cuMemRelease(h);
        return rc;
    }
    *p = (struct vr_span_part){ .handle = (uint64_t)h, .base = at, .size = size };
    return 0;
}

/* Room for one more part: 0, or ENOMEM. */
static int span_grow(struct vr_span **sp)
{
    struct vr_span *s = *sp;
    unsigned cap = s->cap * 2;

    if (s->n < s->cap)
        return 0;
    if (cap > VR_SPAN_MAX_PARTS)
        cap = VR_SPAN_MAX_PARTS;
    s = realloc(s, sizeof(*s) + cap * sizeof(s->part[0]));
    if (!s)
        return ENOMEM;
    s->cap = cap;
    *sp = s;
    return 0;
}

int vr_vk_span_walk(const struct vr_cuda *cu, const struct vr_import_key *first, int dev,
                    uint64_t end, struct vr_span **out, char *why, size_t len)
{
    struct vr_span *s = calloc(1, sizeof(*s) + 8 * sizeof(s->part[0]));
    uint64_t at;
    int rc = 0;

    if (!s) {
        cu->cuMemRelease((CUmemGenericAllocationHandle)first->handle);
        snprintf(why, len, "out of memory");
        return ENOMEM;
    }
    s->cap = 8;
    s->device = dev;
    s->base = first->base;
    s->part[s->n++] = (struct vr_span_part){ .handle = first->handle, .base = first->base,
                                             .size = first->size };
    for (at = first->base + first->size; at < end && !rc; at += s->part[s->n++].size) {
        if (s->n == VR_SPAN_MAX_PARTS) {
            snprintf(why, len, "it touches more than %d CUDA allocations, the most one pin may",
                     VR_SPAN_MAX_PARTS);
            rc = ENOTSUP;
        } else if (span_grow(&s)) {
            snprintf(why, len, "out of memory");
            rc = ENOMEM;
        } else {
            rc = next_part(cu, at, dev, &s->part[s->n], why, len);
        }
        if (rc)
            break;
    }
    if (rc) {
        vr_vk_span_free(cu, s);
        return rc;
    }
    s->size = at - s->base;
    *out = s;
    return 0;
}

/* ---- the window --------------------------------------------------------------------- */

/* 0 when gpu (of CUDA device dev) maps with placed maps, else ENOTSUP and why. */
static int placed_missing(const struct vr_vk_gpu *gpu, int dev, char *why, size_t len)
{
    if (gpu->placed)
        return 0;
    snprintf(why, len, "the Vulkan device of CUDA device %d does not offer placed maps "
             "(VK_KHR_map_memory2, VK_EXT_map_memory_placed, memoryMapPlaced)", dev);
    return ENOTSUP;
}

/* size bytes of address space, PROT_NONE, at a multiple of align (a power of two): NULL when
 * there is none. Over-reserved by align, the ends trimmed. */
static char *reserve(uint64_t size, uint64_t align)
{
    size_t total = (size_t)size + (size_t)align;
    uintptr_t p, a;

    if (total < size)
        return NULL;
    p = (uintptr_t)mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                        -1, 0);
    if ((void *)p == MAP_FAILED)
        return NULL;
    a = (p + align - 1) & ~(uintptr_t)(align - 1);
    if (a > p)
        munmap((void *)p, a - p);
    if (p + total > a + size)
        munmap((void *)(a + size), p + total - (a + size));
    return (char *)a;
}

/* Map mem whole at at (a placed map). A driver that maps it elsewhere has not done what was
 * asked: that map is undone and the call failed. */
static VkResult place(const struct vr_vk_gpu *gpu, VkDeviceMemory mem, void *at)
{
    VkMemoryMapPlacedInfoEXT pi = { .sType = VK_STRUCTURE_TYPE_MEMORY_MAP_PLACED_INFO_EXT,
                                    .pPlacedAddress = at };
    VkMemoryMapInfoKHR mi = { .sType = VK_STRUCTURE_TYPE_MEMORY_MAP_INFO_KHR, .pNext = &pi,
                              .flags = VK_MEMORY_MAP_PLACED_BIT_EXT, .memory = mem,
                              .offset = 0, .size = VK_WHOLE_SIZE };
    void *got = NULL;
    VkResult r = gpu->vkMapMemory2KHR(gpu->dev, &mi, &got);

    if (r == VK_SUCCESS && got != at) {
        gpu->fn.vkUnmapMemory(gpu->dev, mem);
        r = VK_ERROR_MEMORY_MAP_FAILED;
    }
    return r;
}

/* Unmap and free each part's import (its handle reference stays). */
static void unimport_parts(struct vr_span *s)
{
    unsigned i;

    for (i = 0; i < s->n; i++) {
        VkDeviceMemory mem = (VkDeviceMemory)(uintptr_t)s->part[i].mem;

        if (!mem)
            continue;
        s->gpu->fn.vkUnmapMemory(s->gpu->dev, mem);
        s->gpu->fn.vkFreeMemory(s->gpu->dev, mem, NULL);
        s->part[i].mem = 0;
    }
}

/* Import part i and place it in the window: 0 or an errno and why. */
static int map_part(const struct vr_cuda *cu, struct vr_span *s, unsigned i, char *why,
                    size_t len)
{
    struct vr_span_part *p = &s->part[i];
    VkDeviceMemory mem;
    VkResult r;
    int rc;

    rc = vr_vk_export_import(cu, s->gpu, (CUmemGenericAllocationHandle)p->handle, p->base,
                             p->size, &mem, why, len);
    if (rc)
        return rc;
    r = place(s->gpu, mem, s->cpu + (p->base - s->base));
    if (r != VK_SUCCESS) {
        s->gpu->fn.vkFreeMemory(s->gpu->dev, mem, NULL);
        snprintf(why, len, "the placed map of the CUDA allocation at 0x%llx (%u of %u of the "
                 "span) failed: %s", (unsigned long long)p->base, i + 1, s->n,
                 vr_vk_result_name(r));
        return vr_vk_errno(r);
    }
    p->mem = (uint64_t)(uintptr_t)mem;
    return 0;
}

int vr_vk_span_map(const struct vr_cuda *cu, struct vr_span *s, char *why, size_t len)
{
    unsigned i;
    int rc = vr_vk_gpu_get(cu, s->device, &s->gpu, why, len);

    if (!rc)
        rc = placed_missing(s->gpu, s->device, why, len);
    if (rc)
        return rc;
    /* Every import would be made and BAR1 still not hold them all: say so before any. */
    if (s->size > s->gpu->heap_size) {
        snprintf(why, len, "its %u CUDA allocations, %llu bytes, are larger than the "
                 "host-visible heap (BAR1: %llu bytes)", s->n, (unsigned long long)s->size,
                 (unsigned long long)s->gpu->heap_size);
        return ENOMEM;
    }
    s->cpu = reserve(s->size, s->gpu->placed_align);
    if (!s->cpu) {
        snprintf(why, len, "no %llu bytes of address space are left for the span's window",
                 (unsigned long long)s->size);
        return ENOMEM;
    }
    for (i = 0; i < s->n && !rc; i++)
        rc = map_part(cu, s, i, why, len);
    if (rc) {
        /* Parts 0 .. i-2 are placed (the driver's now, given back by their unmap); from
         * part i-1 on the reservation is ours, or a hole left by the failed placed map. */
        uint64_t off = s->part[i - 1].base - s->base;

        unimport_parts(s);
        munmap(s->cpu + off, (size_t)(s->size - off));
        s->cpu = NULL;
        return rc;
    }
    /* As for single imports: a forked child must not reach the parent's BAR mapping. */
    vr_fork_dontfork(s->cpu, (size_t)s->size);
    vr_dbg("vulkan: span 0x%llx + %llu of %u allocations mapped at %p (GPU %d)",
           (unsigned long long)s->base, (unsigned long long)s->size, s->n, (void *)s->cpu,
           s->device);
    return 0;
}

void vr_vk_span_free(const struct vr_cuda *cu, struct vr_span *s)
{
    unsigned i;

    if (s->gpu)
        unimport_parts(s);
    for (i = 0; i < s->n; i++)
        cu->cuMemRelease((CUmemGenericAllocationHandle)s->part[i].handle);
    free(s);
}

int vr_vk_span_moved(const struct vr_cuda *cu, const struct vr_span *s)
{
    CUmemGenericAllocationHandle h;
    unsigned i;
    int moved = 0;

    /* Our references keep the handle values from being reused, so comparing them is sound. */
    for (i = 0; i < s->n && !moved; i++) {
        if (cu->cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)s->part[i].base) !=
            CUDA_SUCCESS)
            return 1;
        moved = (uint64_t)h != s->part[i].handle;
        cu->cuMemRelease(h);
    }
    return moved;
}

/* ---- the check, once per GPU -------------------------------------------------------- */

#define CHECK_GPUS 64
#define SEAM_BYTES 4096u   /* each side of the seam */

/* The verdicts' lock, held only to read or write one (fork.h protects it). */
static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { int done, rc; char why[VR_REASON_LEN]; } verdict[CHECK_GPUS];

/* At load, not at the first use (fork.h). */
__attribute__((constructor)) static void check_lock_register(void)
{
    vr_fork_protect_mutex(&check_lock);
}

/* What the check made, for its cleanup. */
struct two {
    CUmemGenericAllocationHandle h[2];
    CUdeviceptr base;
    size_t gran;
    int made, mapped;
};

/* Two allocations of gran bytes on dev, mapped side by side in one reservation. */
static CUresult make_two(const struct vr_cuda *cu, int dev, struct two *t)
{
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev } };
    CUmemAccessDesc acc = { .location = prop.location,
                            .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CUresult cr;

    cr = cu->cuMemGetAllocationGranularity(&t->gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    for (; cr == CUDA_SUCCESS && t->made < 2; t->made++)
        cr = cu->cuMemCreate(&t->h[t->made], t->gran, &prop, 0);
    if (cr == CUDA_SUCCESS)
        cr = cu->cuMemAddressReserve(&t->base, 2 * t->gran, 0, 0, 0);
    for (; cr == CUDA_SUCCESS && t->mapped < 2; t->mapped++)
        cr = cu->cuMemMap(t->base + t->mapped * t->gran, t->gran, 0, t->h[t->mapped], 0);
    if (cr == CUDA_SUCCESS)
        cr = cu->cuMemSetAccess(t->base, 2 * t->gran, &acc, 1);
    return cr;
}

static void free_two(const struct vr_cuda *cu, struct two *t)
{
    while (t->mapped > 0) {
        t->mapped--;
        cu->cuMemUnmap(t->base + t->mapped * t->gran, t->gran);
    }
    if (t->base)
        cu->cuMemAddressFree(t->base, 2 * t->gran);
    while (t->made > 0)
        cu->cuMemRelease(t->h[--t->made]);
}

/* Bytes seed, seed + 7, ... around the seam: what one side writes and the other reads. */
static void seam_pattern(unsigned char *b, unsigned seed)
{
    unsigned i;

    for (i = 0; i < 2 * SEAM_BYTES; i++)
        b[i] = (unsigned char)(seed + i * 7 + (i >> 8));
}

/* Through the span's window over t: a CPU write across the seam is what CUDA reads, and what
 * CUDA writes across it is what the CPU reads. 0 or an errno and why. */
static int seam_both_ways(const struct vr_cuda *cu, const struct vr_span *s,
                          const struct two *t, char *why, size_t len)
{
    static const char *const dir[2] = { "a CPU write through the window was not what CUDA read",
                                        "a CUDA write was not what the window showed" };
    unsigned char want[2 * SEAM_BYTES], got[2 * SEAM_BYTES];
    volatile unsigned char *w = (volatile unsigned char *)s->cpu + t->gran - SEAM_BYTES;
    CUdeviceptr d = t->base + t->gran - SEAM_BYTES;
    CUresult cr;
    unsigned i, k;

    for (k = 0; k < 2; k++) {
        seam_pattern(want, 17 + 101 * k);
        if (k == 0) {
            for (i = 0; i < sizeof(want); i++)
                w[i] = want[i];
            vr_store_fence(); /* the window is write-combined */
            cr = cu->cuMemcpyDtoH(got, d, sizeof(got));
        } else {
            cr = cu->cuMemcpyHtoD(d, want, sizeof(want));
            if (cr == CUDA_SUCCESS)
                cr = cu->cuCtxSynchronize();
            for (i = 0; i < sizeof(got); i++)
                got[i] = w[i];
        }
        if (cr != CUDA_SUCCESS) {
            snprintf(why, len, "a copy across the seam failed: %s", vr_cuda_errstr(cr));
            return vr_cuda_errno(cr);
        }
        if (memcmp(want, got, sizeof(want)) != 0) {
            snprintf(why, len, "two allocations side by side mapped with placed maps: %s",
                     dir[k]);
            return ENOTSUP;
        }
    }
    return 0;
}

/* The check itself, in a context of dev: 0 or an errno and why. */
static int check(const struct vr_cuda *cu, int dev, char *why, size_t len)
{
    struct two t = { .made = 0 };
    CUmemGenericAllocationHandle h0;
    struct vr_import_key first;
    struct vr_span *s = NULL;
    CUresult cr;
    int rc;

    cr = make_two(cu, dev, &t);
    if (cr != CUDA_SUCCESS) {
        snprintf(why, len, "two POSIX-fd allocations side by side: %s", vr_cuda_errstr(cr));
        free_two(cu, &t);
        return vr_cuda_errno(cr);
    }
    /* Found as a pin finds them: the first by its handle, the second by the walk. */
    cr = cu->cuMemRetainAllocationHandle(&h0, (void *)(uintptr_t)t.base);
    rc = cr == CUDA_SUCCESS ? 0 : vr_cuda_errno(cr);
    if (rc)
        snprintf(why, len, "cuMemRetainAllocationHandle: %s", vr_cuda_errstr(cr));
    if (!rc) {
        first = (struct vr_import_key){ .handle = (uint64_t)h0, .base = t.base,
                                        .size = t.gran };
        rc = vr_vk_span_walk(cu, &first, dev, t.base + 2 * t.gran, &s, why, len);
    }
    if (!rc && (s->n != 2 || s->size != 2 * t.gran)) {
        snprintf(why, len, "the walk found %u allocations over %llu bytes, not 2 over %zu",
                 s->n, (unsigned long long)s->size, 2 * t.gran);
        rc = ENOTSUP;
    }
    if (!rc)
        rc = vr_vk_span_map(cu, s, why, len);
    if (!rc)
        rc = seam_both_ways(cu, s, &t, why, len);
    if (s)
        vr_vk_span_free(cu, s);
    free_two(cu, &t);
    return rc;
}

/* Whether the check can run at all here: the device's placed maps and the driver's calls. */
static int check_runnable(const struct vr_cuda *cu, int dev, char *why, size_t len)
{
    const struct vr_vk_gpu *gpu;
    int rc = vr_vk_gpu_get(cu, dev, &gpu, why, len);

    if (!rc)
        rc = placed_missing(gpu, dev, why, len);
#define VR_NEED(fn) if (!rc) rc = vr_cuda_require(cu, fn, why, len);
    VR_NEED(cuMemCreate) VR_NEED(cuMemAddressReserve) VR_NEED(cuMemMap) VR_NEED(cuMemSetAccess)
    VR_NEED(cuMemUnmap) VR_NEED(cuMemAddressFree) VR_NEED(cuMemcpyDtoH) VR_NEED(cuMemcpyHtoD)
    VR_NEED(cuCtxSynchronize) VR_NEED(cuThreadExchangeStreamCaptureMode)
#undef VR_NEED
    return rc;
}

static int run_check(const struct vr_cuda *cu, int dev, char *why, size_t len)
{
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    struct vr_cuda_ctx_guard guard;
    int rc = check_runnable(cu, dev, why, len);

    if (!rc)
        rc = vr_cuda_ctx_enter_device(cu, dev, NULL, &guard, why, len);
    if (rc)
        return rc;
    /* Relaxed meanwhile, so that another thread's stream capture is not disturbed by the
     * check's synchronous copies (as vulkan_pool.c's check). */
    cu->cuThreadExchangeStreamCaptureMode(&mode);
    rc = check(cu, dev, why, len);
    cu->cuThreadExchangeStreamCaptureMode(&mode);
    vr_cuda_ctx_leave(cu, &guard);
    return rc;
}

int vr_vk_spans(const struct vr_cuda *cu, int dev, char *why, size_t len)
{
    char one[VR_REASON_LEN];
    int rc, done;

    if (dev < 0 || dev >= CHECK_GPUS) {
        if (why)
            snprintf(why, len, "CUDA device %d is past the backend's table", dev);
        return ENODEV;
    }
    pthread_mutex_lock(&check_lock);
    done = verdict[dev].done;
    rc = verdict[dev].rc;
    if (done)
        vr_reason(why, len, "%s", verdict[dev].why);
    pthread_mutex_unlock(&check_lock);
    if (done)
        return rc;
    /* Checked with no lock held (the check takes the export lock, and a fork takes the
     * protected locks in their order of registration): two first callers may both check. */
    rc = run_check(cu, dev, one, sizeof(one));
    if (!rc)
        vr_dbg("vulkan: GPU %d maps allocations side by side (placed maps checked)", dev);
    else
        vr_info("vulkan: a pin of GPU %d cannot span several allocations%s: %s", dev,
                vr_failed_for_now(rc) ? " for now" : "", one);
    if (vr_failed_for_now(rc)) {
        vr_reason(why, len, "%s", one);
        return rc;
    }
    /* What the check found of the GPU, kept: ENOTSUP for any such failure (a copy that
     * failed says as much about the placed maps as one that read wrong). */
    pthread_mutex_lock(&check_lock);
    if (!verdict[dev].done) {
        verdict[dev].done = 1;
        verdict[dev].rc = rc ? ENOTSUP : 0;
        snprintf(verdict[dev].why, sizeof(verdict[dev].why), "%s", rc ? one : "");
    }
    rc = verdict[dev].rc;
    vr_reason(why, len, "%s", verdict[dev].why);
    pthread_mutex_unlock(&check_lock);
    return rc;
}

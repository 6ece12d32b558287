/* SPDX-License-Identifier: MIT */
/*
 * vulkan_span.h - pins that span several CUDA allocations mapped side by side in one
 * reservation (vramio_alloc's chunked large allocations, docs/large-allocations.md): each
 * allocation the range touches imported on its own, the imports mapped side by side into one
 * CPU window with placed maps (VK_EXT_map_memory_placed), and the check, once per GPU, that
 * the driver does this right before any pin relies on it (vr_vk_spans). Used by vulkan.c.
 */
#ifndef VRAMIO_VK_SPAN_H
#define VRAMIO_VK_SPAN_H

#include <stddef.h>
#include <stdint.h>
#include "cuda_loader.h"
#include "vulkan_device.h"
#include "vulkan_import_cache.h"

/*
 * The most allocations one pin may touch. Each costs a VkDeviceMemory of the pin's own (the
 * spec promises only 4096 allocations per device, shared by every import of the process), a
 * descriptor for a moment, and a walk step of three driver calls under the pin; and 1024 is
 * far past what a pin needs: 1024 chunks of 64 MiB are 64 GiB, more than the largest import
 * that works on an H100 (16 GiB worked, 59.4 GiB did not); with 2 MiB chunks, 2 GiB.
 */
#define VR_SPAN_MAX_PARTS 1024

/* One allocation of a span. */
struct vr_span_part {
    uint64_t handle;   /* CUmemGenericAllocationHandle: a reference of ours */
    uint64_t base;     /* device VA of its mapping */
    uint64_t size;     /* bytes */
    uint64_t mem;      /* VkDeviceMemory of its import, 0 when not imported */
};

struct vr_span {
    const struct vr_vk_gpu *gpu;
    int device;                  /* CUDA device ordinal */
    uint64_t base, size;         /* from the first part's base to the last part's end */
    char *cpu;                   /* the CPU window of [base, base + size), once mapped */
    unsigned n, cap;
    struct vr_span_part part[];  /* side by side, in address order */
};

/*
 * 0 when CUDA device dev's Vulkan device offers placed maps and the check passed: two
 * POSIX-fd allocations side by side in one reservation, pinned as one span by the code below,
 * a CPU write across their seam read back through CUDA and a CUDA write across it read
 * through the window. Checked once per GPU (two first callers may both check) and kept;
 * ENOTSUP when not offered, failed or not runnable, with the reason in why (why may be NULL).
 * A check that failed for want of memory or descriptors (backend.h's vr_failed_for_now) gives
 * that errno and is not kept: the next call checks again.
 */
int vr_vk_spans(const struct vr_cuda *cu, int dev, char *why, size_t len);

/*
 * The span of the allocations that cover [first->base, end): first (its handle retained; the
 * reference moves to the span, or is released on failure) and those mapped right after it,
 * each found at the previous one's end with cuMemGetAddressRange and
 * cuMemRetainAllocationHandle: a POSIX-fd device allocation of first's GPU that begins exactly
 * there (stream-ordered memory is not walked). Nothing is imported yet. 0 with *out, else an
 * errno and why: EINVAL where the range is not one run of allocations of one GPU (a gap,
 * plain or stream-ordered memory, another GPU's), ENOTSUP where it is but this backend cannot
 * span it (a neighbour without the POSIX-fd type, more than VR_SPAN_MAX_PARTS allocations).
 */
int vr_vk_span_walk(const struct vr_cuda *cu, const struct vr_import_key *first, int dev,
                    uint64_t end, struct vr_span **out, char *why, size_t len);

/* Import every part and map them side by side into one CPU window (s->cpu), placed maps on
 * a reservation aligned as the device asks, marked MADV_DONTFORK. On failure whatever was
 * made is undone (the parts' handle references stay the span's). 0 or an errno and why. */
int vr_vk_span_map(const struct vr_cuda *cu, struct vr_span *s, char *why, size_t len);

/* Undo all of it: unmap and free each import, release each handle reference, free s. */
void vr_vk_span_free(const struct vr_cuda *cu, struct vr_span *s);

/* 1 when any part's address no longer belongs to the allocation imported (CUDA unmapped or
 * freed it), else 0. */
int vr_vk_span_moved(const struct vr_cuda *cu, const struct vr_span *s);

#endif /* VRAMIO_VK_SPAN_H */

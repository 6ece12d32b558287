/* SPDX-License-Identifier: MIT */
/*
 * gpumem.h - where the tools' "GPU memory" comes from.
 *
 * One small interface hides the allocation kinds, so the same test or benchmark runs on a GPU
 * machine (CUDA, CUDA VMM, vramio_alloc) and inside the QEMU guest (the emulated p2p
 * provider). Data written through a gdr mapping is checked through the kind's own path
 * (cuMemcpy for CUDA kinds, the provider's READ/WRITE ioctls for emu), never through the
 * mapping under test.
 */
#ifndef TOOLS_GPUMEM_H
#define TOOLS_GPUMEM_H

#include <stddef.h>
#include <stdint.h>

enum gm_kind {
    GM_CUDA = 0,   /* cuMemAlloc */
    GM_VMM_RDMA,   /* cuMemCreate, GPUDirect RDMA capable, no shareable handle */
    GM_VMM_FD,     /* cuMemCreate with a POSIX-fd handle type (what NCCL allocates) */
    GM_VRAMIO,     /* vramio_alloc() */
    GM_EMU,        /* the emulated p2p provider (/dev/nvp2p_emu): linked into the QEMU guest's
                      static sanity only (tests/kernel/emu/gpumem_emu.c) */
    GM_KIND_COUNT
};

struct gm_buf {
    enum gm_kind kind;
    uint64_t dptr;       /* device address to pin */
    size_t size;         /* bytes asked for */
    size_t alloc_size;   /* bytes really allocated (rounded to the kind's granularity) */
    uint64_t priv;       /* kind-specific: VMM allocation handle */
};

/* "cuda", "vmm-rdma", "vmm-fd", "vramio", "emu". */
const char *gm_kind_name(enum gm_kind kind);
/* Also accepts upstream's -a spellings: cuMemAlloc (cuda) and cuMemCreate (vmm-rdma).
 * 0, or EINVAL for an unknown name. */
int gm_kind_parse(const char *name, enum gm_kind *kind);
/* A one-line description for --help. */
const char *gm_kind_help(void);
/* 1 for the kinds that live in a CUDA context. */
int gm_kind_is_cuda(enum gm_kind kind);

/* Make kind usable on GPU ordinal gpu in this process: 0, or an errno with the reason in why
 * (CUDA missing, no device, VMM unsupported, provider not loaded). Idempotent. */
int gm_init(enum gm_kind kind, int gpu, char *why, size_t len);
/* Make the CUDA context current in the calling thread (no-op for emu). */
void gm_thread_attach(void);

int gm_alloc(enum gm_kind kind, size_t size, struct gm_buf *buf, char *why, size_t len);
/* Frees the memory (for emu this fires the free callback of non-persistent pins). */
int gm_free(struct gm_buf *buf);

/* Copies through the kind's own path; off + n must lie inside the allocation. */
int gm_write(const struct gm_buf *buf, size_t off, const void *src, size_t n);
int gm_read(const struct gm_buf *buf, size_t off, void *dst, size_t n);
int gm_fill(const struct gm_buf *buf, uint8_t byte);

/* Pins handed out by the provider and not yet released (emu only; ENOTSUP elsewhere). */
int gm_live_pins(uint64_t *pins);

/* The CUDA driver table loaded by gm_init for CUDA kinds (NULL for emu). */
const struct vr_cuda *gm_cuda(void);
/* CUdevice of the selected GPU (CUDA kinds). */
int gm_cuda_device(void);

#endif /* TOOLS_GPUMEM_H */

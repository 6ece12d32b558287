/* SPDX-License-Identifier: MIT */
/* dmabuf_policy.c - GPU-free decisions of the dma-buf backend (see dmabuf_policy.h). */
#include "dmabuf_policy.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cuda_loader.h"
#include "cuda_types.h"
#include "gdrapi.h"

int vr_dmabuf_driver_check(int v, char *why, size_t len)
{
    if (v >= VR_DMABUF_MIN_DRIVER)
        return 0;
    snprintf(why, len, "the CUDA driver is %d.%d; mmap of dma-buf exports of discrete-GPU "
             "memory needs driver %d.%d (the 610 series) or newer "
             "(GDRCOPY_USE_DMABUF_MMAP=1 tries it anyway)", v / 1000, (v % 1000) / 10,
             VR_DMABUF_MIN_DRIVER / 1000, (VR_DMABUF_MIN_DRIVER % 1000) / 10);
    return ENOTSUP;
}

int vr_dmabuf_mmap_error(int err, int v, char *why, size_t len)
{
    if (err == VR_KERNEL_ENOTSUPP && v >= VR_DMABUF_MIN_DRIVER) {
        snprintf(why, len, "the driver refuses to mmap this export (errno 524, ENOTSUPP) although "
                 "CUDA driver %d.%d maps exports: this buffer cannot be mapped (BAR1 space "
                 "exhausted, or memory the exporter does not map for the CPU)",
                 v / 1000, (v % 1000) / 10);
        return ENOTSUP;
    }
    if (err == VR_KERNEL_ENOTSUPP) {
        snprintf(why, len, "the driver exports dma-buf fds but refuses to mmap them "
                 "(errno 524, ENOTSUPP): CUDA driver %d.%d allows CPU mappings of exports on "
                 "integrated GPUs only; discrete GPUs need driver %d.%d (610 series)",
                 v / 1000, (v % 1000) / 10, VR_DMABUF_MIN_DRIVER / 1000,
                 (VR_DMABUF_MIN_DRIVER % 1000) / 10);
        return ENOTSUP;
    }
    snprintf(why, len, "mmap of a dma-buf export failed: %s (errno %d)", strerror(err), err);
    return err > 0 ? err : EIO;
}

/* [addr, addr + size) in whole host pages of page bytes; EINVAL when that would wrap. */
static int host_range(uint64_t addr, uint64_t size, uint64_t page, uint64_t *va, uint64_t *len)
{
    uint64_t last;

    if (size == 0 || size - 1 > UINT64_MAX - addr)
        return EINVAL;
    last = addr + (size - 1);
    if ((last | (page - 1)) == UINT64_MAX)
        return EINVAL;
    *va = addr & ~(page - 1);
    *len = (last | (page - 1)) + 1 - *va;
    return 0;
}

/* Why this memory is not the dma-buf exporter's to pin (ENOTSUP: the next backend is offered
 * it), else 0. */
static int not_exportable(const struct vr_dmabuf_pin_facts *f, char *why, size_t len)
{
    if (f->ptr_result != CUDA_SUCCESS) {
        snprintf(why, len, "0x%llx is not CUDA device memory: %s", (unsigned long long)f->addr,
                 vr_cuda_errstr((CUresult)f->ptr_result));
        return ENOTSUP;
    }
    if (!f->dmabuf_supported) {
        snprintf(why, len, "CUDA device %d does not support dma-buf", f->device);
        return ENOTSUP;
    }
    return 0;
}

int vr_dmabuf_plan(const struct vr_dmabuf_pin_facts *f, struct vr_dmabuf_plan *plan,
                   char *why, size_t len)
{
    int force_pcie = (f->pin_flags & GDR_PIN_FLAG_FORCE_PCIE) != 0;

    *plan = (struct vr_dmabuf_plan){ .device = f->device, .page_size = (uint32_t)f->host_page };
    if (host_range(f->addr, f->size, f->host_page, &plan->va, &plan->len)) {
        snprintf(why, len, "0x%llx + %llu wraps around in whole host pages",
                 (unsigned long long)f->addr, (unsigned long long)f->size);
        return EINVAL;
    }
    plan->export_flags = force_pcie ? CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE : 0;
    plan->pcie_flag = force_pcie;
    plan->map_type = f->coherent && !force_pcie ? GDR_MAPPING_TYPE_CACHING : GDR_MAPPING_TYPE_WC;
    return not_exportable(f, why, len);
}

int vr_dmabuf_export_errno(int cuda_result, int fd_errno, int pcie_flag)
{
    if (cuda_result == CUDA_ERROR_OPERATING_SYSTEM && (fd_errno == EMFILE || fd_errno == ENFILE))
        return fd_errno;
    if (cuda_result == CUDA_ERROR_OUT_OF_MEMORY)
        return ENOMEM;
    if (cuda_result == CUDA_ERROR_NOT_SUPPORTED && pcie_flag)
        return EINVAL;
    return ENOTSUP;
}

int vr_dmabuf_trial_settled(int rc)
{
    return !vr_failed_for_now(rc);
}

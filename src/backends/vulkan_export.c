/* SPDX-License-Identifier: MIT */
/* vulkan_export.c - a CUDA allocation exported as a POSIX fd for a Vulkan import, the fd
 * close-on-exec before any fork can copy it, and the import itself (vulkan_export.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "process/fds.h"
#include "process/fork.h"
#include "reason.h"            /* util/: vr_reason */
#include "vulkan_export.h"

/* The exported fd may come without FD_CLOEXEC (no flag asks the driver for it). Until set, a
 * fork() in another thread (then exec) would inherit the fd and keep the GPU memory alive in
 * that program: the export and the flag happen under a mutex that fork() takes first
 * (fork.h). posix_spawn and vfork run no fork handlers; nothing in user space closes that
 * window for an fd the driver creates. */
static pthread_mutex_t export_lock = PTHREAD_MUTEX_INITIALIZER;

/* At load, not at the first use (fork.h). */
__attribute__((constructor)) static void export_lock_register(void)
{
    vr_fork_protect_mutex(&export_lock);
}

CUresult vr_vk_export_fd(const struct vr_cuda *cu, CUmemGenericAllocationHandle h, int *fd)
{
    CUresult cr;

    pthread_mutex_lock(&export_lock);
    cr = cu->cuMemExportToShareableHandle(fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (cr == CUDA_SUCCESS)
        fcntl(*fd, F_SETFD, FD_CLOEXEC);
    pthread_mutex_unlock(&export_lock);
    return cr;
}

int vr_vk_exportable(const struct vr_cuda *cu, CUmemGenericAllocationHandle h, uint64_t base,
                     CUmemAllocationProp *prop, char *why, size_t len)
{
    CUresult cr;

    memset(prop, 0, sizeof(*prop));
    cr = cu->cuMemGetAllocationPropertiesFromHandle(prop, h);
    if (cr != CUDA_SUCCESS) {
        snprintf(why, len, "cannot read the properties of the CUDA allocation at 0x%llx: %s",
                 (unsigned long long)base, vr_cuda_errstr(cr));
        return vr_cuda_errno(cr);
    }
    if (!(prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) {
        snprintf(why, len, "the CUDA VMM allocation at 0x%llx was created without "
                 "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (its handle types: %#x; PyTorch's "
                 "expandable segments, XLA's and TensorRT's VMM allocators can make such "
                 "memory), so it cannot be exported to Vulkan: add that handle type to "
                 "cuMemCreate, allocate with vramio_alloc(), or run the program under vramio-run "
                 "(which adds it)", (unsigned long long)base,
                 (unsigned)prop->requestedHandleTypes);
        return ENOTSUP;
    }
    if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
        snprintf(why, len, "the CUDA VMM allocation at 0x%llx is not device memory",
                 (unsigned long long)base);
        return ENOTSUP;
    }
    return 0;
}

/* The export's failure: it is a descriptor, and at the process's limit the driver says only
 * that some call failed (CUDA_ERROR_OPERATING_SYSTEM where it was seen). The advice ends the
 * reason, and stays however short the buffer (vr_reason). */
static int export_failed(CUresult cr, uint64_t base, char *why, size_t len)
{
    int fde = vr_fds_exhausted();

    if (fde)
        vr_reason(why, len, "cuMemExportToShareableHandle of the allocation at 0x%llx failed: "
                  "%s: the %s is out of file descriptors (%s; the import to Vulkan needs one "
                  "for a moment, the limit is %llu: raise it with ulimit -n)",
                  (unsigned long long)base, vr_cuda_errstr(cr),
                  fde == EMFILE ? "process" : "system", fde == EMFILE ? "EMFILE" : "ENFILE",
                  vr_fds_limit());
    else
        snprintf(why, len, "cuMemExportToShareableHandle of the allocation at 0x%llx "
                 "failed: %s", (unsigned long long)base, vr_cuda_errstr(cr));
    return fde ? fde : vr_cuda_errno(cr);
}

int vr_vk_export_import(const struct vr_cuda *cu, const struct vr_vk_gpu *gpu,
                        CUmemGenericAllocationHandle h, uint64_t base, uint64_t size,
                        VkDeviceMemory *mem, char *why, size_t len)
{
    VkImportMemoryFdInfoKHR imp = {
        .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
        .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
    };
    VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .pNext = &imp,
        .allocationSize = size,
        .memoryTypeIndex = gpu->memtype,
    };
    CUresult cr = vr_vk_export_fd(cu, h, &imp.fd);
    VkResult vr;

    if (cr != CUDA_SUCCESS)
        return export_failed(cr, base, why, len);
    vr = gpu->fn.vkAllocateMemory(gpu->dev, &ai, NULL, mem);
    if (vr != VK_SUCCESS) {
        close(imp.fd); /* a successful import owns the fd; a failed one leaves it to us */
        snprintf(why, len, "Vulkan import of the %llu-byte CUDA allocation at 0x%llx failed: %s%s",
                 (unsigned long long)size, (unsigned long long)base, vr_vk_result_name(vr),
                 size > gpu->heap_size ? " (larger than the host-visible heap: BAR1)" : "");
        return vr_vk_errno(vr);
    }
    return 0;
}

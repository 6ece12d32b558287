/* SPDX-License-Identifier: MIT */
/* vulkan_export.c - a CUDA allocation exported as a POSIX fd for a Vulkan import, the fd
 * close-on-exec before any fork can copy it (vulkan_export.h). */
#include <fcntl.h>
#include <pthread.h>
#include "process/fork.h"
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

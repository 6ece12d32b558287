/* SPDX-License-Identifier: MIT */
/*
 * fake_gpu.h - what the stand-in CUDA driver (fake_cuda_vmm.c) and the stand-in Vulkan
 * loader (fake_vulkan.c) agree on without linking each other: the UUID of GPU i, and the name
 * of the memfd behind a VMM allocation of GPU i, so that the Vulkan side can tell which GPU an
 * exported fd belongs to (as a real driver refuses memory of another GPU).
 */
#ifndef VRAMIO_FAKE_GPU_H
#define VRAMIO_FAKE_GPU_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define FAKE_GPU_MAX 16
#define FAKE_GPU_MEMFD_PREFIX "fake-vmm-gpu"

/* "vramio-fakegpu" then the ordinal in two bytes: distinct, and never all zero. */
static inline void fake_gpu_uuid(int gpu, unsigned char out[16])
{
    memcpy(out, "vramio-fakegpu", 14);
    out[14] = (unsigned char)(gpu >> 8);
    out[15] = (unsigned char)gpu;
}

/* The GPU whose VMM allocation fd is, from its memfd name; -1 when it is none of ours. */
static inline int fake_gpu_of_fd(int fd)
{
    char link[64], target[128];
    ssize_t n;
    int gpu;

    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, target, sizeof(target) - 1);
    if (n <= 0)
        return -1;
    target[n] = 0;
    if (sscanf(target, "/memfd:" FAKE_GPU_MEMFD_PREFIX "%d", &gpu) != 1)
        return -1;
    return gpu;
}

#endif /* VRAMIO_FAKE_GPU_H */

/* SPDX-License-Identifier: MIT */
/*
 * soak_cuda.c - the CUDA driver entry points of the soak, by dlopen of libcuda.so.1 (under
 * vramio-run its shim: the allocation, free, copy, memset and IPC entry points are then the
 * bridge's, as a program linked with -lcuda would get them).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "soak.h"
#include "t.h"

struct soak_cuda cu;
static CUcontext primary;

/* The first of the names the library has (the _v2 ABI, then the old name). */
static void *sym(void *lib, const char *a, const char *b)
{
    void *p = dlsym(lib, a);

    return p || !b ? p : dlsym(lib, b);
}

int soak_cuda_start(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    CUresult r;

    if (!lib) {
        printf("# no CUDA driver: %s\n", dlerror());
        return -1;
    }
#define LOAD(f, a, b) *(void **)&cu.f = sym(lib, a, b)
    LOAD(init, "cuInit", NULL);
    LOAD(retain, "cuDevicePrimaryCtxRetain", NULL);
    LOAD(set, "cuCtxSetCurrent", NULL);
    LOAD(alloc, "cuMemAlloc_v2", "cuMemAlloc");
    LOAD(free, "cuMemFree_v2", "cuMemFree");
    LOAD(memset8, "cuMemsetD8_v2", "cuMemsetD8");
    LOAD(htod, "cuMemcpyHtoD_v2", "cuMemcpyHtoD");
    LOAD(dtoh, "cuMemcpyDtoH_v2", "cuMemcpyDtoH");
    LOAD(sync, "cuCtxSynchronize", NULL);
    LOAD(meminfo, "cuMemGetInfo_v2", "cuMemGetInfo");
    LOAD(ipc_get, "cuIpcGetMemHandle", NULL);
    LOAD(ipc_open, "cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle");
    LOAD(ipc_close, "cuIpcCloseMemHandle", NULL);
#undef LOAD
    if (!cu.init || !cu.retain || !cu.set || !cu.alloc || !cu.free || !cu.memset8 || !cu.htod ||
        !cu.dtoh || !cu.sync || !cu.ipc_get || !cu.ipc_open || !cu.ipc_close) {
        printf("# libcuda.so.1 lacks an entry point the soak needs\n");
        return -1;
    }
    r = cu.init(0);
    if (r == CUDA_SUCCESS)
        r = cu.retain(&primary, 0);
    if (r != CUDA_SUCCESS) {
        printf("# cuInit or the primary context of device 0: CUDA error %d\n", (int)r);
        return -1;
    }
    soak_cuda_thread();
    return 0;
}

void soak_cuda_thread(void)
{
    cu.set(primary);
}

/* ---- small things every file uses ------------------------------------------------------- */
double soak_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void soak_error(struct soak_stats *st, const char *fmt, ...)
{
    va_list ap;

    if (!st->errors++) {
        va_start(ap, fmt);
        vsnprintf(st->first_error, sizeof(st->first_error), fmt, ap);
        va_end(ap);
    }
}

/* Mappings of the NVIDIA driver's devices (what the Vulkan mappings and CUDA's own are), and
 * of the stand-ins' memory where no GPU is. */
int soak_count_gpu_maps(void)
{
    return t_count_maps("/dev/nvidia") + t_count_maps("/memfd:fake");
}

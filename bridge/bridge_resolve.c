/* SPDX-License-Identifier: MIT */
/*
 * bridge_resolve.c - the bridge's side of the libcuda.so.1 shim (shim.c): the real driver's
 * functions that the replacements call, the replacements handed to the shim by name (rows
 * of bridge_routes.h), and the log.
 * The real driver is the one behind the shim (vr_cuda_dlopen): a replacement that called a
 * replaced name would call itself, and the pool must see the real allocation ranges.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "bridge.h"
#include "bridge_routes.h"
#include "cuda_loader.h"    /* util/: vr_cuda_dlopen */

static struct vb_real real;
static const struct vb_real *real_loaded;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static void load_real(void)
{
    void *h = vr_cuda_dlopen();

    if (!h)
        return;
#define VB_RESOLVE(fn) *(void **)&real.fn = dlsym(h, #fn);
    VB_RESOLVE(cuMemAlloc_v2)
    VB_RESOLVE(cuMemAllocPitch_v2) VB_RESOLVE(cuMemFree_v2) VB_RESOLVE(cuMemGetAddressRange_v2)
    VB_RESOLVE(cuCtxGetDevice) VB_RESOLVE(cuCtxSynchronize) VB_RESOLVE(cuDeviceGetAttribute)
    VB_RESOLVE(cuCtxGetCurrent) VB_RESOLVE(cuCtxPushCurrent_v2) VB_RESOLVE(cuCtxPopCurrent_v2)
    VB_RESOLVE(cuStreamSynchronize) VB_RESOLVE(cuPointerGetAttribute)
    VB_RESOLVE(cuPointerGetAttributes) VB_RESOLVE(cuPointerSetAttribute) VB_RESOLVE(cuMemcpy)
    VB_RESOLVE(cuMemcpyHtoD_v2) VB_RESOLVE(cuMemcpyDtoD_v2) VB_RESOLVE(cuMemsetD8_v2)
    VB_RESOLVE(cuMemsetD16_v2) VB_RESOLVE(cuMemsetD32_v2)
    VB_RESOLVE(cuIpcGetMemHandle) VB_RESOLVE(cuIpcOpenMemHandle_v2) VB_RESOLVE(cuIpcCloseMemHandle)
    VB_RESOLVE(cuMemRetainAllocationHandle) VB_RESOLVE(cuMemExportToShareableHandle)
    VB_RESOLVE(cuMemImportFromShareableHandle) VB_RESOLVE(cuMemRelease)
    VB_RESOLVE(cuMemAddressReserve) VB_RESOLVE(cuMemAddressFree) VB_RESOLVE(cuMemMap)
    VB_RESOLVE(cuMemUnmap) VB_RESOLVE(cuMemSetAccess)
#undef VB_RESOLVE
    real_loaded = &real; /* the driver stays loaded for the life of the process */
}

const struct vb_real *vb_real(void)
{
    pthread_once(&real_once, load_real);
    return real_loaded;
}

int vb_log_on;

void vb_log(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;

    if (!vb_log_on)
        return;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    /* One write per line: lines of several threads do not interleave. */
    if (write(STDERR_FILENO, "vramio-bridge: ", 15) < 0 || write(STDERR_FILENO, line, (size_t)n) < 0)
        return;
}

/* The shim logs through the bridge's log (one switch, one prefix). */
VB_EXPORT extern __typeof__(vb_log) vramio_bridge_log __attribute__((alias("vb_log")));

/* Each row's replacement, checked against the row's prototype by the compiler. */
static const struct impl {
    const char *name;
    void *fn;
} impls[] = {
#define VB_IMPL(exp, base, since, until, only, impl, ret, params, args)                           \
    { #exp, (void *)(ret (*) params)impl },
    VB_ROUTES(VB_IMPL)
};

VB_EXPORT void *vramio_bridge_impl(const char *name)
{
    size_t i;

    for (i = 0; name && i < sizeof(impls) / sizeof(impls[0]); i++)
        if (!strcmp(name, impls[i].name))
            return impls[i].fn;
    return NULL;
}

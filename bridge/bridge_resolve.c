/* SPDX-License-Identifier: MIT */
/*
 * bridge_resolve.c - how a program's calls to the CUDA driver's allocation functions reach
 * the bridge, whichever way the program found them.
 *
 * 1. Calls by name from a program linked with libcuda: the preloaded definitions of
 *    cuMemAlloc_v2 & co. in bridge_mem.c come first in the lookup order.
 * 2. dlsym: the CUDA runtime (shared and static libcudart alike), and libraries that load
 *    the driver themselves, call dlsym on their own handle of libcuda.so.1, which a
 *    preloaded definition never sees. So the bridge defines dlsym: when the answer for one of
 *    the names it replaces is the driver's own function, the caller gets the bridge's.
 * 3. cuGetProcAddress: the runtime takes only cuGetProcAddress_v2 through dlsym, then asks
 *    it for "cuGetProcAddress" again and for every other entry point by its base name and
 *    a CUDA version. The bridge's wrappers of both versions return themselves for
 *    "cuGetProcAddress" and its replacements for the allocation functions, when the version
 *    asked for selects the ABI they implement (the _v2 ones since CUDA 3.2).
 * libgdrapi (which loads the driver for itself) and the bridge itself always get the
 * driver's functions: the pool must see the real allocation ranges, and a replacement that
 * called itself would never end.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "bridge.h"
#include "vramio.h"

typedef void *(*dlsym_fn)(void *, const char *);

static dlsym_fn real_dlsym_ptr;
static pthread_once_t dlsym_once = PTHREAD_ONCE_INIT;

/* glibc's own dlsym, by version: 2.34 moved it into libc; older ones keep it in libdl. */
static void find_real_dlsym(void)
{
    static const char *const versions[] = { "GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17",
                                            "GLIBC_2.3", "GLIBC_2.0" };
    size_t i;

    for (i = 0; i < sizeof(versions) / sizeof(versions[0]) && !real_dlsym_ptr; i++)
        real_dlsym_ptr = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
}

static void *real_dlsym(void *handle, const char *name)
{
    pthread_once(&dlsym_once, find_real_dlsym);
    return real_dlsym_ptr ? real_dlsym_ptr(handle, name) : NULL;
}

static struct vb_real real;
static const struct vb_real *real_loaded;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static void load_real(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

    if (!h)
        return;
    *(void **)&real.gpa_v1 = real_dlsym(h, "cuGetProcAddress");
    *(void **)&real.gpa_v2 = real_dlsym(h, "cuGetProcAddress_v2");
#define VB_RESOLVE(fn) *(void **)&real.fn = real_dlsym(h, #fn);
    VB_RESOLVE(cuMemAlloc_v2)
    VB_RESOLVE(cuMemAllocPitch_v2) VB_RESOLVE(cuMemFree_v2) VB_RESOLVE(cuMemGetAddressRange_v2)
    VB_RESOLVE(cuCtxGetDevice) VB_RESOLVE(cuCtxSynchronize) VB_RESOLVE(cuDeviceGetAttribute)
    VB_RESOLVE(cuCtxGetCurrent) VB_RESOLVE(cuCtxPushCurrent_v2) VB_RESOLVE(cuCtxPopCurrent_v2)
    VB_RESOLVE(cuStreamSynchronize) VB_RESOLVE(cuPointerGetAttribute)
    VB_RESOLVE(cuPointerGetAttributes) VB_RESOLVE(cuPointerSetAttribute) VB_RESOLVE(cuMemcpy)
    VB_RESOLVE(cuMemcpyHtoD_v2) VB_RESOLVE(cuMemcpyDtoD_v2) VB_RESOLVE(cuMemsetD8_v2)
    VB_RESOLVE(cuMemsetD16_v2) VB_RESOLVE(cuMemsetD32_v2)
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

static CUresult gpa_v1(const char *sym, void **pfn, int ver, cuuint64_t flags);
static CUresult gpa_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status);

/* What the bridge hands out: by exported name (dlsym) and by base name and the first CUDA
 * version whose ABI it implements (cuGetProcAddress). exact: only where the driver's answer
 * is that exported function (the copies and memsets also have per-thread-stream variants,
 * which the driver hands out for the same base name and which stay the driver's). */
static const struct route {
    const char *exported, *base;
    int since;
    void *mine;
    size_t real_off;
    int exact;
} routes[] = {
    { "cuMemAlloc_v2", "cuMemAlloc", 3020, (void *)vb_mem_alloc,
      offsetof(struct vb_real, cuMemAlloc_v2), 0 },
    { "cuMemAllocPitch_v2", "cuMemAllocPitch", 3020, (void *)vb_mem_alloc_pitch,
      offsetof(struct vb_real, cuMemAllocPitch_v2), 0 },
    { "cuMemFree_v2", "cuMemFree", 3020, (void *)vb_mem_free,
      offsetof(struct vb_real, cuMemFree_v2), 0 },
    { "cuMemGetAddressRange_v2", "cuMemGetAddressRange", 3020, (void *)vb_mem_get_address_range,
      offsetof(struct vb_real, cuMemGetAddressRange_v2), 0 },
    { "cuPointerGetAttribute", "cuPointerGetAttribute", 4000, (void *)vb_pointer_get_attribute,
      offsetof(struct vb_real, cuPointerGetAttribute), 0 },
    { "cuPointerGetAttributes", "cuPointerGetAttributes", 7000,
      (void *)vb_pointer_get_attributes, offsetof(struct vb_real, cuPointerGetAttributes), 0 },
    { "cuPointerSetAttribute", "cuPointerSetAttribute", 6000, (void *)vb_pointer_set_attribute,
      offsetof(struct vb_real, cuPointerSetAttribute), 0 },
    { "cuMemcpyHtoD_v2", "cuMemcpyHtoD", 3020, (void *)vb_memcpy_htod,
      offsetof(struct vb_real, cuMemcpyHtoD_v2), 1 },
    { "cuMemcpyDtoD_v2", "cuMemcpyDtoD", 3020, (void *)vb_memcpy_dtod,
      offsetof(struct vb_real, cuMemcpyDtoD_v2), 1 },
    { "cuMemcpy", "cuMemcpy", 4000, (void *)vb_memcpy, offsetof(struct vb_real, cuMemcpy), 1 },
    { "cuMemsetD8_v2", "cuMemsetD8", 3020, (void *)vb_memset_d8,
      offsetof(struct vb_real, cuMemsetD8_v2), 1 },
    { "cuMemsetD16_v2", "cuMemsetD16", 3020, (void *)vb_memset_d16,
      offsetof(struct vb_real, cuMemsetD16_v2), 1 },
    { "cuMemsetD32_v2", "cuMemsetD32", 3020, (void *)vb_memset_d32,
      offsetof(struct vb_real, cuMemsetD32_v2), 1 },
    { "cuGetProcAddress_v2", "cuGetProcAddress", 12000, (void *)gpa_v2,
      offsetof(struct vb_real, gpa_v2), 0 },
    { "cuGetProcAddress", NULL, 0, (void *)gpa_v1, offsetof(struct vb_real, gpa_v1), 0 },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

static void *real_of(const struct route *r)
{
    const struct vb_real *t = vb_real();

    return t ? *(void *const *)((const char *)t + r->real_off) : NULL;
}

/* Whether code at addr belongs to libgdrapi or to the bridge. */
static int from_vramio(const void *addr)
{
    Dl_info here, caller, lib;

    if (!dladdr(addr, &caller) || !caller.dli_fbase)
        return 0;
    if (dladdr((void *)from_vramio, &here) && caller.dli_fbase == here.dli_fbase)
        return 1;
    return dladdr((void *)vramio_alloc, &lib) && caller.dli_fbase == lib.dli_fbase;
}

VB_EXPORT void *dlsym(void *handle, const char *name)
{
    void *p = real_dlsym(handle, name);
    size_t i;

    if (!p || name[0] != 'c' || name[1] != 'u')
        return p;
    for (i = 0; i < NROUTES; i++) {
        if (strcmp(name, routes[i].exported))
            continue;
        /* Only the driver's own function is replaced (not a definition of another library,
         * nor ours found through RTLD_DEFAULT). */
        if (p == routes[i].mine || p != real_of(&routes[i]) ||
            from_vramio(__builtin_return_address(0)))
            return p;
        vb_log("dlsym(\"%s\"): the bridge's", name);
        return routes[i].mine;
    }
    return p;
}

/* After the driver answered cuGetProcAddress(sym, ver): ours where we replace it. */
static void substitute(const char *sym, int ver, void **pfn)
{
    size_t i, n;

    for (i = 0; i < NROUTES; i++) {
        const struct route *r = &routes[i];

        if (!r->base)
            continue;
        n = strlen(r->base);
        /* The base name is what the runtime asks for; the full name is accepted too. */
        if (strncmp(sym, r->base, n) || (sym[n] && strcmp(sym + n, "_v2")) ||
            (r->exact && *pfn != real_of(r)))
            continue;
        if (r->mine == (void *)gpa_v2 && ver < r->since) {
            *pfn = (void *)gpa_v1; /* the 4-argument ABI of CUDA 11 */
        } else if (ver >= r->since) {
            *pfn = r->mine;
        } else {
            return; /* the pre-3.2 ABI (32-bit sizes): left to the driver */
        }
        vb_log("cuGetProcAddress(\"%s\", %d): the bridge's", sym, ver);
        return;
    }
}

static CUresult gpa_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
    const struct vb_real *t = vb_real();
    CUresult rc;

    if (!t || !t->gpa_v2)
        return CUDA_ERROR_NOT_FOUND;
    rc = t->gpa_v2(sym, pfn, ver, flags, status);
    if (rc == CUDA_SUCCESS && sym && pfn && *pfn)
        substitute(sym, ver, pfn);
    return rc;
}

static CUresult gpa_v1(const char *sym, void **pfn, int ver, cuuint64_t flags)
{
    const struct vb_real *t = vb_real();
    CUresult rc;

    if (!t || !t->gpa_v1)
        return CUDA_ERROR_NOT_FOUND;
    rc = t->gpa_v1(sym, pfn, ver, flags);
    if (rc == CUDA_SUCCESS && sym && pfn && *pfn)
        substitute(sym, ver, pfn);
    return rc;
}

/* The exported names, for programs that call them directly. */
VB_EXPORT CUresult vb_export_gpa_v1(const char *sym, void **pfn, int ver, cuuint64_t flags)
    __asm__("cuGetProcAddress");
VB_EXPORT CUresult vb_export_gpa_v1(const char *sym, void **pfn, int ver, cuuint64_t flags)
{
    return gpa_v1(sym, pfn, ver, flags);
}

VB_EXPORT CUresult vb_export_gpa_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status)
    __asm__("cuGetProcAddress_v2");
VB_EXPORT CUresult vb_export_gpa_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status)
{
    return gpa_v2(sym, pfn, ver, flags, status);
}

/* SPDX-License-Identifier: MIT */
/*
 * bridge_resolve.c - the bridge's side of the libcuda.so.1 shim (shim.c): the real driver's
 * functions that the replacements call, the replacements handed to the shim by name (rows
 * of bridge_routes.h), and the log.
 * The real driver is the one behind the shim (vr_cuda_dlopen): a replacement that called a
 * replaced name would call itself, and the pool must see the real allocation ranges.
 */
#include <stddef.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "bridge.h"
#include "bridge_routes.h"

/* Each row's driver function is the entry of VR_CUDA_FUNCS (util/cuda_api.h) named by the
 * row's base name, with the row's prototype: a row without one, or with another type, does
 * not compile. */
#define VB_SAME_AS_DRIVER(exp, base, since, until, only, impl, ret, params, args)                \
    _Static_assert(__builtin_types_compatible_p(__typeof__(((struct vr_cuda *)0)->base),         \
                                                ret (*) params),                                \
                   #exp ": the row's prototype is not VR_CUDA_FUNCS's " #base);
VB_ROUTES(VB_SAME_AS_DRIVER)
#undef VB_SAME_AS_DRIVER

/* vr_cuda_load of the bridge's own copy of util/ (vr_cuda_program_view left undefined): the
 * real driver behind the shim. */
const struct vr_cuda *vb_real(void)
{
    return vr_cuda_load(NULL, 0);
}

/* Few names have a per-thread variant the bridge calls: a small table, filled once each. */
static struct { const char *base; void *fn; } known[8];
static pthread_mutex_t known_lock = PTHREAD_MUTEX_INITIALIZER;

/* Its lock across fork (bridge_fork.c); the child keeps the table: the driver is the same. */
void vb_resolve_fork(enum vb_fork_phase phase)
{
    vb_fork_lock(&known_lock, phase);
}

void *vb_real_ptsz(const char *base, int ver)
{
    const struct vr_cuda *t = vb_real();
    CUdriverProcAddressQueryResult st;
    void *fn = NULL;
    size_t i;

    pthread_mutex_lock(&known_lock);
    for (i = 0; i < sizeof(known) / sizeof(known[0]) && known[i].base; i++)
        if (!strcmp(known[i].base, base))
            break;
    if (i < sizeof(known) / sizeof(known[0]) && known[i].base) {
        fn = known[i].fn;
    } else if (t && t->cuGetProcAddress &&
               t->cuGetProcAddress(base, &fn, ver, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                                   &st) == CUDA_SUCCESS && fn &&
               i < sizeof(known) / sizeof(known[0])) {
        known[i].base = base;
        known[i].fn = fn;
    }
    pthread_mutex_unlock(&known_lock);
    return fn;
}

int vb_log_on;

void vb_log(const char *fmt, ...)
{
    static const char prefix[] = "vramio-bridge: ";
    const size_t p = sizeof(prefix) - 1;
    char line[512];
    va_list ap;
    int n;

    if (!vb_log_on)
        return;
    memcpy(line, prefix, p);
    va_start(ap, fmt);
    n = vsnprintf(line + p, sizeof(line) - p - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - p - 2)
        n = (int)(sizeof(line) - p - 2);
    line[p + (size_t)n] = '\n';
    /* One write per line, the prefix included: lines of several threads do not interleave. */
    if (write(STDERR_FILENO, line, p + (size_t)n + 1) < 0)
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

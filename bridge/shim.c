/* SPDX-License-Identifier: MIT */
/*
 * shim.c - libvramio_cuda.so, the libcuda.so.1 that vramio-run puts first on the library
 * search path: how a program's calls to the replaced driver functions (bridge_routes.h)
 * reach libvramio_bridge.so, whichever way the program finds them, while every other name
 * stays the real driver's own.
 *
 * vramio-run makes a private directory holding libcuda.so.1 (and libcuda.so) -> this file,
 * and VB_REAL_DRIVER -> the driver libcuda.so.1 that the loader would have found, and
 * prepends it to LD_LIBRARY_PATH. This file has a DT_NEEDED on VB_REAL_DRIVER and defines
 * only the replaced names, cuGetProcAddress(_v2) and vramio_cuda_shim_driver. So:
 * - a program linked with libcuda, and dlsym(handle, name) on the handle of
 *   dlopen("libcuda.so.1") (the CUDA runtime, shared or static; PyTorch; UCX; libraries that
 *   load the driver themselves) find a replaced name here and every other name in the real
 *   driver through the dependency: the driver's own functions, not forwarding stubs, so
 *   dladdr, profilers and UCM's hooks see them as without vramio-run;
 * - cuGetProcAddress(_v2) asks the real driver and answers this file's entry for a replaced
 *   name (when the version asked for selects the ABI it implements), itself for
 *   "cuGetProcAddress": the runtime gets every other entry point from the driver;
 * - nothing else of the process changes: no dlsym of libc is replaced, so RTLD_NEXT and
 *   RTLD_DEFAULT lookups, other interposers and RTLD_LOCAL plugins behave as before.
 * The entries jump through slots that the constructor fills from the bridge (loaded by path
 * from beside this file's real location, or VRAMIO_BRIDGE_LIB when that is an absolute
 * path); when the bridge cannot be loaded it says so on stderr and the slots hold the
 * driver's functions.
 * vramio-run's directory can go while the program runs (logind removes XDG_RUNTIME_DIR at
 * logout): the programs started after that get the driver alone. A process that has the
 * shim says so once, when it forks after the directory went (before_fork).
 * libgdrapi and the bridge must see the real driver (the pool's slab ranges and handles):
 * they ask vramio_cuda_shim_driver for its handle (util/cuda_loader.c, vr_cuda_dlopen).
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bridge.h"
#include "bridge_routes.h"

/* Where an entry goes: the replacement, or the driver's function; an error until set. */
static CUresult vb_not_ready(void)
{
    return CUDA_ERROR_NOT_INITIALIZED;
}
#define VB_SLOT(exp, base, since, until, only, impl, ret, params, args)                           \
    __attribute__((visibility("hidden"))) void *vb_slot_##exp = (void *)vb_not_ready;
VB_ROUTES(VB_SLOT)

#if defined(__x86_64__) || defined(__aarch64__)
/* shim_entry.S */
#define VB_ENTRY_DECL(exp, base, since, until, only, impl, ret, params, args)                     \
    __attribute__((visibility("hidden"))) void vb_entry_##exp(void);
VB_ROUTES(VB_ENTRY_DECL)
#else
/* Elsewhere a C entry: UCM's bistro cannot hook the CUDA driver's functions there at all
 * (on POWER it refuses every patch that must call the original: CUDA's hooks use reloc). */
#define VB_ENTRY_C(exp, base, since, until, only, impl, ret, params, args)                        \
    VB_EXPORT ret exp params;                                                                 \
    VB_EXPORT ret exp params { return ((ret (*) params)vb_slot_##exp) args; }                 \
    extern __typeof__(exp) vb_entry_##exp __attribute__((alias(#exp), visibility("hidden")));
VB_ROUTES(VB_ENTRY_C)
#endif

static struct route {
    const char *exported, *base;
    int since, until, only;
    void **slot;
    void *entry;
    void *driver_fn; /* the driver's exported function of that name (VB_EXACT's test) */
} routes[] = {
#define VB_ROW(exp, base, since, until, only, impl, ret, params, args)                            \
    { #exp, #base, since, until, only, &vb_slot_##exp, (void *)vb_entry_##exp, NULL },
    VB_ROUTES(VB_ROW)
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

static vb_gpa_v1_fn real_gpa_v1;
static vb_gpa_v2_fn real_gpa_v2;
static void (*bridge_log)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

VB_EXPORT void *vramio_cuda_shim_driver(void)
{
    return dlopen(VB_REAL_DRIVER, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
}

/* One line on stderr, in one write (no stdio: the program's buffers stay its own). */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    char line[PATH_MAX + 512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n > 0 &&
        write(STDERR_FILENO, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
        return;
}

/* Never silent: the program runs, but its memory is not from the pool. */
static void complain(const char *what, const char *why)
{
    say("vramio-run: the bridge %s cannot be loaded (%s): the CUDA driver serves every "
        "allocation of this process\n", what, why ? why : "unknown");
}

/* The bridge's lookup of replacements by exported name, or NULL (it said why). */
static void *(*load_bridge(void))(const char *)
{
    const char *env = getenv("VRAMIO_BRIDGE_LIB");
    char self[PATH_MAX], path[PATH_MAX + 32], *slash;
    void *(*impl)(const char *), *h;
    Dl_info me;

    /* A relative path would be looked up in each process's current directory: a child that
     * changes into another user's directory would load their library (vramio-run passes
     * an absolute one). */
    if (env && *env && *env != '/')
        say("vramio-run: VRAMIO_BRIDGE_LIB=%s is not an absolute path: ignored, the bridge "
            "beside the shim is loaded\n", env);
    if (env && *env == '/') {
        snprintf(path, sizeof(path), "%s", env);
    } else {
        /* vramio-run's directory holds a link to this file: the bridge is beside the file. */
        if (!dladdr((void *)complain, &me) || !me.dli_fname || !realpath(me.dli_fname, self) ||
            !(slash = strrchr(self, '/'))) {
            complain(VB_BRIDGE_NAME, "this library cannot find where it lives");
            return NULL;
        }
        *slash = '\0';
        snprintf(path, sizeof(path), "%s/%s", self, VB_BRIDGE_NAME);
    }
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        complain(path, dlerror());
        return NULL;
    }
    *(void **)&impl = dlsym(h, "vramio_bridge_impl");
    *(void **)&bridge_log = dlsym(h, "vramio_bridge_log");
    if (!impl || !bridge_log) {
        complain(path, "it is not vramio's bridge");
        return NULL;
    }
    return impl;
}

/* The name this process loaded the shim by (vramio-run's directory/libcuda.so.1), when
 * absolute; and whether its loss has been said. */
static char loaded_as[PATH_MAX];
static atomic_int lost_said;

/* Before a fork: the programs that the child may exec find the shim by the same name, or
 * get the driver alone. A child that loads libgdrapi says so itself (util/cuda_loader.c);
 * one that does not would say nothing, so the parent says it, once. fork() runs this;
 * vfork, posix_spawn (system, popen) run no fork handlers. */
static void before_fork(void)
{
    const char *slash;

    if (!loaded_as[0] || atomic_load(&lost_said) || access(loaded_as, F_OK) == 0 ||
        atomic_exchange(&lost_said, 1))
        return;
    slash = strrchr(loaded_as, '/');
    say("vramio: vramio-run's directory %.*s is gone: the programs that this process "
        "starts from now on get the CUDA driver alone, not vramio's pool (run the program "
        "again under vramio-run)\n", (int)(slash - loaded_as), loaded_as);
}

__attribute__((constructor)) static void shim_init(void)
{
    void *real = vramio_cuda_shim_driver(), *(*impl)(const char *) = load_bridge(), *fn;
    Dl_info me;
    size_t i;

    if (dladdr((void *)before_fork, &me) && me.dli_fname && me.dli_fname[0] == '/' &&
        strlen(me.dli_fname) < sizeof(loaded_as)) {
        strcpy(loaded_as, me.dli_fname);
        pthread_atfork(before_fork, NULL, NULL);
    }

    if (real) {
        *(void **)&real_gpa_v1 = dlsym(real, "cuGetProcAddress");
        *(void **)&real_gpa_v2 = dlsym(real, "cuGetProcAddress_v2");
    }
    for (i = 0; i < NROUTES; i++) {
        routes[i].driver_fn = real ? dlsym(real, routes[i].exported) : NULL;
        fn = impl ? impl(routes[i].exported) : NULL;
        if (!fn)
            fn = routes[i].driver_fn;
        if (fn)
            *routes[i].slot = fn;
    }
    if (impl)
        bridge_log("libcuda.so.1 is vramio's shim: %zu driver functions go to the bridge, "
                   "every other to " VB_REAL_DRIVER, NROUTES);
}

static CUresult gpa_v1(const char *sym, void **pfn, int ver, cuuint64_t flags);
static CUresult gpa_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status);

/* Whether the driver gives fn for sym at version until as well: the ABI the replacement
 * implements, asked for under a newer version. */
static int same_abi(const char *sym, int until, cuuint64_t flags, void *fn)
{
    CUdriverProcAddressQueryResult st;
    void *old = NULL;

    if (real_gpa_v2)
        real_gpa_v2(sym, &old, until, flags, &st);
    else if (real_gpa_v1)
        real_gpa_v1(sym, &old, until, flags);
    return old == fn;
}

/* After the driver answered cuGetProcAddress(sym, ver): ours where we replace it. */
static void substitute(const char *sym, int ver, cuuint64_t flags, void **pfn)
{
    size_t i;

    if (!strcmp(sym, "cuGetProcAddress") || !strcmp(sym, "cuGetProcAddress_v2")) {
        /* The 5-argument ABI since CUDA 12.0, the 4-argument one before. */
        *pfn = ver >= 12000 ? (void *)gpa_v2 : (void *)gpa_v1;
    } else {
        size_t named = NROUTES;

        /* The row of the name; of a name with a row per variant (bridge_routes.h), the one
         * whose exported function the driver answered. */
        for (i = 0; i < NROUTES; i++) {
            if (strcmp(sym, routes[i].base) && strcmp(sym, routes[i].exported))
                continue;
            if (named == NROUTES)
                named = i;
            if (routes[i].only != VB_EXACT || *pfn == routes[i].driver_fn)
                break;
        }
        /* Not replaced, asked for an older ABI (before 3.2: 32-bit sizes), or a variant of
         * the name that the row leaves to the driver: the driver's. */
        if (named == NROUTES || ver < routes[named].since)
            return;
        if (i == NROUTES) {
            /* Which copies the runtime gets from the driver this way: the log says. */
            if (bridge_log)
                bridge_log("cuGetProcAddress(\"%s\", %d, flags %#llx): the driver's (not its "
                           "exported %s)", sym, ver, (unsigned long long)flags,
                           routes[named].exported);
            return;
        }
        if (ver > routes[i].until && !same_abi(sym, routes[i].until, flags, *pfn)) {
            if (bridge_log)
                bridge_log("cuGetProcAddress(\"%s\", %d): a newer ABI than the bridge's (up "
                           "to %d): the driver's", sym, ver, routes[i].until);
            return;
        }
        *pfn = routes[i].entry;
    }
    if (bridge_log)
        bridge_log("cuGetProcAddress(\"%s\", %d): the bridge's", sym, ver);
}

static CUresult gpa_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
    CUresult rc;

    if (!real_gpa_v2)
        return CUDA_ERROR_NOT_FOUND;
    rc = real_gpa_v2(sym, pfn, ver, flags, status);
    if (rc == CUDA_SUCCESS && sym && pfn && *pfn)
        substitute(sym, ver, flags, pfn);
    return rc;
}

static CUresult gpa_v1(const char *sym, void **pfn, int ver, cuuint64_t flags)
{
    CUresult rc;

    if (!real_gpa_v1)
        return CUDA_ERROR_NOT_FOUND;
    rc = real_gpa_v1(sym, pfn, ver, flags);
    if (rc == CUDA_SUCCESS && sym && pfn && *pfn)
        substitute(sym, ver, flags, pfn);
    return rc;
}

/* The exported names: the same functions as cuGetProcAddress hands out. */
VB_EXPORT extern __typeof__(gpa_v1) vb_export_gpa_v1 __asm__("cuGetProcAddress")
    __attribute__((alias("gpa_v1")));
VB_EXPORT extern __typeof__(gpa_v2) vb_export_gpa_v2 __asm__("cuGetProcAddress_v2")
    __attribute__((alias("gpa_v2")));

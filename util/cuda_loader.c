/* SPDX-License-Identifier: MIT */
/* cuda_loader.c - dlopen of libcuda.so.1 and its symbol table (see cuda_loader.h). */
#include "cuda_loader.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "reason.h"

static struct vr_cuda cuda_table;
static const struct vr_cuda *cuda_loaded;
static char cuda_load_error[VR_REASON_LEN];
static pthread_once_t cuda_load_once = PTHREAD_ONCE_INIT;

static atomic_int shim_missing_said;

/* Under vramio-run without its shim: the bridge is gone without a sound otherwise (logind
 * removes XDG_RUNTIME_DIR at logout, tmp cleaners remove old directories). */
static void say_shim_missing(void)
{
    const char *dir = getenv(VR_RUN_MARK);
    char shim[4096 + 16];
    int gone;

    if (!dir || !*dir || atomic_exchange(&shim_missing_said, 1))
        return;
    snprintf(shim, sizeof(shim), "%s/libcuda.so.1", dir);
    gone = access(shim, F_OK) != 0;
    fprintf(stderr, "vramio: this process runs under vramio-run, but its libcuda.so.1 is not "
            "vramio's shim (%s%s): the CUDA driver serves its allocations, which libgdrapi "
            "cannot pin without the gdrdrv module or a dma-buf capable driver\n", shim,
            gone ? " is gone: run the program again" : " was passed over: a driver loaded "
            "by full path or DT_RPATH, or a set-user-ID program");
}

void *vr_cuda_dlopen(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    void *(*driver)(void);

    if (!lib)
        return NULL;
    /* vramio-run's shim (bridge/shim.c) answers the replaced names with the pool's
     * functions; every copy of the library (shared, static, loaded by path) must use the
     * driver's own, so that address ranges and allocation handles agree. */
    *(void **)&driver = dlsym(lib, "vramio_cuda_shim_driver");
    if (!driver)
        say_shim_missing();
    return driver ? driver() : lib;
}

static void cuda_load(void)
{
    void *lib = &vr_cuda_program_view && vr_cuda_program_view
                    ? dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) : vr_cuda_dlopen();

    if (!lib) {
        const char *e = dlerror();
        /* dlerror() names the file it tried, a path of up to PATH_MAX bytes, before what was
         * wrong with it: cut in its middle. */
        vr_reason(cuda_load_error, sizeof(cuda_load_error),
                  "the CUDA driver library libcuda.so.1 cannot be loaded (%s)", e ? e : "unknown");
        return;
    }
#define VR_CUDA_RESOLVE(name, symbol, params)                                                 \
    cuda_table.name = (CUresult (*) params)dlsym(lib, symbol);
    VR_CUDA_FUNCS(VR_CUDA_RESOLVE)
#undef VR_CUDA_RESOLVE
    if (!cuda_table.cuInit || !cuda_table.cuDriverGetVersion) {
        snprintf(cuda_load_error, sizeof(cuda_load_error),
                 "libcuda.so.1 lacks cuInit/cuDriverGetVersion: not a CUDA driver library");
        dlclose(lib);
        return;
    }
    /* The library stays loaded for the life of the process: CUDA cannot be unloaded safely. */
    cuda_loaded = &cuda_table;
}

const struct vr_cuda *vr_cuda_load(char *why, size_t len)
{
    pthread_once(&cuda_load_once, cuda_load);
    if (!cuda_loaded)
        vr_reason(why, len, "%s", cuda_load_error);
    return cuda_loaded;
}

static CUresult cuda_init_rc;
static pthread_once_t cuda_init_once = PTHREAD_ONCE_INIT;

static void cuda_init(void)
{
    cuda_init_rc = cuda_loaded->cuInit(0);
}

int vr_cuda_init(const struct vr_cuda **cu, char *why, size_t len)
{
    const struct vr_cuda *c = vr_cuda_load(why, len);

    if (!c)
        return ENODEV;
    pthread_once(&cuda_init_once, cuda_init);
    if (cuda_init_rc != CUDA_SUCCESS) {
        if (why && len)
            snprintf(why, len, "cuInit failed: %s", vr_cuda_errstr(cuda_init_rc));
        return vr_cuda_errno(cuda_init_rc);
    }
    if (cu)
        *cu = c;
    return 0;
}

int vr_cuda_missing(const char *name, char *why, size_t len)
{
    if (why && len)
        snprintf(why, len, "the CUDA driver lacks %s (too old for this backend)", name);
    return ENOSYS;
}

const char *vr_cuda_errstr(CUresult rc)
{
    static __thread char buf[160];
    const char *name = NULL, *text = NULL;

    if (cuda_loaded && cuda_loaded->cuGetErrorName)
        cuda_loaded->cuGetErrorName(rc, &name);
    if (cuda_loaded && cuda_loaded->cuGetErrorString)
        cuda_loaded->cuGetErrorString(rc, &text);
    if (name && text)
        snprintf(buf, sizeof(buf), "%s: %s", name, text);
    else
        snprintf(buf, sizeof(buf), "CUDA error %d", (int)rc);
    return buf;
}

int vr_cuda_errno(CUresult rc)
{
    switch (rc) {
    case CUDA_SUCCESS:
        return 0;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_INVALID_DEVICE:
        return EINVAL;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return ENOMEM;
    case CUDA_ERROR_NOT_SUPPORTED:
        return EOPNOTSUPP;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
        return ENODEV;
    case CUDA_ERROR_NOT_PERMITTED:
    case CUDA_ERROR_OPERATING_SYSTEM:
        return EPERM;
    default:
        return EIO;
    }
}

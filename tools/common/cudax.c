/* SPDX-License-Identifier: MIT */
/* cudax.c - dlsym of the extra CUDA entry points used by the tools (see cudax.h). */
#include "cudax.h"

#include <dlfcn.h>
#include <stdio.h>

#define CUDAX_STR_(x) #x
#define CUDAX_STR(x) CUDAX_STR_(x)

static struct cudax table;

const struct cudax *cudax_load(char *why, size_t len)
{
    static int loaded;
    void *lib;

    if (loaded)
        return &table;
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, len, "libcuda.so.1 cannot be loaded: %s", dlerror());
        return NULL;
    }
#define CUDAX_RESOLVE(fn)                                                         \
    table.fn = (__typeof__(&fn))dlsym(lib, CUDAX_STR(fn));                        \
    if (!table.fn) {                                                              \
        snprintf(why, len, "libcuda.so.1 lacks %s", CUDAX_STR(fn));               \
        return NULL;                                                              \
    }
    CUDAX_FUNCS(CUDAX_RESOLVE)
#undef CUDAX_RESOLVE
    loaded = 1;
    return &table;
}

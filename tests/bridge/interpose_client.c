// SPDX-License-Identifier: MIT
/*
 * interpose_client.c - what a process sees of the dynamic linker, printed as lines that
 * test_interpose.sh compares between a run without vramio-run and one under it (they must be
 * equal), after the CUDA driver is loaded and used the runtime's way (dlopen, then
 * cuGetProcAddress), so that the bridge is in the process:
 *   fsync     an fsync interposer (preloaded, or this program's own with -DWRAP_IN_PROGRAM)
 *             finds the real fsync through RTLD_NEXT;
 *   plugin    a plugin loaded RTLD_LOCAL finds its dependency's symbol through RTLD_DEFAULT;
 *   dladdr    dladdr of a driver function the bridge does not replace names the driver's file;
 *   byname    whether dlopen("libcuda.so.1"), with the driver loaded too, is vramio's shim.
 * The line "pool N" (whether the allocation came from vramio's pool) is the one that differs.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda.h>
#include "vramio.h"

#ifdef WRAP_IN_PROGRAM
#include "fsync_wrap.c"
#endif

typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);

static void *use_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa2_fn gpa = h ? (gpa2_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    CUresult (*alloc)(CUdeviceptr *, size_t) = NULL;
    CUresult (*release)(CUdeviceptr) = NULL;
    CUdriverProcAddressQueryResult st;
    unsigned long long base = 0;
    CUdeviceptr d = 0;

    if (!gpa || gpa("cuMemAlloc", (void **)&alloc, 13000, 0, &st) ||
        gpa("cuMemFree", (void **)&release, 13000, 0, &st) || alloc(&d, 1000)) {
        printf("driver unusable\n");
        return h;
    }
    printf("pool %d\n", vramio_alloc_range(d, &base, NULL) == 0);
    release(d);
    return h;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    void *h = use_driver();

    if (!strcmp(mode, "fsync")) {
        char path[] = "/tmp/vramio-fsync-XXXXXX";
        int fd = mkstemp(path), rc = fd >= 0 ? fsync(fd) : -2;
        int *calls = (int *)dlsym(RTLD_DEFAULT, "fsync_wrap_calls");
        int *self = (int *)dlsym(RTLD_DEFAULT, "fsync_wrap_self");

        printf("fsync %d wrapper calls %d gave itself back %d\n", rc, calls ? *calls : -1,
               self ? *self : -1);
        if (fd >= 0) {
            close(fd);
            unlink(path);
        }
    } else if (!strcmp(mode, "plugin") && argc > 2) {
        void *p = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
        int (*probe)(void) = p ? (int (*)(void))dlsym(p, "plugin_probe") : NULL;

        printf("plugin %d\n", probe ? probe() : -2);
    } else if (!strcmp(mode, "dladdr")) {
        void *f = h ? dlsym(h, "cuInit") : NULL;
        char file[PATH_MAX];
        Dl_info di;

        if (!f || !dladdr(f, &di) || !di.dli_fname || !realpath(di.dli_fname, file))
            printf("dladdr of cuInit failed\n");
        else
            printf("cuInit is %s in %s\n", di.dli_sname ? di.dli_sname : "?", file);
    } else if (!strcmp(mode, "byname")) {
        /* Which library dlopen("libcuda.so.1") gives once the driver is loaded as well. */
        void *again = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

        printf("by name: %s\n", again && dlsym(again, "vramio_cuda_shim_driver") ? "the shim" :
                                                                                 "the driver");
    } else {
        fprintf(stderr, "usage: %s fsync | plugin PATH | dladdr | byname\n", argv[0]);
        return 2;
    }
    return 0;
}

// SPDX-License-Identifier: MIT
/*
 * second_copy.c - a second copy of libgdrapi in a process run under vramio-run (the static
 * libgdrapi.a linked into this program, or a copy of libgdrapi.so.2 loaded by path, given as
 * argv[1]) pins a pool block b that shares its slab with block a, writes it through the
 * mapping, and checks that b holds the data and a is untouched. The copy must see the real
 * driver: the slab's range and handle together, not the bridge's block range with the
 * slab's handle (that maps the slab's first block, a). Against the stand-in CUDA driver and
 * Vulkan loader, whose device memory is host memory this program can read.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cuda.h>

#include "gdrapi.h"
#include "t.h"

typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);

static struct {
    gdr_t (*open)(void);
    int (*pin)(gdr_t, unsigned long, size_t, uint64_t, uint32_t, gdr_mh_t *);
    int (*map)(gdr_t, gdr_mh_t, void **, size_t);
    int (*info)(gdr_t, gdr_mh_t, gdr_info_v2_t *);
    int (*copy_to)(gdr_mh_t, void *, const void *, size_t);
    int (*unmap)(gdr_t, gdr_mh_t, void *, size_t);
    int (*unpin)(gdr_t, gdr_mh_t);
    int (*close)(gdr_t);
} api;

static int load_api(const char *path)
{
    void *h;

    if (!path) { /* the static copy */
        api.open = gdr_open;
        api.pin = gdr_pin_buffer;
        api.map = gdr_map;
        api.info = gdr_get_info_v2;
        api.copy_to = gdr_copy_to_mapping;
        api.unmap = gdr_unmap;
        api.unpin = gdr_unpin_buffer;
        api.close = gdr_close;
        return 1;
    }
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 0;
    *(void **)&api.open = dlsym(h, "gdr_open");
    *(void **)&api.pin = dlsym(h, "gdr_pin_buffer");
    *(void **)&api.map = dlsym(h, "gdr_map");
    *(void **)&api.info = dlsym(h, "gdr_get_info_v2");
    *(void **)&api.copy_to = dlsym(h, "gdr_copy_to_mapping");
    *(void **)&api.unmap = dlsym(h, "gdr_unmap");
    *(void **)&api.unpin = dlsym(h, "gdr_unpin_buffer");
    *(void **)&api.close = dlsym(h, "gdr_close");
    return api.open && api.pin && api.map && api.info && api.copy_to && api.unmap &&
           api.unpin && api.close;
}

int main(int argc, char **argv)
{
    enum { SZ = 4096 };
    const char *path = argc > 1 ? argv[1] : NULL;
    const char *name = path ? "second_copy/by_path_pins_block_b" : "second_copy/static_pins_block_b";
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa2_fn gpa = h ? (gpa2_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    CUresult (*alloc)(CUdeviceptr *, size_t) = NULL;
    CUdriverProcAddressQueryResult st;
    unsigned char src[SZ], *pa, *pb;
    CUdeviceptr a = 0, b = 0;
    gdr_info_v2_t info;
    void *map = NULL;
    gdr_mh_t mh;
    size_t i, bad_a = 0, bad_b = 0;
    gdr_t g;

    if (!gpa || gpa("cuMemAlloc", (void **)&alloc, 13000, 0, &st) || !alloc ||
        alloc(&a, SZ) || alloc(&b, SZ)) {
        t_fail(name, "the driver's cuMemAlloc does not work");
        return t_status();
    }
    if (!load_api(path)) {
        t_fail(name, "the copy of libgdrapi cannot be loaded: %s", dlerror());
        return t_status();
    }
    pa = (unsigned char *)(uintptr_t)a;
    pb = (unsigned char *)(uintptr_t)b;
    memset(pa, 0x11, SZ);
    memset(pb, 0x22, SZ);
    memset(src, 0x33, SZ);
    g = api.open();
    if (!g || api.pin(g, b, SZ, 0, 0, &mh) || api.info(g, mh, &info) ||
        api.map(g, mh, &map, info.mapped_size) || b < info.va) {
        t_fail(name, "gdr_open, pin, map or get_info failed (b %#llx)", (unsigned long long)b);
        return t_status();
    }
    if (b + SZ > info.va + info.mapped_size ||
        api.copy_to(mh, (char *)map + (b - info.va), src, SZ)) {
        t_fail(name, "the pin (va %#llx, %llu bytes mapped) does not hold b %#llx",
               (unsigned long long)info.va, (unsigned long long)info.mapped_size,
               (unsigned long long)b);
        return t_status();
    }
    for (i = 0; i < SZ; i++) {
        bad_a += pa[i] != 0x11;
        bad_b += pb[i] != 0x33;
    }
    t_check(bad_a == 0 && bad_b == 0, name, "%zu bytes of block b not written, %zu bytes of "
            "block a (a %#llx, b %#llx, pin va %#llx) overwritten", bad_b, bad_a,
            (unsigned long long)a, (unsigned long long)b, (unsigned long long)info.va);
    api.unmap(g, mh, map, info.mapped_size);
    api.unpin(g, mh);
    api.close(g);
    return t_status();
}

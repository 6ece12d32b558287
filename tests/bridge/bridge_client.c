// SPDX-License-Identifier: MIT
/*
 * bridge_client.c - a program that allocates device memory each way real programs do, run
 * by test_bridge.sh against the stand-in driver (fake_cuda_vmm.c), under vramio-run and
 * without it:
 *   the CUDA runtime's way: dlopen libcuda.so.1, dlsym cuGetProcAddress_v2 on that handle,
 *     ask it for "cuGetProcAddress" again and for the allocation functions by base name;
 *   dlsym of the exported _v2 names; direct calls of them (linked with libcuda).
 * Modes: bridged (the pool serves everything), fallback (the pool cannot: the driver
 * serves, unchanged), plain (no bridge: the test's own control), noctx (no context: the
 * driver's error reaches the caller).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>

#include "t.h"
#include "vramio.h"

int fake_plain_allocs(void);
int fake_vmm_live(void);
int fake_syncs(void);
int fake_access_devices(void);
void *fake_gpa_v2(void);

typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);
typedef CUresult (*pitch_fn)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);

static struct { alloc_fn alloc; free_fn free; range_fn range; pitch_fn pitch; } rt;

/* What the CUDA runtime does at start-up. */
static int runtime_resolve(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa2_fn gpa = h ? (gpa2_fn)dlsym(h, "cuGetProcAddress_v2") : NULL, again = NULL;
    CUdriverProcAddressQueryResult st;

    if (!gpa || gpa("cuGetProcAddress", (void **)&again, 13000, 0, &st) != CUDA_SUCCESS ||
        !again)
        return 0;
    if (again("cuMemAlloc", (void **)&rt.alloc, 13000, 0, &st) ||
        again("cuMemFree", (void **)&rt.free, 13000, 0, &st) ||
        again("cuMemGetAddressRange", (void **)&rt.range, 13000, 0, &st) ||
        again("cuMemAllocPitch", (void **)&rt.pitch, 13000, 0, &st))
        return 0;
    return gpa != fake_gpa_v2() ? 2 : 1; /* 2: the bridge's wrapper was handed out */
}

static int from_pool(CUdeviceptr d)
{
    unsigned long long base = 0;

    return vramio_alloc_range(d, &base, NULL) == 0;
}

static void bridged(void)
{
    static const size_t sizes[] = { 1, 100, 256, 4096, 65537, 1 << 20, 3 << 20 };
    struct vramio_pool_stats stv;
    CUdeviceptr d[7], b = 0, big = 0, p = 0;
    size_t s = 0, pitch = 0, i;
    int resolved = runtime_resolve(), pooled = 0, aligned = 0, syncs;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    alloc_fn by_dlsym = h ? (alloc_fn)dlsym(h, "cuMemAlloc_v2") : NULL;

    t_check(resolved == 2, "bridge/runtime_dlsym_gets_bridge_gpa", "resolve %d", resolved);
    if (!resolved)
        return;
    for (i = 0; i < 7; i++) {
        d[i] = 0;
        if (rt.alloc(&d[i], sizes[i]) == CUDA_SUCCESS) {
            pooled += from_pool(d[i]);
            aligned += d[i] % 256 == 0;
            memset((void *)(uintptr_t)d[i], (int)i, sizes[i]);
        }
    }
    t_check(pooled == 7 && fake_plain_allocs() == 0, "bridge/runtime_alloc_from_pool",
            "%d of 7 from the pool, %d plain", pooled, fake_plain_allocs());
    t_check(aligned == 7, "bridge/alloc_256_aligned", "%d of 7", aligned);
    t_check(rt.range(&b, &s, d[1] + 50) == CUDA_SUCCESS && b == d[1] && s >= 100 && s < 4096,
            "bridge/range_of_block", "base %#llx size %zu", (unsigned long long)b, s);
    /* Deep inside a large allocation: the pool asks the driver, through libgdrapi's own
     * pointer; were that pointer the bridge's, this would recurse until the stack ends. */
    b = 0;
    t_check(rt.range(&b, &s, d[6] + (5u << 19)) == CUDA_SUCCESS && b == d[6] && s == (4u << 20),
            "bridge/range_deep_in_large", "base %#llx size %zu", (unsigned long long)b, s);
    syncs = fake_syncs();
    for (i = 0; i < 7; i++)
        if (d[i] && rt.free(d[i]) != CUDA_SUCCESS)
            break;
    t_check(i == 7 && !from_pool(d[0]) && fake_syncs() >= syncs + 7, "bridge/free_to_pool_after_sync",
            "freed %zu, syncs %d", i, fake_syncs() - syncs);
    t_check(rt.free(d[0]) == CUDA_ERROR_INVALID_VALUE, "bridge/double_free_is_cuda_error",
            "accepted");

    t_check(cuMemAlloc_v2(&big, 5000) == CUDA_SUCCESS && from_pool(big) &&
            cuMemFree_v2(big) == CUDA_SUCCESS, "bridge/direct_call_from_pool", "no");
    big = 0;
    t_check(by_dlsym && by_dlsym(&big, 5000) == CUDA_SUCCESS && from_pool(big) &&
            cuMemFree_v2(big) == CUDA_SUCCESS, "bridge/dlsym_v2_name_from_pool", "no");
    t_check(rt.pitch(&p, &pitch, 1000, 10, 4) == CUDA_SUCCESS && pitch == 1024 && from_pool(p) &&
            rt.free(p) == CUDA_SUCCESS, "bridge/pitch_from_pool", "pitch %zu", pitch);
    t_check(rt.pitch(&p, &pitch, 1000, 10, 3) == CUDA_ERROR_INVALID_VALUE,
            "bridge/pitch_bad_element_driver_error", "accepted");
    vramio_pool_trim(-1);
    vramio_pool_stats(-1, &stv);
    t_check(stv.small_allocs == 0 && stv.large_allocs == 0 && stv.slabs == 0 && fake_vmm_live() == 0,
            "bridge/nothing_left", "small %zu large %zu slabs %zu handles %d", stv.small_allocs,
            stv.large_allocs, stv.slabs, fake_vmm_live());
}

/* The pool cannot serve (no VMM, or no bridge at all): the driver serves, as before. */
static void unchanged(const char *mode)
{
    CUdeviceptr d = 0, b = 0;
    size_t s = 0;
    char name[80];
    int resolved = runtime_resolve();

    snprintf(name, sizeof(name), "bridge/%s_driver_serves", mode);
    t_check(resolved && rt.alloc(&d, 1000) == CUDA_SUCCESS && d && !from_pool(d) &&
            fake_plain_allocs() == 1 && rt.range(&b, &s, d + 10) == CUDA_SUCCESS && b == d &&
            s == 1000 && rt.free(d) == CUDA_SUCCESS && fake_plain_allocs() == 0, name,
            "resolve %d d %#llx plain %d", resolved, (unsigned long long)d, fake_plain_allocs());
}

/* Four GPUs, all peers: the pool's memory is open to every one of them (or, when the driver
 * refuses that, to the owner alone: the allocation still works). */
static void peers(const char *mode, int want)
{
    CUdeviceptr d = 0;
    char name[80];
    int resolved = runtime_resolve();

    snprintf(name, sizeof(name), "bridge/%s_access_for_%d_devices", mode, want);
    t_check(resolved && rt.alloc(&d, 1000) == CUDA_SUCCESS && from_pool(d) &&
            fake_access_devices() == want && rt.free(d) == CUDA_SUCCESS, name,
            "resolve %d d %#llx access %d", resolved, (unsigned long long)d, fake_access_devices());
}

static void noctx(void)
{
    CUdeviceptr d = 0;
    CUresult r;

    runtime_resolve();
    r = rt.alloc ? rt.alloc(&d, 1000) : CUDA_ERROR_UNKNOWN;
    t_check(r == CUDA_ERROR_INVALID_CONTEXT, "bridge/noctx_driver_error_passed_on", "result %d",
            (int)r);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "bridged";

    if (!strcmp(mode, "bridged"))
        bridged();
    else if (!strcmp(mode, "noctx"))
        noctx();
    else if (!strcmp(mode, "peers"))
        peers(mode, 4);
    else if (!strcmp(mode, "peers_refused"))
        peers(mode, 1);
    else
        unchanged(mode);
    return t_status();
}

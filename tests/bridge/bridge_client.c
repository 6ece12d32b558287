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
 * driver's error reaches the caller), multigpu (frees wait for the block's own GPU),
 * sync_error (a free whose wait fails keeps the block), per_device (one GPU's or one
 * call's failure leaves the pool on for the others), new_abi (a newer ABI of a replaced name
 * stays the driver's). Pointer attributes: bridge_attr.c.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>

#include "t.h"
#include "ucx_attrs.h"
#include "vramio.h"

int fake_plain_allocs(void);
int fake_vmm_live(void);
int fake_syncs(void);
int fake_syncs_on(int dev);
int fake_legacy_syncs(void);
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

/*
 * The memory type of p as UCX's CUDA memory domain decides it (its rules, cuda_copy_md.c at
 * 9466d10): memory that cuMemRetainAllocationHandle knows is VMM memory, typed by where it
 * lives; other memory is asked for four attributes in one call, and device memory that is
 * managed, or has no context (stream-ordered and virtual memory, by UCX's reading), is
 * "cuda-managed", which UCX's gdr_copy does not serve: every message is staged through host
 * memory by cuda_copy.
 */
static const char *ucx_memory_type(CUdeviceptr p)
{
    struct ucx_attrs a;
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop;
    const char *t = "unknown";

    if (cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)p) == CUDA_SUCCESS) {
        if (cuMemGetAllocationPropertiesFromHandle(&prop, h) == CUDA_SUCCESS &&
            prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE)
            t = "cuda (VMM)";
        cuMemRelease(h);
        return t;
    }
    a = ucx_attrs_of(p);
    if (a.result != CUDA_SUCCESS)
        return "not recognized";
    if (a.type != CU_MEMORYTYPE_DEVICE)
        return "host";
    return a.managed || !a.ctx ? "cuda-managed" : "cuda";
}

/* Pool blocks answer pointer attributes as cuMemAlloc allocations do: a and b are blocks of
 * 512 and 4096 bytes (the size classes of 100 and 4096 bytes) of one slab. */
static void attributes(CUdeviceptr a, CUdeviceptr b)
{
    typedef CUresult (*get_fn)(void *, CUpointer_attribute, CUdeviceptr);
    CUpointer_attribute which[4] = { CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                     CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                     CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                     CU_POINTER_ATTRIBUTE_SYNC_MEMOPS };
    CUdeviceptr start = 0, start2 = 0, c = 0;
    size_t size = 0, size2 = 0;
    unsigned long long id_a = 0, id_b = 0, id2 = 0;
    unsigned int one = 1, sync_a = 0, sync_b = 7, sync2 = 0;
    void *data[4] = { &start2, &size2, &id2, &sync2 };
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa2_fn gpa = h ? (gpa2_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    CUdriverProcAddressQueryResult st;
    get_fn get = NULL;
    char buf[64];
    int legacy;

    t_check(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, b + 100) == 0 &&
            cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, b + 100) == 0 &&
            start == b && size == 4096, "bridge/attr_range_is_the_block",
            "start %#llx (block %#llx) size %zu", (unsigned long long)start,
            (unsigned long long)b, size);
    /* Two blocks of one slab (one class): the driver would give both the slab's id. */
    t_check(rt.alloc(&c, 4096) == 0 &&
            cuPointerGetAttribute(&id_a, CU_POINTER_ATTRIBUTE_BUFFER_ID, c) == 0 &&
            cuPointerGetAttribute(&id_b, CU_POINTER_ATTRIBUTE_BUFFER_ID, b) == 0 && id_a != id_b &&
            (c & ~((2ull << 20) - 1)) == (b & ~((2ull << 20) - 1)),
            "bridge/attr_buffer_id_per_block", "ids %llu %llu", id_a, id_b);
    rt.free(c);
    t_check(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, b) == CUDA_SUCCESS &&
            cuPointerGetAttribute(&sync_b, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, b + 8) == 0 &&
            cuPointerGetAttribute(&sync_a, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, a) == 0 &&
            sync_b == 1 && sync_a == 0, "bridge/attr_sync_memops_set_reads_1",
            "b %u a %u", sync_b, sync_a);
    /* CONTEXT is the context that allocated the block, as for cuMemAlloc memory (the
     * driver's NULL for the VMM allocation under it made UCX type every block as
     * stream-ordered memory, and stage each message through host memory: ucx_perftest 8 B
     * 155 us under vramio-run on an H100 where gdr_copy had made it 2 us). */
    {
        CUcontext cur = NULL, got = NULL;

        cuCtxGetCurrent(&cur);
        t_check(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_CONTEXT, a) == CUDA_SUCCESS &&
                got && got == cur, "bridge/attr_context_is_the_allocating_one",
                "%p (current %p)", (void *)got, (void *)cur);
        t_check(!strcmp(ucx_memory_type(a), "cuda") && !strcmp(ucx_memory_type(b + 8), "cuda"),
                "bridge/ucx_types_blocks_as_cuda", "%s, %s", ucx_memory_type(a),
                ucx_memory_type(b + 8));
    }
    t_check(cuPointerGetAttributes(4, which, data, b + 1) == CUDA_SUCCESS && start2 == b &&
            size2 == 4096 && id2 == id_b && sync2 == 1, "bridge/attr_plural_agrees",
            "start %#llx size %zu id %llu sync %u", (unsigned long long)start2, size2, id2, sync2);
    /* The runtime's way: through cuGetProcAddress. */
    size = 0;
    t_check(gpa && gpa("cuPointerGetAttribute", (void **)&get, 13000, 0, &st) == 0 && get &&
            get(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, a) == 0 && size == 512,
            "bridge/attr_through_getprocaddress", "size %zu", size);
    /* The per-thread-stream variant of a copy stays the driver's: only its exported
     * function is replaced (bridge_routes.h, VB_EXACT). */
    {
        void *ptds = NULL, *legacy_fn = NULL, *exported = h ? dlsym(h, "cuMemcpyHtoD_v2") : NULL;
        int ok = gpa && gpa("cuMemcpyHtoD", &legacy_fn, 13000, 0, &st) == 0 &&
                 gpa("cuMemcpyHtoD", &ptds, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                     &st) == 0;

        t_check(ok && legacy_fn == exported && ptds && ptds != exported,
                "bridge/copy_ptds_variant_stays_the_drivers", "legacy %p ptds %p exported %p",
                legacy_fn, ptds, exported);
    }
    /* SYNC_MEMOPS kept: synchronous copies and memsets into b wait for the legacy stream. */
    memset(buf, 3, sizeof(buf));
    legacy = fake_legacy_syncs();
    cuMemcpyHtoD(b, buf, sizeof(buf));
    cuMemsetD8(b + 64, 1, 64);
    cuMemcpyDtoD(b, a, 64);
    t_check(fake_legacy_syncs() == legacy + 3, "bridge/sync_memops_copies_wait",
            "%d waits of 3", fake_legacy_syncs() - legacy);
    legacy = fake_legacy_syncs();
    cuMemcpyHtoD(a, buf, sizeof(buf));
    cuMemsetD8(a, 1, 64);
    t_check(fake_legacy_syncs() == legacy, "bridge/no_sync_memops_no_wait", "%d waits",
            fake_legacy_syncs() - legacy);
}

/* A freed block's range fails as a freed allocation's does, while its slab lives on; its
 * pointer attributes too: the same answers as for an allocation of the driver's own, freed. */
static void freed_range(void)
{
    typedef CUresult (*get_fn)(void *, CUpointer_attribute, CUdeviceptr);
    typedef CUresult (*gets_fn)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr);
    CUdeviceptr a = 0, b = 0, base = 0, plain = 0, start = 7;
    CUpointer_attribute which = CU_POINTER_ATTRIBUTE_RANGE_START_ADDR;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *data = &start;
    get_fn get = h ? (get_fn)dlsym(h, "cuPointerGetAttribute") : NULL;
    gets_fn gets = h ? (gets_fn)dlsym(h, "cuPointerGetAttributes") : NULL;
    CUdriverProcAddressQueryResult st;
    alloc_fn drv_alloc = NULL;
    free_fn drv_free = NULL;
    size_t size = 0;
    CUresult r, rp, rb, rps, rbs;

    if (!get || !gets || rt.alloc(&a, 4096) || rt.alloc(&b, 4096))
        return;
    rt.free(b);
    r = rt.range(&base, &size, b + 10);
    t_check(r == CUDA_ERROR_NOT_FOUND, "bridge/range_of_freed_block_fails",
            "result %d base %#llx size %zu (live block %#llx)", (int)r,
            (unsigned long long)base, size, (unsigned long long)a);
    /* The driver's own allocation, freed: what it says of such a pointer. */
    ((gpa2_fn)fake_gpa_v2())("cuMemAlloc", (void **)&drv_alloc, 13000, 0, &st);
    ((gpa2_fn)fake_gpa_v2())("cuMemFree", (void **)&drv_free, 13000, 0, &st);
    if (drv_alloc && drv_free && !drv_alloc(&plain, 4096) && !drv_free(plain)) {
        rp = get(&start, which, plain + 10);
        rb = get(&start, which, b + 10);
        rps = gets(1, &which, &data, plain + 10);
        rbs = gets(1, &which, &data, b + 10);
        t_check(rb == rp && rb != CUDA_SUCCESS && rbs == rps,
                "bridge/attributes_of_freed_block_as_of_freed_allocation",
                "cuPointerGetAttribute %d (freed allocation: %d), cuPointerGetAttributes %d "
                "(%d), start %#llx", (int)rb, (int)rp, (int)rbs, (int)rps,
                (unsigned long long)start);
    }
    rt.free(a);
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
            aligned += d[i] % 512 == 0;
            memset((void *)(uintptr_t)d[i], (int)i, sizes[i]);
        }
    }
    t_check(pooled == 7 && fake_plain_allocs() == 0, "bridge/runtime_alloc_from_pool",
            "%d of 7 from the pool, %d plain", pooled, fake_plain_allocs());
    t_check(aligned == 7, "bridge/alloc_512_aligned", "%d of 7", aligned);
    t_check(rt.range(&b, &s, d[1] + 50) == CUDA_SUCCESS && b == d[1] && s >= 100 && s < 4096,
            "bridge/range_of_block", "base %#llx size %zu", (unsigned long long)b, s);
    /* Deep inside a large allocation: the pool asks the driver, through libgdrapi's own
     * pointer; were that pointer the bridge's, this would recurse until the stack ends. */
    b = 0;
    t_check(rt.range(&b, &s, d[6] + (5u << 19)) == CUDA_SUCCESS && b == d[6] && s == (4u << 20),
            "bridge/range_deep_in_large", "base %#llx size %zu", (unsigned long long)b, s);
    attributes(d[1], d[3]);
    syncs = fake_syncs();
    for (i = 0; i < 7; i++)
        if (d[i] && rt.free(d[i]) != CUDA_SUCCESS)
            break;
    t_check(i == 7 && !from_pool(d[0]) && fake_syncs() >= syncs + 7, "bridge/free_to_pool_after_sync",
            "freed %zu, syncs %d", i, fake_syncs() - syncs);
    t_check(rt.free(d[0]) == CUDA_ERROR_INVALID_VALUE, "bridge/double_free_is_cuda_error",
            "accepted");

    freed_range();
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

/* Two GPUs: a block of GPU 1 freed while GPU 0's context is current, or none is. */
static void multigpu(void)
{
    CUcontext c0, c1;
    CUdeviceptr d = 0;
    void *p;
    int s1;

    runtime_resolve();
    if (cuDevicePrimaryCtxRetain(&c0, 0) || cuDevicePrimaryCtxRetain(&c1, 1)) {
        t_fail("bridge/multigpu_setup", "no contexts");
        return;
    }
    cuCtxSetCurrent(c1);
    t_check(rt.alloc(&d, 4096) == CUDA_SUCCESS && from_pool(d), "bridge/multigpu_alloc_on_gpu1",
            "no");
    cuCtxSetCurrent(c0);
    s1 = fake_syncs_on(1);
    t_check(rt.free(d) == CUDA_SUCCESS && fake_syncs_on(1) == s1 + 1 && !from_pool(d),
            "bridge/free_waits_for_the_blocks_gpu", "waits on GPU 1: %d", fake_syncs_on(1) - s1);
    cuCtxSetCurrent(c1);
    d = 0;
    rt.alloc(&d, 4096);
    cuCtxSetCurrent(NULL);
    s1 = fake_syncs_on(1);
    t_check(rt.free(d) == CUDA_SUCCESS && fake_syncs_on(1) == s1 + 1 && !from_pool(d),
            "bridge/free_without_context_waits_for_the_blocks_gpu", "waits on GPU 1: %d",
            fake_syncs_on(1) - s1);
    cuCtxSetCurrent(c0);
    p = vramio_pluggable_alloc(4096, 1, NULL);
    s1 = fake_syncs_on(1);
    vramio_pluggable_free(p, 4096, 1, NULL);
    t_check(p && fake_syncs_on(1) == s1 + 1 && !from_pool((CUdeviceptr)(uintptr_t)p),
            "bridge/pluggable_free_waits_for_the_blocks_gpu", "waits on GPU 1: %d",
            fake_syncs_on(1) - s1);
}

/* Two GPUs, the second without VMM (FAKE_CUDA_VMM_REFUSE=1), and the first cuMemCreate an
 * operating-system error (FAKE_CUDA_VMM_OS_ERRORS=1): the driver serves those requests, and
 * neither turns the pool off for GPU 0. */
static void per_device(void)
{
    CUcontext c0, c1;
    CUdeviceptr d0 = 0, d1 = 0, d2 = 0, d3 = 0;

    runtime_resolve();
    if (cuDevicePrimaryCtxRetain(&c0, 0) || cuDevicePrimaryCtxRetain(&c1, 1)) {
        t_fail("bridge/per_device_setup", "no contexts");
        return;
    }
    cuCtxSetCurrent(c0);
    t_check(rt.alloc(&d0, 4096) == CUDA_SUCCESS && !from_pool(d0),
            "bridge/os_error_served_by_the_driver", "from the pool: %d", from_pool(d0));
    t_check(rt.alloc(&d1, 4096) == CUDA_SUCCESS && from_pool(d1),
            "bridge/os_error_not_lasting", "the next allocation is not from the pool");
    cuCtxSetCurrent(c1);
    t_check(rt.alloc(&d2, 4096) == CUDA_SUCCESS && !from_pool(d2),
            "bridge/gpu_without_vmm_served_by_the_driver", "from the pool: %d", from_pool(d2));
    cuCtxSetCurrent(c0);
    t_check(rt.alloc(&d3, 3 << 20) == CUDA_SUCCESS && from_pool(d3),
            "bridge/other_gpu_keeps_the_pool", "GPU 0's next slab is not from the pool");
    rt.free(d0), rt.free(d1), rt.free(d3);
    cuCtxSetCurrent(c1);
    rt.free(d2);
}

/* A newer driver with a new ABI of cuMemAlloc from version 14000 (FAKE_CUDA_NEW_ABI): asked
 * for that version, the program gets the driver's new function; asked for 13000, or for
 * cuMemFree at 14000 (its ABI unchanged), the bridge's entry. */
static void new_abi(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa2_fn gpa = h ? (gpa2_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    void *ours = h ? dlsym(h, "cuMemAlloc_v2") : NULL;
    void *ours_free = h ? dlsym(h, "cuMemFree_v2") : NULL;
    void *at13 = NULL, *at14 = NULL, *free14 = NULL;
    CUdriverProcAddressQueryResult st;

    if (!gpa || !ours)
        return;
    gpa("cuMemAlloc", &at13, 13000, 0, &st);
    gpa("cuMemAlloc", &at14, 14000, 0, &st);
    gpa("cuMemFree", &free14, 14000, 0, &st);
    t_check(at13 == ours && at14 && at14 != ours && free14 == ours_free,
            "bridge/newer_abi_left_to_the_driver", "13000: %s, 14000: %s, cuMemFree 14000: %s",
            at13 == ours ? "the bridge's" : "not the bridge's",
            at14 == ours ? "the bridge's" : "the driver's",
            free14 == ours_free ? "the bridge's" : "not the bridge's");
}

/* Every wait fails (FAKE_CUDA_SYNC_ERROR): nothing is freed that may still be in use. */
static void sync_error(void)
{
    CUdeviceptr d = 0;
    CUresult r;
    void *p;

    runtime_resolve();
    rt.alloc(&d, 4096);
    r = rt.free(d);
    t_check(r == 999 && from_pool(d), "bridge/free_keeps_block_when_wait_fails",
            "result %d, in the pool %d", (int)r, from_pool(d));
    p = vramio_pluggable_alloc(4096, 0, NULL);
    vramio_pluggable_free(p, 4096, 0, NULL);
    t_check(p && from_pool((CUdeviceptr)(uintptr_t)p),
            "bridge/pluggable_free_keeps_block_when_wait_fails", "freed");
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
    else if (!strcmp(mode, "multigpu"))
        multigpu();
    else if (!strcmp(mode, "sync_error"))
        sync_error();
    else if (!strcmp(mode, "new_abi"))
        new_abi();
    else if (!strcmp(mode, "per_device"))
        per_device();
    else if (!strcmp(mode, "peers"))
        peers(mode, 4);
    else if (!strcmp(mode, "peers_refused"))
        peers(mode, 1);
    else
        unchanged(mode);
    return t_status();
}

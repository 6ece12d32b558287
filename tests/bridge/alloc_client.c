// SPDX-License-Identifier: MIT
/*
 * alloc_client.c - the allocators a CUDA program uses besides cuMemAlloc, under vramio-run
 * against the stand-in driver (fake_cuda_vmm.c, fake_cuda_pool.c): run by
 * test_bridge_alloc.sh, one mode per process. The driver's functions are found as the CUDA
 * runtime finds them (cuGetProcAddress_v2 from dlopen("libcuda.so.1"), with the
 * per-thread-default-stream flag where a mode says); the stand-in's own answers (what the
 * real driver says, behind the bridge) through fake_gpa_v2().
 *   free_async     cuMemFreeAsync of bridged blocks goes back to the pool in stream order
 *                  (not before the stream gets there; no CUDA call in the host function); a
 *                  second free of the block is refused; the driver's memory is the driver's
 *   free_capture   during a stream capture the free is the driver's answer for cuMemAlloc
 *                  memory, and the block stays allocated
 *   mempool        cuMemAllocAsync / cuMemAllocFromPoolAsync of the default pool come from a
 *                  pool of the bridge's with a POSIX-fd handle type and pin; the program sees
 *                  the default pool (MEMPOOL_HANDLE, cuDeviceGetMemPool), its attributes,
 *                  trim and access reach the bridge's pool; its own pools get the handle type;
 *                  a capture is passed through
 *   mempool_own_refused  (the driver refuses the program's pool with the type) made as asked
 *   mempool_off    (a driver that does not allow it) the default pool serves, untouched, and
 *                  the program's pools are made as asked
 *   vmm            cuMemCreate without a POSIX-fd handle type gets it, and pins
 *   vmm_refused    (the driver refuses the type) the allocation is made without it
 *   retain         cuMemRetainAllocationHandle of a bridged block answers as for cuMemAlloc
 *                  memory; libgdrapi still pins the block
 *   out_of_memory  (FAKE_CUDA_VRAM_BYTES below the request) cuMemAlloc answers
 *                  CUDA_ERROR_OUT_OF_MEMORY as the driver does, and a small one still comes
 *                  from the pool (test_bridge_alloc.sh checks that nothing was said on stderr)
 *   size_max       cuMemAlloc of SIZE_MAX answers CUDA_ERROR_OUT_OF_MEMORY
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>

#include "t.h"
#include "vramio.h"

int fake_vmm_live(void);
int fake_host_fn_forbidden(void);
int fake_graph_allocs(void);
int fake_capture_nodes(void);
int fake_pool_types(CUmemoryPool pool);
int fake_pool_allocs(CUmemoryPool pool);
void *fake_gpa_v2(void);

typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);

static void *libcuda;

/* The function the runtime would get for name (per thread: the per-thread-stream one). */
static void *rt(const char *name, int per_thread)
{
    gpa2_fn gpa = libcuda ? (gpa2_fn)dlsym(libcuda, "cuGetProcAddress_v2") : NULL;
    CUdriverProcAddressQueryResult st;
    void *fn = NULL;

    if (gpa)
        gpa(name, &fn, 13000, per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0, &st);
    return fn;
}

/* The stand-in driver's own function (what the bridge sits in front of). */
static void *drv(const char *name)
{
    CUdriverProcAddressQueryResult st;
    void *fn = NULL;

    ((gpa2_fn)fake_gpa_v2())(name, &fn, 13000, 0, &st);
    return fn;
}

#define RT(type, name) ((type)rt(name, 0))
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);
typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*alloc_pool_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*attr_fn)(void *, CUpointer_attribute, CUdeviceptr);
typedef CUresult (*pool_attr_fn)(CUmemoryPool, CUmemPool_attribute, void *);
typedef CUresult (*retain_fn)(CUmemGenericAllocationHandle *, void *);
typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                              unsigned long long);

static int in_pool(CUdeviceptr d)
{
    unsigned long long b = 0;

    return vramio_alloc_range(d, &b, NULL) == 0;
}

static size_t live_small(void)
{
    struct vramio_pool_stats st;

    vramio_pool_stats(-1, &st);
    return st.small_allocs;
}

/* Pin [d, d + n) through libgdrapi, write a pattern through the mapping, read it back at the
 * device address (host memory in the stand-in): 0, or why not in why. */
static int pin_write(CUdeviceptr d, size_t n, unsigned seed, char *why, size_t len)
{
    unsigned char *want = malloc(n);
    gdr_t g = gdr_open();
    gdr_info_t info;
    gdr_mh_t mh;
    void *map = NULL;
    int rc = -1;

    if (!want || !g) {
        snprintf(why, len, "gdr_open: %s", vramio_last_error());
        free(want);
        if (g)
            gdr_close(g);
        return -1;
    }
    t_pattern(want, n, seed);
    if (gdr_pin_buffer(g, (unsigned long)d, n, 0, 0, &mh)) {
        snprintf(why, len, "pin refused: %s", vramio_last_error());
    } else {
        if (gdr_map(g, mh, &map, n) || gdr_get_info(g, mh, &info)) {
            snprintf(why, len, "map: %s", vramio_last_error());
        } else {
            gdr_copy_to_mapping(mh, (char *)map + (d - info.va), want, n);
            rc = memcmp(want, (void *)(uintptr_t)d, n) ? 1 : 0;
            if (rc)
                snprintf(why, len, "the mapping does not reach the block's bytes");
            gdr_unmap(g, mh, map, n);
        }
        gdr_unpin_buffer(g, mh);
    }
    gdr_close(g);
    free(want);
    return rc;
}

/* ---- cuMemFreeAsync of bridged blocks ----------------------------------------------------- */
static void free_async(void)
{
    alloc_fn alloc = RT(alloc_fn, "cuMemAlloc");
    free_fn mfree = RT(free_fn, "cuMemFree");
    free_async_fn fa = RT(free_async_fn, "cuMemFreeAsync");
    free_async_fn fa_pt = (free_async_fn)rt("cuMemFreeAsync", 1);
    free_async_fn drv_fa_pt = NULL;
    alloc_fn drv_alloc = (alloc_fn)drv("cuMemAlloc");
    CUdeviceptr b = 0, c = 0, big = 0, p = 0, x = 0;
    size_t before;
    int handles;
    CUstream s;
    CUresult r, r2;

    if (!alloc || !fa || !fa_pt || cuStreamCreate(&s, 0)) {
        t_fail("setup", "no runtime functions");
        return;
    }
    alloc(&b, 4096);
    alloc(&c, 4096);
    before = live_small();
    r = fa(b, s);
    t_check(r == CUDA_SUCCESS && live_small() == before, "not_before_the_stream",
            "result %d, live blocks %zu (were %zu)", (int)r, live_small(), before);
    /* Freed once: a second free of it is the driver's error for a freed pointer. */
    r = fa(b, s);
    r2 = mfree(b);
    t_check(r == CUDA_ERROR_INVALID_VALUE && r2 == CUDA_ERROR_INVALID_VALUE,
            "second_free_refused", "cuMemFreeAsync %d, cuMemFree %d", (int)r,
            (int)r2);
    cuStreamSynchronize(s);
    alloc(&x, 100);            /* the bridge's next call takes back what the stream freed */
    t_check(live_small() == before, "back_in_the_pool_after_the_stream",
            "live blocks %zu, want %zu (the freed one gone, one new)", live_small(), before);
    /* A block of its own: its slab is destroyed, which the host function must not do. */
    handles = fake_vmm_live();
    alloc(&big, 3u << 20);
    r = fa(big, s);
    cuStreamSynchronize(s);
    mfree(x);
    t_check(r == CUDA_SUCCESS && fake_vmm_live() == handles && !in_pool(big) &&
            fake_host_fn_forbidden() == 0, "large_block_released_outside_the_host_function",
            "result %d, handles %d (were %d), forbidden calls in host functions %d", (int)r,
            fake_vmm_live(), handles, fake_host_fn_forbidden());
    /* The per-thread-stream variant: stream 0 is this thread's stream, not the legacy one. */
    drv_fa_pt = NULL;
    {
        CUdriverProcAddressQueryResult st;

        ((gpa2_fn)fake_gpa_v2())("cuMemFreeAsync", (void **)&drv_fa_pt, 13000,
                                 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st);
    }
    before = live_small();
    r = fa_pt(c, 0);
    cuStreamSynchronize(CU_STREAM_LEGACY);
    alloc(&x, 100);
    r2 = live_small() == before + 1;     /* the legacy stream's sync did not free it */
    cuStreamSynchronize(CU_STREAM_PER_THREAD);
    mfree(x);
    t_check(fa_pt != drv_fa_pt && r == CUDA_SUCCESS && r2 && live_small() == before - 1,
            "per_thread_stream", "entry %s, result %d, kept until its stream: %d, "
            "live %zu (want %zu)", fa_pt == drv_fa_pt ? "the driver's" : "the bridge's", (int)r,
            (int)r2, live_small(), before - 1);
    /* The driver's own memory: the driver frees it. */
    r = drv_alloc ? drv_alloc(&p, 4096) : CUDA_ERROR_UNKNOWN;
    t_check(r == CUDA_SUCCESS && fa(p, s) == CUDA_SUCCESS && drv_alloc(&p, 4096) == CUDA_SUCCESS &&
            mfree(p) == CUDA_SUCCESS, "drivers_memory_to_the_driver", "result %d",
            (int)r);
    t_check(fake_host_fn_forbidden() == 0, "no_cuda_call_in_host_functions",
            "%d", fake_host_fn_forbidden());
    cuStreamDestroy(s);
}

/* During a capture: what the driver answers for cuMemAlloc memory, the block kept. */
static void free_capture(void)
{
    alloc_fn alloc = RT(alloc_fn, "cuMemAlloc");
    free_fn mfree = RT(free_fn, "cuMemFree");
    free_async_fn fa = RT(free_async_fn, "cuMemFreeAsync");
    alloc_fn drv_alloc = (alloc_fn)drv("cuMemAlloc");
    free_fn drv_free = (free_fn)drv("cuMemFree");
    CUdeviceptr b = 0, p = 0;
    CUresult want, r, end;
    CUgraph graph;
    CUstream s;
    int nodes;

    if (!alloc || !fa || !drv_alloc || cuStreamCreate(&s, 0) || drv_alloc(&p, 4096)) {
        t_fail("setup", "no runtime functions");
        return;
    }
    cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    want = fa(p, s);
    cuStreamEndCapture(s, &graph);
    drv_free(p);
    alloc(&b, 4096);
    nodes = fake_capture_nodes();
    cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    r = fa(b, s);
    end = cuStreamEndCapture(s, &graph);
    cuStreamSynchronize(s);
    t_check(r == want && r != CUDA_SUCCESS && end == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED &&
            fake_capture_nodes() == nodes && in_pool(b), "as_for_cumemalloc_memory",
            "result %d (cuMemAlloc memory: %d), end of capture %d, nodes added %d, block kept %d",
            (int)r, (int)want, (int)end, fake_capture_nodes() - nodes, in_pool(b));
    t_check(mfree(b) == CUDA_SUCCESS && !in_pool(b), "freed_after",
            "cuMemFree after the capture failed");
    cuStreamDestroy(s);
}

/* ---- stream-ordered memory ------------------------------------------------------------------ */
/* The pool the driver says ptr is from (behind the bridge). */
static CUmemoryPool real_pool_of(CUdeviceptr ptr)
{
    attr_fn get = (attr_fn)drv("cuPointerGetAttribute");
    CUmemoryPool p = NULL;

    if (get)
        get(&p, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, ptr);
    return p;
}

static void mempool(int on, int own_fd)
{
    alloc_async_fn aa = RT(alloc_async_fn, "cuMemAllocAsync");
    alloc_async_fn aa_pt = (alloc_async_fn)rt("cuMemAllocAsync", 1);
    alloc_pool_fn afp = RT(alloc_pool_fn, "cuMemAllocFromPoolAsync");
    free_async_fn fa = RT(free_async_fn, "cuMemFreeAsync");
    pool_attr_fn set = RT(pool_attr_fn, "cuMemPoolSetAttribute");
    pool_attr_fn get = RT(pool_attr_fn, "cuMemPoolGetAttribute");
    pool_attr_fn drv_get = (pool_attr_fn)drv("cuMemPoolGetAttribute");
    CUresult (*pool_create)(CUmemoryPool *, const CUmemPoolProps *) =
        (CUresult (*)(CUmemoryPool *, const CUmemPoolProps *))rt("cuMemPoolCreate", 0);
    CUresult (*trim)(CUmemoryPool, size_t) = (CUresult (*)(CUmemoryPool, size_t))rt("cuMemPoolTrimTo", 0);
    CUdeviceptr a = 0, b = 0, c = 0, g = 0, q = 0;
    CUmemoryPool def = NULL, cur = NULL, shadow, seen = NULL, mine = NULL;
    cuuint64_t thr = 12345678, v = 0, used = 0;
    CUmemPoolProps props;
    CUgraph graph;
    CUstream s;
    char why[320] = "";
    int rc, graphs;

#define NAME(x) (x)
    if (!aa || !afp || !fa || !set || !get || !pool_create || !trim || cuStreamCreate(&s, 0) ||
        cuDeviceGetDefaultMemPool(&def, 0)) {
        t_fail(NAME("setup"), "no runtime functions");
        return;
    }
    /* The program sets its pool's release threshold first, as PyTorch and XLA do. */
    set(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr);
    t_check(aa(&a, 65536, s) == CUDA_SUCCESS && aa(&b, 65536, s) == CUDA_SUCCESS, NAME("alloc"),
            "cuMemAllocAsync failed");
    shadow = real_pool_of(b);
    cuPointerGetAttribute(&seen, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, b);
    cuDeviceGetMemPool(&cur, 0);
    if (on)
        t_check(shadow && shadow != def && fake_pool_types(shadow) == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR &&
                seen == def && cur == def, NAME("default_pool_served_pinnable"),
                "from pool %p (default %p, its types %d), the program sees %p, current %p",
                (void *)shadow, (void *)def, fake_pool_types(shadow), (void *)seen, (void *)cur);
    else
        t_check(shadow == def && seen == def && cur == def, NAME("default_pool_untouched"),
                "from pool %p (default %p), the program sees %p", (void *)shadow, (void *)def,
                (void *)seen);
    /* b's neighbour a keeps its bytes: the mapping is of b's place in the pool's memory. */
    cuMemsetD8(a, 0x11, 65536);
    rc = pin_write(b, 65536, 7, why, sizeof(why));
    if (on)
        t_check(rc == 0 && ((unsigned char *)(uintptr_t)a)[65535] == 0x11 &&
                ((unsigned char *)(uintptr_t)a)[0] == 0x11, NAME("pins_and_maps"), "%s", why);
    else
        t_check(rc == -1 && strstr(why, "stream-ordered"), NAME("refused_as_stream_ordered"),
                "rc %d: %s", rc, why);
    if (on) {
        drv_get(shadow, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v);
        get(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
        t_check(v == thr && used >= 2 * 65536, NAME("attributes_reach_it"),
                "its release threshold %llu (set %llu), used as the program sees it %llu",
                (unsigned long long)v, (unsigned long long)thr, (unsigned long long)used);
        t_check(afp(&c, 4096, def, s) == CUDA_SUCCESS && real_pool_of(c) == shadow,
                NAME("from_default_pool_by_name"), "pool %p", (void *)real_pool_of(c));
        fa(c, s);
        t_check(aa_pt && aa_pt != rt("cuMemAllocAsync", 0) && aa_pt(&c, 4096, 0) == CUDA_SUCCESS &&
                real_pool_of(c) == shadow, NAME("per_thread_stream"), "entry %p, pool %p",
                (void *)aa_pt, (void *)real_pool_of(c));
        fa(c, s);
    }
    fa(a, s);
    fa(b, s);
    cuStreamSynchronize(s);
    trim(def, 0);
    v = 1;
    if (on)
        drv_get(shadow, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v);
    t_check(!on || v == 0, NAME("trim_reaches_it"), "%llu bytes left", (unsigned long long)v);
    /* A capture: the driver's graph allocation, as without the bridge. */
    graphs = fake_graph_allocs();
    cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    rc = aa(&g, 1u << 20, s);
    fa(g, s);
    cuStreamEndCapture(s, &graph);
    t_check(rc == CUDA_SUCCESS && fake_graph_allocs() == graphs + 1 && !real_pool_of(g),
            NAME("capture_passed_through"), "result %d, graph allocations %d", rc,
            fake_graph_allocs() - graphs);
    /* The program's own pool, made with no handle type. */
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    rc = pool_create(&mine, &props);
    t_check(rc == CUDA_SUCCESS && fake_pool_types(mine) == (own_fd ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : 0),
            NAME("own_pool_handle_type"), "result %d, its handle types %d", rc,
            fake_pool_types(mine));
    if (rc == CUDA_SUCCESS && cuDeviceSetMemPool(0, mine) == CUDA_SUCCESS) {
        rc = aa(&q, 8192, s);
        t_check(rc == CUDA_SUCCESS && real_pool_of(q) == mine, NAME("own_pool_current_serves"),
                "result %d, pool %p (its own %p)", rc, (void *)real_pool_of(q), (void *)mine);
        if (own_fd)
            t_check(pin_write(q, 8192, 9, why, sizeof(why)) == 0, NAME("own_pool_pins"), "%s", why);
        fa(q, s);
        cuStreamSynchronize(s);
        cuDeviceSetMemPool(0, def);
    }
    t_check(fake_host_fn_forbidden() == 0, NAME("no_cuda_call_in_host_functions"), "%d",
            fake_host_fn_forbidden());
    cuStreamDestroy(s);
#undef NAME
}

/* ---- VMM memory made without a POSIX-fd handle type ------------------------------------------ */
static void vmm(int refused)
{
    create_fn create = RT(create_fn, "cuMemCreate");
    CUresult (*props_of)(CUmemAllocationProp *, CUmemGenericAllocationHandle) =
        (CUresult (*)(CUmemAllocationProp *, CUmemGenericAllocationHandle))drv(
            "cuMemGetAllocationPropertiesFromHandle");
    CUmemAllocationProp prop, got;
    CUmemGenericAllocationHandle h = 0;
    CUmemAccessDesc acc;
    CUdeviceptr d = 0;
    char why[320] = "";
    CUresult r;
    int rc;

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    r = create ? create(&h, 2u << 20, &prop, 0) : CUDA_ERROR_UNKNOWN;
    memset(&got, 0, sizeof(got));
    if (r == CUDA_SUCCESS)
        props_of(&got, h);
    t_check(r == CUDA_SUCCESS && got.requestedHandleTypes ==
            (refused ? 0 : CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), "made",
            "result %d, handle types %d", (int)r, (int)got.requestedHandleTypes);
    if (r != CUDA_SUCCESS || cuMemAddressReserve(&d, 2u << 20, 0, 0, 0) ||
        cuMemMap(d, 2u << 20, 0, h, 0))
        return;
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    cuMemSetAccess(d, 2u << 20, &acc, 1);
    rc = pin_write(d + 65536, 65536, 3, why, sizeof(why));
    if (refused)
        t_check(rc == -1 && strstr(why, "without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR"),
                "refused_as_vmm_without_fd", "rc %d: %s", rc, why);
    else
        t_check(rc == 0, "pins_and_maps", "%s", why);
    cuMemUnmap(d, 2u << 20);
    cuMemAddressFree(d, 2u << 20);
    cuMemRelease(h);
}

/* ---- cuMemRetainAllocationHandle of a bridged block ----------------------------------------- */
static void retain(void)
{
    alloc_fn alloc = RT(alloc_fn, "cuMemAlloc");
    free_fn mfree = RT(free_fn, "cuMemFree");
    retain_fn ret = RT(retain_fn, "cuMemRetainAllocationHandle");
    alloc_fn drv_alloc = (alloc_fn)drv("cuMemAlloc");
    free_fn drv_free = (free_fn)drv("cuMemFree");
    CUmemGenericAllocationHandle h = 0;
    CUdeviceptr p = 0, b = 0, big = 0;
    CUresult want, rs, rl, rdirect;
    char why[320] = "";

    if (!alloc || !ret || !drv_alloc || drv_alloc(&p, 4096)) {
        t_fail("setup", "no runtime functions");
        return;
    }
    want = ret(&h, (void *)(uintptr_t)p);
    drv_free(p);
    alloc(&b, 4096);
    alloc(&big, 3u << 20);
    rs = ret(&h, (void *)(uintptr_t)(b + 100));
    rl = ret(&h, (void *)(uintptr_t)(big + (1u << 20)));
    rdirect = cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)b);
    t_check(want != CUDA_SUCCESS && rs == want && rl == want && rdirect == want,
            "block_answers_as_cumemalloc_memory",
            "small %d, large %d, linked %d; cuMemAlloc memory %d", (int)rs, (int)rl, (int)rdirect,
            (int)want);
    t_check(pin_write(b, 4096, 5, why, sizeof(why)) == 0 &&
            pin_write(big + (1u << 20), 65536, 6, why, sizeof(why)) == 0,
            "library_still_pins", "%s", why);
    mfree(b);
    mfree(big);
}

/* ---- out of GPU memory ------------------------------------------------------------------- */
static void out_of_memory(void)
{
    alloc_fn alloc = RT(alloc_fn, "cuMemAlloc");
    free_fn mfree = RT(free_fn, "cuMemFree");
    CUdeviceptr big = 0, small = 0;
    CUresult r;

    if (!alloc || !mfree) {
        t_fail("setup", "no runtime functions");
        return;
    }
    r = alloc(&big, 256u << 20);
    t_check(r == CUDA_ERROR_OUT_OF_MEMORY, "answer_as_the_driver",
            "cuMemAlloc of 256 MiB with 64 MiB of GPU memory: %d", (int)r);
    if (r == CUDA_SUCCESS)
        mfree(big);
    r = alloc(&small, 4096);
    t_check(r == CUDA_SUCCESS && in_pool(small), "small_still_bridged",
            "cuMemAlloc of 4 KiB after it: %d, %s", (int)r,
            in_pool(small) ? "from the pool" : "not from the pool");
    if (r == CUDA_SUCCESS)
        mfree(small);
}

/* A request no GPU can hold: no rounding of it, the pool's or the driver's, may wrap it to a
 * small one. */
static void size_max(void)
{
    alloc_fn alloc = RT(alloc_fn, "cuMemAlloc");
    free_fn mfree = RT(free_fn, "cuMemFree");
    CUdeviceptr p = 0;
    CUresult r;

    if (!alloc || !mfree) {
        t_fail("setup", "no runtime functions");
        return;
    }
    r = alloc(&p, SIZE_MAX);
    t_check(r == CUDA_ERROR_OUT_OF_MEMORY && !p, "answer_as_the_driver",
            "cuMemAlloc of SIZE_MAX: %d, pointer %#llx", (int)r, (unsigned long long)p);
    if (r == CUDA_SUCCESS)
        mfree(p);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";

    libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!strcmp(mode, "free_async"))
        free_async();
    else if (!strcmp(mode, "free_capture"))
        free_capture();
    else if (!strcmp(mode, "mempool"))
        mempool(1, 1);
    else if (!strcmp(mode, "mempool_own_refused"))
        mempool(1, 0);
    else if (!strcmp(mode, "mempool_off"))
        mempool(0, 0);
    else if (!strcmp(mode, "vmm"))
        vmm(0);
    else if (!strcmp(mode, "vmm_refused"))
        vmm(1);
    else if (!strcmp(mode, "retain"))
        retain();
    else if (!strcmp(mode, "out_of_memory"))
        out_of_memory();
    else if (!strcmp(mode, "size_max"))
        size_max();
    else
        t_fail("mode", "unknown mode '%s'", mode);
    return t_status();
}

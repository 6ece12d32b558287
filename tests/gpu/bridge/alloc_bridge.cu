// SPDX-License-Identifier: MIT
/*
 * alloc_bridge.cu - the allocators of issue 39 on the real driver, run by
 * tests/gpu/run_alloc_probe_on_gpu.sh twice: "plain" (no vramio-run, GDRCOPY_BACKEND=vulkan)
 * and "bridged" (under vramio-run). Each allocator's memory is pinned and checked both ways
 * (a kernel's bytes read through the mapping, the CPU's bytes read back by cudaMemcpy), or
 * refused with the reason the vulkan backend gives; the facts the script compares between the
 * two runs are "# fact KEY: VALUE" lines, the timings "# time KEY: VALUE".
 *   free_async      cudaFreeAsync of cudaMalloc memory: its result, and the memory reused
 *   retain          cuMemRetainAllocationHandle of cudaMalloc memory: the driver's code
 *                   (plain) and the bridge's answer for a block (bridged): equal
 *   async_default   cudaMallocAsync from the default pool: pins under the bridge, refused
 *                   naming stream-ordered memory plainly; the program's view of its pool
 *                   (current pool, MEMPOOL_HANDLE, used bytes, trim) the same in both runs
 *   from_pool       cudaMallocFromPoolAsync naming the default pool: likewise
 *   own_pool        a pool the program makes with no handle type: likewise
 *   vmm_no_type     cuMemCreate with no handle type (PyTorch expandable segments, XLA): pins
 *                   under the bridge, refused naming the missing type plainly
 *   graph           a captured graph with a memory node runs, as plainly
 *   free_in_capture cudaFreeAsync of cudaMalloc memory during a capture: the same error both
 *                   ways, the memory still usable after
 *   time            cudaMallocAsync + cudaFreeAsync of 64 KiB, and cudaMalloc + cudaFree,
 *                   median of rounds (the bridge's cost on stream-ordered memory)
 * Every call is bounded by the script's timeout; nothing here waits on its own.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <vector>
#include "bridge_gpu.h"

static int bridged;

__global__ void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = (unsigned char)(i * 7 + seed);
}

/* Pin [d, d + n) and check both ways; or, refused, say so (why in *why). 0 when it pinned. */
static int pin_both_ways(gdr_t g, void *d, size_t n, const char *name, char *why, size_t len)
{
    std::vector<unsigned char> host(n), back(n);
    struct bg_pin p;
    size_t i, bad = 0;

    fill<<<64, 256>>>((unsigned char *)d, n, 9);
    cudaDeviceSynchronize();
    if (bg_pin(g, (unsigned long long)(uintptr_t)d, n, &p)) {
        snprintf(why, len, "%s", vramio_last_error());
        return 1;
    }
    gdr_copy_from_mapping(p.mh, host.data(), p.cpu, n);
    for (i = 0; i < n; i++)
        bad += host[i] != (unsigned char)(i * 7 + 9);
    for (i = 0; i < n; i++)
        host[i] = (unsigned char)(i * 3 + 1);
    gdr_copy_to_mapping(p.mh, p.cpu, host.data(), n);
    cudaMemcpy(back.data(), d, n, cudaMemcpyDeviceToHost);
    bad += memcmp(back.data(), host.data(), n) != 0;
    bg_unpin(g, &p);
    t_check(bad == 0, name, "%zu bytes differ through the mapping", bad);
    return 0;
}

/* Bridged: pins both ways; plain: refused with a reason that says want. */
static void pinnable(gdr_t g, void *d, size_t n, const char *name, const char *want)
{
    char why[512] = "", full[160];
    int rc;

    snprintf(full, sizeof(full), "%s/%s", name, bridged ? "pins" : "refused_with_reason");
    rc = pin_both_ways(g, d, n, full, why, sizeof(why));
    if (bridged && rc)
        t_fail(full, "refused: %s", why);
    else if (!bridged)
        t_check(rc && strstr(why, want), full, "%s", rc ? why : "it pinned");
}

static void pool_view(cudaMemPool_t def, void *a, const char *name)
{
    cudaMemPool_t cur = NULL, seen = NULL;
    uint64_t used = 0;
    char full[160];

    cudaDeviceGetMemPool(&cur, 0);
    cuPointerGetAttribute(&seen, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, (CUdeviceptr)a);
    cudaMemPoolGetAttribute(def, cudaMemPoolAttrUsedMemCurrent, &used);
    snprintf(full, sizeof(full), "%s/program_sees_the_default_pool", name);
    t_check(cur == def && seen == def && used >= (1u << 20), full,
            "current %p, MEMPOOL_HANDLE %p, default %p, used %llu", (void *)cur, (void *)seen,
            (void *)def, (unsigned long long)used);
}

static double median_us(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

static void timings(cudaStream_t s)
{
    std::vector<double> a, m;
    int r, i;

    for (r = 0; r < 15; r++) {
        double t0 = bg_now_us();
        void *p;

        for (i = 0; i < 200; i++) {
            cudaMallocAsync(&p, 65536, s);
            cudaFreeAsync(p, s);
        }
        cudaStreamSynchronize(s);
        a.push_back((bg_now_us() - t0) / 200);
        t0 = bg_now_us();
        for (i = 0; i < 200; i++) {
            cudaMalloc(&p, 65536);
            cudaFree(p);
        }
        m.push_back((bg_now_us() - t0) / 200);
    }
    printf("# time mallocasync_freeasync_64KiB_us: %.3f\n", median_us(a));
    printf("# time malloc_free_64KiB_us: %.3f\n", median_us(m));
}

int main(int argc, char **argv)
{
    cudaMemPool_t def, own;
    cudaMemPoolProps props;
    cudaStream_t s;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;
    CUdeviceptr v = 0;
    void *b = NULL, *c = NULL, *a = NULL, *out = NULL, *gm = NULL;
    uint64_t thr = UINT64_MAX, held = 1;
    unsigned char check[256];
    cudaError_t e;
    CUresult r;
    gdr_t g;
    int i;

    setvbuf(stdout, NULL, _IOLBF, 0);
    bridged = argc > 1 && !strcmp(argv[1], "bridged");
    cudaSetDevice(0);
    cudaFree(0);
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    g = gdr_open();
    if (!g) {
        printf("not ok alloc_bridge/open: %s\n", vramio_last_error());
        return 1;
    }
    /* free_async */
    cudaMalloc(&b, 4096);
    e = cudaFreeAsync(b, s);
    cudaStreamSynchronize(s);
    printf("# fact free_async_cudamalloc: %d\n", (int)e);
    t_check(e == cudaSuccess && cudaMalloc(&c, 4096) == cudaSuccess && cudaFree(c) == cudaSuccess,
            "free_async/returns_and_reuses", "cudaFreeAsync %d", (int)e);
    /* retain */
    cudaMalloc(&b, 4096);
    r = cuMemRetainAllocationHandle(&h, b);
    if (r == CUDA_SUCCESS)
        cuMemRelease(h);
    printf("# fact retain_cudamalloc: %d\n", (int)r);
    t_check(r != CUDA_SUCCESS, "retain/cudamalloc_memory_has_no_handle", "a handle was given");
    /* async_default */
    cudaDeviceGetDefaultMemPool(&def, 0);
    cudaMemPoolSetAttribute(def, cudaMemPoolAttrReleaseThreshold, &thr);
    e = cudaMallocAsync(&a, 1u << 20, s);
    cudaStreamSynchronize(s);
    if (t_check(e == cudaSuccess, "async_default/alloc", "%d", (int)e)) {
        pool_view(def, a, "async_default");
        pinnable(g, a, 1u << 20, "async_default", "stream-ordered memory");
        cudaFreeAsync(a, s);
    }
    e = cudaMallocFromPoolAsync(&a, 1u << 20, def, s);
    cudaStreamSynchronize(s);
    if (t_check(e == cudaSuccess, "from_pool/alloc", "%d", (int)e)) {
        pinnable(g, a, 1u << 20, "from_pool", "stream-ordered memory");
        cudaFreeAsync(a, s);
    }
    cudaStreamSynchronize(s);
    cudaMemPoolTrimTo(def, 0);
    cudaMemPoolGetAttribute(def, cudaMemPoolAttrReservedMemCurrent, &held);
    printf("# fact default_pool_reserved_after_trim: %llu\n", (unsigned long long)held);
    t_check(held == 0, "async_default/trim_releases", "%llu bytes held", (unsigned long long)held);
    /* own_pool */
    memset(&props, 0, sizeof(props));
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    if (t_check(cudaMemPoolCreate(&own, &props) == cudaSuccess, "own_pool/create", "failed")) {
        if (cudaMallocFromPoolAsync(&a, 1u << 20, own, s) == cudaSuccess) {
            cudaStreamSynchronize(s);
            pinnable(g, a, 1u << 20, "own_pool", "stream-ordered memory");
            cudaFreeAsync(a, s);
            cudaStreamSynchronize(s);
        }
        cudaMemPoolDestroy(own);
    }
    /* vmm_no_type */
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    if (cuMemCreate(&h, 2u << 20, &prop, 0) == CUDA_SUCCESS) {
        if (cuMemAddressReserve(&v, 2u << 20, 0, 0, 0) == CUDA_SUCCESS &&
            cuMemMap(v, 2u << 20, 0, h, 0) == CUDA_SUCCESS) {
            acc.location = prop.location;
            acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
            cuMemSetAccess(v, 2u << 20, &acc, 1);
            pinnable(g, (void *)v, 1u << 20, "vmm_no_type",
                     "without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR");
            cuMemUnmap(v, 2u << 20);
        }
        if (v)
            cuMemAddressFree(v, 2u << 20);
        cuMemRelease(h);
    }
    /* graph: a memory node, a kernel writing it, a copy out, the free node; three launches */
    cudaMalloc(&out, 256);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    cudaMallocAsync(&gm, 1u << 20, s);
    fill<<<4, 64, 0, s>>>((unsigned char *)gm, 1u << 20, 5);
    cudaMemcpyAsync(out, gm, 256, cudaMemcpyDeviceToDevice, s);
    cudaFreeAsync(gm, s);
    e = cudaStreamEndCapture(s, &graph);
    if (e == cudaSuccess)
        e = cudaGraphInstantiate(&exec, graph, 0);
    for (i = 0; e == cudaSuccess && i < 3; i++)
        e = cudaGraphLaunch(exec, s);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(s);
    cudaMemcpy(check, out, sizeof(check), cudaMemcpyDeviceToHost);
    for (i = 0; e == cudaSuccess && i < 256; i++)
        if (check[i] != (unsigned char)(i * 7 + 5))
            e = cudaErrorUnknown;
    t_check(e == cudaSuccess, "graph/memory_node_runs", "%s", cudaGetErrorString(e));
    /* free_in_capture */
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    e = cudaFreeAsync(b, s);
    cudaStreamEndCapture(s, &graph);
    cudaGetLastError();
    printf("# fact free_async_in_capture: %d\n", (int)e);
    t_check(e != cudaSuccess && cudaMemset(b, 1, 4096) == cudaSuccess &&
            cudaDeviceSynchronize() == cudaSuccess && cudaFree(b) == cudaSuccess,
            "free_in_capture/refused_memory_kept", "cudaFreeAsync %d", (int)e);
    cudaFree(out);
    timings(s);
    gdr_close(g);
    cudaStreamDestroy(s);
    return t_status();
}

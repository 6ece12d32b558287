// SPDX-License-Identifier: MIT
/*
 * cudart_bridge.cu - a plain CUDA runtime program run under vramio-run (built once with the
 * shared and once with the static cudart): cudaMalloc'd buffers filled by a kernel, pinned,
 * mapped and read by the CPU, written by the CPU and read back by cudaMemcpy and by a kernel;
 * several small buffers of one slab share one import. Without the bridge (the control run)
 * the pins are refused, as plain cudaMalloc memory is. Also reports whether a stream-ordered
 * pool with a POSIX-fd handle type gives pinnable memory on this driver.
 */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>
#include "bridge_gpu.h"

__global__ void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = (unsigned char)(i * 7 + seed);
}

__global__ void count_bad(const unsigned char *p, size_t n, unsigned seed, unsigned *bad)
{
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        if (p[i] != (unsigned char)(i * 13 + seed))
            atomicAdd(bad, 1u);
}

static void one_size(gdr_t g, size_t n, int expect_pin)
{
    unsigned char *d = NULL, *host = (unsigned char *)malloc(n), *back = (unsigned char *)malloc(n);
    unsigned *bad = NULL, nbad = 0;
    struct bg_pin p;
    char name[96];
    size_t i, diff = 0;
    int rc;

    snprintf(name, sizeof(name), "cudart/%zu/cudaMalloc", n);
    if (!t_check(cudaMalloc(&d, n) == cudaSuccess && cudaMalloc(&bad, 4) == cudaSuccess,
                 name, "cudaMalloc failed") || !host || !back)
        return;
    fill<<<64, 256>>>(d, n, 3);
    cudaDeviceSynchronize();
    rc = bg_pin(g, (unsigned long long)(uintptr_t)d, n, &p);
    snprintf(name, sizeof(name), "cudart/%zu/pin_%s", n, expect_pin ? "works" : "refused");
    t_check(expect_pin ? rc == 0 : rc != 0, name, "rc %d", rc);
    if (rc == 0) {
        cudaMemcpy(back, d, n, cudaMemcpyDeviceToHost);
        gdr_copy_from_mapping(p.mh, host, p.cpu, n);
        snprintf(name, sizeof(name), "cudart/%zu/cpu_reads_kernel_writes", n);
        t_check(memcmp(host, back, n) == 0 && back[n - 1] == (unsigned char)((n - 1) * 7 + 3),
                name, "differs");
        for (i = 0; i < n; i++)
            host[i] = (unsigned char)(i * 13 + 5);
        gdr_copy_to_mapping(p.mh, p.cpu, host, n);
        cudaMemcpy(back, d, n, cudaMemcpyDeviceToHost);
        for (i = 0; i < n; i++)
            diff += back[i] != host[i];
        cudaMemset(bad, 0, 4);
        count_bad<<<64, 256>>>(d, n, 5, bad);
        cudaMemcpy(&nbad, bad, 4, cudaMemcpyDeviceToHost);
        snprintf(name, sizeof(name), "cudart/%zu/gpu_reads_cpu_writes", n);
        t_check(diff == 0 && nbad == 0, name, "cudaMemcpy differs in %zu, kernel in %u", diff, nbad);
        bg_unpin(g, &p);
    }
    cudaFree(d);
    cudaFree(bad);
    free(host);
    free(back);
}

/* Stream-ordered allocations from a pool with a POSIX-fd handle type: pinnable here? */
static void mempool_probe(gdr_t g)
{
    cudaMemPoolProps props;
    cudaMemPool_t pool;
    cudaStream_t s;
    void *d = NULL;
    struct bg_pin p;
    int rc;

    memset(&props, 0, sizeof(props));
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    if (cudaMemPoolCreate(&pool, &props) != cudaSuccess) {
        printf("# mempool: cudaMemPoolCreate with a POSIX-fd handle type failed\n");
        return;
    }
    cudaStreamCreate(&s);
    if (cudaMallocFromPoolAsync(&d, 4 << 20, pool, s) == cudaSuccess) {
        cudaStreamSynchronize(s);
        rc = bg_pin(g, (unsigned long long)(uintptr_t)d, 4 << 20, &p);
        printf("# mempool: memory of a POSIX-fd pool %s\n", rc ? "is refused by the pin" :
               "pins and maps (cudaMallocAsync could be made pinnable)");
        if (!rc)
            bg_unpin(g, &p);
        cudaFreeAsync(d, s);
        cudaStreamSynchronize(s);
    }
    cudaStreamDestroy(s);
    cudaMemPoolDestroy(pool);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = { 256, 4000, 65536, 1 << 20, 3 << 20, 64 << 20 };
    int expect_pin = !(argc > 1 && !strcmp(argv[1], "--control"));
    void *small[16];
    struct bg_pin sp[16];
    gdr_t g;
    size_t i;
    int pinned = 0, in_pool = 0, got[16];

    cudaFree(0);
    g = gdr_open();
    if (!t_check(g != NULL, "cudart/gdr_open", "%s", vramio_last_error()))
        return 1;
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        one_size(g, sizes[i], expect_pin);
    /* Sixteen 4 KiB buffers: one slab, so one import (the debug log counts them). */
    for (i = 0; i < 16; i++) {
        small[i] = NULL;
        cudaMalloc(&small[i], 4096);
        in_pool += vramio_alloc_range((unsigned long long)(uintptr_t)small[i], NULL, NULL) == 0;
        got[i] = bg_pin(g, (unsigned long long)(uintptr_t)small[i], 4096, &sp[i]) == 0;
        pinned += got[i];
    }
    if (expect_pin) {
        /* Pins of one import share its CPU mapping, so the distance between a buffer's CPU
         * and device addresses is the same for all buffers of one slab: as many distances as
         * slabs means one import per slab. */
        int slabs = 0, deltas = 0;
        size_t j;

        for (i = 0; i < 16; i++) {
            uintptr_t si = (uintptr_t)small[i] >> 21;
            intptr_t di = (intptr_t)(sp[i].cpu - (char *)small[i]);
            int new_slab = 1, new_delta = 1;

            for (j = 0; j < i; j++) {
                new_slab &= ((uintptr_t)small[j] >> 21) != si;
                new_delta &= (intptr_t)(sp[j].cpu - (char *)small[j]) != di;
            }
            slabs += got[i] && new_slab;
            deltas += got[i] && new_delta;
        }
        t_check(pinned == 16 && in_pool == 16, "cudart/small_buffers_pinned",
                "%d pinned, %d from the pool", pinned, in_pool);
        t_check(pinned == 16 && deltas == slabs, "cudart/one_import_per_slab",
                "%d slabs, %d distinct mappings", slabs, deltas);
    }
    for (i = 0; i < 16; i++) {
        if (got[i])
            bg_unpin(g, &sp[i]);
        cudaFree(small[i]);
    }
    if (expect_pin)
        mempool_probe(g);
    gdr_close(g);
    return t_status();
}

// SPDX-License-Identifier: MIT
/*
 * large_bridge.cu - a pin costs what it covers, under vramio-run (issue 39): one cudaMalloc
 * of most of the GPU (as JAX's default preallocation or a large model's weights), then pins
 * inside it. Run by tests/gpu/run_large_on_gpu.sh under vramio-run twice: "chunked" (the
 * pool's default chunk size: a large request is several allocations side by side) and
 * "whole" (VRAMIO_POOL_CHUNK_MB=0: one allocation, as before chunks existed).
 *   range      cuMemGetAddressRange of the last byte answers the whole allocation
 *   tail_1M    1 MiB at the allocation's end: chunked, it pins (the import of one chunk) and
 *              reads and writes both ways; whole, the whole-allocation import is what it
 *              costs (refused when that is larger than one import can be: said, not failed)
 *   seam_2M    2 MiB across the first chunk boundary (chunked) pins and reads a kernel's
 *              bytes on both sides of the seam, and the CPU's bytes reach the GPU
 *   span_3G    3 GiB from 512 MiB in (four chunks) likewise, checked at every seam
 *   freed      cudaFree gives the memory back (free memory as before the cudaMalloc, within
 *              the pool's cache)
 * "# time KEY: us" lines: each pin's time (its import included). Every step is bounded by
 * the script's timeout; nothing here waits on its own.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <vector>
#include "bridge_gpu.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

__global__ void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = (unsigned char)((i >> 3) * 131 + i + seed);
}

static unsigned char want(size_t i, unsigned seed)
{
    return (unsigned char)((i >> 3) * 131 + i + seed);
}

/* The windows of [off, off + n) of the pinned range that are checked: its ends and 1 MiB
 * on each side of every chunk boundary (every GiB from the allocation's start) inside it. */
static std::vector<std::pair<size_t, size_t> > windows(size_t off, size_t n)
{
    std::vector<std::pair<size_t, size_t> > w;
    size_t edge, a, b;

    w.push_back(std::make_pair((size_t)0, n < MiB ? n : MiB));
    if (n > MiB)
        w.push_back(std::make_pair(n - MiB, MiB));
    for (edge = (off / GiB + 1) * GiB; edge < off + n; edge += GiB) {
        a = edge - off >= MiB ? edge - off - MiB : 0;
        b = edge - off + MiB <= n ? edge - off + MiB : n;
        w.push_back(std::make_pair(a, b - a));
    }
    return w;
}

/* Pin [base + off, + n), time it, read a kernel's bytes in every window through the mapping
 * and write the CPU's, read back by cudaMemcpy. 1 when it pinned (checked), 0 when refused
 * (the reason in why). */
static int pin_and_check(gdr_t g, char *base, size_t off, size_t n, const char *name,
                         char *why, size_t wlen)
{
    std::vector<std::pair<size_t, size_t> > w = windows(off, n);
    std::vector<unsigned char> host(2 * MiB), back(2 * MiB); /* a window is at most 2 MiB */
    struct bg_pin p;
    size_t k, i, bad = 0, wbad = 0;
    double t0;
    char key[96];

    fill<<<1024, 256>>>((unsigned char *)base + off, n, 5);
    if (cudaDeviceSynchronize() != cudaSuccess) {
        snprintf(why, wlen, "the fill kernel failed");
        return 0;
    }
    t0 = bg_now_us();
    if (bg_pin(g, (unsigned long long)(uintptr_t)(base + off), n, &p)) {
        snprintf(why, wlen, "%s", vramio_last_error());
        return 0;
    }
    printf("# time %s_pin_us: %.0f\n", name, bg_now_us() - t0);
    /* Every window read before any is written: windows may overlap (a seam near an end). */
    for (k = 0; k < w.size(); k++) {
        size_t at = w[k].first, len = w[k].second;

        gdr_copy_from_mapping(p.mh, host.data(), p.cpu + at, len);
        for (i = 0; i < len; i++)
            bad += host[i] != want(at + i, 5);
    }
    for (k = 0; k < w.size(); k++) {
        size_t at = w[k].first, len = w[k].second;

        for (i = 0; i < len; i++)
            host[i] = (unsigned char)(i * 29 + k);
        gdr_copy_to_mapping(p.mh, p.cpu + at, host.data(), len);
        cudaMemcpy(back.data(), base + off + at, len, cudaMemcpyDeviceToHost);
        wbad += memcmp(back.data(), host.data(), len) != 0;
    }
    t0 = bg_now_us();
    bg_unpin(g, &p);
    printf("# time %s_unpin_us: %.0f\n", name, bg_now_us() - t0);
    snprintf(key, sizeof(key), "%s/gpu_bytes_read_through_the_mapping", name);
    t_check(bad == 0, key, "%zu bytes differ in %zu windows", bad, w.size());
    snprintf(key, sizeof(key), "%s/cpu_bytes_reach_the_gpu", name);
    t_check(wbad == 0, key, "%zu of %zu windows differ", wbad, w.size());
    return 1;
}

int main(int argc, char **argv)
{
    int chunked = argc > 1 && !strcmp(argv[1], "chunked");
    size_t free0 = 0, total = 0, free1 = 0, size, got = 0;
    CUdeviceptr rb = 0;
    char why[1024];
    char *d = NULL;
    gdr_t g;

    setvbuf(stdout, NULL, _IOLBF, 0);
    cudaSetDevice(0);
    cudaFree(0);
    g = gdr_open();
    if (!g) {
        printf("not ok large/open: %s\n", vramio_last_error());
        return 1;
    }
    cudaMemGetInfo(&free0, &total);
    /* Most of the GPU, as JAX takes 75% of it; at most 60 GiB (JAX's 59.4 GiB on an H100 is
     * the allocation whose 1 MiB pin failed), whole GiB. */
    size = free0 / 2 > 60 * GiB ? 60 * GiB : free0 / 2 / GiB * GiB;
    if (size < 5 * GiB) {
        t_skip("large", "%zu bytes free: too little for a 5 GiB allocation", free0);
        return 0;
    }
    printf("# fact size: %zu (of %zu free, %zu total)\n", size, free0, total);
    if (!t_check(cudaMalloc((void **)&d, size) == cudaSuccess, "large/cudamalloc", "failed"))
        return t_status();
    t_check(cuMemGetAddressRange(&rb, &got, (CUdeviceptr)(uintptr_t)(d + size - 1)) ==
                CUDA_SUCCESS && rb == (CUdeviceptr)(uintptr_t)d && got == size,
            "large/range_of_the_last_byte_is_the_allocation", "0x%llx + %zu",
            (unsigned long long)rb, got);

    if (pin_and_check(g, d, size - MiB, MiB, "tail_1M", why, sizeof(why)))
        t_ok(chunked ? "large/tail_1M/pins" : "large/tail_1M/pins_whole_import");
    else if (chunked)
        t_fail("large/tail_1M/pins", "%s", why);
    else
        printf("ok large/tail_1M/whole_import_refused_as_before # %s\n", why);
    if (chunked) {
        if (!pin_and_check(g, d, GiB - MiB, 2 * MiB, "seam_2M", why, sizeof(why)))
            t_fail("large/seam_2M/pins", "%s", why);
        if (!pin_and_check(g, d, GiB / 2, 3 * GiB, "span_3G", why, sizeof(why)))
            t_fail("large/span_3G/pins", "%s", why);
    }
    cudaFree(d);
    cudaMemGetInfo(&free1, &total);
    printf("# fact free_after: %zu (before the allocation %zu)\n", free1, free0);
    t_check(free1 + 256 * MiB >= free0, "large/freed", "%zu bytes fewer free than before",
            free0 - free1);
    gdr_close(g);
    return t_status();
}

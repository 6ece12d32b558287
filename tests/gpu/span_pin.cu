// SPDX-License-Identifier: MIT
/*
 * span_pin.cu - pins across several CUDA allocations mapped side by side in one reservation
 * (the vulkan backend's spanning pins, docs/large-allocations.md), on a GPU: run by
 * tests/gpu/run_span_on_gpu.sh with VRAMIO_ENABLE_VULKAN=1 GDRCOPY_BACKEND=vulkan, without
 * vramio-run (the allocations are the program's own cuMemCreate, POSIX-fd type).
 *
 * For each size S (64 MiB, and 1 GiB where the GPU has the memory): three allocations of S
 * side by side in one reservation, then
 *   whole:  gdr_pin_buffer + gdr_map of all 3 S (the first such pin of the process includes
 *           the backend's once-per-GPU check of placed maps: pinned twice, both timed);
 *   a GPU kernel writes a pattern over the whole span, and the CPU reads it through the
 *   mapping around each seam and at both ends; the CPU writes another there, and a kernel
 *   counts the bytes that differ;
 *   unpin: timed, and /proc/self/maps has nothing left in the window's range;
 *   inside: a 1 MiB pin inside the third allocation (its import alone), timed, data both
 *           ways the same.
 * Every wait on the GPU is bounded (WAIT_S): a kernel that does not finish is a failure, not
 * a hang. Result lines: "ok NAME (figures)" / "not ok NAME: why" / "skip NAME: why".
 *
 *   span_pin [MAX_GIB]     MAX_GIB: the largest S in GiB to try (default 1; 0: 64 MiB only)
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "bridge_gpu.h"

#define MIB (1ull << 20)
#define WAIT_S 20.0
#define AROUND (1 * MIB)   /* bytes checked each side of a seam */

__host__ __device__ static inline unsigned char pat(unsigned seed, unsigned long long i)
{
    return (unsigned char)(seed * 131u + (i >> 12) * 7u + i);
}

__global__ void fill(unsigned char *p, unsigned long long n, unsigned seed)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;

    for (; i < n; i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] = pat(seed, i);
}

/* Bytes of [p + off, p + off + n) that are not pat(seed, off + i): into *wrong. */
__global__ void count_wrong(const unsigned char *p, unsigned long long off, unsigned long long n,
                            unsigned seed, unsigned long long *wrong)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x, bad = 0;

    for (; i < n; i += (unsigned long long)gridDim.x * blockDim.x)
        bad += p[off + i] != pat(seed, off + i);
    if (bad)
        atomicAdd(wrong, bad);
}

static void pass(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pass(const char *name, const char *fmt, ...)
{
    va_list ap;

    printf("ok %s (", name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf(")\n");
}

/* The last kernel on the default stream finished within WAIT_S: 0, else -1 (and why). */
static int finished(const char *name)
{
    double t0 = bg_now_us();
    cudaError_t e;

    while ((e = cudaStreamQuery(0)) == cudaErrorNotReady) {
        if (bg_now_us() - t0 > WAIT_S * 1e6) {
            t_fail(name, "the GPU kernel did not finish in %.0f s", WAIT_S);
            return -1;
        }
        usleep(100);
    }
    if (e != cudaSuccess) {
        t_fail(name, "the GPU kernel failed: %s", cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

/* Three allocations of size side by side in one reservation. */
struct run { CUdeviceptr base; size_t size; CUmemGenericAllocationHandle h[3]; int n; };

static int run_make(struct run *r, size_t size)
{
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;

    memset(r, 0, sizeof(*r));
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    r->size = size;
    if (cuMemAddressReserve(&r->base, 3 * size, 0, 0, 0) != CUDA_SUCCESS)
        return -1;
    for (; r->n < 3; r->n++)
        if (cuMemCreate(&r->h[r->n], size, &prop, 0) != CUDA_SUCCESS ||
            cuMemMap(r->base + r->n * size, size, 0, r->h[r->n], 0) != CUDA_SUCCESS)
            return -1;
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return cuMemSetAccess(r->base, 3 * size, &acc, 1) == CUDA_SUCCESS ? 0 : -1;
}

static void run_free(struct run *r)
{
    for (int i = 0; i < r->n; i++) {
        cuMemUnmap(r->base + i * r->size, r->size);
        cuMemRelease(r->h[i]);
    }
    if (r->base)
        cuMemAddressFree(r->base, 3 * r->size);
}

/* Pin and map [d, d + n), timed (ms in *ms): 0 or the error, with "not ok name". */
static int pin_timed(gdr_t g, CUdeviceptr d, size_t n, struct bg_pin *p, double *ms,
                     const char *name)
{
    double t0 = bg_now_us();
    int rc = bg_pin(g, d, n, p);

    *ms = (bg_now_us() - t0) / 1e3;
    if (rc)
        t_fail(name, "rc %d: %s", rc, vramio_last_error());
    return rc;
}

/* The ranges checked in a span of 3 x size from off: both ends and around both seams, and the
 * first bytes of the pinned range, each clipped to [off, off + len). */
static int ranges(size_t size, size_t off, size_t len, size_t at[5], size_t n[5])
{
    size_t want[5][2] = { { 0, AROUND }, { size - AROUND, 2 * AROUND },
                          { 2 * size - AROUND, 2 * AROUND }, { 3 * size - AROUND, AROUND },
                          { off, AROUND } };
    int k = 0;

    for (int i = 0; i < 5; i++) {
        size_t a = want[i][0] < off ? off : want[i][0];
        size_t b = want[i][0] + want[i][1] > off + len ? off + len : want[i][0] + want[i][1];

        if (a < b) {
            at[k] = a;
            n[k++] = b - a;
        }
    }
    return k;
}

/* The GPU writes the span [off, off + len) of run r, the CPU reads it through p; then the CPU
 * writes it through p, the GPU checks. name: the case. */
static void data_both_ways(const struct run *r, size_t off, size_t len, struct bg_pin *p,
                           const char *name, unsigned seed)
{
    size_t at[5], n[5];
    int k = ranges(r->size, off, len, at, n);
    unsigned char *buf = (unsigned char *)malloc(2 * AROUND);
    unsigned long long *wrong, bad = 0, checked = 0;
    char nm[160];
    double t0;

    snprintf(nm, sizeof(nm), "%s/gpu_write_cpu_read", name);
    fill<<<1024, 256>>>((unsigned char *)r->base, 3 * r->size, seed);
    if (finished(nm))
        return;
    t0 = bg_now_us();
    for (int i = 0; i < k; i++) {
        gdr_copy_from_mapping(p->mh, buf, p->cpu + (at[i] - off), n[i]);
        for (size_t j = 0; j < n[i]; j++)
            bad += buf[j] != pat(seed, at[i] + j);
        checked += n[i];
    }
    if (bad)
        t_fail(nm, "%llu of %llu bytes read through the mapping differ", bad, checked);
    else
        pass(nm, "%llu bytes at both ends and across each seam, read in %.1f ms", checked,
             (bg_now_us() - t0) / 1e3);

    snprintf(nm, sizeof(nm), "%s/cpu_write_gpu_read", name);
    cudaMalloc(&wrong, sizeof(*wrong));
    cudaMemset(wrong, 0, sizeof(*wrong));
    for (int i = 0; i < k; i++) {
        for (size_t j = 0; j < n[i]; j++)
            buf[j] = pat(seed + 1, at[i] + j);
        gdr_copy_to_mapping(p->mh, p->cpu + (at[i] - off), buf, n[i]);
    }
    for (int i = 0; i < k; i++)
        count_wrong<<<256, 256>>>((const unsigned char *)r->base, at[i], n[i], seed + 1, wrong);
    if (!finished(nm)) {
        cudaMemcpy(&bad, wrong, sizeof(bad), cudaMemcpyDeviceToHost);
        if (bad)
            t_fail(nm, "the GPU found %llu of %llu bytes written through the mapping wrong",
                   bad, checked);
        else
            pass(nm, "%llu bytes across the seams", checked);
    }
    cudaFree(wrong);
    free(buf);
}

/* Whether any 2 MiB step of [p, p + len) is still mapped: msync fails with ENOMEM on a page
 * that is not (the window's allocations are multiples of 2 MiB). */
static int mapped_anywhere(const void *p, size_t len)
{
    for (size_t off = 0; off < len; off += 2 * MIB)
        if (msync((void *)(((uintptr_t)p + off) & ~(uintptr_t)4095), 4096, MS_ASYNC) == 0)
            return 1;
    return 0;
}

static void unpin_timed(gdr_t g, struct bg_pin *p, const char *name)
{
    void *win = p->map;
    size_t len = p->map_len;
    double t0 = bg_now_us();
    char nm[160];

    bg_unpin(g, p);
    snprintf(nm, sizeof(nm), "%s/unpin", name);
    if (mapped_anywhere(win, len))
        t_fail(nm, "/proc/self/maps still maps part of the window [%p, +%zu)", win, len);
    else
        pass(nm, "%.2f ms, nothing left mapped in the window", (bg_now_us() - t0) / 1e3);
}

static void one_size(gdr_t g, size_t size, int first)
{
    struct run r;
    struct bg_pin p;
    char name[96], nm[160];
    double ms, ms2;

    snprintf(name, sizeof(name), "span/3x%zuMiB", size / MIB);
    if (run_make(&r, size)) {
        t_skip(name, "three %zu MiB POSIX-fd allocations in one reservation could not be made",
               size / MIB);
        run_free(&r);
        return;
    }
    snprintf(nm, sizeof(nm), "%s/whole/pin", name);
    if (pin_timed(g, r.base, 3 * size, &p, &ms, nm) == 0) {
        if (first) {
            /* The first spanning pin paid for the check: once more, warm. */
            bg_unpin(g, &p);
            if (pin_timed(g, r.base, 3 * size, &p, &ms2, nm))
                goto inside;
            pass(nm, "%.2f ms, the first %.2f ms with the once-per-GPU check", ms2, ms);
        } else {
            pass(nm, "%.2f ms", ms);
        }
        snprintf(nm, sizeof(nm), "%s/whole", name);
        data_both_ways(&r, 0, 3 * size, &p, nm, 3);
        unpin_timed(g, &p, nm);
    }
inside:
    snprintf(nm, sizeof(nm), "%s/inside_third_1MiB/pin", name);
    if (pin_timed(g, r.base + 2 * size + size / 2, MIB, &p, &ms, nm) == 0) {
        pass(nm, "%.2f ms (imports the third alone)", ms);
        snprintf(nm, sizeof(nm), "%s/inside_third_1MiB", name);
        data_both_ways(&r, 2 * size + size / 2, MIB, &p, nm, 5);
        unpin_timed(g, &p, nm);
    }
    run_free(&r);
}

int main(int argc, char **argv)
{
    int max_gib = argc > 1 ? atoi(argv[1]) : 1;
    size_t free_b = 0, total_b = 0;
    gdr_t g;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) {
        t_fail("span/cuda", "no CUDA device");
        return t_status();
    }
    g = gdr_open();
    if (!g) {
        t_fail("span/open", "gdr_open: %s", vramio_last_error());
        return t_status();
    }
    one_size(g, 64 * MIB, 1);
    cudaMemGetInfo(&free_b, &total_b);
    for (int gib = 1; gib <= max_gib; gib *= 2) {
        if (free_b < (3ull * gib + 2) << 30) {
            t_skip("span/3xGiB", "%zu MiB free, 3 x %d GiB and a margin needed", free_b / MIB,
                   gib);
            break;
        }
        one_size(g, (size_t)gib << 30, 0);
    }
    gdr_close(g);
    return t_status();
}

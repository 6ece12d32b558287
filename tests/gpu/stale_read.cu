// SPDX-License-Identifier: MIT
/*
 * stale_read.cu - what a read through the library returns, seen from the GPU side: the
 * message-passing round trip every client that polls a flag relies on, and its reverse.
 *
 *  reads:  the CPU writes req=k through the mapping; one GPU block waits for it, writes the
 *          data of round k (n bytes at an offset), __threadfence_system(), then resp=k; the CPU
 *          polls resp through the API until it reads k, then reads the data through the API.
 *          A byte of round k-1 there is a stale read; with "peek" the CPU also reads the data
 *          just before it sends req (a consumer that looks early), which leaves the old data in
 *          whatever buffers a read may leave behind.
 *  writes: the CPU writes the data of round k through the API, then req=k; the GPU block that
 *          sees req=k checks every byte and counts the wrong ones, then answers resp=k.
 *  cause:  back-to-back reads of one address through the API, each timed: every one must
 *          reach the device, so their median is no less than half that of plain 8-byte loads
 *          of the same address (one uncached round trip). A read that is answered from a
 *          buffer shows here on every machine, stale or not.
 *
 * The API is gdr_copy_from_mapping / gdr_copy_to_mapping ("lib") or the _auto pair ("auto");
 * the copy kernel is the process's (GDRCOPY_COPY_KERNEL, set by run_reads_on_gpu.sh). Memory
 * is cudaMalloc's, so run it under vramio-run (the vulkan backend pins it). Every wait is
 * bounded: the GPU gives up after WAIT_S seconds without a request, the CPU after WAIT_S
 * without an answer, and each case stops after CASE_S seconds (the report gives the rounds).
 *
 *   stale_read [ROUNDS [CASE_S]]      defaults 100000 and 6
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>
#include "bridge_gpu.h"

#define WAIT_S     2.0
#define CTRL_REQ   0        /* each control word on its own 64-byte line */
#define CTRL_RESP  64
#define CTRL_QUIT  128
#define CTRL_BAD   192
#define DATA_AT    4096     /* the data of a case starts at DATA_AT + its offset */
#define REGION     (256u << 10)

/* The byte i of round k; it differs from round k-1's at every i. */
__host__ __device__ static inline unsigned char pat(unsigned long long k, size_t i)
{
    return (unsigned char)(k * 131u + (k >> 8) + i * 7u);
}

__global__ void responder(unsigned char *base, size_t off, size_t n, unsigned long long first,
                          unsigned long long last, int writes, long long wait_cycles)
{
    volatile unsigned long long *req = (volatile unsigned long long *)(base + CTRL_REQ);
    volatile unsigned long long *resp = (volatile unsigned long long *)(base + CTRL_RESP);
    volatile int *quit = (volatile int *)(base + CTRL_QUIT);
    unsigned long long *bad = (unsigned long long *)(base + CTRL_BAD);
    volatile unsigned char *data = base + DATA_AT + off;
    __shared__ int stop;

    for (unsigned long long k = first; k <= last; k++) {
        if (threadIdx.x == 0) {
            long long t0 = clock64();

            stop = 0;
            while (*req < k)
                if (*quit || clock64() - t0 > wait_cycles) {
                    stop = 1;
                    break;
                }
        }
        __syncthreads();
        if (stop)
            return;
        if (writes) {
            unsigned long long wrong = 0;

            for (size_t i = threadIdx.x; i < n; i += blockDim.x)
                wrong += data[i] != pat(k, i);
            if (wrong)
                atomicAdd(bad, wrong);
        } else {
            for (size_t i = threadIdx.x; i < n; i += blockDim.x)
                data[i] = pat(k, i);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence_system();
            *resp = k;
        }
    }
}

typedef int (*read_fn)(gdr_mh_t, void *, const void *, size_t);
typedef int (*write_fn)(gdr_mh_t, void *, const void *, size_t);

struct api {
    const char *name;
    read_fn rd;
    write_fn wr;
};

static const api apis[] = {
    { "lib", gdr_copy_from_mapping, gdr_copy_to_mapping },
    { "auto", vramio_copy_from_mapping_auto, vramio_copy_to_mapping_auto },
};

struct shape {
    size_t n, off;
};

/* Odd sizes and offsets, straddling lines (the 64-byte ones) and a page (4096 + 13), and the
 * largest size at an odd place. */
static const shape shapes[] = {
    { 1, 0 }, { 3, 62 }, { 8, 0 }, { 8, 60 }, { 13, 5 }, { 16, 0 }, { 31, 17 }, { 64, 0 },
    { 64, 32 }, { 100, 50 }, { 255, 3 }, { 4096 + 13, 4096 - 7 }, { 65535, 1 },
};

static const char *kernel_name;
static unsigned char *dev_base; /* the device address of the region */
static int device_rt_ns;        /* median of plain 8-byte loads, for the cause check */

static int cu_ok(cudaError_t e, const char *what)
{
    if (e != cudaSuccess)
        printf("# %s: %s\n", what, cudaGetErrorString(e));
    return e == cudaSuccess;
}

/* Poll resp through the API until it reads k: 0, or -1 after WAIT_S without it. */
static int wait_resp(const api *a, const struct bg_pin *p, unsigned long long k)
{
    unsigned long long v = 0;
    double t0 = bg_now_us();
    unsigned spins = 0;

    for (;;) {
        if (a->rd(p->mh, &v, p->cpu + CTRL_RESP, 8) != 0)
            return -1;
        if (v == k)
            return 0;
        if (++spins % 256 == 0 && bg_now_us() - t0 > WAIT_S * 1e6)
            return -1;
    }
}

static int send_req(const struct bg_pin *p, unsigned long long k)
{
    return gdr_copy_to_mapping(p->mh, p->cpu + CTRL_REQ, &k, 8);
}

/* The control words to their start: no request, no answer, no count. */
static int reset_ctrl(const struct bg_pin *p)
{
    unsigned char zero[256] = { 0 };

    return gdr_copy_to_mapping(p->mh, p->cpu, zero, sizeof(zero));
}

static void stop_gpu(const struct bg_pin *p)
{
    int one = 1;

    gdr_copy_to_mapping(p->mh, p->cpu + CTRL_QUIT, &one, sizeof(one));
    cudaDeviceSynchronize();
}

/* One case of rounds through the API a; 'writes' for the reverse direction. */
static void run_case(const struct bg_pin *p, const api *a, const shape *s, int peek, int writes,
                     unsigned long long rounds, double case_s, long long wait_cycles)
{
    std::vector<unsigned char> buf(s->n), tmp(s->n);
    unsigned long long k, stale = 0, wrong = 0, timeouts = 0, bad = 0;
    char name[160];
    double t0 = bg_now_us();
    int rc = 0;

    snprintf(name, sizeof(name), "reads/%s/%s/%s/%zu@%zu", kernel_name, a->name,
             writes ? "writes" : peek ? "peek" : "poll", s->n, s->off);
    if (reset_ctrl(p) != 0 || !cu_ok(cudaDeviceSynchronize(), "sync")) {
        t_fail(name, "control reset failed: %s", vramio_last_error());
        return;
    }
    responder<<<1, 256>>>(dev_base, s->off, s->n, 1, rounds, writes, wait_cycles);
    if (!cu_ok(cudaGetLastError(), "launch")) {
        t_fail(name, "kernel launch failed");
        return;
    }
    unsigned char *data = (unsigned char *)p->cpu + DATA_AT + s->off;
    for (k = 1; k <= rounds; k++) {
        if (writes) {
            for (size_t i = 0; i < s->n; i++)
                buf[i] = pat(k, i);
            rc = a->wr(p->mh, data, buf.data(), s->n);
        } else if (peek) {
            rc = a->rd(p->mh, tmp.data(), data, s->n);
        }
        if (rc == 0)
            rc = send_req(p, k);
        if (rc != 0 || wait_resp(a, p, k) != 0) {
            timeouts++;
            break;
        }
        if (!writes) {
            unsigned long long st = 0, wr = 0;

            if (a->rd(p->mh, buf.data(), data, s->n) != 0) {
                timeouts++;
                break;
            }
            for (size_t i = 0; i < s->n; i++)
                if (buf[i] != pat(k, i)) {
                    st += buf[i] == pat(k - 1, i);
                    wr += buf[i] != pat(k - 1, i);
                }
            stale += st != 0;
            wrong += wr != 0;
        }
        if ((k & 255) == 0 && bg_now_us() - t0 > case_s * 1e6)
            break;
    }
    if (k > rounds)
        k = rounds;
    stop_gpu(p);
    if (writes)
        gdr_copy_from_mapping(p->mh, &bad, p->cpu + CTRL_BAD, 8);
    double us = (bg_now_us() - t0) / (double)k;
    printf("# %s: %llu rounds, %.2f us each, stale %llu, wrong %llu, GPU saw %llu wrong bytes%s\n",
           name, k, us, stale, wrong, bad, timeouts ? ", timed out" : "");
    t_check(!timeouts && !stale && !wrong && !bad, name,
            "%llu rounds: stale %llu, wrong %llu, GPU-side wrong bytes %llu, timeouts %llu", k,
            stale, wrong, bad, timeouts);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

#define BACK_TO_BACK 4001
static uint32_t t_ns[BACK_TO_BACK];

static uint32_t median_ns(void)
{
    qsort(t_ns, BACK_TO_BACK, sizeof(t_ns[0]), cmp_u32);
    return t_ns[BACK_TO_BACK / 2];
}

static inline uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Plain 8-byte loads of one address: one device round trip each, the yardstick. */
static uint32_t plain_loads_ns(const volatile uint64_t *at)
{
    uint64_t sink = 0;

    for (int i = 0; i < BACK_TO_BACK; i++) {
        uint64_t t = now_ns();

        sink += *at;
        t_ns[i] = (uint32_t)(now_ns() - t);
    }
    if (sink == 1)
        printf("#\n");
    return median_ns();
}

/* Back-to-back reads of one address through the API: each must reach the device. */
static void cause_case(const struct bg_pin *p, const api *a, size_t n, size_t off)
{
    unsigned char buf[64];
    const unsigned char *at = (const unsigned char *)p->cpu + DATA_AT + off;
    char name[160];

    snprintf(name, sizeof(name), "reads/%s/%s/back_to_back/%zu@%zu", kernel_name, a->name, n,
             off);
    for (int i = 0; i < BACK_TO_BACK; i++) {
        uint64_t t = now_ns();

        a->rd(p->mh, buf, at, n);
        t_ns[i] = (uint32_t)(now_ns() - t);
    }
    uint32_t m = median_ns();

    printf("# %s: median %u ns (plain 8-byte loads %u ns)\n", name, m, device_rt_ns);
    t_check(2 * m >= (uint32_t)device_rt_ns, name,
            "median %u ns, under half of one device round trip (%u ns): answered from a buffer",
            m, device_rt_ns);
}

int main(int argc, char **argv)
{
    unsigned long long rounds = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000;
    double case_s = argc > 2 ? atof(argv[2]) : 6.0;
    int rate_khz = 0;
    void *d = NULL;
    struct bg_pin p;
    gdr_t g;

    setvbuf(stdout, NULL, _IOLBF, 0);
    kernel_name = vramio_copy_kernel();
    if (!cu_ok(cudaSetDevice(0), "cudaSetDevice") || !cu_ok(cudaMalloc(&d, REGION), "cudaMalloc") ||
        !cu_ok(cudaMemset(d, 0, REGION), "cudaMemset") ||
        !cu_ok(cudaDeviceGetAttribute(&rate_khz, cudaDevAttrClockRate, 0), "clock rate")) {
        t_skip("reads/all", "no CUDA device");
        return 0;
    }
    g = gdr_open();
    if (!g || bg_pin(g, (unsigned long long)(uintptr_t)d, REGION, &p) != 0) {
        t_skip("reads/all", "cannot pin cudaMalloc memory here (run under vramio-run): %s",
               vramio_last_error());
        return 0;
    }
    dev_base = (unsigned char *)d;
    long long wait_cycles = (long long)(WAIT_S * rate_khz * 1000.0);

    device_rt_ns = (int)plain_loads_ns((const volatile uint64_t *)(p.cpu + DATA_AT));
    printf("# kernel %s; plain 8-byte loads of one address: median %d ns\n", kernel_name,
           device_rt_ns);
    if (device_rt_ns < 300)
        t_fail("reads/yardstick", "plain loads of the mapping take %d ns: not a device read",
               device_rt_ns);
    for (const api &a : apis) {
        cause_case(&p, &a, 8, 0);
        cause_case(&p, &a, 1, 7);
        cause_case(&p, &a, 16, 0);
        cause_case(&p, &a, 8, 60);
        cause_case(&p, &a, 64, 0);
    }
    for (const api &a : apis)
        for (const shape &s : shapes) {
            run_case(&p, &a, &s, 0, 0, rounds, case_s, wait_cycles);
            run_case(&p, &a, &s, 1, 0, rounds, case_s, wait_cycles);
            run_case(&p, &a, &s, 0, 1, rounds, case_s, wait_cycles);
        }
    bg_unpin(g, &p);
    gdr_close(g);
    cudaFree(d);
    printf("# %d failed\n", t_status());
    return t_status() ? 1 : 0;
}

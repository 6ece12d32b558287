// SPDX-License-Identifier: MIT
/*
 * stress_bridge.cu - under vramio-run: 8 threads make 10^5 cudaMalloc/cudaFree of random
 * sizes (1 B to 64 MiB, log-uniform), pin random sub-ranges of live buffers, copy random bytes
 * in through the mapping and check them with cudaMemcpy, and back out. At the end nothing is
 * left: no live pool allocation, after vramio_pool_trim no slab, no extra fd, GPU memory
 * back to its start (within 64 MiB), which the summary line reports.
 */
#include <cuda_runtime.h>
#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "bridge_gpu.h"

#define THREADS 8
#define OPS_PER_THREAD 12500
#define LIVE 16

static gdr_t g;
static double deadline_us;
static int errors[THREADS], ops_done[THREADS], pins_done[THREADS];

static size_t rand_size(unsigned *seed)
{
    double e = (double)rand_r(seed) / RAND_MAX * 26.0; /* 2^0 .. 2^26 */
    size_t s = (size_t)1 << (int)e;

    return s + (size_t)(rand_r(seed) % s);
}

static int pin_and_copy(unsigned *seed, char *d, size_t n)
{
    size_t off = (size_t)rand_r(seed) % n, len = 1 + (size_t)rand_r(seed) % (n - off);
    struct bg_pin p;
    char *in, *out, *back;
    size_t i;
    int bad = 0;

    if (len > (1u << 20))
        len = 1u << 20;
    in = (char *)malloc(len);
    out = (char *)malloc(len);
    back = (char *)malloc(len);
    if (!in || !out || !back || bg_pin(g, (unsigned long long)(uintptr_t)(d + off), len, &p)) {
        free(in); free(out); free(back);
        return 1;
    }
    for (i = 0; i < len; i++)
        in[i] = (char)rand_r(seed);
    gdr_copy_to_mapping(p.mh, p.cpu, in, len);
    cudaMemcpy(back, d + off, len, cudaMemcpyDeviceToHost);
    gdr_copy_from_mapping(p.mh, out, p.cpu, len);
    bad = memcmp(in, back, len) != 0 || memcmp(in, out, len) != 0;
    bg_unpin(g, &p);
    free(in); free(out); free(back);
    return bad;
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg, i, k;
    unsigned seed = 1234u + t * 7919u;
    char *live[LIVE] = { 0 };
    size_t len[LIVE] = { 0 };

    cudaSetDevice(0);
    for (i = 0; i < OPS_PER_THREAD && bg_now_us() < deadline_us; i++) {
        k = rand_r(&seed) % LIVE;
        if (live[k]) {
            if (rand_r(&seed) % 8 == 0) {
                errors[t] += pin_and_copy(&seed, live[k], len[k]);
                pins_done[t]++;
            }
            errors[t] += cudaFree(live[k]) != cudaSuccess;
            live[k] = NULL;
        } else {
            len[k] = rand_size(&seed);
            if (len[k] > (64u << 20))
                len[k] = 64u << 20;
            if (cudaMalloc((void **)&live[k], len[k]) != cudaSuccess) {
                errors[t]++;
                live[k] = NULL;
            }
        }
        ops_done[t]++;
    }
    for (k = 0; k < LIVE; k++)
        if (live[k])
            errors[t] += cudaFree(live[k]) != cudaSuccess;
    return NULL;
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    while (d && readdir(d))
        n++;
    if (d)
        closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    pthread_t th[THREADS];
    struct vramio_pool_stats st;
    size_t free0 = 0, free1 = 0, total = 0;
    int fds0, fds1, i, ops = 0, pins = 0, errs = 0;
    double t0, limit_s = argc > 1 ? atof(argv[1]) : 150;

    cudaFree(0);
    g = gdr_open();
    if (!t_check(g != NULL, "stress/gdr_open", "%s", vramio_last_error()))
        return 1;
    /* The first pin starts Vulkan, which keeps its device (and fds) for the process: count
     * from after it. */
    {
        void *w = NULL;
        struct bg_pin p;

        if (cudaMalloc(&w, 4096) == cudaSuccess && bg_pin(g, (unsigned long long)(uintptr_t)w, 4096, &p) == 0)
            bg_unpin(g, &p);
        cudaFree(w);
        vramio_pool_trim(-1);
    }
    cudaMemGetInfo(&free0, &total);
    fds0 = count_fds();
    t0 = bg_now_us();
    deadline_us = t0 + limit_s * 1e6;
    for (i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        ops += ops_done[i];
        pins += pins_done[i];
        errs += errors[i];
    }
    vramio_pool_stats(-1, &st);
    printf("# %d operations, %d pinned copies in %.1f s; left before trim: %zu small + %zu large "
           "allocations, %zu slabs (%zu cached, %zu MiB)\n", ops, pins, (bg_now_us() - t0) / 1e6,
           st.small_allocs, st.large_allocs, st.slabs, st.cached_slabs, st.slab_bytes >> 20);
    t_check(ops == THREADS * OPS_PER_THREAD, "stress/all_operations_done",
            "%d of %d within %.0f s", ops, THREADS * OPS_PER_THREAD, limit_s);
    t_check(errs == 0, "stress/every_copy_checked", "%d errors", errs);
    t_check(st.small_allocs == 0 && st.large_allocs == 0 && st.slabs == st.cached_slabs,
            "stress/nothing_live_but_cached_slabs", "small %zu large %zu slabs %zu cached %zu",
            st.small_allocs, st.large_allocs, st.slabs, st.cached_slabs);
    gdr_close(g);
    vramio_pool_trim(-1);
    vramio_pool_stats(-1, &st);
    cudaMemGetInfo(&free1, &total);
    fds1 = count_fds();
    t_check(st.slabs == 0 && fds1 <= fds0 && free1 + (64u << 20) >= free0,
            "stress/no_leak_after_trim", "slabs %zu fds %d -> %d, free GPU memory %zu -> %zu MiB",
            st.slabs, fds0, fds1, free0 >> 20, free1 >> 20);
    return t_status();
}

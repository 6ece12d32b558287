/* SPDX-License-Identifier: MIT */
/*
 * soak_limits.c - the soak's limits part ("soak --limits", a process of its own): what the
 * library does where the machine runs out, on the GPU itself (tests/limits/ shows the same
 * against the stand-ins): the process's descriptors (a vulkan pin exports its allocation, which
 * takes one), GPU memory (vramio_alloc until it fails) and BAR1 (pins until one fails, where
 * BAR1 is smaller than GPU memory: nvidia-smi says, or SOAK_BAR1_BYTES for the stand-ins). Each:
 * a clear error, the same call served once something is given back, nothing left behind.
 * SOAK_VRAM_CHUNK sets the allocation size (default: 1/16 of the free memory, at most 1 GiB).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "soak.h"
#include "t.h"

#define MIB ((size_t)1 << 20)
#define MAX_CHUNKS 4096

static gdr_t g;

/* Pin and map all of [d, d + n), copy through it both ways: 1 when that worked. */
static int pin_works(unsigned long long d, size_t n, gdr_mh_t *keep)
{
    static unsigned char in[4096], out[4096];
    gdr_mh_t mh;
    void *map;
    int ok;

    if (gdr_pin_buffer_v2(g, d, n, 0, &mh))
        return 0;
    ok = gdr_map(g, mh, &map, n) == 0;
    t_pattern(in, sizeof(in), n);
    ok = ok && gdr_copy_to_mapping(mh, map, in, sizeof(in)) == 0 &&
         gdr_copy_from_mapping(mh, out, map, sizeof(out)) == 0 && !memcmp(in, out, sizeof(in));
    if (ok)
        gdr_unmap(g, mh, map, n);
    if (keep && ok)
        *keep = mh;
    else
        gdr_unpin_buffer(g, mh);
    return ok;
}

static void fd_limit(void)
{
    unsigned long long a = 0, b = 0;
    struct rlimit old, rl;
    gdr_mh_t mh;
    int fd, rc, fds0 = t_count_fds();

    if (vramio_alloc(0, 4 * MIB, &a) || vramio_alloc(0, 4 * MIB, &b) ||
        !pin_works(a, 4 * MIB, NULL)) {
        t_fail("limits/fd/setup", "%s", vramio_last_error());
        return;
    }
    getrlimit(RLIMIT_NOFILE, &old);
    rl = old;
    fd = dup(0);
    rl.rlim_cur = (rlim_t)fd;           /* no descriptor left above those open */
    close(fd);
    setrlimit(RLIMIT_NOFILE, &rl);
    rc = gdr_pin_buffer_v2(g, b, 4 * MIB, 0, &mh);
    if (rc == 0)
        gdr_unpin_buffer(g, mh);
    setrlimit(RLIMIT_NOFILE, &old);
    t_check(rc == EMFILE && strstr(vramio_last_error(), "file descriptors"),
            "limits/fd/refused_clearly", "rc %d: %s", rc, vramio_last_error());
    t_check(pin_works(b, 4 * MIB, NULL), "limits/fd/served_once_descriptors_are_free", "%s",
            vramio_last_error());
    vramio_free(a);
    vramio_free(b);
    vramio_pool_trim(-1);
    t_check(t_count_fds() == fds0, "limits/fd/nothing_left", "%d descriptors, %d before",
            t_count_fds(), fds0);
}

/* Fill GPU memory with vramio_alloc: chunks of *chunk bytes until one fails, then of half,
 * down to 2 MiB (so that less than 2 MiB is left); the allocations into d, their sizes into
 * sz. Their number; the first refusal's code and reason in *rc and why. */
static int fill(unsigned long long *d, size_t *sz, size_t chunk, int *rc, char *why, size_t len)
{
    int n = 0, r;

    *rc = 0;
    for (; chunk >= 2 * MIB && n < MAX_CHUNKS; chunk /= 2) {
        while (n < MAX_CHUNKS && (r = vramio_alloc(0, chunk, &d[n])) == 0)
            sz[n++] = chunk;
        if (!*rc) {
            *rc = r;
            snprintf(why, len, "%s", vramio_last_error());
        }
    }
    return n;
}

static void gpu_memory(void)
{
    static unsigned long long d[MAX_CHUNKS];
    static size_t sz[MAX_CHUNKS];
    const char *e = getenv("SOAK_VRAM_CHUNK");
    size_t free0 = 0, total = 0, free1 = 0, chunk = (size_t)1 << 30;
    unsigned long long more = 0;
    CUdeviceptr plain = 0;
    char why[512];
    int n, rc, have_info = cu.meminfo && cu.meminfo(&free0, &total) == CUDA_SUCCESS;

    if (e)
        chunk = (size_t)strtoull(e, NULL, 0);
    else if (have_info && free0 / 16 < chunk)
        chunk = (free0 / 16) & ~(2 * MIB - 1);
    n = fill(d, sz, chunk, &rc, why, sizeof(why));
    printf("# limits: %d allocations (the first of %zu MiB) before GPU memory ran out (%zu MiB "
           "free of %zu at the start)\n", n, chunk >> 20, free0 >> 20, total >> 20);
    t_check(n > 0 && n < MAX_CHUNKS && rc == ENOMEM && strstr(why, "MEMORY"),
            "limits/gpu_memory/refused_clearly", "after %d allocations: rc %d (%s)", n, rc, why);
    if (have_info) {    /* the driver's own allocation fails too (the stand-in's would not) */
        CUresult r = cu.alloc(&plain, 8 * MIB);
        t_check(r == CUDA_ERROR_OUT_OF_MEMORY, "limits/gpu_memory/driver_says_so_too",
                "cuMemAlloc(8 MiB) with the GPU full: CUDA error %d", (int)r);
        if (r == CUDA_SUCCESS)
            cu.free(plain);
    }
    if (n > 0) {
        t_check(pin_works(d[0], sz[0] < 64 * MIB ? sz[0] : 64 * MIB, NULL),
                "limits/gpu_memory/pins_still_work", "%s", vramio_last_error());
        /* The first (largest) given back: an allocation of its size works again. */
        vramio_free(d[0]);
        rc = vramio_alloc(0, sz[0], &more);
        t_check(rc == 0, "limits/gpu_memory/served_once_one_is_freed", "rc %d: %s", rc,
                vramio_last_error());
        d[0] = rc == 0 ? more : 0;
    }
    while (n > 0)
        if (d[--n])
            vramio_free(d[n]);
    vramio_pool_trim(-1);
    if (have_info && cu.meminfo(&free1, &total) == CUDA_SUCCESS)
        t_check(free1 + 64 * MIB >= free0, "limits/gpu_memory/nothing_left",
                "%zu MiB free, %zu before", free1 >> 20, free0 >> 20);
}

static void bar1(void)
{
    static unsigned long long d[MAX_CHUNKS];
    static gdr_mh_t mh[MAX_CHUNKS];
    struct soak_smi smi;
    const char *e = getenv("SOAK_BAR1_BYTES");
    size_t chunk = e ? 2 * MIB : 256 * MIB;
    int n, pinned, rc = 0;

    if (!e && soak_smi(&smi)) {
        t_skip("limits/bar1", "no nvidia-smi to say how large BAR1 is");
        return;
    }
    if (!e && smi.bar1_total >= smi.fb_total) {
        t_skip("limits/bar1", "BAR1 (%ld MiB) is larger than GPU memory (%ld MiB): pins of "
               "GPU memory cannot exhaust it", smi.bar1_total, smi.fb_total);
        return;
    }
    for (n = 0; n < MAX_CHUNKS && vramio_alloc(0, chunk, &d[n]) == 0; n++)
        ;
    for (pinned = 0; pinned < n && (rc = gdr_pin_buffer_v2(g, d[pinned], chunk, 0,
                                                           &mh[pinned])) == 0; pinned++)
        ;
    t_check(pinned < n && rc == ENOMEM && strstr(vramio_last_error(), "MEMORY"),
            "limits/bar1/refused_clearly", "%d of %d pinned, then rc %d (%s)", pinned, n, rc,
            vramio_last_error());
    if (pinned > 0 && pinned < n) {
        /* One pin given back: the refused buffer (d[pinned]) pins, in the freed slot. */
        gdr_unpin_buffer(g, mh[pinned - 1]);
        if (t_check(pin_works(d[pinned], chunk, &mh[pinned - 1]),
                    "limits/bar1/served_once_one_is_unpinned", "%s", vramio_last_error()) == 0)
            pinned--;
    }
    while (pinned > 0)
        gdr_unpin_buffer(g, mh[--pinned]);
    while (n > 0)
        vramio_free(d[--n]);
    vramio_pool_trim(-1);
}

void soak_limits(void)
{
    int fds0, maps0;

    if (soak_cuda_start() || !(g = gdr_open())) {
        t_fail("limits/start", "%s", vramio_last_error());
        return;
    }
    /* What lives as long as the process (the pool, the Vulkan device) before the counts. */
    {
        unsigned long long d = 0;

        if (vramio_alloc(0, 4 * MIB, &d) || !pin_works(d, 4 * MIB, NULL))
            t_fail("limits/warm_up", "%s", vramio_last_error());
        if (d)
            vramio_free(d);
        vramio_pool_trim(-1);
    }
    fds0 = t_count_fds();
    maps0 = soak_count_gpu_maps();
    fd_limit();
    gpu_memory();
    bar1();
    t_check(t_count_fds() == fds0 && soak_count_gpu_maps() == maps0,
            "limits/nothing_left", "descriptors %d -> %d, GPU mappings %d -> %d", fds0,
            t_count_fds(), maps0, soak_count_gpu_maps());
    gdr_close(g);
}

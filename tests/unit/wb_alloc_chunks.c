// SPDX-License-Identifier: MIT
/*
 * wb_alloc_chunks.c - vramio_alloc's large requests made of chunks (src/alloc/alloc.c), against
 * the VMM stand-in driver (tests/fake/fake_cuda_vmm.c, 2 MiB granularity) with 4 MiB chunks
 * (VRAMIO_POOL_CHUNK_MB=4): the layout (how many chunks, their sizes, the driver's range of
 * each), the block's range from an address in every chunk, a free that returns every chunk
 * (the stand-in's count of live handles: a mapping holds its handle, so a leaked mapping
 * shows too), a failure in the third chunk that leaves nothing (handles, mappings, the
 * reservation), and one allocation where chunks are off (VRAMIO_POOL_CHUNK_MB=0, a value
 * that is no multiple of the granularity, a GPU whose backends cannot pin across chunks, a
 * driver that does not describe a chunk as an allocation of its own: the pool's check).
 *
 * Whether the backends can pin across chunks is the core's answer (vr_pins_can_span): wrapped
 * here (-Wl,--wrap), answered from WB_SPANS (default 1; WB_SPANS_FIRST for the first question
 * only) and counted, so the pool's side is tested whatever the stand-in Vulkan offers. -1,
 * "cannot tell now", is a question left open: that request is one allocation, the next asks
 * again. Each case runs in a child of its own, the
 * stand-in on its library path.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t.h"
#include "vramio.h"

#define MIB (1ull << 20)

static int span_calls, span_gpus;   /* the pool's questions, and the GPUs asked (bit mask) */

int __wrap_vr_pins_can_span(int gpu);
int __wrap_vr_pins_can_span(int gpu)
{
    const char *e = getenv("WB_SPANS"), *first = getenv("WB_SPANS_FIRST");

    span_gpus |= 1 << gpu;
    if (span_calls++ == 0 && first)
        return atoi(first);
    return e ? atoi(e) : 1;
}

/* The stand-in's calls, found in the libcuda.so.1 that the library loaded. */
static int (*live_handles)(void);
static int (*addr_range)(unsigned long long *, size_t *, unsigned long long);
static int (*retain_ctx)(void **, int);
static int (*set_ctx)(void *);

static int driver_bind(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *ctx = NULL;

    if (!lib)
        return 0;
    live_handles = (int (*)(void))dlsym(lib, "fake_vmm_live");
    addr_range = (int (*)(unsigned long long *, size_t *, unsigned long long))
                 dlsym(lib, "cuMemGetAddressRange_v2");
    retain_ctx = (int (*)(void **, int))dlsym(lib, "cuDevicePrimaryCtxRetain");
    set_ctx = (int (*)(void *))dlsym(lib, "cuCtxSetCurrent");
    /* The driver answers ranges in a context, as the real one does. */
    return live_handles && addr_range && retain_ctx && set_ctx && retain_ctx(&ctx, 0) == 0 &&
           set_ctx(ctx) == 0;
}

/* Bytes of inaccessible anonymous mappings: a reservation left behind shows here. */
static unsigned long long reserved_bytes(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    unsigned long long lo, hi, sum = 0, inode;
    char perms[8], line[512];

    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "%llx-%llx %7s %*s %*s %llu", &lo, &hi, perms, &inode) == 4 &&
            strcmp(perms, "---p") == 0 && inode == 0)
            sum += hi - lo;
    if (f)
        fclose(f);
    return sum;
}

/* The first allocation of the pool, to load the driver and bind to it. */
static int start(void)
{
    unsigned long long d = 0;

    if (!t_check(vramio_alloc(0, 4096, &d) == 0 && driver_bind(), "start",
                 "vramio_alloc: %s", vramio_last_error()))
        return 0;
    vramio_free(d);
    return 1;
}

/* 9 MiB: 10 MiB rounded, chunks of 4, 4 and 2 MiB in one reservation. */
static void mode_layout(void)
{
    static const unsigned long long off[3] = { 0, 4 * MIB, 8 * MIB }, len[3] = { 4, 4, 2 };
    unsigned long long d = 0, b = 0, base = 0;
    size_t s = 0, size = 0;
    int before, after, i, ok = 1, spans0;

    if (!start())
        return;
    spans0 = span_calls;
    t_check(vramio_alloc(0, 4 * MIB, &d) == 0 && span_calls == spans0 && vramio_free(d) == 0,
            "chunk_size_request_not_asked", "asked %d times for a request of the chunk size",
            span_calls - spans0);
    before = live_handles();
    if (!t_check(vramio_alloc(0, 9 * MIB, &d) == 0, "alloc_9mib", "%s", vramio_last_error()))
        return;
    after = live_handles();
    t_check(after - before == 3, "three_chunks", "%d live handles more", after - before);
    for (i = 0; i < 3 && ok; i++)
        ok = addr_range(&b, &s, d + off[i] + MIB) == 0 && b == d + off[i] && s == len[i] * MIB;
    t_check(ok, "driver_range_of_each_chunk", "chunk %d: [+%lld MiB, %zu MiB)", i - 1,
            (long long)(b - d) / (long long)MIB, s >> 20);
    for (i = 0, ok = 1; i < 3 && ok; i++) {
        unsigned long long at[3] = { d + off[i], d + off[i] + MIB + 17,
                                     d + off[i] + len[i] * MIB - 1 };
        for (int k = 0; k < 3 && ok; k++)
            ok = vramio_alloc_range(at[k], &base, &size) == 0 && base == d && size == 10 * MIB;
    }
    t_check(ok, "block_range_from_every_chunk", "in chunk %d: base +%lld size %zu", i - 1,
            (long long)(base - d), size);
    t_check(vramio_alloc_range(d + 10 * MIB, &base, NULL) != 0 || base != d, "not_past_its_end",
            "the address after the block answered the block");
    t_check(vramio_free(d + 4 * MIB) == EINVAL, "free_of_a_chunk_einval", "accepted");
    t_check(vramio_free(d) == 0 && live_handles() == before, "free_returns_every_chunk",
            "%d live handles more than before", live_handles() - before);
    t_check(vramio_alloc_range(d + 5 * MIB, &base, NULL) == ENOENT &&
            vramio_alloc_range(d, &base, NULL) == ENOENT, "freed_block_found_nowhere",
            "vramio_alloc_range after the free: %d", vramio_alloc_range(d + 5 * MIB, &base, NULL));
    t_check(vramio_alloc(0, 16 * MIB, &d) == 0 && live_handles() == before + 4 &&
            vramio_free(d) == 0 && span_calls == spans0 + 1 && span_gpus == 1,
            "backends_asked_once_per_gpu", "asked %d times (GPUs %#x)", span_calls - spans0,
            span_gpus);
}

/* The stand-in holds 11 MiB (FAKE_CUDA_VRAM_BYTES) and 2 MiB are in use by the first slab:
 * 16 MiB's third chunk finds no room. */
static void mode_fail_third(void)
{
    unsigned long long d = 0, held = 0, res;
    int before, rc;

    if (!start())
        return;
    vramio_alloc(0, 4096, &held); /* a slab of 2 MiB stays */
    before = live_handles();
    res = reserved_bytes();
    rc = vramio_alloc(0, 16 * MIB, &d);
    t_check(rc == ENOMEM && d == 0, "out_of_memory_answered", "rc %d (%s)", rc,
            vramio_last_error());
    t_check(live_handles() == before, "no_chunk_left", "%d live handles more",
            live_handles() - before);
    /* No more than before (a sanitizer's own mappings may come and go meanwhile): the
     * reservation would be 16 MiB. */
    t_check(reserved_bytes() <= res, "no_reservation_left", "%lld bytes more reserved",
            (long long)(reserved_bytes() - res));
    t_check(vramio_alloc(0, 6 * MIB, &d) == 0 && live_handles() == before + 2 &&
            vramio_free(d) == 0 && live_handles() == before, "chunks_after_the_failure",
            "live %d, %s", live_handles() - before, vramio_last_error());
    vramio_free(held);
}

/* Chunks off: one allocation for 10 MiB (its driver range is the whole block). */
static void mode_one(void)
{
    unsigned long long d = 0, b = 0, base = 0;
    size_t s = 0, size = 0;
    int before;
    const char *asked = getenv("WB_EXPECT_ASKED");

    if (!start())
        return;
    before = live_handles();
    if (!t_check(vramio_alloc(0, 9 * MIB, &d) == 0, "alloc_9mib", "%s", vramio_last_error()))
        return;
    t_check(live_handles() - before == 1 && addr_range(&b, &s, d + 9 * MIB) == 0 && b == d &&
            s == 10 * MIB, "one_allocation", "%d handles, driver range +%lld %zu",
            live_handles() - before, (long long)(b - d), s);
    t_check(vramio_alloc_range(d + 9 * MIB, &base, &size) == 0 && base == d && size == 10 * MIB,
            "block_range_deep", "base +%lld size %zu", (long long)(base - d), size);
    t_check(span_calls == (asked ? atoi(asked) : 0), "backends_asked",
            "asked %d times", span_calls);
    t_check(vramio_free(d) == 0 && live_handles() == before, "freed", "%d handles more",
            live_handles() - before);
    /* The pool's decision stands: the next request is one allocation too, nothing asked. */
    t_check(vramio_alloc(0, 9 * MIB, &d) == 0 && live_handles() - before == 1 &&
            span_calls == (asked ? atoi(asked) : 0) && vramio_free(d) == 0 &&
            live_handles() == before, "decision_kept", "%d handles, asked %d times",
            live_handles() - before, span_calls);
}

/* Backends that cannot tell now at the first large request (their check ran out of memory
 * or descriptors): that request is one allocation, and the next asks again and chunks. */
static void mode_not_now(void)
{
    unsigned long long d = 0, e = 0;
    int before;

    if (!start())
        return;
    before = live_handles();
    t_check(vramio_alloc(0, 9 * MIB, &d) == 0 && live_handles() - before == 1 && span_calls == 1,
            "first_one_allocation", "%d handles, asked %d times: %s",
            live_handles() - before, span_calls, vramio_last_error());
    t_check(vramio_alloc(0, 9 * MIB, &e) == 0 && live_handles() - before == 4 && span_calls == 2,
            "next_asks_again_and_chunks", "%d handles more, asked %d times: %s",
            live_handles() - before, span_calls, vramio_last_error());
    t_check(vramio_free(d) == 0 && vramio_free(e) == 0 && live_handles() == before,
            "freed", "%d handles more", live_handles() - before);
}

/* Two GPUs: each pool asks once for its own GPU. */
static void mode_two_gpus(void)
{
    unsigned long long d0 = 0, d1 = 0, e0 = 0;

    if (!start())
        return;
    t_check(vramio_alloc(0, 9 * MIB, &d0) == 0 && vramio_alloc(1, 9 * MIB, &d1) == 0 &&
            vramio_alloc(0, 9 * MIB, &e0) == 0 && span_calls == 2 && span_gpus == 3,
            "asked_once_per_gpu", "asked %d times (GPUs %#x): %s", span_calls, span_gpus,
            vramio_last_error());
    vramio_free(d0);
    vramio_free(d1);
    vramio_free(e0);
}

/* Each case: its child's mode, run with its environment. */
struct child {
    const char *name;
    void (*run)(void);
    const char *env[4];
};

static const struct child cases[] = {
    { "chunks", mode_layout, { "VRAMIO_POOL_CHUNK_MB=4" } },
    { "chunks/fail_third", mode_fail_third, { "VRAMIO_POOL_CHUNK_MB=4",
                                              "FAKE_CUDA_VRAM_BYTES=11534336" } },
    { "chunks/two_gpus", mode_two_gpus, { "VRAMIO_POOL_CHUNK_MB=4", "FAKE_CUDA_DEVICES=2" } },
    { "chunks/not_now", mode_not_now, { "VRAMIO_POOL_CHUNK_MB=4", "WB_SPANS_FIRST=-1" } },
    { "chunks/off_0", mode_one, { "VRAMIO_POOL_CHUNK_MB=0" } },
    { "chunks/off_not_a_multiple", mode_one, { "VRAMIO_POOL_CHUNK_MB=3" } },
    { "chunks/off_not_a_number", mode_one, { "VRAMIO_POOL_CHUNK_MB=4x" } },
    { "chunks/off_cannot_span", mode_one, { "VRAMIO_POOL_CHUNK_MB=4", "WB_SPANS=0",
                                            "WB_EXPECT_ASKED=1" } },
    /* A driver that gives the first chunk's handle for an address in the second: the first
     * chunked block fails the pool's check, is undone and made as one allocation. */
    { "chunks/driver_not_per_chunk", mode_one, { "VRAMIO_POOL_CHUNK_MB=4",
                                                 "FAKE_CUDA_RETAIN_FIRST=1",
                                                 "WB_EXPECT_ASKED=1" } },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

int main(int argc, char **argv)
{
    const char *mode = t_child_mode(argc, argv);
    char dir[PATH_MAX], lib_path[PATH_MAX + 32];
    size_t i;

    if (mode) { /* the case's index */
        i = strtoul(mode, NULL, 10);
        if (i < NCASES)
            cases[i].run();
        return t_status();
    }
    if (!t_fake_cuda_dir("cuda-vmm", dir, sizeof(dir))) {
        t_skip("chunks", "no stand-in driver at %s (make fake-drivers)", dir);
        return t_status();
    }
    snprintf(lib_path, sizeof(lib_path), "LD_LIBRARY_PATH=%s", dir);
    for (i = 0; i < NCASES; i++) {
        static char out[1 << 16];
        const char *env[8] = { lib_path };
        char line[256], idx[16];
        int rc, sig = 0, k, n = 1;

        for (k = 0; k < 4 && cases[i].env[k]; k++)
            env[n++] = cases[i].env[k];
        snprintf(idx, sizeof(idx), "%zu", i);
        rc = t_run_self(idx, env, out, sizeof(out), &sig);
        /* The child's lines under the case's name. */
        for (char *p = out, *nl; *p; p = nl ? nl + 1 : p + strlen(p)) {
            nl = strchr(p, '\n');
            snprintf(line, sizeof(line), "%.*s", nl ? (int)(nl - p) : (int)strlen(p), p);
            if (!strncmp(line, "ok ", 3))
                printf("ok %s/%s\n", cases[i].name, line + 3);
            else if (!strncmp(line, "not ok ", 7))
                printf("not ok %s/%s\n", cases[i].name, line + 7);
            else if (!strncmp(line, "skip ", 5))
                printf("skip %s/%s\n", cases[i].name, line + 5);
            else if (*line)
                printf("# %s\n", line);
        }
        snprintf(line, sizeof(line), "%s/child", cases[i].name);
        t_check(rc == 0, line, "exit %d, signal %d", rc, sig);
    }
    return t_status();
}

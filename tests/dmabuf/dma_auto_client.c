// SPDX-License-Identifier: MIT
/*
 * dma_auto_client.c - vramio_copy_{to,from}_mapping_auto through the public API, against the
 * stand-in driver of fake_cuda_dmabuf.c, whose "device memory" is host memory that the test
 * reads and writes directly (test_dmabuf_emulated.sh runs it once per mode):
 *   set       VRAMIO_DMA_CROSSOVER_READ/_WRITE=8K: correct bytes for every size around the
 *             crossover, at two offsets, from and to a pageable and a pinned host buffer; the
 *             copy engine used exactly from the crossover up, only ever on a non-blocking
 *             private stream and with pinned host memory (bounce buffers for pageable);
 *             errors as gdr_copy_*_mapping's, and a failing copy engine mapped to an errno;
 *   noctx     the same with no CUDA context on the thread (the stand-in refuses copies
 *             without one): done in the primary context, the thread left without one;
 *   measured  no setting: the first large copy of each direction measures the crossover,
 *             with no call that waits for every kernel of the device (cuMemFree);
 *   otherctx  memory of a context other than its device's primary one: copied right, through
 *             the BAR (the primary context may not reach it).
 */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t.h"
#include "vramio.h"

#define DEV_BYTES (8u << 20)

static CUresult (*fake_alloc)(CUdeviceptr *, size_t);
static CUresult (*fake_host_alloc)(void **, size_t);
static CUresult (*fake_ctx_get)(CUcontext *);
static int (*dma_calls)(void), (*dma_legacy)(void), (*dma_pageable)(void), (*dma_blocking)(void);
static int (*device_syncs)(void);

struct fixture {
    gdr_t g;
    gdr_mh_t mh;
    unsigned char *map, *dev;   /* the mapping, and the same memory by its "device" address */
};

static int setup(struct fixture *f)
{
    CUdeviceptr d = 0;
    void *m = NULL;
    int rc;

    f->g = gdr_open();
    if (!t_check(f->g && fake_alloc(&d, DEV_BYTES) == CUDA_SUCCESS, "setup_open", "%s",
                 vramio_last_error()))
        return 0;
    rc = gdr_pin_buffer_v2(f->g, (unsigned long)d, DEV_BYTES, 0, &f->mh);
    if (rc == 0)
        rc = gdr_map(f->g, f->mh, &m, DEV_BYTES);
    if (!t_check(rc == 0, "setup_pin_map", "rc %d %s", rc, vramio_last_error()))
        return 0;
    f->map = m;
    f->dev = (unsigned char *)(uintptr_t)d;
    return 1;
}

/* Every size around x (and some far from it), both directions, host buffers pageable and
 * pinned: the bytes land where they should, and the copy engine runs exactly from x up. */
static void sizes_around(struct fixture *f, size_t x, const char *tag)
{
    static const size_t far[] = { 1, 8, 64, 4095, 4096, 65536 + 3, (2u << 20) + 1,
                                  (5u << 20) + 77 };
    size_t sizes[64], nsizes = 0, maxn = (5u << 20) + 77 + 64;
    unsigned char *pageable = malloc(maxn), *pinned = NULL, *want = malloc(maxn);
    int bad = 0, wrong_path = 0, used = 0;
    char name[96];

    if (!t_check(pageable && want && fake_host_alloc((void **)&pinned, maxn) == CUDA_SUCCESS,
                 "sizes_alloc", "out of memory"))
        return;
    for (size_t k = 0; k < sizeof(far) / sizeof(far[0]); k++)
        sizes[nsizes++] = far[k];
    for (size_t n = x - 3; n <= x + 3; n++)
        sizes[nsizes++] = n;
    for (int pin = 0; pin < 2; pin++) {
        unsigned char *h = pin ? pinned : pageable;

        for (size_t k = 0; k < nsizes; k++) {
            for (size_t off = 0; off <= 3; off += 3) {
                size_t n = sizes[k];
                int before = dma_calls(), rc, dma;

                /* write */
                t_pattern(h, n, (unsigned)(n + off));
                memset(f->dev + off, 0, n);
                rc = vramio_copy_to_mapping_auto(f->mh, f->map + off, h, n);
                dma = dma_calls() != before;
                bad += rc != 0 || memcmp(f->dev + off, h, n) != 0;
                wrong_path += dma != (n >= x);
                used += dma;
                /* read */
                t_pattern(want, n, (unsigned)(3 * n + off));
                memcpy(f->dev + off, want, n);
                memset(h, 0, n);
                before = dma_calls();
                rc = vramio_copy_from_mapping_auto(f->mh, h, f->map + off, n);
                dma = dma_calls() != before;
                bad += rc != 0 || memcmp(h, want, n) != 0;
                wrong_path += dma != (n >= x);
                used += dma;
            }
        }
    }
    snprintf(name, sizeof(name), "%s/data_every_size_both_ways", tag);
    t_check(bad == 0, name, "%d copies wrong", bad);
    snprintf(name, sizeof(name), "%s/copy_engine_from_crossover_up", tag);
    t_check(wrong_path == 0 && used > 0, name, "%d copies on the wrong side of %zu", wrong_path, x);
    snprintf(name, sizeof(name), "%s/private_nonblocking_stream_pinned_host", tag);
    t_check(dma_legacy() == 0 && dma_blocking() == 0 && dma_pageable() == 0, name,
            "legacy stream %d, blocking stream %d, pageable host %d", dma_legacy(),
            dma_blocking(), dma_pageable());
    free(pageable);
    free(want);
}

static void errors(struct fixture *f)
{
    unsigned char buf[16384] = { 0 };
    gdr_mh_t bogus = { 0x1234 };
    int rc;

    t_check(vramio_copy_to_mapping_auto(bogus, f->map, buf, sizeof(buf)) == EINVAL &&
                vramio_copy_from_mapping_auto(bogus, buf, f->map, sizeof(buf)) == EINVAL,
            "error_bad_handle", "accepted");
    t_check(vramio_copy_to_mapping_auto(f->mh, f->map + DEV_BYTES - 100, buf, sizeof(buf)) ==
                    EINVAL &&
                vramio_copy_from_mapping_auto(f->mh, buf, f->map - 1, sizeof(buf)) == EINVAL,
            "error_out_of_range", "accepted");
    t_check(vramio_copy_to_mapping_auto(f->mh, f->map, NULL, sizeof(buf)) == EINVAL &&
                vramio_copy_from_mapping_auto(f->mh, NULL, f->map, sizeof(buf)) == EINVAL,
            "error_null_host", "accepted");
    t_check(vramio_copy_to_mapping_auto(f->mh, f->map, buf, 0) == 0, "size_zero", "refused");
    setenv("FAKE_CUDA_FAIL_DMA", "2", 1);      /* CUDA_ERROR_OUT_OF_MEMORY */
    rc = vramio_copy_from_mapping_auto(f->mh, buf, f->map, sizeof(buf));
    t_check(rc == ENOMEM && strstr(vramio_last_error(), "cuMemcpyDtoHAsync"),
            "error_copy_engine_mapped", "rc %d '%s'", rc, vramio_last_error());
    setenv("FAKE_CUDA_FAIL_DMA", "700", 1);    /* CUDA_ERROR_ILLEGAL_ADDRESS */
    rc = vramio_copy_to_mapping_auto(f->mh, f->map, buf, sizeof(buf));
    t_check(rc == EIO, "error_copy_engine_other_eio", "rc %d", rc);
    unsetenv("FAKE_CUDA_FAIL_DMA");
}

static void mode_set(const char *tag)
{
    struct fixture f;
    size_t r = 0, w = 0;
    CUcontext c = (CUcontext)&f;

    if (!setup(&f))
        return;
    t_check(vramio_copy_auto_crossover(f.mh, &r, &w) == 0 && r == 8192 && w == 8192,
            "crossover_from_environment", "read %zu write %zu", r, w);
    sizes_around(&f, 8192, tag);
    errors(&f);
    fake_ctx_get(&c);
    if (strcmp(tag, "noctx") == 0)
        t_check(c == NULL, "noctx/thread_context_left_as_it_was", "a context is current");
    gdr_close(f.g);
}

static void mode_measured(void)
{
    struct fixture f;
    size_t r = 1, w = 1, n = 1u << 20;
    unsigned char *h = malloc(n);
    int ok, syncs;

    if (!setup(&f) || !h)
        return;
    syncs = device_syncs();
    t_check(vramio_copy_auto_crossover(f.mh, &r, &w) == 0 && r == 0 && w == 0,
            "measured/zero_before", "read %zu write %zu", r, w);
    /* A write below 64 KiB neither measures nor uses the copy engine; a read of 8 KiB measures
     * the read side (over 64 KiB of the mapping, into memory of the library's own). */
    {
        int before = dma_calls();

        t_pattern(h, 16384, 4);
        ok = vramio_copy_to_mapping_auto(f.mh, f.map, h, 16384) == 0 &&
             memcmp(f.dev, h, 16384) == 0;
        t_check(ok && dma_calls() == before && vramio_copy_auto_crossover(f.mh, &r, &w) == 0 &&
                    w == 0, "measured/small_write_bar_unmeasured", "engine %d, write %zu",
                dma_calls() - before, w);
        t_pattern(f.dev, 8192, 3);
        ok = vramio_copy_from_mapping_auto(f.mh, h, f.map, 8192) == 0 &&
             memcmp(f.dev, h, 8192) == 0;
        t_check(ok && vramio_copy_auto_crossover(f.mh, &r, &w) == 0 && r >= 4096 && w == 0,
                "measured/read_measured_by_8k", "data %d, read %zu write %zu", ok, r, w);
    }
    t_pattern(h, n, 5);
    ok = vramio_copy_to_mapping_auto(f.mh, f.map, h, n) == 0 && memcmp(f.dev, h, n) == 0;
    t_pattern(f.dev, n, 6);
    ok &= vramio_copy_from_mapping_auto(f.mh, h, f.map, n) == 0 && memcmp(f.dev, h, n) == 0;
    t_check(ok, "measured/data_of_calibrating_copies", "wrong bytes");
    t_check(vramio_copy_auto_crossover(f.mh, &r, &w) == 0 && r >= 4096 && w >= 4096, "measured/set",
            "read %zu write %zu", r, w);
    printf("# measured with the stand-in: read %zu, write %zu\n", r, w);
    /* A kernel of the program may be polling for this very thread's next write. */
    t_check(device_syncs() == syncs, "measured/no_device_wide_wait",
            "the measurement made %d calls that wait for every kernel (cuMemFree)",
            device_syncs() - syncs);
    free(h);
    gdr_close(f.g);
}

static void mode_otherctx(void)
{
    struct fixture f;
    size_t n = 1u << 20, r = 0, w = 0;
    unsigned char *h = malloc(n);
    int before, ok;

    if (!setup(&f) || !h)
        return;
    before = dma_calls();
    t_pattern(h, n, 9);
    ok = vramio_copy_to_mapping_auto(f.mh, f.map, h, n) == 0 && memcmp(f.dev, h, n) == 0;
    t_pattern(f.dev, n, 10);
    ok &= vramio_copy_from_mapping_auto(f.mh, h, f.map, n) == 0 && memcmp(f.dev, h, n) == 0;
    t_check(ok && dma_calls() == before, "otherctx/bar_not_engine", "data %s, %d engine copies",
            ok ? "right" : "wrong", dma_calls() - before);
    t_check(vramio_copy_auto_crossover(f.mh, &r, &w) == 0 && r == SIZE_MAX && w == SIZE_MAX,
            "otherctx/crossover_never", "read %zu write %zu", r, w);
    free(h);
    gdr_close(f.g);
}

int main(int argc, char **argv)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);

    if (argc != 2)
        return 2;
#define SYM(var, name) (var = lib ? (__typeof__(var))dlsym(lib, name) : NULL)
    if (!SYM(fake_alloc, "cuMemAlloc_v2") || !SYM(fake_host_alloc, "cuMemAllocHost_v2") ||
        !SYM(fake_ctx_get, "cuCtxGetCurrent") || !SYM(dma_calls, "fake_cuda_dma_calls") ||
        !SYM(dma_legacy, "fake_cuda_dma_legacy_stream") ||
        !SYM(dma_pageable, "fake_cuda_dma_pageable") ||
        !SYM(dma_blocking, "fake_cuda_dma_blocking_stream") ||
        !SYM(device_syncs, "fake_cuda_device_syncs")) {
        t_fail("setup", "libcuda.so.1 is not the stand-in driver");
        return 1;
    }
    if (strcmp(argv[1], "set") == 0 || strcmp(argv[1], "noctx") == 0)
        mode_set(argv[1]);
    else if (strcmp(argv[1], "measured") == 0)
        mode_measured();
    else if (strcmp(argv[1], "otherctx") == 0)
        mode_otherctx();
    else
        return 2;
    return t_status();
}

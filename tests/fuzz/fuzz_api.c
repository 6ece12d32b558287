/* SPDX-License-Identifier: MIT */
/*
 * fuzz_api.c - libFuzzer target: the public API as call sequences. Each input is a program of
 * up to FZ_OPS operations (open, close, pin with any address, size and flags, map with any
 * flags and size, copies and _auto copies at any offset and size, unmap, unpin, the queries,
 * allocation and free, faults of the stand-ins) on up to four gdr_t and sixteen handles,
 * closed or unpinned ones included, against libgdrapi.a built with ASan, UBSan and coverage.
 *
 * Built twice (tests/fuzz/fuzz.mk): fuzz_api_dmabuf runs over the dma-buf stand-in driver
 * (tests/fake/fake_cuda_dmabuf.c, its mmap preloaded), fuzz_api_vulkan over the VMM stand-in
 * and the stand-in Vulkan loader (fake_cuda_vmm.c, fake_vulkan.c); both with the gdrdrv
 * stand-in (fake_gdrdrv.c), whose module each open configures (absent, refused, versions 1.9 to
 * 2.7, its attributes). So every backend runs, alone and behind one another.
 *
 * Besides ASan and UBSan, a finding is (fz_finding): a return code that is not 0 or a positive
 * errno; a stale or foreign handle or gdr_t accepted; a copy inside what was mapped refused,
 * or one beyond the pinned range accepted; bytes that a copy put somewhere else than at the
 * pinned GPU address (each copy is checked against the GPU memory itself, which the stand-ins
 * keep in host memory); an info that disagrees with the pin; and, after every input, a
 * descriptor, a mapping of GPU memory, a gdrdrv pin or file, a VMM allocation or a Vulkan
 * import that the input's own cleanup (gdr_close, vramio_free) did not give back.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fake_gdrdrv.h"
#include "fuzz_api.h"

struct fz_state fz;
unsigned char *fz_host;
struct fz_gpu fz_gpus[FZ_NGPU];
int fz_ngpus;

/* ---- the stand-ins' counters ------------------------------------------------------------ */
static int (*vmm_live)(void), (*vk_live)(void);
static struct fz_counts base;

/* The stand-in Vulkan loader's count of live imports. */
static int (*vk_live_fn(void))(void)
{
    void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);

    return lib ? (int (*)(void))dlsym(lib, "fake_vk_live") : NULL;
}

static void standin_buffers(void)
{
    uintptr_t w;
    size_t wl;

    fgd_window(&w, &wl);
    fz_gpus[fz_ngpus++] = (struct fz_gpu){ w, wl };
    if (!FZ_VMM) {
        /* Driver 580's layout (fake_cuda_dmabuf.c): whole 1 MiB units, two in a row adjacent;
         * a small one, a whole unit, one of several units, one on device 1. */
        int (*alloc_on)(int, unsigned long long *, size_t) =
            (int (*)(int, unsigned long long *, size_t))fz_cuda_sym("fake_cuda_alloc_on");
        static const struct { int dev; size_t size; } want[] = {
            { 0, 64 << 10 }, { 0, 1 << 20 }, { 0, (5 << 20) / 2 }, { 0, 1 << 20 }, { 1, 1 << 20 },
        };
        unsigned long long d;

        if (!alloc_on)
            fz_finding("the dma-buf stand-in has no fake_cuda_alloc_on");
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
            if (alloc_on(want[i].dev, &d, want[i].size))
                fz_finding("the stand-in could not allocate %zu bytes", want[i].size);
            fz_gpus[fz_ngpus++] = (struct fz_gpu){ (uintptr_t)d, want[i].size };
        }
    } else {
        /* Plain cuMemAlloc memory, which the vulkan backend refuses (no allocation handle). */
        int (*alloc)(unsigned long long *, size_t) =
            (int (*)(unsigned long long *, size_t))fz_cuda_sym("cuMemAlloc_v2");
        unsigned long long d;

        if (!alloc || alloc(&d, 1 << 20))
            fz_finding("the VMM stand-in could not cuMemAlloc");
        fz_gpus[fz_ngpus++] = (struct fz_gpu){ (uintptr_t)d, 1 << 20 };
        vmm_live = (int (*)(void))fz_cuda_sym("fake_vmm_live");
        vk_live = vk_live_fn();
        if (!vmm_live || !vk_live)
            fz_finding("the VMM stand-ins have no fake_vmm_live / fake_vk_live");
    }
}

/* Give back everything the input made (as a program would at its end), then check that
 * nothing is left of it: against base, or (base NULL) to take base. */
static void cleanup_and_check(struct fz_counts *first)
{
    struct fz_counts now;
    int i;

    fz_faults_clear();          /* a program's end meets a working driver */
    for (i = 0; i < FZ_NG; i++)
        if (fz.gdrs[i].open && gdr_close(fz.gdrs[i].g) != 0)
            fz_finding("gdr_close of an open gdr_t failed: %s", vramio_last_error());
    for (i = 0; i < FZ_NA; i++)
        if (fz.allocs[i].d && vramio_free(fz.allocs[i].d) != 0)
            fz_finding("vramio_free of a live allocation failed: %s", vramio_last_error());
    if (FZ_VMM)
        vramio_pool_trim(-1);
    if (fgd_live_files() || fgd_live_pins() || fgd_live_maps())
        fz_finding("gdrdrv left: %d files, %d pins, %d mappings after every gdr_close",
                   fgd_live_files(), fgd_live_pins(), fgd_live_maps());
    if (vmm_live && vmm_live() != 0)
        fz_finding("%d VMM allocations live after every vramio_free and gdr_close", vmm_live());
    if (vk_live && vk_live() != 0)
        fz_finding("%d Vulkan imports live after every gdr_close", vk_live());
    fz_counts(&now);
    if (first)
        *first = now;
    else
        fz_counts_same(&base, &now, "after every gdr_close and vramio_free");
    memset(&fz, 0, sizeof(fz));
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char *const dmabuf_vars[] = {
        "FAKE_CUDA_DEVICES=2", "VRAMIO_DMA_CROSSOVER_READ=4K", "VRAMIO_DMA_CROSSOVER_WRITE=16K",
        NULL };
    /* Over the VMM stand-in the _auto copies measure their crossovers (dma_calibrate.c, at
     * the warm-up's first ones); over the dma-buf one they are set. */
    static const char *const vmm_vars[] = { "FAKE_CUDA_DEVICES=2", "FAKE_VK_GPUS=2", NULL };

    fz_start(argc, argv, FUZZ_STANDIN, FZ_VMM ? vmm_vars : dmabuf_vars);
    fz_host = aligned_alloc(4096, FZ_HOST_SIZE + 4096);
    if (!fz_host)
        fz_finding("no host buffer");
    standin_buffers();
    /* The process-wide state that lives as long as the process (the Vulkan instance, the copy
     * engine's streams and bounce buffers, the pools' tables) is made by a first round of every
     * kind of call before the counters are taken. */
    fz_warm_up();
    cleanup_and_check(&base);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int counted;
    struct fz_in in = { data, size };

    /* libFuzzer changes descriptors after LLVMFuzzerInitialize (-close_fd_mask): the
     * counters are taken again at the first input, before it does anything. */
    if (!counted++)
        fz_counts(&base);
    for (int i = 0; i < FZ_OPS && in.n; i++)
        fz_op(&in);
    cleanup_and_check(NULL);
    return 0;
}

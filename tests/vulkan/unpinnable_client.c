// SPDX-License-Identifier: MIT
/*
 * unpinnable_client.c - what gdr_open and vramio-run's bridge answer where the vulkan backend
 * can or cannot pin, against the stand-in CUDA driver and Vulkan loader (tests/fake/, whose
 * environment says how the machine falls short) or the system's Vulkan loader with no driver:
 * run by test_vulkan_unpinnable.sh, one case per process. Usage: unpinnable_client MODE NAME
 * [ARG]; each mode prints its result lines under NAME:
 *   null REASON   gdr_open returns NULL, and the reason it gives contains REASON
 *   usable        gdr_open returns a gdr_t, and memory of every GPU (vramio_alloc) pins, maps
 *                 and is written through the mapping
 *   partial       (GPU 1 without a Vulkan device, chosen by name) GPU 0 pins, GPU 1 is refused
 *                 with its reason
 *   force_pcie refused|taken
 *                 a GDR_PIN_FLAG_FORCE_PCIE pin of vramio_alloc memory: refused with EINVAL
 *                 (a GPU without a coherent link, as upstream), or taken (a coherent one)
 *   lazy          no Vulkan instance while the program only starts CUDA; one once gdr_open
 *                 has answered
 *   first_alloc   (under vramio-run) no Vulkan instance before the first cuMemAlloc; after it
 *                 one, and the block is the pool's
 *   fork          gdr_open made the instance; a forked child's exit() must not run the Vulkan
 *                 driver's exit handler (the stand-in's aborts in a child)
 *   refusals      each kind of memory the backend cannot pin is refused with a reason that
 *                 says what it is: plain cuMemAlloc memory, stream-ordered memory of the
 *                 default pool (no handle type), VMM memory made without a POSIX-fd handle
 *                 type, host memory
 *   pool_fd [unmapped|shifted]
 *                 stream-ordered memory of a pool made with a POSIX-fd handle type pins, and
 *                 its mapping is the block's own bytes (not its pool allocation's start); or,
 *                 where the driver does not say where the pool maps it, or says it other than
 *                 where the import shows the bytes, is refused saying so
 */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "t.h"
#include "vramio.h"

#define SZ (2u << 20)

static char name[160];

static const char *at(const char *what)
{
    static char buf[240];

    snprintf(buf, sizeof(buf), "%s/%s", name, what);
    return buf;
}

/* The stand-in loader's count of instances made; -1 when libvulkan.so.1 is not the stand-in. */
static int instances(void)
{
    void *vk = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_NOLOAD);
    int (*count)(void) = vk ? (int (*)(void))dlsym(vk, "fake_vk_instances") : NULL;

    if (!vk)
        return 0; /* not even loaded */
    return count ? count() : -1;
}

static int start_cuda(void)
{
    CUcontext ctx;
    CUdevice d;

    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&d, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, d) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        t_fail(at("cuda"), "the stand-in CUDA driver did not start");
        return 0;
    }
    return 1;
}

/* Pin, map and write memory of gpu: 0, or the error of the first step that failed. */
static int pin_map_write(gdr_t g, int gpu, uint32_t flags, char *why, size_t len)
{
    unsigned long long d = 0;
    gdr_mh_t mh;
    void *map = NULL;
    int rc;

    rc = vramio_alloc(gpu, SZ, &d);
    if (rc) {
        snprintf(why, len, "vramio_alloc(GPU %d): %s", gpu, vramio_last_error());
        return rc;
    }
    rc = gdr_pin_buffer_v2(g, (unsigned long)d, SZ, flags, &mh);
    if (rc) {
        snprintf(why, len, "pin (GPU %d): %d %s", gpu, rc, vramio_last_error());
    } else {
        rc = gdr_map(g, mh, &map, SZ);
        if (rc) {
            snprintf(why, len, "map (GPU %d): %s", gpu, vramio_last_error());
        } else {
            memset(map, 0x5a, 4096);
            gdr_unmap(g, mh, map, SZ);
        }
        gdr_unpin_buffer(g, mh);
    }
    vramio_free(d);
    return rc;
}

static void mode_null(const char *want)
{
    gdr_t g = gdr_open();

    if (g) {
        t_fail(at("gdr_open_null"), "gdr_open returned a gdr_t (backend usable)");
        gdr_close(g);
        return;
    }
    t_check(strstr(vramio_last_error(), want) != NULL, at("gdr_open_null"),
            "NULL, but the reason does not say '%s': %s", want, vramio_last_error());
}

static void mode_usable(const char *arg)
{
    gdr_t g = gdr_open();
    char why[512] = "";
    int n = 0, i, ok = 1;

    if (!t_check(g != NULL, at("gdr_open"), "NULL: %s", vramio_last_error()))
        return;
    cuDeviceGetCount(&n);
    for (i = 0; i < n && ok; i++)
        ok = pin_map_write(g, i, 0, why, sizeof(why)) == 0;
    t_check(ok && n > 0, at("every_gpu_pins"), "%d GPUs: %s", n, why);
    gdr_close(g);
}

static void mode_partial(const char *arg)
{
    gdr_t g = gdr_open();
    char why[512] = "";
    int rc;

    if (!t_check(g != NULL, at("gdr_open"), "NULL: %s", vramio_last_error()))
        return;
    rc = pin_map_write(g, 0, 0, why, sizeof(why));
    t_check(rc == 0, at("gpu0_pins"), "%s", why);
    rc = pin_map_write(g, 1, 0, why, sizeof(why));
    t_check(rc != 0 && strstr(why, "no Vulkan 1.1 device has the UUID of CUDA device 1"),
            at("gpu1_refused_with_reason"), "rc %d: %s", rc, why);
    gdr_close(g);
}

static void mode_force_pcie(const char *want)
{
    gdr_t g = gdr_open();
    char why[512] = "";
    int rc;

    if (!t_check(g != NULL, at("gdr_open"), "NULL: %s", vramio_last_error()))
        return;
    rc = pin_map_write(g, 0, GDR_PIN_FLAG_FORCE_PCIE, why, sizeof(why));
    if (strcmp(want, "taken") == 0)
        t_check(rc == 0, at("force_pcie_taken"), "%s", why);
    else
        t_check(rc == EINVAL && strstr(why, "coherent"), at("force_pcie_refused"),
                "rc %d (want EINVAL, a reason naming the coherent link): %s", rc, why);
    /* The flag's refusal leaves the pin without it untouched. */
    rc = pin_map_write(g, 0, 0, why, sizeof(why));
    t_check(rc == 0, at("default_pin_still_works"), "%s", why);
    gdr_close(g);
}

static void mode_lazy(const char *arg)
{
    gdr_t g;
    int n;

    n = instances();
    t_check(n == 0, at("no_instance_at_start"), "%d instances after cuInit", n);
    g = gdr_open();
    n = instances();
    t_check(g && n == 1, at("instance_made_by_gdr_open"), "gdr_open %s, %d instances",
            g ? "non-NULL" : vramio_last_error(), n);
    if (g)
        gdr_close(g);
}

static void mode_first_alloc(const char *arg)
{
    unsigned long long base = 0;
    CUdeviceptr d = 0;
    int n = instances();

    t_check(n == 0, at("no_instance_before_first_alloc"), "%d instances", n);
    if (cuMemAlloc(&d, 4096) != CUDA_SUCCESS) {
        t_fail(at("first_alloc"), "cuMemAlloc failed");
        return;
    }
    n = instances();
    t_check(n == 1 && vramio_alloc_range(d, &base, NULL) == 0, at("first_alloc_decides"),
            "%d instances after it, from the pool %d", n, vramio_alloc_range(d, &base, NULL) == 0);
    cuMemFree(d);
}

static void mode_fork(const char *arg)
{
    gdr_t g = gdr_open();
    pid_t pid;
    int st;

    if (!t_check(g != NULL && instances() == 1, at("gdr_open_made_instance"), "%s, %d instances",
                 g ? "open" : vramio_last_error(), instances()))
        return;
    fflush(NULL);
    pid = fork();
    if (pid == 0)
        exit(0);
    st = pid > 0 ? t_wait_child(pid, 30) : -1;
    t_check(st == 0, at("child_exit_skips_driver_teardown"),
            "child status %d (134: the driver's exit handler ran in it)", st);
    gdr_close(g);
}

/* A pin of [d, d + n): 0, or its refusal in why. */
static int pin_only(gdr_t g, CUdeviceptr d, size_t n, char *why, size_t len)
{
    gdr_mh_t mh;
    int rc = gdr_pin_buffer(g, (unsigned long)d, n, 0, 0, &mh);

    if (rc)
        snprintf(why, len, "%s", vramio_last_error());
    else
        gdr_unpin_buffer(g, mh);
    return rc;
}

static void refused_saying(gdr_t g, CUdeviceptr d, size_t n, const char *what, const char *want)
{
    char why[512] = "";
    int rc = pin_only(g, d, n, why, sizeof(why));

    t_check(rc != 0 && strstr(why, want) != NULL, at(what), "rc %d, the reason does not say "
            "'%s': %s", rc, want, why);
}

static void mode_refusals(const char *arg)
{
    gdr_t g = gdr_open();
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;
    CUdeviceptr d = 0, v = 0;
    static char host[1 << 16] __attribute__((aligned(65536)));

    if (!t_check(g != NULL, at("gdr_open"), "NULL: %s", vramio_last_error()))
        return;
    if (cuMemAlloc(&d, 65536) == CUDA_SUCCESS) {
        refused_saying(g, d, 65536, "plain_cumemalloc", "plain cudaMalloc/cuMemAlloc memory");
        cuMemFree(d);
    }
    if (cuMemAllocAsync(&d, 65536, NULL) == CUDA_SUCCESS) {
        refused_saying(g, d, 65536, "stream_ordered_default_pool",
                       "stream-ordered memory (cudaMallocAsync, cuMemAllocFromPoolAsync or a "
                       "CUDA graph's memory node) of a pool made without "
                       "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR");
        cuMemFreeAsync(d, NULL);
    }
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    if (cuMemCreate(&h, SZ, &prop, 0) == CUDA_SUCCESS) {
        if (cuMemAddressReserve(&v, SZ, 0, 0, 0) == CUDA_SUCCESS && cuMemMap(v, SZ, 0, h, 0) == 0) {
            acc.location = prop.location;
            acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
            cuMemSetAccess(v, SZ, &acc, 1);
            refused_saying(g, v, 65536, "vmm_without_fd",
                           "was created without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR");
            cuMemUnmap(v, SZ);
            cuMemAddressFree(v, SZ);
        }
        cuMemRelease(h);
    }
    refused_saying(g, (CUdeviceptr)(uintptr_t)host, sizeof(host), "host_memory",
                   "is not CUDA device memory");
    gdr_close(g);
}

static void mode_pool_fd(const char *arg)
{
    gdr_t g = gdr_open();
    CUmemPoolProps props;
    CUmemoryPool pool;
    CUdeviceptr a = 0, b = 0;
    unsigned char want[4096];
    gdr_info_t info;
    gdr_mh_t mh;
    void *map = NULL;
    char why[512] = "";
    int rc;

    if (!t_check(g != NULL, at("gdr_open"), "NULL: %s", vramio_last_error()))
        return;
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    if (cuMemPoolCreate(&pool, &props) || cuMemAllocFromPoolAsync(&a, 65536, pool, NULL) ||
        cuMemAllocFromPoolAsync(&b, 65536, pool, NULL)) {
        t_fail(at("pool"), "the stand-in made no pool");
        gdr_close(g);
        return;
    }
    memset((void *)(uintptr_t)a, 0x11, 65536);
    t_pattern(want, sizeof(want), 42);
    rc = gdr_pin_buffer(g, (unsigned long)b, 65536, 0, 0, &mh);
    if (rc) {
        snprintf(why, sizeof(why), "pin: %s", vramio_last_error());
    } else {
        if (gdr_map(g, mh, &map, 65536) || gdr_get_info(g, mh, &info)) {
            snprintf(why, sizeof(why), "map: %s", vramio_last_error());
            rc = 1;
        } else {
            /* As gdrdrv's: va and mapped_size count whole GPU pages, and page_size is that
             * page, not the VMM granularity of the allocation around it. */
            t_check(info.page_size == 65536 && info.va % info.page_size == 0 &&
                    info.mapped_size % info.page_size == 0, at("info_in_gpu_pages"),
                    "page_size %u, va %#llx, mapped_size %llu", (unsigned)info.page_size,
                    (unsigned long long)info.va, (unsigned long long)info.mapped_size);
            gdr_copy_to_mapping(mh, (char *)map + (b - info.va), want, sizeof(want));
            rc = memcmp(want, (void *)(uintptr_t)b, sizeof(want)) ||
                 ((unsigned char *)(uintptr_t)a)[0] != 0x11;
            if (rc)
                snprintf(why, sizeof(why), "the write through the mapping missed the block");
            gdr_unmap(g, mh, map, 65536);
        }
        gdr_unpin_buffer(g, mh);
    }
    if (strcmp(arg, "unmapped") == 0) /* a driver that does not say where the pool maps it */
        t_check(rc != 0 && strstr(why, "does not say where its pool's allocation is mapped"),
                at("refused_unmapped"), "rc %d: %s", rc, why);
    else if (strcmp(arg, "shifted") == 0) /* a driver that says it wrong: caught by the check */
        t_check(rc != 0 && strstr(why, "does not show a block's bytes at the block's offset"),
                at("refused_shifted"), "rc %d: %s", rc, why);
    else
        t_check(rc == 0, at("pins_the_block"), "%s", why);
    cuMemFreeAsync(a, NULL);
    cuMemFreeAsync(b, NULL);
    cuMemPoolDestroy(pool);
    gdr_close(g);
}

int main(int argc, char **argv)
{
    static const struct { const char *name; void (*run)(const char *arg); } modes[] = {
        { "null", mode_null }, { "usable", mode_usable }, { "partial", mode_partial },
        { "force_pcie", mode_force_pcie }, { "lazy", mode_lazy },
        { "first_alloc", mode_first_alloc }, { "fork", mode_fork },
        { "refusals", mode_refusals }, { "pool_fd", mode_pool_fd },
    };
    size_t i;

    if (argc < 3) {
        fprintf(stderr, "usage: %s MODE NAME [ARG]\n", argv[0]);
        return T_FAIL;
    }
    snprintf(name, sizeof(name), "%s", argv[2]);
    for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        if (strcmp(argv[1], modes[i].name) == 0)
            break;
    if (i == sizeof(modes) / sizeof(modes[0]))
        t_fail(at("mode"), "unknown mode '%s'", argv[1]);
    else if (start_cuda())
        modes[i].run(argc > 3 ? argv[3] : "");
    return t_status();
}

// SPDX-License-Identifier: MIT
/*
 * multigpu_client.c - the vulkan backend with several GPUs in one process, against the
 * stand-in CUDA driver and Vulkan loader (tests/fake/): run by test_multigpu.sh, one mode per
 * process, with the fakes found through LD_LIBRARY_PATH. It uses the library through its
 * public headers and checks it through the CUDA driver API (cuMemcpy with the GPU's own
 * context) and through what the stand-in Vulkan recorded: which physical device's VkDevice
 * imported the memory behind a mapping. The same program runs on real GPUs (see "real").
 *
 * Modes: both (one gdr_t pins and maps memory of GPU 0 and GPU 1 at once), cross (pins under
 * the other GPU's context or none; the context is left as it was), alloc (vramio_alloc of one
 * GPU from a thread whose context is the other's), missing (a GPU without a Vulkan device is
 * refused with a reason; the others still work), fork (a child is refused the parent's
 * handles with EACCES and leaves through exit() or _exit()), foreign (the stand-in Vulkan
 * refuses memory of another GPU, as the real driver does: what makes the other modes honest),
 * fork_start (a fork while another thread's gdr_open starts the driver: the child's exit()
 * must not run the driver's exit handler, registered already).
 * "MODE real" runs both, cross, alloc and fork on real GPUs (tests/gpu/run_multigpu_on_gpu.sh),
 * without the stand-ins' records.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vulkan/vulkan.h>
#include "t.h"
#include "vramio.h"

#define MIB (1u << 20)
#define SZ (2u * MIB)

#define CU_MUST(call) cu_must((call), #call, __LINE__)
static void cu_must(CUresult r, const char *what, int line)
{
    if (r == CUDA_SUCCESS)
        return;
    t_fail("setup", "line %d: %s failed: %d", line, what, (int)r);
    exit(1);
}

static int (*served_by)(const void *p, unsigned char uuid[16]);
static int (*vk_live)(void);

/* With the stand-ins, their records; on real GPUs (real = 1) only the data checks remain
 * (tests/gpu/run_multigpu_on_gpu.sh reads which GPU each import was for from the log). */
static int setup(int real)
{
    void *vk = dlopen("libvulkan.so.1", RTLD_NOW); /* the object the library loads too */
    int n = 0;

    served_by = vk ? (int (*)(const void *, unsigned char *))dlsym(vk, "fake_vk_served_by") : NULL;
    vk_live = vk ? (int (*)(void))dlsym(vk, "fake_vk_live") : NULL;
    if (!real && (!served_by || !vk_live)) {
        t_fail("setup", "libvulkan.so.1 is not the stand-in (tests/fake/fake_vulkan.c)");
        exit(1);
    }
    CU_MUST(cuInit(0));
    CU_MUST(cuDeviceGetCount(&n));
    if (n < 2) {
        t_skip("multigpu", "%d CUDA device%s here, 2 needed", n, n == 1 ? "" : "s");
        return 77;
    }
    return 0;
}

static CUcontext primary(int dev)
{
    CUcontext c;

    CU_MUST(cuDevicePrimaryCtxRetain(&c, dev));
    return c;
}

static CUcontext current(void)
{
    CUcontext c = NULL;

    CU_MUST(cuCtxGetCurrent(&c));
    return c;
}

/* NCCL's kind of allocation: cuMemCreate on dev with a POSIX-fd handle type. */
struct vmm { CUdeviceptr ptr; CUmemGenericAllocationHandle h; int dev; };

static void vmm_alloc(int dev, struct vmm *v)
{
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CU_MUST(cuMemCreate(&v->h, SZ, &prop, 0));
    CU_MUST(cuMemAddressReserve(&v->ptr, SZ, SZ, 0, 0));
    CU_MUST(cuMemMap(v->ptr, SZ, 0, v->h, 0));
    memset(&acc, 0, sizeof(acc));
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU_MUST(cuMemSetAccess(v->ptr, SZ, &acc, 1));
    v->dev = dev;
}

static void vmm_free(struct vmm *v)
{
    cuMemUnmap(v->ptr, SZ);
    cuMemAddressFree(v->ptr, SZ);
    cuMemRelease(v->h);
}

/* The GPU that owns the allocation holding ptr, from the driver's own record; -1 if none. */
static int owner_gpu(CUdeviceptr ptr)
{
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop;
    int dev = -1;

    if (cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)ptr) != CUDA_SUCCESS)
        return -1;
    if (cuMemGetAllocationPropertiesFromHandle(&prop, h) == CUDA_SUCCESS &&
        prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        dev = prop.location.id;
    cuMemRelease(h);
    return dev;
}

struct pin { gdr_mh_t mh; void *map; size_t len; CUdeviceptr ptr; int dev; };

static int pin_map(gdr_t g, CUdeviceptr ptr, size_t size, int dev, struct pin *p)
{
    gdr_info_t info;
    int rc;

    memset(p, 0, sizeof(*p));
    p->ptr = ptr;
    p->dev = dev;
    rc = gdr_pin_buffer(g, (unsigned long)ptr, size, 0, 0, &p->mh);
    if (rc)
        return rc;
    rc = gdr_get_info(g, p->mh, &info);
    if (!rc)
        rc = gdr_map(g, p->mh, &p->map, info.mapped_size);
    if (rc) {
        gdr_unpin_buffer(g, p->mh);
        return rc;
    }
    p->len = info.mapped_size;
    return 0;
}

static void unpin(gdr_t g, struct pin *p)
{
    gdr_unmap(g, p->mh, p->map, p->len);
    gdr_unpin_buffer(g, p->mh);
}

/* The pin is the vulkan backend's and was imported by the Vulkan device of its GPU's UUID. */
static int served_right(gdr_t g, const struct pin *p, char *why, size_t len)
{
    unsigned char got[16];
    vramio_backend_t be = VRAMIO_BACKEND_NONE;
    CUuuid want;
    int gpu;

    CU_MUST(cuDeviceGetUuid(&want, p->dev));
    if (vramio_handle_backend(g, p->mh, &be) || be != VRAMIO_BACKEND_VULKAN) {
        snprintf(why, len, "GPU %d's pin is served by backend %d, not vulkan", p->dev, (int)be);
        return 0;
    }
    if (!served_by)
        return 1; /* real GPUs: the import succeeded, and the data checks follow */
    gpu = served_by(p->map, got);
    if (gpu < 0 || memcmp(got, want.bytes, 16) != 0) {
        snprintf(why, len, "GPU %d's memory was imported by the Vulkan device of GPU %d", p->dev,
                 gpu);
        return 0;
    }
    return 1;
}

/* A CPU write through the mapping is what the GPU's own cuMemcpyDtoH sees (with that GPU's
 * context current), and a cuMemcpyHtoD is what a read through the mapping gets. */
static int copies_land(const struct pin *p, int seed, char *why, size_t len)
{
    static unsigned char a[64 * 1024], b[sizeof(a)];
    CUcontext saved = current();
    int ok = 1;

    t_pattern(a, sizeof(a), seed);
    gdr_copy_to_mapping(p->mh, p->map, a, sizeof(a));
    CU_MUST(cuCtxSetCurrent(primary(p->dev)));
    memset(b, 0, sizeof(b));
    CU_MUST(cuMemcpyDtoH(b, p->ptr, sizeof(b)));
    if (memcmp(a, b, sizeof(a)) != 0) {
        snprintf(why, len, "GPU %d: a write through the mapping is not in its memory", p->dev);
        ok = 0;
    }
    t_pattern(a, sizeof(a), seed + 1000);
    CU_MUST(cuMemcpyHtoD(p->ptr, a, sizeof(a)));
    CU_MUST(cuCtxSynchronize()); /* from pageable memory the DMA may still be in flight */
    memset(b, 0, sizeof(b));
    gdr_copy_from_mapping(p->mh, b, p->map, sizeof(b));
    if (ok && memcmp(a, b, sizeof(a)) != 0) {
        snprintf(why, len, "GPU %d: a read through the mapping misses cuMemcpyHtoD's data", p->dev);
        ok = 0;
    }
    CU_MUST(cuCtxSetCurrent(saved));
    return ok;
}

/* The first bytes at ptr (read by that GPU) are still pattern seed + 1000, the last one
 * copies_land left: nothing meant for another GPU landed there. */
static int untouched(const struct pin *p, int seed)
{
    unsigned char a[4096], b[4096];
    CUcontext saved = current();

    t_pattern(a, sizeof(a), seed + 1000);
    CU_MUST(cuCtxSetCurrent(primary(p->dev)));
    CU_MUST(cuMemcpyDtoH(b, p->ptr, sizeof(b)));
    CU_MUST(cuCtxSetCurrent(saved));
    return memcmp(a, b, sizeof(a)) == 0;
}

static int mode_both(void)
{
    struct vmm v[2];
    unsigned long long va[2] = { 0, 0 };
    struct pin p[4];
    char why[256] = "";
    gdr_t g = gdr_open();
    int i, rc, ok;

    if (!t_check(g != NULL, "both/open", "gdr_open: %s", vramio_last_error()))
        return 1;
    for (i = 0, ok = 1; i < 2; i++) {
        vmm_alloc(i, &v[i]);
        rc = vramio_alloc(i, MIB, &va[i]);
        if (ok && (rc || owner_gpu(va[i]) != i))
            ok = 0, snprintf(why, sizeof(why), "GPU %d: rc %d, owner %d", i, rc,
                             rc ? -1 : owner_gpu(va[i]));
    }
    t_check(ok, "both/vramio_alloc_on_each_gpu", "%s", why);
    /* Four pins in one gdr_t: NCCL-style and vramio_alloc memory of each GPU. */
    for (i = 0; i < 4; i++) {
        int dev = i % 2;
        CUdeviceptr ptr = i < 2 ? v[dev].ptr : (CUdeviceptr)va[dev];

        rc = pin_map(g, ptr, i < 2 ? SZ : MIB, dev, &p[i]);
        if (rc)
            return t_check(0, "both/pin_and_map_four", "GPU %d (%s): rc %d: %s", dev,
                           i < 2 ? "cuMemCreate" : "vramio_alloc", rc, vramio_last_error()), 1;
    }
    t_check(1, "both/pin_and_map_four", " ");
    for (i = 0, ok = 1; i < 4 && ok; i++)
        ok = served_right(g, &p[i], why, sizeof(why));
    t_check(ok, "both/each_pin_served_by_its_gpus_vulkan_device", "%s", why);
    for (i = 0, ok = 1; i < 4 && ok; i++)
        ok = copies_land(&p[i], i, why, sizeof(why));
    t_check(ok, "both/copies_land_in_the_right_allocation", "%s", why);
    for (i = 0, ok = 1; i < 4 && ok; i++)
        if (!untouched(&p[i], i))
            ok = 0, snprintf(why, sizeof(why), "pin %d (GPU %d) was overwritten", i, p[i].dev);
    t_check(ok, "both/other_allocations_untouched", "%s", why);
    for (i = 0; i < 4; i++)
        unpin(g, &p[i]);
    if (vk_live)
        t_check(vk_live() == 0, "both/imports_released_at_unpin", "%d Vulkan imports left",
                vk_live());
    for (i = 0; i < 2; i++) {
        vmm_free(&v[i]);
        vramio_free(va[i]);
    }
    t_check(gdr_close(g) == 0, "both/close", "%s", vramio_last_error());
    return 0;
}

/* Pin memory of GPU dev (a fresh allocation, so the export and import happen now) with
 * context ctx current; the pin must work, be served right, and leave ctx current. */
static void pin_under(gdr_t g, int dev, CUcontext ctx, const char *name)
{
    struct vmm v;
    struct pin p;
    char why[256] = "";
    int rc;

    vmm_alloc(dev, &v);
    CU_MUST(cuCtxSetCurrent(ctx));
    rc = pin_map(g, v.ptr, SZ, dev, &p);
    if (t_check(rc == 0, name, "rc %d: %s", rc, vramio_last_error())) {
        CUcontext after = current();
        char n2[128];

        snprintf(n2, sizeof(n2), "%s/context_kept", name);
        t_check(after == ctx, n2, "the current context changed from %p to %p", (void *)ctx,
                (void *)after);
        snprintf(n2, sizeof(n2), "%s/served_right", name);
        t_check(served_right(g, &p, why, sizeof(why)) && copies_land(&p, dev, why, sizeof(why)),
                n2, "%s", why);
        unpin(g, &p);
    }
    if (!ctx)
        CU_MUST(cuCtxSetCurrent(primary(0)));
    vmm_free(&v);
}

static int mode_cross(void)
{
    gdr_t g = gdr_open();

    if (!t_check(g != NULL, "cross/open", "gdr_open: %s", vramio_last_error()))
        return 1;
    pin_under(g, 1, primary(0), "cross/gpu1_memory_under_gpu0_context");
    pin_under(g, 0, primary(1), "cross/gpu0_memory_under_gpu1_context");
    pin_under(g, 1, NULL, "cross/gpu1_memory_without_context");
    pin_under(g, 0, primary(1), "cross/gpu0_memory_under_gpu1_context_again");
    t_check(gdr_close(g) == 0, "cross/close", "%s", vramio_last_error());
    return 0;
}

struct alloc_job { int ctx_dev, gpu; const char *name; };

/* In a thread of its own: make ctx_dev's context current (or none for -1), vramio_alloc on
 * gpu; the memory must be gpu's and the thread's context unchanged. */
static void *alloc_thread(void *arg)
{
    const struct alloc_job *j = arg;
    CUcontext ctx = j->ctx_dev >= 0 ? primary(j->ctx_dev) : NULL;
    unsigned long long d = 0;
    CUcontext after;
    int rc, owner;

    CU_MUST(cuCtxSetCurrent(ctx)); /* NULL unbinds the thread's first context */
    after = current();
    if (after != ctx) {
        t_check(0, j->name, "cannot set up the thread's context");
        return NULL;
    }
    rc = vramio_alloc(j->gpu, 3 * MIB, &d);      /* a slab of its own */
    after = current();
    owner = rc ? -1 : owner_gpu(d);
    t_check(rc == 0 && owner == j->gpu && after == ctx, j->name,
            "rc %d (%s), memory of GPU %d, context %p before, %p after", rc,
            rc ? vramio_last_error() : "", owner, (void *)ctx, (void *)after);
    if (!rc) {
        rc = vramio_alloc(j->gpu, 4096, &d);     /* and a small one from the shared slabs */
        if (rc || owner_gpu(d) != j->gpu || current() != ctx)
            printf("not ok %s/small: rc %d, owner %d\n", j->name, rc, rc ? -1 : owner_gpu(d));
    }
    return NULL;
}

static int mode_alloc(void)
{
    static const struct alloc_job jobs[] = {
        { 0, 1, "alloc/gpu1_from_gpu0_context" },
        { 1, 0, "alloc/gpu0_from_gpu1_context" },
        { -1, 1, "alloc/gpu1_without_context" },
    };
    unsigned long long d = 0;
    struct pin p;
    char why[256] = "";
    pthread_t t;
    gdr_t g;
    size_t i;
    int rc;

    for (i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
        pthread_create(&t, NULL, alloc_thread, (void *)&jobs[i]);
        pthread_join(t, NULL);
    }
    /* And memory of GPU 1 allocated under GPU 0's context pins as GPU 1's. */
    CU_MUST(cuCtxSetCurrent(primary(0)));
    g = gdr_open();
    rc = vramio_alloc(1, MIB, &d);
    if (!g || rc || pin_map(g, d, MIB, 1, &p) != 0) {
        t_check(0, "alloc/gpu1_memory_pins_as_gpu1", "open %p, alloc rc %d: %s", (void *)g, rc,
                vramio_last_error());
    } else {
        t_check(served_right(g, &p, why, sizeof(why)) && copies_land(&p, 5, why, sizeof(why)),
                "alloc/gpu1_memory_pins_as_gpu1", "%s", why);
        unpin(g, &p);
    }
    vramio_free(d);
    gdr_close(g);
    return 0;
}

static int mode_missing(void)
{
    CUcontext ctx = primary(1);
    struct vmm v[3];
    struct pin p;
    gdr_t g = gdr_open();
    int i, rc;

    if (!t_check(g != NULL, "missing/open", "gdr_open: %s", vramio_last_error()))
        return 1;
    for (i = 0; i < 3; i++)
        vmm_alloc(i, &v[i]);
    CU_MUST(cuCtxSetCurrent(ctx));
    for (i = 0; i < 2; i++) { /* twice: the refusal is remembered, with its reason */
        rc = pin_map(g, v[2].ptr, SZ, 2, &p);
        t_check(rc == ENODEV && strstr(vramio_last_error(), "UUID of CUDA device 2") &&
                    current() == ctx, i ? "missing/refused_again" : "missing/gpu_without_vulkan_device_refused",
                "rc %d, reason '%s', context %s", rc, vramio_last_error(),
                current() == ctx ? "kept" : "changed");
        if (!rc)
            unpin(g, &p);
    }
    for (i = 0; i < 2; i++) {
        char why[256] = "";

        rc = pin_map(g, v[i].ptr, SZ, i, &p);
        if (t_check(rc == 0, i ? "missing/gpu1_still_pins" : "missing/gpu0_still_pins",
                    "rc %d: %s", rc, vramio_last_error())) {
            t_check(served_right(g, &p, why, sizeof(why)) && copies_land(&p, i, why, sizeof(why)),
                    i ? "missing/gpu1_still_served_right" : "missing/gpu0_still_served_right",
                    "%s", why);
            unpin(g, &p);
        }
    }
    for (i = 0; i < 3; i++)
        vmm_free(&v[i]);
    t_check(gdr_close(g) == 0, "missing/close", "%s", vramio_last_error());
    return 0;
}

/* The child: every use of the parent's gdr_t and handles is refused with EACCES; the
 * parent's mappings are gone from it (MADV_DONTFORK). Then it leaves as told. */
static void fork_child(gdr_t g, struct pin *p, int n, int through_exit)
{
    gdr_info_t info;
    gdr_mh_t mh;
    void *va;
    int i, bad = 0;

    alarm(30);
    for (i = 0; i < n; i++) {
        bad |= gdr_map(g, p[i].mh, &va, p[i].len) != EACCES;
        bad |= gdr_get_info(g, p[i].mh, &info) != EACCES;
        bad |= gdr_pin_buffer(g, (unsigned long)p[i].ptr, SZ, 0, 0, &mh) != EACCES;
        bad |= gdr_unmap(g, p[i].mh, p[i].map, p[i].len) != EACCES;
        bad |= gdr_unpin_buffer(g, p[i].mh) != EACCES;
        bad |= t_touch_faults(p[i].map) == 0;
    }
    if (through_exit)
        exit(bad ? 3 : 0);
    _exit(bad ? 3 : 0);
}

static int mode_fork(void)
{
    struct vmm v[2];
    struct pin p[2];
    char why[256] = "";
    gdr_t g = gdr_open();
    int i, k, status, ok;
    pid_t pid;

    if (!t_check(g != NULL, "fork/open", "gdr_open: %s", vramio_last_error()))
        return 1;
    for (i = 0; i < 2; i++) {
        vmm_alloc(i, &v[i]);
        if (pin_map(g, v[i].ptr, SZ, i, &p[i]) != 0)
            return t_check(0, "fork/pin", "GPU %d: %s", i, vramio_last_error()), 1;
    }
    for (k = 0; k < 2; k++) {
        const char *name = k ? "fork/child_refused_then__exit" : "fork/child_refused_then_exit";

        fflush(NULL);
        pid = fork();
        if (pid < 0)
            return t_check(0, name, "fork failed"), 1;
        if (pid == 0)
            fork_child(g, p, 2, !k);
        if (t_wait_bounded(pid, &status, 60) != 0)
            t_check(0, name, "the child hung (killed after 60 s)");
        else
            t_check(WIFEXITED(status) && WEXITSTATUS(status) == 0, name,
                    "child status %#x (3: a call was not refused with EACCES, or a mapping was "
                    "inherited)", status);
    }
    for (i = 0, ok = 1; i < 2 && ok; i++)
        ok = served_right(g, &p[i], why, sizeof(why)) && copies_land(&p[i], i, why, sizeof(why));
    t_check(ok, "fork/parent_pins_still_work", "%s", why);
    for (i = 0; i < 2; i++) {
        unpin(g, &p[i]);
        vmm_free(&v[i]);
    }
    t_check(gdr_close(g) == 0, "fork/close", "%s", vramio_last_error());
    return 0;
}

/* A fork while another thread's gdr_open is starting the driver (FAKE_VK_START_MS; with the
 * vulkan backend alone gdr_open makes the instance, to know that it can pin): the driver's
 * exit handler is registered already, so a child that leaves through exit() must not run it.
 * The stand-in's handler aborts in a child, as the real driver's crashes. */
struct first_pin { gdr_t g; struct vmm v; struct pin p; int rc; };

static void *first_pin_thread(void *arg)
{
    struct first_pin *f = arg;

    f->g = gdr_open();
    f->rc = f->g ? pin_map(f->g, f->v.ptr, SZ, 0, &f->p) : ENODEV;
    return NULL;
}

static int mode_fork_start(void)
{
    static int (*starting)(void);
    struct first_pin f;
    pthread_t t;
    int status, waited;
    pid_t pid;

    starting = (int (*)(void))dlsym(dlopen("libvulkan.so.1", RTLD_NOW), "fake_vk_starting");
    memset(&f, 0, sizeof(f));
    if (!t_check(starting != NULL, "fork_start/stand_in", "no fake_vk_starting"))
        return 1;
    vmm_alloc(0, &f.v);
    pthread_create(&t, NULL, first_pin_thread, &f);
    for (waited = 0; !starting() && waited < 10000; waited++)
        usleep(1000);
    if (!t_check(starting(), "fork_start/driver_starting", "vkCreateInstance never started"))
        return 1;
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        /* The gdr_t is not made yet (its gdr_open is under way): only the exit is tried. */
        alarm(30);
        exit(0);
    }
    if (t_wait_bounded(pid, &status, 60) != 0)
        t_check(0, "fork_start/child_exits", "the child hung (killed after 60 s)");
    else
        t_check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork_start/child_exits",
                "child status %#x (signal 6: the driver's exit handler ran in the child)", status);
    pthread_join(t, NULL);
    t_check(f.g != NULL, "fork_start/open", "gdr_open: %s", vramio_last_error());
    t_check(f.rc == 0, "fork_start/first_pin", "%s", vramio_last_error());
    if (f.rc == 0)
        unpin(f.g, &f.p);
    vmm_free(&f.v);
    if (f.g)
        t_check(gdr_close(f.g) == 0, "fork_start/close", "%s", vramio_last_error());
    return 0;
}

/* The stand-in Vulkan itself refuses GPU 1's memory on GPU 0's device. */
static int mode_foreign(void)
{
    PFN_vkGetInstanceProcAddr gipa;
    void *vk = dlopen("libvulkan.so.1", RTLD_NOW);
    struct vmm v;
    int fd = -1;

    gipa = vk ? (PFN_vkGetInstanceProcAddr)dlsym(vk, "vkGetInstanceProcAddr") : NULL;
    if (!gipa)
        return t_check(0, "foreign/loader", "no vkGetInstanceProcAddr"), 1;
    vmm_alloc(1, &v);
    CU_MUST(cuMemExportToShareableHandle(&fd, v.h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    {
        PFN_vkCreateInstance ci = (PFN_vkCreateInstance)gipa(NULL, "vkCreateInstance");
        VkInstanceCreateInfo ici = { .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO };
        VkInstance inst;
        VkPhysicalDevice pd[2];
        uint32_t n = 2, i;
        VkResult r = VK_ERROR_UNKNOWN, r_own = VK_ERROR_UNKNOWN;

        CU_MUST(ci(&ici, NULL, &inst) == VK_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
        ((PFN_vkEnumeratePhysicalDevices)gipa(inst, "vkEnumeratePhysicalDevices"))(inst, &n, pd);
        for (i = 0; i < n; i++) {
            VkPhysicalDeviceIDProperties id = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES };
            VkPhysicalDeviceProperties2 p2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                               .pNext = &id };
            const char *ext = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
            VkDeviceCreateInfo dci = { .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                                       .enabledExtensionCount = 1, .ppEnabledExtensionNames = &ext };
            VkImportMemoryFdInfoKHR imp = { .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
                                            .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT };
            VkMemoryAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                        .pNext = &imp, .allocationSize = SZ, .memoryTypeIndex = 2 };
            PFN_vkGetDeviceProcAddr gdpa = (PFN_vkGetDeviceProcAddr)gipa(inst, "vkGetDeviceProcAddr");
            CUuuid u;
            VkDevice dev;
            VkDeviceMemory mem;
            int which;

            ((PFN_vkGetPhysicalDeviceProperties2)gipa(inst, "vkGetPhysicalDeviceProperties2"))(pd[i], &p2);
            CU_MUST(cuDeviceGetUuid(&u, 0));
            which = memcmp(id.deviceUUID, u.bytes, 16) == 0 ? 0 : 1;
            CU_MUST(((PFN_vkCreateDevice)gipa(inst, "vkCreateDevice"))(pd[i], &dci, NULL, &dev) ==
                    VK_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
            imp.fd = dup(fd);
            if (which == 0) {
                r = ((PFN_vkAllocateMemory)gdpa(dev, "vkAllocateMemory"))(dev, &ai, NULL, &mem);
                close(imp.fd); /* refused: still ours */
            } else {
                r_own = ((PFN_vkAllocateMemory)gdpa(dev, "vkAllocateMemory"))(dev, &ai, NULL, &mem);
                if (r_own == VK_SUCCESS)
                    ((PFN_vkFreeMemory)gdpa(dev, "vkFreeMemory"))(dev, mem, NULL);
            }
            ((PFN_vkDestroyDevice)gdpa(dev, "vkDestroyDevice"))(dev, NULL);
        }
        t_check(r == VK_ERROR_INVALID_EXTERNAL_HANDLE && r_own == VK_SUCCESS,
                "foreign/stand_in_refuses_another_gpus_memory",
                "import into GPU 0's device: %d, into GPU 1's: %d", (int)r, (int)r_own);
    }
    close(fd);
    vmm_free(&v);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct { const char *name; int (*fn)(void); } modes[] = {
        { "both", mode_both }, { "cross", mode_cross }, { "alloc", mode_alloc },
        { "missing", mode_missing }, { "fork", mode_fork }, { "foreign", mode_foreign },
        { "fork_start", mode_fork_start },
    };
    size_t i;
    int rc;

    if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "real") != 0)) {
        fprintf(stderr, "usage: %s MODE [real]\n", argv[0]);
        return 2;
    }
    rc = setup(argc == 3);
    if (rc)
        return rc;
    for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
        if (strcmp(argv[1], modes[i].name) == 0)
            return modes[i].fn() | t_status();
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}

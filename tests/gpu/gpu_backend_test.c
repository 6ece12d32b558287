/* SPDX-License-Identifier: MIT */
/*
 * gpu_backend_test.c - the kernel-module-free backends on a real GPU, through the public API
 * alone, every copy checked against cuMemcpy: vramio_alloc memory and NCCL-style VMM
 * allocations mapped and copied both ways, unaligned pins, many pins in one allocation, 16
 * threads at once, unpin and close with live mappings, CUDA freeing pinned memory, cudaMalloc
 * memory refused with a clear error, the dma-buf refusal, a forced absent backend, a forked
 * child using its parent's gdr_t, pin and map flags, and each GPU of a machine with several.
 * Run it as root and as an ordinary user.
 * Prints one line per case (ok / not ok / skip); exits 1 when any case failed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "gpu_common.h"
#include "t.h"

#define MiB (1ull << 20)

static gdr_t g;

/* Copy n random bytes into the mapping at `at` (GPU address d), then check with cuMemcpyDtoH;
 * then cuMemcpyHtoD other bytes and check gdr_copy_from_mapping reads them. */
static int roundtrip(gdr_mh_t mh, void *at, CUdeviceptr d, size_t n, uint64_t seed, char *why,
                     size_t wlen)
{
    unsigned char *a = malloc(n), *b = malloc(n);
    int ok = 0, rc;

    if (!a || !b)
        goto out;
    t_pattern(a, n, seed);
    rc = gdr_copy_to_mapping(mh, at, a, n);
    if (rc) {
        snprintf(why, wlen, "gdr_copy_to_mapping: %d %s", rc, vramio_last_error());
        goto out;
    }
    if (cuMemcpyDtoH(b, d, n) || memcmp(a, b, n)) {
        snprintf(why, wlen, "CPU->GPU: cuMemcpyDtoH sees other bytes (%zu at 0x%llx)", n,
                 (unsigned long long)d);
        goto out;
    }
    t_pattern(a, n, seed + 1);
    if (cuMemcpyHtoD(d, a, n) || cuCtxSynchronize())
        goto out;
    memset(b, 0, n);
    rc = gdr_copy_from_mapping(mh, b, at, n);
    if (rc || memcmp(a, b, n)) {
        snprintf(why, wlen, "GPU->CPU: gdr_copy_from_mapping (rc %d) sees other bytes", rc);
        goto out;
    }
    ok = 1;
out:
    free(a);
    free(b);
    return ok;
}

static void test_open(void)
{
    static const vramio_backend_t bs[] = { VRAMIO_BACKEND_GDRDRV, VRAMIO_BACKEND_DMABUF,
                                           VRAMIO_BACKEND_VULKAN };
    vramio_backend_t b = VRAMIO_BACKEND_NONE;
    int major = 0, minor = 0, v1 = -1, v2 = -1, v3 = -1;
    char why[256];
    size_t i;

    g = gdr_open();
    if (!t_check(g != NULL, "open", "gdr_open: %s", vramio_last_error())) {
        exit(1);
    }
    for (i = 0; i < 3; i++) {
        int rc = vramio_backend_status(g, bs[i], why, sizeof(why));
        printf("# backend %s: %s (%d)\n", vramio_backend_name(bs[i]), why, rc);
    }
    vramio_get_backend(g, &b);
    t_check(b == VRAMIO_BACKEND_VULKAN, "open_first_backend_vulkan", "first usable is %s",
                vramio_backend_name(b));
    gdr_driver_get_version(g, &major, &minor);
    t_check(major == 2 && minor >= 5, "driver_version", "%d.%d", major, minor);
    gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &v1);
    gdr_get_attribute(g, GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE, &v2);
    gdr_get_attribute(g, GDR_ATTR_USING_DMA_BUF_MMAP, &v3);
    t_check(v1 == 1 && v2 == 1 && v3 == 0, "attributes", "persistent %d force_pcie %d dmabuf %d",
                v1, v2, v3);
}

/* Pin, info, map, copy both ways on one allocation; name says which kind. */
static void check_whole(const char *name, CUdeviceptr d, size_t size, size_t alloc_size)
{
    char tname[96], why[256] = "";
    gdr_mh_t mh = { 0 };
    gdr_info_t info;
    vramio_backend_t b = VRAMIO_BACKEND_NONE;
    void *map = NULL, *at = NULL;
    size_t len = 0;
    int rc;

    snprintf(tname, sizeof(tname), "%s_pin_map", name);
    rc = gpu_pin_map(g, d, size, &mh, &map, &len, &at);
    if (!t_check(rc == 0, tname, "rc %d: %s", rc, vramio_last_error()))
        return;
    gdr_get_info(g, mh, &info);
    vramio_handle_backend(g, mh, &b);
    printf("# %s: va 0x%llx mapped_size %llu page_size %u type %d backend %s\n", name,
           (unsigned long long)info.va, (unsigned long long)info.mapped_size, info.page_size,
           (int)info.mapping_type, vramio_backend_name(b));
    snprintf(tname, sizeof(tname), "%s_info", name);
    t_check(info.va == d && info.mapped_size == (size + 0xffff) / 0x10000 * 0x10000 &&
                    info.mapped && info.wc_mapping && info.mapping_type == GDR_MAPPING_TYPE_WC &&
                    info.page_size >= 65536 && info.page_size <= alloc_size &&
                    b == VRAMIO_BACKEND_VULKAN,
                tname, "va 0x%llx/0x%llx size %llu page %u mapped %u wc %u type %d backend %s",
                (unsigned long long)info.va, (unsigned long long)d,
                (unsigned long long)info.mapped_size, info.page_size, info.mapped,
                info.wc_mapping, (int)info.mapping_type, vramio_backend_name(b));
    snprintf(tname, sizeof(tname), "%s_copy_both_ways", name);
    t_check(roundtrip(mh, at, d, size, 11, why, sizeof(why)), tname, "%s", why);
    snprintf(tname, sizeof(tname), "%s_map_twice_eagain", name);
    {
        void *m2 = NULL;
        rc = gdr_map(g, mh, &m2, len);
        t_check(rc == EAGAIN, tname, "second gdr_map gave %d", rc);
    }
    snprintf(tname, sizeof(tname), "%s_unmap_unpin", name);
    rc = gdr_unmap(g, mh, map, len);
    t_check(rc == 0 && gdr_unpin_buffer(g, mh) == 0, tname, "unmap %d", rc);
}

static void test_alloc_and_vmm(void)
{
    unsigned long long d = 0;
    struct gpu_vmm v;
    int rc;

    rc = vramio_alloc(0, 3 * MiB, &d);
    if (t_check(rc == 0 && d, "vramio_alloc", "rc %d: %s", rc, vramio_last_error())) {
        check_whole("vramio_alloc", d, 3 * MiB, 4 * MiB);
        t_check(vramio_free(d) == 0, "vramio_free", "%s", vramio_last_error());
        t_check(vramio_free(d) == EINVAL, "vramio_free_twice", "not EINVAL");
    }
    if (t_check(gpu_vmm_alloc(8 * MiB, &v) == 0, "nccl_vmm_alloc", "cuMemCreate path failed")) {
        check_whole("nccl_vmm", v.ptr, v.size, v.size);
        gpu_vmm_free(&v);
    }
}

/* Two allocations mapped side by side in one reservation (expandable segments, NCCL's
 * buffers): a pin inside the second maps the second; a pin across both is refused. */
static void test_two_in_one_reservation(void)
{
    CUmemGenericAllocationHandle h[2];
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;
    CUdeviceptr base = 0, rb = 0;
    size_t gran = 0, rs = 0, len;
    gdr_mh_t mh;
    void *map, *at;
    char why[256] = "";
    int i, rc;

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CU_MUST(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CU_MUST(cuMemAddressReserve(&base, 2 * gran, gran, 0, 0));
    memset(&acc, 0, sizeof(acc));
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    for (i = 0; i < 2; i++) {
        CU_MUST(cuMemCreate(&h[i], gran, &prop, 0));
        CU_MUST(cuMemMap(base + i * gran, gran, 0, h[i], 0));
    }
    CU_MUST(cuMemSetAccess(base, 2 * gran, &acc, 1));
    cuMemGetAddressRange(&rb, &rs, base + gran + 100);
    printf("# two allocations of %zu at 0x%llx: cuMemGetAddressRange(second) = 0x%llx + %zu\n",
           gran, (unsigned long long)base, (unsigned long long)rb, rs);

    rc = gpu_pin_map(g, base + gran + 100, 5000, &mh, &map, &len, &at);
    if (t_check(rc == 0, "two_allocs_pin_second", "rc %d: %s", rc, vramio_last_error())) {
        t_check(roundtrip(mh, at, base + gran + 100, 5000, 21, why, sizeof(why)),
                    "two_allocs_copy_second", "%s", why);
        gdr_unpin_buffer(g, mh);
    }
    rc = gdr_pin_buffer_v2(g, (unsigned long)(base + gran - 4096), 8192, 0, &mh);
    t_check(rc != 0, "two_allocs_pin_across_refused", "a pin across two allocations "
                "succeeded");
    if (rc == 0)
        gdr_unpin_buffer(g, mh);
    else
        printf("# across: %s\n", vramio_last_error());
    for (i = 0; i < 2; i++) {
        cuMemUnmap(base + i * gran, gran);
        cuMemRelease(h[i]);
    }
    cuMemAddressFree(base, 2 * gran);
}

/* Pin and map flags: FORCE_PCIE is taken on a GPU with a coherent link (Grace) and refused
 * with EINVAL elsewhere, as upstream's module and dma-buf path refuse it (UCX's gdr_copy test
 * gdr_copy_reg_cuda_pcie_pin_fail expects that); a WC mapping may be requested, a cached or
 * device one cannot be granted. */
static void test_flags(void)
{
    unsigned long long d = 0;
    gdr_mh_t mh;
    void *m = NULL;
    int rc, coherent = 0;
    CUdevice dev;

    if (vramio_alloc(0, 2 * MiB, &d))
        return (void)t_check(0, "flags_alloc", "%s", vramio_last_error());
    if (cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDeviceGetAttribute(&coherent,
                             CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
                             dev) != CUDA_SUCCESS)
        coherent = 0;
    rc = gdr_pin_buffer_v2(g, (unsigned long)d, 65536, GDR_PIN_FLAG_FORCE_PCIE, &mh);
    if (coherent)
        t_check(rc == 0, "pin_force_pcie_taken_coherent_gpu", "%d %s", rc, vramio_last_error());
    else
        t_check(rc == EINVAL, "pin_force_pcie_refused_no_coherent_link", "%d %s", rc,
                vramio_last_error());
    if (rc == 0)
        gdr_unpin_buffer(g, mh);
    rc = gdr_pin_buffer_v2(g, (unsigned long)d, 65536, 0, &mh);
    if (t_check(rc == 0, "pin_default_flags", "%d %s", rc, vramio_last_error())) {
        rc = gdr_map_v2(g, mh, &m, 65536, GDR_MAP_FLAG_REQ_CACHE_MAPPING);
        t_check(rc == EINVAL, "map_req_cache_einval", "gave %d", rc);
        rc = gdr_map_v2(g, mh, &m, 65536, GDR_MAP_FLAG_REQ_DEVICE_MAPPING);
        t_check(rc == EINVAL, "map_req_device_einval", "gave %d", rc);
        rc = gdr_map_v2(g, mh, &m, 65536, GDR_MAP_FLAG_REQ_WC_MAPPING);
        t_check(rc == 0 && m, "map_req_wc_granted", "gave %d", rc);
        gdr_unpin_buffer(g, mh);
    }
    vramio_free(d);
}

/* Each pin goes to the GPU that owns its address. */
static void test_multi_gpu(void)
{
    int n = 0, i, ok = 1;
    char why[256] = "";

    cuDeviceGetCount(&n);
    if (n < 2)
        return t_skip("multi_gpu_pins", "%d GPU on this machine", n);
    for (i = 0; i < n && ok; i++) {
        unsigned long long d = 0;
        gdr_mh_t mh;
        void *map, *at;
        size_t len;
        CUcontext c, prev;
        CUdevice dv;

        CU_MUST(cuDeviceGet(&dv, i)); /* cuMemcpy through a context of the owning GPU */
        CU_MUST(cuDevicePrimaryCtxRetain(&c, dv));
        CU_MUST(cuCtxPushCurrent(c));
        if (vramio_alloc(i, 2 * MiB, &d) || gpu_pin_map(g, d, 2 * MiB, &mh, &map, &len, &at)) {
            ok = 0;
            snprintf(why, sizeof(why), "GPU %d: %s", i, vramio_last_error());
            break;
        }
        ok = roundtrip(mh, at, d, 2 * MiB, 70 + (uint64_t)i, why, sizeof(why));
        gdr_unpin_buffer(g, mh);
        vramio_free(d);
        cuCtxPopCurrent(&prev);
    }
    t_check(ok, "multi_gpu_pins", "%s", why);
}

static void test_unaligned(void)
{
    static const struct { size_t off, n; } cases[] = {
        { 0x12345, 777 }, { 1, 1 }, { 0xffff, 2 }, { 2 * MiB - 1, 1 }, { 3, 70000 },
        { 0x10000 - 8, 0x20010 },
    };
    unsigned long long d = 0;
    size_t i, len;
    char name[64], why[256];
    int all_info = 1;

    if (vramio_alloc(0, 2 * MiB, &d)) {
        t_check(0, "unaligned_alloc", "%s", vramio_last_error());
        return;
    }
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        CUdeviceptr a = d + cases[i].off;
        gdr_mh_t mh;
        gdr_info_t info;
        void *map, *at;
        int rc = gpu_pin_map(g, a, cases[i].n, &mh, &map, &len, &at);

        snprintf(name, sizeof(name), "unaligned_%zx_%zu", cases[i].off, cases[i].n);
        if (!t_check(rc == 0, name, "pin: %d %s", rc, vramio_last_error()))
            continue;
        gdr_get_info(g, mh, &info);
        if (info.va != (a & ~0xffffull) ||
            info.va + info.mapped_size < a + cases[i].n || info.mapped_size % 65536) {
            all_info = 0;
            printf("# %s: va 0x%llx size %llu\n", name, (unsigned long long)info.va,
                   (unsigned long long)info.mapped_size);
        }
        why[0] = '\0';
        t_check(roundtrip(mh, at, a, cases[i].n, 31 + i, why, sizeof(why)), name, "%s", why);
        gdr_unpin_buffer(g, mh);
    }
    t_check(all_info, "unaligned_info_rounding", "va/mapped_size not rounded to 64 KiB");
    {
        gdr_mh_t mh;
        int rc = gdr_pin_buffer_v2(g, (unsigned long)(d + 2 * MiB - 100), 200, 0, &mh);
        t_check(rc != 0, "pin_past_allocation_end_refused", "succeeded");
        if (rc == 0)
            gdr_unpin_buffer(g, mh);
    }
    vramio_free(d);
}

/* 200 pins at random places in one 32 MiB allocation, plus one over all of it. */
static void test_many_pins(void)
{
    enum { N = 200, SLOT = 160 * 1024 };
    const size_t total = 32 * MiB;
    unsigned long long d = 0;
    gdr_mh_t mh[N], whole;
    void *at[N], *map, *wat;
    size_t off[N], n[N], len;
    unsigned char *exp = calloc(1, total), *got = malloc(total), *buf = malloc(SLOT);
    unsigned seed = 7;
    int i, ok = 1, rc;

    if (!exp || !got || !buf || vramio_alloc(0, total, &d)) {
        t_check(0, "many_pins_setup", "%s", vramio_last_error());
        goto out;
    }
    CU_MUST(cuMemsetD8(d, 0, total));
    for (i = 0; i < N && ok; i++) {
        off[i] = (size_t)i * SLOT + rand_r(&seed) % (SLOT / 2);
        n[i] = 1 + rand_r(&seed) % (SLOT / 2);
        rc = gpu_pin_map(g, d + off[i], n[i], &mh[i], &map, &len, &at[i]);
        if (rc) {
            ok = t_check(0, "many_pins_pin", "pin %d: %d %s", i, rc, vramio_last_error());
            break;
        }
        t_pattern(exp + off[i], n[i], 100 + i);
        gdr_copy_to_mapping(mh[i], at[i], exp + off[i], n[i]);
    }
    if (!ok)
        goto out;
    t_check(1, "many_pins_pin", "%s", "");
    CU_MUST(cuMemcpyDtoH(got, d, total));
    t_check(memcmp(exp, got, total) == 0, "many_pins_data", "cuMemcpy sees other bytes");
    rc = gpu_pin_map(g, d, total, &whole, &map, &len, &wat);
    if (t_check(rc == 0, "many_pins_whole_over_them", "%d %s", rc, vramio_last_error())) {
        gdr_copy_from_mapping(whole, got, wat, total);
        t_check(memcmp(exp, got, total) == 0, "many_pins_whole_reads_all", "differs");
    }
    /* Unpin in a shuffled order; the others keep working. */
    for (i = 0; i < N; i++) {
        int j = i + (int)(rand_r(&seed) % (unsigned)(N - i)), k;
        gdr_mh_t t = mh[i]; void *ta = at[i]; size_t to = off[i], tn = n[i];

        mh[i] = mh[j]; at[i] = at[j]; off[i] = off[j]; n[i] = n[j];
        mh[j] = t; at[j] = ta; off[j] = to; n[j] = tn;
        gdr_unpin_buffer(g, mh[i]);
        if (i % 50 == 0)
            for (k = i + 1; k < N; k += 37) {
                gdr_copy_from_mapping(mh[k], buf, at[k], n[k]);
                ok &= memcmp(buf, exp + off[k], n[k]) == 0;
            }
    }
    t_check(ok, "many_pins_survive_unpins", "a remaining pin read wrong data");
    if (rc == 0)
        gdr_unpin_buffer(g, whole);
    vramio_free(d);
out:
    free(exp);
    free(got);
    free(buf);
}

/* 16 threads pin, map, copy, check and unpin at once: half in a shared allocation (disjoint
 * slices), half in allocations of their own; half have no CUDA context current. */
enum { NT = 16, ROUNDS = 150 };
static unsigned long long shared_d;
static int thread_bad[NT];
static char thread_why[NT][256];

static void *pin_thread(void *arg)
{
    int t = (int)(intptr_t)arg, i;
    struct gpu_vmm own = { 0 };
    unsigned seed = 1000 + (unsigned)t;
    const size_t slice = 4 * MiB;
    int with_ctx = t % 2 == 0;

    gpu_cuda_thread();
    if (t >= NT / 2 && gpu_vmm_alloc(slice, &own)) {
        thread_bad[t] = 1;
        snprintf(thread_why[t], 256, "own allocation failed");
        return NULL;
    }
    if (!with_ctx)
        CU_MUST(cuCtxSetCurrent(NULL)); /* the library must cope with no context */
    for (i = 0; i < ROUNDS && !thread_bad[t]; i++) {
        CUdeviceptr base = t < NT / 2 ? shared_d + (CUdeviceptr)t * slice : own.ptr;
        size_t off = rand_r(&seed) % (slice - 70000), n = 1 + rand_r(&seed) % 65536, len;
        unsigned char a[65536], b[65536];
        gdr_mh_t mh;
        void *map, *at;
        int rc = gpu_pin_map(g, base + off, n, &mh, &map, &len, &at);

        if (rc) {
            thread_bad[t] = 1;
            snprintf(thread_why[t], 256, "pin: %d %s", rc, vramio_last_error());
            break;
        }
        t_pattern(a, n, (uint64_t)t * 1000 + (uint64_t)i);
        gdr_copy_to_mapping(mh, at, a, n);
        gdr_copy_from_mapping(mh, b, at, n);
        if (memcmp(a, b, n)) {
            thread_bad[t] = 1;
            snprintf(thread_why[t], 256, "read back differs at round %d", i);
        }
        if (with_ctx && (cuMemcpyDtoH(b, base + off, n) || memcmp(a, b, n))) {
            thread_bad[t] = 1;
            snprintf(thread_why[t], 256, "cuMemcpy differs at round %d", i);
        }
        gdr_unmap(g, mh, map, len);
        gdr_unpin_buffer(g, mh);
    }
    if (own.ptr) {
        if (!with_ctx)
            gpu_cuda_thread();
        gpu_vmm_free(&own);
    }
    return NULL;
}

static void test_threads(void)
{
    pthread_t th[NT];
    int t, bad = 0;
    uint64_t t0;

    if (vramio_alloc(0, (NT / 2) * 4 * MiB, &shared_d)) {
        t_check(0, "threads16", "alloc: %s", vramio_last_error());
        return;
    }
    t0 = gpu_now_ns();
    for (t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, pin_thread, (void *)(intptr_t)t);
    for (t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    for (t = 0; t < NT; t++)
        if (thread_bad[t]) {
            bad++;
            printf("# thread %d: %s\n", t, thread_why[t]);
        }
    printf("# 16 threads x %d pin/map/copy/check/unpin: %.1f ms\n", ROUNDS,
           (gpu_now_ns() - t0) / 1e6);
    t_check(bad == 0, "threads16", "%d threads failed", bad);
    vramio_free(shared_d);
}

static void test_live_teardown(void)
{
    unsigned long long d = 0;
    gdr_mh_t mh, mhs[3];
    gdr_info_t info;
    void *map, *at;
    size_t len;
    gdr_t g2;
    int i, rc, ok = 1;
    unsigned char b[64];

    if (vramio_alloc(0, 2 * MiB, &d))
        return (void)t_check(0, "unpin_live_mapping", "%s", vramio_last_error());
    rc = gpu_pin_map(g, d, 2 * MiB, &mh, &map, &len, &at);
    t_check(rc == 0 && gdr_unpin_buffer(g, mh) == 0, "unpin_live_mapping", "rc %d", rc);
    t_check(gdr_get_info(g, mh, &info) != 0 && gdr_unmap(g, mh, map, len) != 0,
                "stale_handle_refused", "a stale handle was accepted");
    g2 = gdr_open();
    for (i = 0; g2 && i < 3; i++)
        ok &= gpu_pin_map(g2, d + (CUdeviceptr)i * 65536, 65536, &mhs[i], &map, &len, &at) == 0;
    t_check(g2 && ok && gdr_close(g2) == 0, "close_live_mappings", "open %p pins %d", (void *)g2,
                ok);
    t_check(cuMemcpyDtoH(b, d, sizeof(b)) == CUDA_SUCCESS, "cuda_fine_after_close", "cuMemcpy");
    vramio_free(d);
}

/* CUDA frees an allocation while it is pinned and mapped: no crash, the mapping keeps the old
 * pages (they are not handed to the next allocation), the callback flag says so, and a new
 * pin at the (possibly same) address maps the new memory. */
static void test_free_while_pinned(void)
{
    const size_t n = 2 * MiB;
    struct gpu_vmm a, b;
    unsigned char *p1 = malloc(n), *p2 = malloc(n), *got = malloc(n);
    gdr_mh_t mh, mh2;
    void *map, *at, *map2, *at2;
    size_t len, len2;
    int flag = -1, rc;
    CUdeviceptr old;

    if (!p1 || !p2 || !got || gpu_vmm_alloc(n, &a))
        return (void)t_check(0, "free_while_pinned", "setup");
    rc = gpu_pin_map(g, a.ptr, n, &mh, &map, &len, &at);
    if (!t_check(rc == 0, "free_while_pinned_pin", "%d %s", rc, vramio_last_error()))
        return;
    t_pattern(p1, n, 501);
    gdr_copy_to_mapping(mh, at, p1, n);
    gdr_get_callback_flag(g, mh, &flag);
    t_check(flag == 0, "callback_flag_clear_while_allocated", "flag %d", flag);
    old = a.ptr;
    gpu_vmm_free(&a); /* unmap, free the VA, release the handle: CUDA forgets it */
    gdr_copy_from_mapping(mh, got, at, n);
    t_check(memcmp(got, p1, n) == 0, "free_while_pinned_mapping_keeps_data", "changed");
    gdr_get_callback_flag(g, mh, &flag);
    t_check(flag == 1, "callback_flag_set_after_free", "flag %d", flag);
    if (gpu_vmm_alloc(n, &b))
        return (void)t_check(0, "free_while_pinned_realloc", "alloc");
    printf("# new allocation at 0x%llx (%s address)\n", (unsigned long long)b.ptr,
           b.ptr == old ? "same" : "another");
    t_pattern(p2, n, 502);
    CU_MUST(cuMemcpyHtoD(b.ptr, p2, n));
    gdr_copy_from_mapping(mh, got, at, n);
    t_check(memcmp(got, p1, n) == 0, "freed_pages_not_reused", "the old mapping shows new data");
    gdr_copy_to_mapping(mh, at, p1, 4096);
    CU_MUST(cuMemcpyDtoH(got, b.ptr, n));
    t_check(memcmp(got, p2, n) == 0, "old_mapping_does_not_alias_new", "new memory changed");
    rc = gpu_pin_map(g, b.ptr, n, &mh2, &map2, &len2, &at2);
    if (t_check(rc == 0, "pin_new_allocation_same_va", "%d %s", rc, vramio_last_error())) {
        gdr_copy_from_mapping(mh2, got, at2, n);
        t_check(memcmp(got, p2, n) == 0, "new_pin_maps_new_memory", "stale import reused");
        gdr_unpin_buffer(g, mh2);
    }
    t_check(gdr_unpin_buffer(g, mh) == 0, "unpin_after_cuda_free", "failed");
    gpu_vmm_free(&b);
    free(p1);
    free(p2);
    free(got);
}

static void test_cudamalloc_refused(void)
{
    CUdeviceptr d = 0;
    gdr_mh_t mh;
    int rc;

    CU_MUST(cuMemAlloc(&d, MiB));
    rc = gdr_pin_buffer(g, (unsigned long)d, MiB, 0, 0, &mh);
    printf("# cudaMalloc pin: %d: %s\n", rc, vramio_last_error());
    t_check(rc != 0 && strstr(vramio_last_error(), "vramio_alloc"), "cudamalloc_refused_clearly",
                "rc %d, error '%s'", rc, vramio_last_error());
    if (rc == 0)
        gdr_unpin_buffer(g, mh);
    cuMemFree(d);
}

/* ---- child processes: a fresh process with a chosen environment -------------------- */

static int run_child(const char *mode, const char *env, char *out, size_t len)
{
    const char *envv[] = { env, NULL };

    return t_run_self(mode, env ? envv : NULL, out, len, NULL);
}

static int child_main(const char *mode)
{
    gdr_t c = gdr_open();
    unsigned long long d = 0;
    vramio_backend_t b = VRAMIO_BACKEND_NONE;
    gdr_mh_t mh;

    printf("result %s\nlast_error %s\n", c ? "handle" : "NULL", vramio_last_error());
    if (!c)
        return 0;
    gpu_cuda_setup();
    if (vramio_alloc(0, 2 * MiB, &d) == 0 &&
        gdr_pin_buffer_v2(c, (unsigned long)d, 4096, 0, &mh) == 0) {
        vramio_handle_backend(c, mh, &b);
        printf("pinned_by %s\n", vramio_backend_name(b));
    } else {
        printf("pin_failed %s\n", vramio_last_error());
    }
    gdr_close(c);
    return 0;
}

static void test_dmabuf_refusal(void)
{
    char why[256] = "", out[8192];
    int rc, ver = 0;

    cuDriverGetVersion(&ver);
    rc = vramio_backend_status(g, VRAMIO_BACKEND_DMABUF, why, sizeof(why));
    t_check(rc != 0 && why[0], "dmabuf_reason_in_open", "status %d '%s'", rc, why);
    rc = run_child("open", "GDRCOPY_USE_DMABUF_MMAP=1", out, sizeof(out));
    printf("# GDRCOPY_USE_DMABUF_MMAP=1 child (exit %d):\n%s", rc, out);
    if (ver >= 13030) {
        t_skip("dmabuf_forced_reports_524", "CUDA driver %d may map dma-buf exports", ver);
        return;
    }
    t_check(rc == 0 && strstr(out, "524"), "dmabuf_forced_reports_524",
                "no errno 524 in the forced child's report");
}

static void test_forced_absent(void)
{
    char out[8192];
    int rc = run_child("open", "GDRCOPY_BACKEND=gdrdrv", out, sizeof(out));

    printf("# GDRCOPY_BACKEND=gdrdrv child (exit %d):\n%s", rc, out);
    t_check(rc == 0 && strstr(out, "result NULL") && strstr(out, "gdrdrv"),
                "forced_absent_backend_null_with_reason", "child said: %s", out);
    rc = run_child("open", "GDRCOPY_BACKEND=vulkan", out, sizeof(out));
    t_check(rc == 0 && strstr(out, "pinned_by vulkan"), "forced_vulkan_pins",
                "child said: %s", out);
}

static void test_fork_child(void)
{
    unsigned long long d = 0;
    gdr_mh_t mh, mh2;
    void *map, *at;
    size_t len;
    int status = 0;
    pid_t pid;

    if (vramio_alloc(0, 2 * MiB, &d) || gpu_pin_map(g, d, 65536, &mh, &map, &len, &at))
        return (void)t_check(0, "fork_child_refused", "setup: %s", vramio_last_error());
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int rc = gdr_pin_buffer_v2(g, (unsigned long)d + 65536, 4096, 0, &mh2);
        _exit(rc != 0 ? 0 : 3);
    }
    waitpid(pid, &status, 0);
    t_check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork_child_refused",
                "child status 0x%x", status);
    gdr_unpin_buffer(g, mh);
    vramio_free(d);
}

int main(int argc, char **argv)
{
    /* These programs test the vulkan backend too: opt in (a user's own setting wins). */
    setenv("VRAMIO_ENABLE_VULKAN", "1", 0);
    if (t_child_mode(argc, argv))
        return child_main(t_child_mode(argc, argv));
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("# uid %d\n", (int)getuid());
    gpu_cuda_setup();
    test_open();
    test_alloc_and_vmm();
    test_two_in_one_reservation();
    test_flags();
    test_multi_gpu();
    test_unaligned();
    test_many_pins();
    test_threads();
    test_live_teardown();
    test_free_while_pinned();
    test_cudamalloc_refused();
    test_dmabuf_refusal();
    test_forced_absent();
    test_fork_child();
    t_check(gdr_close(g) == 0, "close", "%s", vramio_last_error());
    return t_status();
}

// SPDX-License-Identifier: MIT
/*
 * dmabuf_r610_checks.c - what only a real CUDA driver can settle about the dmabuf backend,
 * one question per run ("dmabuf_r610_checks CHECK", run_dmabuf_r610_checks.sh runs each in a
 * fresh process). Most need a driver that lets the CPU map dma-buf exports (13.3, the 610
 * series, or newer); on an older one they say "not R610" and settle nothing. Two run anywhere:
 *   nocuda     gdr_open with gdrdrv loaded leaves CUDA alone (no /dev/nvidia* descriptor opened,
 *              dmabuf "not probed"); skipped where /dev/gdrdrv is absent (the H200: module
 *              loading disabled);
 *   refused    (driver older than 13.3) a forced gdr_open fails, names both driver versions,
 *              and leaves no primary context active and no descriptor open; the PCIE flag's
 *              export code there.
 * On 13.3 or newer:
 *   pcie       what the export answers to the PCIE mapping flag, and gdr_pin_buffer_v2(FORCE_PCIE)
 *              follows it: refused with EINVAL where the driver refuses the flag (x86 on 580),
 *              else pins, maps WC and moves the right bytes;
 *   offset     bytes right through a real mapping of pins at a 4 KiB-aligned (not 64 KiB) and an
 *              unaligned address, both directions, checked with cuMemcpy;
 *   export     cuMemGetHandleForAddressRange by dlsym and by cuGetProcAddress at 13.3 and at the
 *              driver's version: the same entry point? do the exports map?
 *   contexts   GPU 1's memory pinned with no context current leaves GPU 0's primary context
 *              alone; which contexts a raw export needs;
 *   vmm        VMM memory (which no context owns) pinned with no context current: pin, map,
 *              bytes; the raw export with none current;
 *   free       a baseline read through the mapping, then whether it survives cuMemFree, and
 *              whether it ever shows memory allocated afterwards;
 *   stale      reads through the library reach the device (back-to-back reads of one address
 *              no faster than half a plain load) and never return what a copy-engine write
 *              replaced (peek, write by cuMemcpyHtoD, read: 0 stale in every round);
 *   refusals   managed memory; 1 GiB buffers pinned, mapped and touched (first and last byte read,
 *              a fault caught) until the device's memory or BAR1 runs out; whether a refused
 *              buffer maps once the others are released;
 *   pte        the mapping's memory type: the kernel's PAT list where readable (x86, root,
 *              debugfs), else timing (cached reads, combined writes), and on arm64 whether an
 *              unaligned load faults (Device memory); compared with the type the library reports.
 * Lines "# verdict CHECK: ..." answer the question; other "# " lines are findings; then result
 * lines (ok / skip / not ok) for what can go wrong for the library. CUDA is loaded with dlopen,
 * so a missing entry point makes only its own check a skip.
 */
#include <cuda.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "gdrapi.h"
#include "t.h"
#include "vramio.h"

typedef CUresult (*export_fn)(void *, CUdeviceptr, size_t, CUmemRangeHandleType,
                              unsigned long long);

static struct {
    CUresult (*init)(unsigned), (*version)(int *), (*count)(int *), (*get)(CUdevice *, int);
    CUresult (*attr)(int *, CUdevice_attribute, CUdevice), (*total)(size_t *, CUdevice);
    CUresult (*retain)(CUcontext *, CUdevice), (*state)(CUdevice, unsigned *, int *);
    CUresult (*push)(CUcontext), (*pop)(CUcontext *), (*set)(CUcontext);
    CUresult (*alloc)(CUdeviceptr *, size_t), (*free)(CUdeviceptr);
    CUresult (*managed)(CUdeviceptr *, size_t, unsigned);
    CUresult (*memset)(CUdeviceptr, unsigned char, size_t), (*sync)(void);
    CUresult (*htod)(CUdeviceptr, const void *, size_t), (*dtoh)(void *, CUdeviceptr, size_t);
    CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                       unsigned long long);
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                    unsigned long long);
    CUresult (*access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    CUresult (*unmap)(CUdeviceptr, size_t), (*addr_free)(CUdeviceptr, size_t);
    CUresult (*release)(CUmemGenericAllocationHandle);
    CUresult (*gran)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
    export_fn exp;
    void *lib;
} cu;

#define MB (1ull << 20)
#define GB (1ull << 30)

static int load(void)
{
    void *l = dlopen("libcuda.so.1", RTLD_NOW);

    cu.lib = l;
#define S(f, n) (cu.f = l ? (__typeof__(cu.f))dlsym(l, n) : NULL)
    S(init, "cuInit"); S(version, "cuDriverGetVersion"); S(count, "cuDeviceGetCount");
    S(get, "cuDeviceGet"); S(attr, "cuDeviceGetAttribute"); S(total, "cuDeviceTotalMem_v2");
    S(retain, "cuDevicePrimaryCtxRetain"); S(state, "cuDevicePrimaryCtxGetState");
    S(push, "cuCtxPushCurrent_v2"); S(pop, "cuCtxPopCurrent_v2"); S(set, "cuCtxSetCurrent");
    S(alloc, "cuMemAlloc_v2"); S(free, "cuMemFree_v2"); S(managed, "cuMemAllocManaged");
    S(memset, "cuMemsetD8_v2"); S(sync, "cuCtxSynchronize");
    S(htod, "cuMemcpyHtoD_v2"); S(dtoh, "cuMemcpyDtoH_v2"); S(gpa, "cuGetProcAddress_v2");
    S(create, "cuMemCreate"); S(reserve, "cuMemAddressReserve"); S(map, "cuMemMap");
    S(access, "cuMemSetAccess"); S(unmap, "cuMemUnmap"); S(addr_free, "cuMemAddressFree");
    S(release, "cuMemRelease"); S(gran, "cuMemGetAllocationGranularity");
    S(exp, "cuMemGetHandleForAddressRange");
#undef S
    return cu.init && cu.version && cu.count && cu.get && cu.attr && cu.retain && cu.push &&
           cu.pop && cu.set && cu.alloc && cu.free && cu.exp && cu.htod && cu.dtoh && cu.sync;
}

/* ---- helpers --------------------------------------------------------------------------- */

/* Export [d, d + n) with fn and mmap it: the CUresult in *r, the fd in *fd, the mapping or NULL
 * (errno in *err). */
static void *export_map_with(export_fn fn, CUdeviceptr d, size_t n, unsigned long long flags,
                             CUresult *r, int *fd, int *err)
{
    void *m;

    *fd = -1;
    *err = 0;
    *r = fn(fd, d, n, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, flags);
    if (*r != CUDA_SUCCESS)
        return NULL;
    m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    if (m == MAP_FAILED) {
        *err = errno;
        return NULL;
    }
    return m;
}

static void *export_map(CUdeviceptr d, size_t n, unsigned long long flags, CUresult *r, int *fd,
                        int *err)
{
    return export_map_with(cu.exp, d, n, flags, r, fd, err);
}

static void unexport(void *m, size_t n, int fd)
{
    if (m)
        munmap(m, n);
    if (fd >= 0)
        close(fd);
}

static CUcontext primary(int dev)
{
    CUdevice d;
    CUcontext c = NULL;

    if (cu.get(&d, dev) == CUDA_SUCCESS)
        cu.retain(&c, d);
    return c;
}

/* Whether GPU dev's primary context is active (-1: the driver cannot say). */
static int primary_active(int dev)
{
    unsigned flags = 0;
    int active = -1;
    CUdevice d;

    if (cu.state && cu.get(&d, dev) == CUDA_SUCCESS)
        cu.state(d, &flags, &active);
    return active;
}

static int coherent_platform(void)
{
    int coherent = 0;

    cu.attr(&coherent, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 0);
    return coherent;
}

/* How many descriptors of this process name a dma-buf (an export: "anon_inode:dmabuf" or
 * "/dmabuf:..."), and in *nvidia how many a /dev/nvidia* file (the driver's, opened by cuInit
 * and contexts, some kept by the driver after a context is gone). */
static int count_fds(int *nvidia)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    char path[300], target[256];
    int n = 0;

    *nvidia = 0;
    while (d && (e = readdir(d))) {
        ssize_t k;

        if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
            continue;
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        k = readlink(path, target, sizeof(target) - 1);
        target[k > 0 ? k : 0] = '\0';
        *nvidia += strncmp(target, "/dev/nvidia", 11) == 0;
        n += strstr(target, "dmabuf") != NULL;
    }
    if (d)
        closedir(d);
    return n;
}

/*
 * Pin [addr, addr + n) through the library, map it, and move bytes both ways checked with the
 * copy engine: the CPU writes a pattern through the mapping (cuMemcpyDtoH must read it), the
 * GPU gets another (cuMemcpyHtoD; the CPU must read it through the mapping). NULL when all
 * was right, else the step that went wrong (rc in *rc). *type: the mapping's type.
 */
static const char *lib_roundtrip(gdr_t g, CUdeviceptr addr, size_t n, uint32_t flags,
                                 int *rc, int *type)
{
    unsigned char *src = malloc(n), *got = malloc(n);
    const char *bad = NULL;
    gdr_info_t info = { 0 };
    gdr_mh_t mh;
    void *m = NULL;
    char *at;
    int pinned;

    *rc = 0;
    *type = 0;
    if (!src || !got) {
        free(src);
        free(got);
        return "malloc";
    }
    *rc = gdr_pin_buffer_v2(g, addr, n, flags, &mh);
    pinned = *rc == 0;
    if (*rc)
        bad = "pin";
    else if ((*rc = gdr_map(g, mh, &m, n)) || (*rc = gdr_get_info(g, mh, &info)))
        bad = "map";
    if (!bad) {
        *type = (int)info.mapping_type;
        at = (char *)m + (addr - info.va);
        t_pattern(src, n, addr);
        gdr_copy_to_mapping(mh, at, src, n);
        if (cu.dtoh(got, addr, n) != CUDA_SUCCESS || memcmp(got, src, n))
            bad = "cpu_write_gpu_read";
        t_pattern(src, n, addr + 1);
        if (!bad && cu.htod(addr, src, n) != CUDA_SUCCESS)
            bad = "htod";
        if (!bad && (gdr_copy_from_mapping(mh, got, at, n), memcmp(got, src, n)))
            bad = "gpu_write_cpu_read";
    }
    if (pinned)
        gdr_unpin_buffer(g, mh);
    free(src);
    free(got);
    return bad;
}

/* ---- checks that run on any driver ------------------------------------------------------ */

static int check_nocuda(void)
{
    int nv0 = 0, nv1 = 0, rc;
    char why[256] = "";
    gdr_t g;

    if (access("/dev/gdrdrv", F_OK) != 0) {
        t_skip("nocuda/gdrdrv_open_leaves_cuda", "gdrdrv is not loaded here (/dev/gdrdrv absent)");
        printf("# verdict nocuda: not settled here (needs the gdrdrv module loaded)\n");
        return t_status();
    }
    count_fds(&nv0);
    g = gdr_open();
    count_fds(&nv1);
    rc = g ? vramio_backend_status(g, VRAMIO_BACKEND_DMABUF, why, sizeof(why)) : -1;
    printf("# verdict nocuda: gdr_open %s; /dev/nvidia* descriptors %d before, %d after; "
           "dmabuf: %s\n", g ? "opened" : "failed", nv0, nv1, why);
    t_check(g && nv1 == nv0 && strstr(why, "not probed"), "nocuda/gdrdrv_open_leaves_cuda",
            "gdr_open %p, nvidia fds %d -> %d, dmabuf status %d '%s'", (void *)g, nv0, nv1, rc,
            why);
    if (g)
        gdr_close(g);
    return t_status();
}

static void check_refused(int v)
{
    CUdeviceptr d = 0;
    CUresult r = CUDA_ERROR_UNKNOWN;
    int fds0, fds1, nv, active, fd, err;
    void *m;
    gdr_t g;

    /* The library's forced trial first, in a process that retained nothing itself. */
    setenv("GDRCOPY_USE_DMABUF_MMAP", "1", 1);
    fds0 = count_fds(&nv);
    g = gdr_open();
    fds1 = count_fds(&nv);
    active = primary_active(0);
    printf("# verdict refused: forced gdr_open on driver %d.%d %s: %s\n", v / 1000,
           (v % 1000) / 10, g ? "OPENED" : "refused", g ? "-" : vramio_last_error());
    t_check(!g && strstr(vramio_last_error(), "13.3"), "refused/forced_open_says_why", "%s",
            g ? "gdr_open worked" : vramio_last_error());
    t_check(active <= 0 && fds1 == fds0, "refused/nothing_left_behind",
            "GPU 0 primary context active %d, dma-buf descriptors %d -> %d", active, fds0, fds1);
    if (g)
        gdr_close(g);
    /* What this driver answers to the PCIE flag (580: 801). */
    cu.set(primary(0));
    cu.alloc(&d, 2 * MB);
    m = export_map(d, 2 * MB, CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE, &r, &fd, &err);
    printf("# refused: export with the PCIE flag: CUresult %d, coherent platform %d\n", (int)r,
           coherent_platform());
    unexport(m, 2 * MB, fd);
    cu.free(d);
}

/* ---- checks on 13.3 and newer ----------------------------------------------------------- */

static void check_pcie(void)
{
    CUdeviceptr d = 0;
    CUresult r;
    int fd, err, coherent = coherent_platform(), rc, type, mapped;
    const char *bad;
    gdr_t g;
    void *m;

    cu.alloc(&d, 2 * MB);
    m = export_map(d, 2 * MB, CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE, &r, &fd, &err);
    mapped = m != NULL;
    printf("# pcie: coherent platform %d; raw export with the PCIE flag: CUresult %d, mmap %s\n",
           coherent, (int)r, m ? "works" : r ? "-" : strerror(err));
    unexport(m, 2 * MB, fd);
    g = gdr_open();
    bad = g ? lib_roundtrip(g, d, 2 * MB, GDR_PIN_FLAG_FORCE_PCIE, &rc, &type) : "gdr_open";
    if (!coherent && r == CUDA_ERROR_NOT_SUPPORTED)
        printf("# verdict pcie: x86 refuses the PCIE flag (801) on this driver too: "
               "FORCE_PCIE is refused there, as upstream's pin is\n");
    else if (!coherent && r == CUDA_SUCCESS)
        printf("# verdict pcie: x86 ACCEPTS the PCIE flag here (mmap %s): FORCE_PCIE pins on "
               "this driver, unlike 580 (docs/dmabuf.md and README.md must say so)\n",
               mapped ? "works" : "fails");
    else if (coherent)
        printf("# verdict pcie: coherent platform: the PCIE flag %s (CUresult %d)\n",
               r == CUDA_SUCCESS ? "is accepted, as expected" : "is REFUSED", (int)r);
    else
        printf("# verdict pcie: x86 answers the PCIE flag with CUresult %d (neither 0 nor 801): "
               "docs/dmabuf.md must say so\n", (int)r);
    /* The library follows the driver: the flag's refusal is the pin's (EINVAL), else WC. */
    if (r == CUDA_ERROR_NOT_SUPPORTED)
        t_check(bad && rc == EINVAL, "pcie/force_pcie_refused_as_the_driver_refuses",
                "%s rc %d: %s", bad ? bad : "pinned", rc, vramio_last_error());
    else
        t_check(!bad && type == GDR_MAPPING_TYPE_WC, "pcie/force_pcie_maps_wc_bytes_right",
                "%s rc %d type %d: %s", bad ? bad : "-", rc, type, vramio_last_error());
    if (g)
        gdr_close(g);
    cu.free(d);
}

static void check_offset(void)
{
    CUdeviceptr d = 0;
    int rc = 0, type = 0;
    const char *bad;
    gdr_t g = gdr_open();

    if (cu.alloc(&d, 2 * MB) != CUDA_SUCCESS || !g) {
        t_fail("offset/setup", "%s", vramio_last_error());
        return;
    }
    bad = lib_roundtrip(g, d + 3 * 4096, 8192, 0, &rc, &type);
    printf("# verdict offset: a pin at a 4 KiB-aligned, not 64 KiB-aligned address: %s\n",
           bad ? bad : "bytes right both ways");
    t_check(!bad, "offset/page_aligned_not_gpu_page_aligned", "%s rc %d: %s", bad ? bad : "-",
            rc, vramio_last_error());
    bad = lib_roundtrip(g, d + 65536 + 100, 5000, 0, &rc, &type);
    t_check(!bad, "offset/unaligned", "%s rc %d: %s", bad ? bad : "-", rc, vramio_last_error());
    gdr_close(g);
    cu.free(d);
}

static void check_export(int v)
{
    const int vers[2] = { 13030, v };
    CUdriverProcAddressQueryResult st;
    void *fn[2] = { NULL, NULL };
    CUdeviceptr d = 0;
    CUresult r, gr[2] = { CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN };
    int fd, err, i, ok = 1;
    void *m;

    if (!cu.gpa) {
        t_skip("export/entry_points_map", "no cuGetProcAddress_v2");
        return;
    }
    cu.alloc(&d, 2 * MB);
    for (i = 0; i < 2; i++) {
        st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        gr[i] = cu.gpa("cuMemGetHandleForAddressRange", &fn[i], vers[i], 0, &st);
        m = fn[i] ? export_map_with((export_fn)fn[i], d, 2 * MB, 0, &r, &fd, &err) : NULL;
        printf("# export: cuGetProcAddress(%d): CUresult %d status %d, %s dlsym's; export+mmap "
               "%s\n", vers[i], (int)gr[i], (int)st, fn[i] == (void *)cu.exp ? "same as" :
               "NOT", m ? "works" : "fails");
        ok &= m != NULL;
        unexport(m, 2 * MB, fd);
    }
    m = export_map(d, 2 * MB, 0, &r, &fd, &err);
    ok &= m != NULL;
    unexport(m, 2 * MB, fd);
    printf("# verdict export: dlsym's entry point %s cuGetProcAddress(13030)'s; all map: %s\n",
           fn[0] == (void *)cu.exp ? "is" : "is NOT", ok ? "yes" : "NO");
    t_check(ok, "export/entry_points_map", "an export through one of the entry points failed");
    cu.free(d);
}

/* Export and mmap 2 MiB at d with c current (NULL: none), undo both: the export's CUresult,
 * or -1 when the export worked and its mmap did not. */
static CUresult export_in(CUcontext c, CUdeviceptr d)
{
    CUcontext popped;
    CUresult r;
    int fd, err;
    void *m;

    if (c)
        cu.push(c);
    m = export_map(d, 2 * MB, 0, &r, &fd, &err);
    if (c)
        cu.pop(&popped);
    unexport(m, 2 * MB, fd);
    return r == CUDA_SUCCESS && !m ? (CUresult)-1 : r;
}

static void check_contexts(int ndev)
{
    CUcontext c0, c1, popped;
    CUdeviceptr d = 0;
    CUresult rs[3];
    int before, after, rc = -1, type = 0;
    const char *bad;
    gdr_mh_t mh;
    gdr_t g;

    if (ndev < 2) {
        t_skip("contexts/gpu1_pin_leaves_gpu0_alone", "one GPU only");
        printf("# verdict contexts: not settled here (one GPU)\n");
        return;
    }
    /* This process has not touched GPU 0 before this point (checks run in a fresh process). */
    before = primary_active(0);
    c1 = primary(1);
    cu.push(c1);
    cu.alloc(&d, 2 * MB);
    cu.pop(&popped);
    /* The library's pin with no context current; then the bytes, with GPU 1's current for
     * the cuMemcpy that checks them. */
    g = gdr_open();
    rc = g ? gdr_pin_buffer_v2(g, d, 2 * MB, 0, &mh) : -1;
    if (rc == 0)
        gdr_unpin_buffer(g, mh);
    after = primary_active(0);
    cu.push(c1);
    bad = rc ? "pin" : lib_roundtrip(g, d + 2 * MB - 65536, 65536, 0, &rc, &type);
    cu.pop(&popped);
    printf("# verdict contexts: GPU 1 memory pinned with no context current: %d (%s); GPU 0's "
           "primary context active before %d, after %d\n", rc, bad ? bad : "bytes right",
           before, after);
    t_check(!bad && after <= 0, "contexts/gpu1_pin_leaves_gpu0_alone",
            "%s rc %d (%s), GPU 0 primary active %d", bad ? bad : "-", rc, vramio_last_error(),
            after);
    if (g)
        gdr_close(g);
    c0 = primary(0);
    rs[0] = export_in(c0, d);
    rs[1] = export_in(c1, d);
    rs[2] = export_in(NULL, d);
    printf("# contexts: raw export+mmap of GPU 1 memory (CUresult, -1: mmap refused) with GPU 0's "
           "context %d, GPU 1's %d, none %d\n", (int)rs[0], (int)rs[1], (int)rs[2]);
    cu.push(c1);
    cu.free(d);
    cu.pop(&popped);
}

/* A VMM allocation of n bytes on GPU 0 mapped read-write at *d (the current context's device),
 * RDMA-capable as dma-buf exports need; 0 or the failing CUresult. */
static CUresult vmm_alloc(size_t n, CUdeviceptr *d, CUmemGenericAllocationHandle *h)
{
    CUmemAllocationProp prop = { 0 };
    CUmemAccessDesc acc = { 0 };
    CUresult r;

    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.allocFlags.gpuDirectRDMACapable = 1;
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r = cu.create(h, n, &prop, 0);
    if (r == CUDA_SUCCESS && (r = cu.reserve(d, n, 0, 0, 0)) != CUDA_SUCCESS)
        cu.release(*h);
    if (r == CUDA_SUCCESS && ((r = cu.map(*d, n, 0, *h, 0)) != CUDA_SUCCESS ||
                              (r = cu.access(*d, n, &acc, 1)) != CUDA_SUCCESS)) {
        cu.unmap(*d, n);
        cu.addr_free(*d, n);
        cu.release(*h);
    }
    return r;
}

static void check_vmm(void)
{
    CUmemGenericAllocationHandle h;
    CUcontext popped;
    CUdeviceptr d = 0;
    CUresult r, rx;
    int rc = 0, type = 0;
    const size_t n = 2 * MB;
    const char *bad = NULL;
    gdr_mh_t mh;
    gdr_t g;

    if (!cu.create || !cu.reserve || !cu.map || !cu.access || !cu.unmap || !cu.release) {
        t_skip("vmm/no_owner_pin", "no VMM entry points");
        return;
    }
    r = vmm_alloc(n, &d, &h);
    if (r != CUDA_SUCCESS) {
        t_fail("vmm/alloc", "CUresult %d", (int)r);
        return;
    }
    /* No context current from here to the unpin: the library has to find one. */
    cu.pop(&popped);
    rx = export_in(NULL, d);
    g = gdr_open();
    rc = g ? gdr_pin_buffer_v2(g, d, n, 0, &mh) : -1;
    if (rc == 0)
        gdr_unpin_buffer(g, mh);
    cu.push(popped);
    if (g && rc == 0)
        bad = lib_roundtrip(g, d, n, 0, &rc, &type);
    printf("# verdict vmm: VMM memory, no context current: raw export+mmap %d (-1: mmap "
           "refused); library pin %d, bytes %s\n", (int)rx, rc, bad ? bad : rc ? "-" : "right");
    t_check(rc == 0 && !bad, "vmm/no_owner_pin", "rc %d %s: %s", rc, bad ? bad : "-",
            vramio_last_error());
    if (g)
        gdr_close(g);
    cu.unmap(d, n);
    cu.addr_free(d, n);
    cu.release(h);
}

/* In a child: read the first byte of m; its value, or -1 when the read faulted. */
static int child_read(const volatile unsigned char *m)
{
    int st = 0;
    pid_t pid = fork();

    if (pid == 0) {
        alarm(10);
        _exit(m[0]);
    }
    if (pid < 0 || t_wait_bounded(pid, &st, 20))
        return -2;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void check_free(void)
{
    CUdeviceptr d = 0, d2 = 0;
    CUresult r = cu.alloc(&d, 2 * MB);
    unsigned char gpu = 0, *m = NULL;
    int fd = -1, err = 0, base, v1, v2;

    if (r == CUDA_SUCCESS)
        m = export_map(d, 2 * MB, 0, &r, &fd, &err);
    if (!m) {
        t_fail("free/export_map", "CUresult %d, mmap %s", (int)r, err ? strerror(err) : "-");
        return;
    }
    /* The baseline: the mapping reads what was written through it, and so does the GPU. */
    m[0] = 0x5a;
    __sync_synchronize();
    base = child_read(m);
    cu.dtoh(&gpu, d, 1);
    t_check(base == 0x5a && gpu == 0x5a, "free/baseline_read", "mapping reads %d, GPU %d", base,
            gpu);
    cu.free(d);
    v1 = child_read(m);
    if (cu.memset && cu.alloc(&d2, 2 * MB) == CUDA_SUCCESS) {
        cu.memset(d2, 0xa5, 2 * MB);
        cu.sync();
    }
    v2 = child_read(m);
    printf("# verdict free: baseline %s; after cuMemFree the mapping reads %s; after a new "
           "allocation %s\n", base == 0x5a ? "right" : "WRONG",
           v1 == 0x5a ? "the old bytes (the export keeps them)" : v1 == -1 ? "nothing (faults)" :
           "other bytes", v2 == 0xa5 ? "THE NEW ALLOCATION'S BYTES" :
           v2 == -1 ? "nothing (faults)" : v2 == 0x5a ? "the old bytes" : "other bytes");
    t_check(v2 != 0xa5, "free/mapping_never_shows_later_allocations",
            "a mapping kept after cuMemFree reads memory allocated afterwards");
    unexport(m, 2 * MB, fd);
    if (d2)
        cu.free(d2);
}

static double now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The median time of reps reads of 8 bytes at p, by the library (mh) or plain loads (!mh). */
static double read_median(gdr_mh_t *mh, const volatile uint64_t *p, int reps)
{
    static double t[4001];
    uint64_t v;

    for (int i = 0; i < reps && i < 4001; i++) {
        double t0 = now_ns();

        if (mh)
            gdr_copy_from_mapping(*mh, &v, (const void *)p, 8);
        else
            v = *p;
        t[i] = now_ns() - t0;
    }
    (void)v;
    qsort(t, (size_t)(reps < 4001 ? reps : 4001), sizeof(t[0]), cmp_double);
    return t[(reps < 4001 ? reps : 4001) / 2];
}

/* A new 2 MiB allocation in *d, pinned (*mh) and mapped through a new gdr_t (*g): the
 * mapping, its info in *info; NULL after a failure of check (named in the result). */
static void *lib_map_new(const char *check, gdr_t *g, CUdeviceptr *d, gdr_mh_t *mh,
                         gdr_info_t *info)
{
    void *m = NULL;
    int rc;

    *g = gdr_open();
    rc = cu.alloc(d, 2 * MB) == CUDA_SUCCESS && *g ? gdr_pin_buffer_v2(*g, *d, 2 * MB, 0, mh) : -1;
    rc = rc ? rc : gdr_map(*g, *mh, &m, 2 * MB);
    rc = rc ? rc : gdr_get_info(*g, *mh, info);
    if (rc) {
        t_fail(check, "rc %d: %s", rc, vramio_last_error());
        return NULL;
    }
    return m;
}

static void check_stale(void)
{
    CUdeviceptr d = 0;
    gdr_info_t info;
    gdr_mh_t mh;
    gdr_t g;
    void *m = lib_map_new("stale/setup", &g, &d, &mh, &info);
    double lib, plain, t_end;
    uint64_t k, got, peek;
    int rounds = 0, stale = 0;
    volatile uint64_t *p;

    if (!m)
        return;
    p = (volatile uint64_t *)((char *)m + (d + 4096 - info.va));
    /* The cause: back-to-back reads of one address must each reach the device. */
    lib = read_median(&mh, p, 4001);
    plain = read_median(NULL, p, 4001);
    printf("# stale: back-to-back 8-byte reads of one address, medians: library %.3f us, plain "
           "loads %.3f us (mapping type %d)\n", lib / 1e3, plain / 1e3, (int)info.mapping_type);
    t_check(lib >= plain / 2, "stale/reads_reach_the_device",
            "library %.3f us vs plain %.3f us: answered without the device", lib / 1e3,
            plain / 1e3);
    /* The symptom: peek, the copy engine writes k, read: never the old value. 20 s at most. */
    t_end = now_ns() + 20e9;
    for (k = 1; k <= 20000 && now_ns() < t_end; k++, rounds++) {
        gdr_copy_from_mapping(mh, &peek, (const void *)p, 8);
        if (cu.htod(d + 4096, &k, 8) != CUDA_SUCCESS || cu.sync() != CUDA_SUCCESS)
            break;
        gdr_copy_from_mapping(mh, &got, (const void *)p, 8);
        stale += got != k;
    }
    printf("# verdict stale: %d stale reads in %d rounds of peek, cuMemcpyHtoD, read; back-to-back "
           "reads %s\n", stale, rounds, lib >= plain / 2 ? "reach the device" : "DO NOT reach it");
    t_check(stale == 0 && rounds > 0, "stale/no_stale_read_after_gpu_write",
            "%d stale of %d rounds", stale, rounds);
    gdr_close(g);
    cu.free(d);
}

/* Pin, map and touch n bytes at d through the library: 0 or the errno (a fault on the first or
 * last byte counts as EFAULT), the reason printed. The pin stays. */
static int lib_map_touch(gdr_t g, CUdeviceptr d, size_t n, const char *what)
{
    gdr_info_t info;
    gdr_mh_t mh;
    void *m = NULL;
    int rc = gdr_pin_buffer_v2(g, d, n, 0, &mh), sig = 0;

    if (rc == 0 && (rc = gdr_map(g, mh, &m, n)) == 0 && gdr_get_info(g, mh, &info) == 0) {
        char *first = (char *)m + (d - info.va);

        sig = t_touch_faults(first);
        sig = sig ? sig : t_touch_faults(first + n - 1);
        rc = sig ? EFAULT : 0;
    }
    if (rc)
        printf("# refusals: %s: %d%s: %s\n", what, rc, sig ? " (a read raised a signal)" : "",
               sig ? strsignal(sig) : vramio_last_error());
    if (rc && !sig)
        gdr_unpin_buffer(g, mh);
    return rc;
}

static void check_refusals(void)
{
    static CUdeviceptr bufs[1024];
    CUdeviceptr d = 0;
    size_t total = 0, mem = 0;
    int n = 0, rc = 0, first_fail = -1, after, faulted = 0;
    CUdevice dev;
    gdr_t g = gdr_open();

    if (!g) {
        t_fail("refusals/gdr_open", "%s", vramio_last_error());
        return;
    }
    if (cu.total && cu.get(&dev, 0) == CUDA_SUCCESS)
        cu.total(&mem, dev);
    if (cu.managed && cu.managed(&d, 2 * MB, 1 /* CU_MEM_ATTACH_GLOBAL */) == CUDA_SUCCESS) {
        rc = lib_map_touch(g, d, 2 * MB, "managed memory");
        printf("# verdict refusals/managed: managed memory %s\n",
               rc ? "refused (as upstream: not supported)" : "pins, maps and reads");
        gdr_close(g);
        g = gdr_open();
        cu.free(d);
    }
    /* 1 GiB buffers until the device's memory (cuMemAlloc fails) or BAR1 (a refusal) runs out:
     * past 64 GiB on an H100 / H200, whose BAR1 is larger than their memory. */
    while (g && n < 1024) {
        if (cu.alloc(&bufs[n], GB) != CUDA_SUCCESS)
            break;
        rc = lib_map_touch(g, bufs[n], GB, "a buffer after BAR1 use");
        n++;
        if (rc) {
            first_fail = n - 1;
            faulted = rc == EFAULT;
            break;
        }
        total += GB;
    }
    printf("# verdict refusals: %zu GiB pinned, mapped and read in %d buffers (device memory "
           "%zu GiB) before %s\n", (size_t)(total / GB), n, (size_t)(mem / GB),
           first_fail < 0 ? "cuMemAlloc failed (no refusal)" :
           faulted ? "A MAPPED BUFFER FAULTED ON ACCESS" : "the first refusal (its gdr_map)");
    t_check(!faulted, "refusals/mapped_pages_readable",
            "buffer %d mapped but its pages raise a signal: a refusal the library cannot see",
            first_fail);
    if (first_fail >= 0 && !faulted) {
        gdr_close(g);
        g = gdr_open();
        after = g ? lib_map_touch(g, bufs[first_fail], GB, "the refused buffer, BAR1 freed") : -1;
        t_check(after == 0, "refusals/refused_buffer_maps_once_bar1_is_free", "%d", after);
    } else {
        t_skip("refusals/refused_buffer_maps_once_bar1_is_free", "no refusal met");
    }
    if (g)
        gdr_close(g);
    while (n > 0)
        cu.free(bufs[--n]);
}

/* The PAT memory type of the physical page behind p, from the kernel's list (x86, root,
 * debugfs); NULL, with why not in out, when it cannot be read. */
static const char *pat_type(const void *p, char *out, size_t len)
{
    unsigned long long ent = 0, pa, lo, hi;
    char line[256];
    int fd = open("/proc/self/pagemap", O_RDONLY);
    FILE *f;

#if !defined(__x86_64__)
    snprintf(out, len, "no PAT on this architecture");
    if (fd >= 0)
        close(fd);
    return NULL;
#endif
    if (fd < 0 || pread(fd, &ent, 8, (off_t)((uintptr_t)p / 4096 * 8)) != 8 ||
        !(ent & (1ull << 63)) || !(ent & ((1ull << 55) - 1))) {
        snprintf(out, len, "no physical address in /proc/self/pagemap (needs CAP_SYS_ADMIN)");
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    close(fd);
    pa = (ent & ((1ull << 55) - 1)) * 4096;
    f = fopen("/sys/kernel/debug/x86/pat_memtype_list", "r");
    if (!f) {
        snprintf(out, len, "/sys/kernel/debug/x86/pat_memtype_list: %s (root, debugfs mounted)",
                 strerror(errno));
        return NULL;
    }
    while (fgets(line, sizeof(line), f)) {
        char type[64] = "";

        if (sscanf(line, "PAT: [mem 0x%llx-0x%llx] %63s", &lo, &hi, type) == 3 &&
            pa >= lo && pa < hi) {
            snprintf(out, len, "%s (physical 0x%llx)", type, pa);
            fclose(f);
            return out;
        }
    }
    fclose(f);
    snprintf(out, len, "physical 0x%llx is not in the PAT list", pa);
    return NULL;
}

#if defined(__aarch64__)
/* 1 when an unaligned 8-byte load from p raises SIGBUS (arm64 Device memory), in a child. */
static int unaligned_load_faults(const volatile unsigned char *p)
{
    int st = 0;
    pid_t pid = fork();

    if (pid == 0) {
        uint64_t v;

        alarm(10);
        v = *(const volatile uint64_t *)(const volatile void *)(p + 1);
        _exit(v == 0x1234 ? 3 : 0);
    }
    if (pid < 0 || t_wait_bounded(pid, &st, 20))
        return -1;
    return WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS;
}
#endif

static void check_pte(void)
{
    CUdeviceptr d = 0;
    gdr_info_t info;
    gdr_mh_t mh;
    gdr_t g;
    void *m = lib_map_new("pte/setup", &g, &d, &mh, &info);
    volatile unsigned char *b;
    volatile uint64_t *q;
    unsigned long long sum = 0;
    double t0, read_ns, write_gbs;
    char buf[160], why[160];
    const char *pat, *timed, *reported;
    int dev_mem = -1;

    if (!m)
        return;
    b = m;
    q = m;
    reported = info.mapping_type == GDR_MAPPING_TYPE_CACHING ? "cached" :
               info.mapping_type == GDR_MAPPING_TYPE_WC ? "write-combined" : "other";
    /* Reads: 64 KiB read twice a load per line; a cached mapping answers the second pass
     * from the cache (a few ns a line), an uncached or WC one crosses PCIe (about 1 us). */
    for (size_t i = 0; i < 65536; i += 64)
        sum += b[i];
    t0 = now_ns();
    for (size_t i = 0; i < 65536; i += 64)
        sum += b[i];
    read_ns = (now_ns() - t0) / 1024;
    /* Writes: 1 MiB of 8-byte stores; WC combines them (GB/s), UC sends each (~0.1 GB/s).
     * Each page is written once first, so that its fault is not timed. */
    for (size_t i = 0; i < MB / 8; i += 512)
        q[i] = 0;
    t0 = now_ns();
    for (size_t i = 0; i < MB / 8; i++)
        q[i] = i;
    __sync_synchronize();
    write_gbs = MB / (now_ns() - t0);
    timed = read_ns < 50 ? "cached" : write_gbs > 1 ? "write-combined" : "uncached";
#if defined(__aarch64__)
    dev_mem = unaligned_load_faults(b);
#endif
    pat = pat_type((const void *)b, buf, sizeof(buf));
    if (!pat)
        snprintf(why, sizeof(why), "%s", buf);
    printf("# pte: library reports %s (type %d); PAT %s; timing: %.0f ns a cached-pass line read,"
           " %.2f GB/s 8-byte stores (sum %llu)%s\n", reported, (int)info.mapping_type,
           pat ? pat : why, read_ns, write_gbs, sum,
           dev_mem < 0 ? "" : dev_mem ? "; an unaligned load FAULTS (Device memory)" :
           "; an unaligned load works (Normal memory)");
    if (pat) {
        int same = strstr(pat, info.mapping_type == GDR_MAPPING_TYPE_CACHING ? "write-back" :
                          "write-combining") != NULL;

        printf("# verdict pte: by the PAT list the mapping is %s: %s the library's report\n", pat,
               same ? "as" : "NOT as");
        t_check(same, "pte/type_as_reported", "library says %s, PAT says %s", reported, pat);
    } else {
        printf("# verdict pte: by timing the mapping behaves %s (PAT not read: %s)%s: %s the "
               "library's report (%s)\n", timed, why,
               dev_mem == 1 ? ", and it is Device memory" : "",
               strcmp(timed, reported) == 0 && dev_mem != 1 ? "as" : "NOT as", reported);
        t_check(strcmp(timed, reported) == 0 && dev_mem != 1, "pte/type_as_reported_by_timing",
                "library says %s, timing says %s%s", reported, timed,
                dev_mem == 1 ? " (Device memory)" : "");
    }
    gdr_close(g);
    cu.free(d);
}

int main(int argc, char **argv)
{
    const char *check = argc > 1 ? argv[1] : "";
    int v = 0, ndev = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("# uid %d\n", (int)getuid());
    if (strcmp(check, "nocuda") == 0)     /* before this process loads or starts CUDA */
        return check_nocuda();
    if (!load() || cu.init(0) != CUDA_SUCCESS || cu.version(&v) != CUDA_SUCCESS ||
        cu.count(&ndev) != CUDA_SUCCESS || ndev < 1) {
        printf("no CUDA driver with a GPU here: nothing settled\n");
        return T_SKIP;
    }
    printf("# CUDA driver %d.%d, %d GPU%s\n", v / 1000, (v % 1000) / 10, ndev, ndev > 1 ? "s" : "");
    if (strcmp(check, "refused") == 0) {
        if (v >= 13030) {
            printf("# verdict refused: driver %d.%d maps exports: nothing to refuse\n", v / 1000,
                   (v % 1000) / 10);
            return T_SKIP;
        }
        check_refused(v);
        return t_status();
    }
    if (v < 13030) {
        printf("not R610 (CUDA driver %d.%d, the CPU may not map exports before 13.3): nothing "
               "settled\n", v / 1000, (v % 1000) / 10);
        return T_SKIP;
    }
    if (strcmp(check, "contexts") == 0) {
        check_contexts(ndev);          /* first, before this process touches GPU 0 */
        return t_status();
    }
    cu.set(primary(0));
    if (strcmp(check, "pcie") == 0)
        check_pcie();
    else if (strcmp(check, "offset") == 0)
        check_offset();
    else if (strcmp(check, "export") == 0)
        check_export(v);
    else if (strcmp(check, "vmm") == 0)
        check_vmm();
    else if (strcmp(check, "free") == 0)
        check_free();
    else if (strcmp(check, "stale") == 0)
        check_stale();
    else if (strcmp(check, "refusals") == 0)
        check_refusals();
    else if (strcmp(check, "pte") == 0)
        check_pte();
    else
        return 2;
    return t_status();
}

// SPDX-License-Identifier: MIT
/*
 * dmabuf_r610_checks.c - what only a CUDA driver that lets the CPU map dma-buf exports (13.3,
 * the 610 series, or newer) can settle about the dmabuf backend, checked on such a machine and
 * reported (run_dmabuf_r610_checks.sh builds and runs it):
 *   pcie       what the export answers to the PCIE mapping flag (x86: refused with which
 *              CUresult? Grace: accepted), and what gdr_pin_buffer_v2(FORCE_PCIE) then gives;
 *   contexts   an export of GPU 1's memory with GPU 0's context current, with none, with GPU
 *              1's; the library's pin of it; whether GPU 0's primary context was made active;
 *   refusals   per-buffer mmap refusals: kinds of memory (cuMemAlloc, VMM, managed) and
 *              mapping until BAR1 runs out, and whether other buffers still map afterwards;
 *   free       whether a mapping survives cuMemFree, and whether it then shows memory
 *              allocated afterwards;
 *   pte        whether the mapping is write-combined or cached: the kernel's PAT list when
 *              readable (root, debugfs), VmFlags, and read timing.
 * Lines starting "# " are findings, then one result line per check (ok / skip / not ok: the
 * checks that can go wrong for the library are results, the rest findings). On a driver older
 * than 13.3 it says so and settles nothing. CUDA is loaded with dlopen, so a missing entry
 * point makes only its own check a skip.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
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

static struct {
    CUresult (*init)(unsigned), (*version)(int *), (*count)(int *), (*get)(CUdevice *, int);
    CUresult (*attr)(int *, CUdevice_attribute, CUdevice);
    CUresult (*retain)(CUcontext *, CUdevice), (*state)(CUdevice, unsigned *, int *);
    CUresult (*push)(CUcontext), (*pop)(CUcontext *), (*set)(CUcontext);
    CUresult (*alloc)(CUdeviceptr *, size_t), (*free)(CUdeviceptr);
    CUresult (*managed)(CUdeviceptr *, size_t, unsigned);
    CUresult (*memset)(CUdeviceptr, unsigned char, size_t);
    CUresult (*sync)(void);
    CUresult (*exp)(void *, CUdeviceptr, size_t, CUmemRangeHandleType, unsigned long long);
} cu;

#define MB (1ull << 20)

static int load(void)
{
    void *l = dlopen("libcuda.so.1", RTLD_NOW);

#define S(f, n) (cu.f = l ? (__typeof__(cu.f))dlsym(l, n) : NULL)
    S(init, "cuInit"); S(version, "cuDriverGetVersion"); S(count, "cuDeviceGetCount");
    S(get, "cuDeviceGet"); S(attr, "cuDeviceGetAttribute");
    S(retain, "cuDevicePrimaryCtxRetain"); S(state, "cuDevicePrimaryCtxGetState");
    S(push, "cuCtxPushCurrent_v2"); S(pop, "cuCtxPopCurrent_v2"); S(set, "cuCtxSetCurrent");
    S(alloc, "cuMemAlloc_v2"); S(free, "cuMemFree_v2"); S(managed, "cuMemAllocManaged");
    S(memset, "cuMemsetD8_v2"); S(sync, "cuCtxSynchronize");
    S(exp, "cuMemGetHandleForAddressRange");
#undef S
    return cu.init && cu.version && cu.count && cu.get && cu.attr && cu.retain && cu.push &&
           cu.pop && cu.set && cu.alloc && cu.free && cu.exp;
}

/* Export [d, d + n) and mmap it: the CUresult in *r, the fd in *fd, the mapping or NULL (errno
 * in *err). */
static void *export_map(CUdeviceptr d, size_t n, unsigned long long flags, CUresult *r, int *fd,
                        int *err)
{
    void *m;

    *fd = -1;
    *err = 0;
    *r = cu.exp(fd, d, n, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, flags);
    if (*r != CUDA_SUCCESS)
        return NULL;
    m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    if (m == MAP_FAILED) {
        *err = errno;
        return NULL;
    }
    return m;
}

static CUcontext primary(int dev)
{
    CUdevice d;
    CUcontext c = NULL;

    if (cu.get(&d, dev) == CUDA_SUCCESS)
        cu.retain(&c, d);
    return c;
}

static void check_pcie(void)
{
    CUdeviceptr d = 0;
    CUresult r;
    int fd, err, coherent = 0, rc;
    gdr_t g;
    gdr_mh_t mh;
    gdr_info_t info = { 0 };
    void *m;

    cu.attr(&coherent, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 0);
    cu.alloc(&d, 2 * MB);
    m = export_map(d, 2 * MB, CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE, &r, &fd, &err);
    printf("# pcie: coherent platform %d; export with the PCIE flag: CUresult %d, mmap %s\n",
           coherent, (int)r, m ? "works" : r ? "-" : strerror(err));
    if (m)
        munmap(m, 2 * MB);
    if (fd >= 0)
        close(fd);
    g = gdr_open();
    rc = g ? gdr_pin_buffer_v2(g, d, 2 * MB, GDR_PIN_FLAG_FORCE_PCIE, &mh) : -1;
    if (rc == 0 && gdr_map(g, mh, &m, 2 * MB) == 0)
        gdr_get_info(g, mh, &info);
    printf("# pcie: gdr_pin_buffer_v2(FORCE_PCIE) %d, mapping type %d\n", rc,
           (int)info.mapping_type);
    t_check(rc == 0 && info.mapping_type == GDR_MAPPING_TYPE_WC, "pcie/force_pcie_pins_wc",
            "rc %d type %d: %s", rc, (int)info.mapping_type, vramio_last_error());
    if (g)
        gdr_close(g);
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
    if (fd >= 0)
        close(fd);
    if (m)
        munmap(m, 2 * MB);
    return r == CUDA_SUCCESS && !m ? (CUresult)-1 : r;
}

static void check_contexts(int ndev)
{
    CUcontext c0, c1, popped;
    CUdeviceptr d = 0;
    CUresult rs[3];
    unsigned flags = 0;
    int active_before = -1, active_after = -1, rc = -1;
    gdr_t g;
    gdr_mh_t mh;
    void *m;

    if (ndev < 2) {
        t_skip("contexts/gpu1_memory", "one GPU only");
        return;
    }
    /* This process has not touched GPU 0 before this point (checks run in a fresh process). */
    if (cu.state)
        cu.state(0, &flags, &active_before);
    c1 = primary(1);
    cu.push(c1);
    cu.alloc(&d, 2 * MB);
    cu.pop(&popped);
    if (cu.state)
        cu.state(0, &flags, &active_after);
    g = gdr_open();
    if (g) {
        rc = gdr_pin_buffer_v2(g, d, 2 * MB, 0, &mh);
        rc = rc ? rc : gdr_map(g, mh, &m, 2 * MB);
    }
    if (cu.state)
        cu.state(0, &flags, &active_after);
    printf("# contexts: library pin of GPU 1 memory, no context current: %d; GPU 0 primary "
           "active before %d, after %d\n", rc, active_before, active_after);
    t_check(rc == 0 && active_after <= 0, "contexts/gpu1_pin_leaves_gpu0_alone",
            "rc %d (%s), GPU 0 primary active %d", rc, vramio_last_error(), active_after);
    if (g)
        gdr_close(g);
    /* The raw driver: which contexts does an export of GPU 1's memory need? */
    c0 = primary(0);
    rs[0] = export_in(c0, d);
    rs[1] = export_in(c1, d);
    rs[2] = export_in(NULL, d);
    printf("# contexts: raw export+mmap of GPU 1 memory (CUresult, -1: mmap refused) with GPU 0's "
           "context %d, GPU 1's %d, none %d\n",
           (int)rs[0], (int)rs[1], (int)rs[2]);
    cu.push(c1);
    cu.free(d);
    cu.pop(&popped);
}

/* Pin and map n bytes at d through the library: 0 or the errno, the reason printed. */
static int lib_map(gdr_t g, CUdeviceptr d, size_t n, const char *what)
{
    gdr_mh_t mh;
    void *m;
    int rc = gdr_pin_buffer_v2(g, d, n, 0, &mh);

    if (rc == 0 && (rc = gdr_map(g, mh, &m, n)) != 0)
        gdr_unpin_buffer(g, mh);
    if (rc)
        printf("# refusals: %s: %d: %s\n", what, rc, vramio_last_error());
    return rc;
}

static void check_refusals(void)
{
    CUdeviceptr bufs[256], d = 0;
    size_t total = 0, chunk = 256 * MB;
    int n = 0, rc = 0, first_fail = -1, after;
    gdr_t g = gdr_open();

    if (!g) {
        t_fail("refusals/gdr_open", "%s", vramio_last_error());
        return;
    }
    if (cu.managed && cu.managed(&d, 2 * MB, 1 /* CU_MEM_ATTACH_GLOBAL */) == CUDA_SUCCESS) {
        rc = lib_map(g, d, 2 * MB, "managed memory");
        printf("# refusals: managed memory pin+map: %d\n", rc);
        cu.free(d);
    }
    /* Map 256 MiB buffers until something refuses (BAR1 exhausted) or 64 GiB are mapped. */
    while (n < 256 && total < (64ull << 30)) {
        if (cu.alloc(&bufs[n], chunk) != CUDA_SUCCESS)
            break;
        rc = lib_map(g, bufs[n], chunk, "buffer after BAR1 use");
        n++;
        if (rc) {
            first_fail = n - 1;
            break;
        }
        total += chunk;
    }
    printf("# refusals: %zu MiB mapped in %d buffers before %s\n", (size_t)(total / MB), n,
           first_fail >= 0 ? "the first refusal" : "stopping (no refusal)");
    if (first_fail >= 0) {
        /* Free one mapped buffer's worth: does a later buffer map again? */
        gdr_close(g);
        g = gdr_open();
        after = g ? lib_map(g, bufs[first_fail], chunk, "the refused buffer, BAR1 freed") : -1;
        t_check(after == 0, "refusals/refused_buffer_maps_once_bar1_is_free", "%d", after);
    } else {
        t_skip("refusals/refused_buffer_maps_once_bar1_is_free", "no refusal met");
    }
    if (g)
        gdr_close(g);
    while (n > 0)
        cu.free(bufs[--n]);
}

/* A new 2 MiB allocation in *d, exported (*fd) and mapped; NULL after a failure of check. */
static unsigned char *alloc_export_map(const char *check, CUdeviceptr *d, int *fd)
{
    CUresult r = cu.alloc(d, 2 * MB);
    int err = 0;
    unsigned char *m = r == CUDA_SUCCESS ? export_map(*d, 2 * MB, 0, &r, fd, &err) : NULL;

    if (!m) {
        t_fail(check, "CUresult %d, mmap %s", (int)r, err ? strerror(err) : "-");
        if (*fd >= 0)
            close(*fd);
        cu.free(*d);
    }
    return m;
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
    int fd = -1, v1, v2;
    unsigned char *m = alloc_export_map("free/export_map", &d, &fd);

    if (!m)
        return;
    m[0] = 0x5a;
    cu.free(d);
    v1 = child_read(m);
    if (cu.memset && cu.alloc(&d2, 2 * MB) == CUDA_SUCCESS) {
        cu.memset(d2, 0xa5, 2 * MB);
        if (cu.sync)
            cu.sync();
    }
    v2 = child_read(m);
    printf("# free: after cuMemFree the mapping reads %s; after a new allocation %s\n",
           v1 == 0x5a ? "the old bytes" : v1 == -1 ? "nothing (faults)" : "other bytes",
           v2 == 0xa5 ? "THE NEW ALLOCATION'S BYTES" : v2 == -1 ? "nothing (faults)" :
           v2 == 0x5a ? "the old bytes" : "other bytes");
    t_check(v2 != 0xa5, "free/mapping_never_shows_later_allocations",
            "a mapping kept after cuMemFree reads memory allocated afterwards");
    munmap(m, 2 * MB);
    close(fd);
    if (d2)
        cu.free(d2);
}

/* The PAT memory type of the physical page behind p, from the kernel's list; NULL if unknown. */
static const char *pat_type(const void *p, char *out, size_t len)
{
    unsigned long long ent = 0, pa, lo, hi;
    char line[256];
    int fd = open("/proc/self/pagemap", O_RDONLY);
    FILE *f;

    if (fd < 0 || pread(fd, &ent, 8, (off_t)((uintptr_t)p / 4096 * 8)) != 8 ||
        !(ent & (1ull << 63)) || !(ent & ((1ull << 55) - 1))) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    close(fd);
    pa = (ent & ((1ull << 55) - 1)) * 4096;
    f = fopen("/sys/kernel/debug/x86/pat_memtype_list", "r");
    while (f && fgets(line, sizeof(line), f)) {
        char type[64] = "";

        if (sscanf(line, "PAT: [mem 0x%llx-0x%llx] %63s", &lo, &hi, type) == 3 &&
            pa >= lo && pa < hi) {
            snprintf(out, len, "%s (physical 0x%llx)", type, pa);
            fclose(f);
            return out;
        }
    }
    if (f)
        fclose(f);
    return NULL;
}

static void check_pte(void)
{
    int coherent = 0, fd = -1;
    const char *pat;
    CUdeviceptr d = 0;
    volatile unsigned char *m;
    unsigned long long sum = 0;
    char buf[128], line[256], flags[256] = "?";
    struct timespec t0, t1;
    FILE *f;

    m = alloc_export_map("pte/export_map", &d, &fd);
    if (!m)
        return;
    m[0] = 1;
    f = fopen("/proc/self/smaps", "r");
    for (int in = 0; f && fgets(line, sizeof(line), f);) {
        unsigned long lo, hi;

        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
            in = (uintptr_t)m >= lo && (uintptr_t)m < hi;
        else if (in && strncmp(line, "VmFlags:", 8) == 0)
            snprintf(flags, sizeof(flags), "%s", line + 9);
    }
    if (f)
        fclose(f);
    flags[strcspn(flags, "\n")] = 0;
    /* 64 KiB read 16 times: cached memory answers from the cache after the first pass. */
    for (int pass = 0; pass <= 16; pass++) {
        if (pass == 1)              /* the first pass only faults the pages in */
            clock_gettime(CLOCK_MONOTONIC, &t0);
        for (size_t i = 0; i < 65536; i += 64)
            sum += m[i];
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pat = pat_type((const void *)m, buf, sizeof(buf));
    printf("# pte: PAT type %s; VmFlags %s; 16 passes over 64 KiB, a load per line (sum %llu), "
           "in %.0f us (tens of us look cached, far more uncached or WC)\n",
           pat ? pat : "unknown (needs root and debugfs)", flags, sum,
           ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3);
    /* What the library reports for such a mapping must be what the PTEs are. */
    cu.attr(&coherent, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, 0);
    if (pat)
        t_check(strstr(pat, coherent ? "write-back" : "write-combining") != NULL,
                "pte/type_as_reported", "coherent %d but PAT says %s", coherent, pat);
    else
        t_skip("pte/type_as_reported", "the PAT list is not readable here (root, debugfs, x86)");
    munmap((void *)m, 2 * MB);
    close(fd);
    cu.free(d);
}

int main(int argc, char **argv)
{
    const char *check = argc > 1 ? argv[1] : "";
    int v = 0, ndev = 0;
    CUcontext c0;

    if (!load() || cu.init(0) != CUDA_SUCCESS || cu.version(&v) != CUDA_SUCCESS ||
        cu.count(&ndev) != CUDA_SUCCESS || ndev < 1) {
        printf("no CUDA driver with a GPU here: nothing settled\n");
        return T_SKIP;
    }
    printf("# CUDA driver %d.%d, %d GPU%s\n", v / 1000, (v % 1000) / 10, ndev, ndev > 1 ? "s" : "");
    if (v < 13030) {
        printf("not R610 (CUDA driver %d.%d, the CPU may not map exports before 13.3): nothing "
               "settled\n", v / 1000, (v % 1000) / 10);
        return T_SKIP;
    }
    if (strcmp(check, "contexts") == 0) {
        check_contexts(ndev);          /* first, before this process touches GPU 0 */
        return t_status();
    }
    c0 = primary(0);
    cu.set(c0);
    if (strcmp(check, "pcie") == 0)
        check_pcie();
    else if (strcmp(check, "refusals") == 0)
        check_refusals();
    else if (strcmp(check, "free") == 0)
        check_free();
    else if (strcmp(check, "pte") == 0)
        check_pte();
    else
        return 2;
    return t_status();
}

// SPDX-License-Identifier: MIT
/*
 * dmabuf_upstream_client.c - the dma-buf backend where GDRCopy 2.6 and an R610 driver set the
 * rules, through the public API, against the stand-in driver of fake_cuda_dmabuf.c made as
 * unkind as driver 580 (test_dmabuf_emulated.sh runs it once per mode, fake_mmap.c preloaded):
 *   open_refused   gdr_open returns NULL (no other backend here) with the reason in
 *                  EXPECT_WHY: cuInit failing, no device, no DMA_BUF_SUPPORTED device;
 *   coherent       a coherent device: CACHING by default, REQ_CACHE accepted, REQ_WC EINVAL,
 *                  FORCE_PCIE gives WC; copies right either way;
 *   refuse_one     one buffer whose mmap the driver refuses: that gdr_map fails, saying the
 *                  driver's version; every other pin, map and gdr_open works;
 *   rounding       host-page exports: info.va, page_size, mapped_size as upstream's; every
 *                  address of a pin copyable at map + (addr - info.va) after gdr_map(size);
 *                  tm_cycles and cycles_per_ms 0;
 *   env_rule       GDRCOPY_USE_DMABUF_MMAP forces the backend when exactly "1", as upstream;
 *   fd_exhaustion  an export that fails for want of descriptors says EMFILE;
 *   multidev       memory of device 1: exported in device 1's context with none current or
 *                  device 0's current, device 0's primary context never retained; a device
 *                  without DMA_BUF_SUPPORTED refused per pin; the export entry point found
 *                  through cuGetProcAddress at 13.3;
 *   exports        what driver 580 exports (a sub-range, a range spanning two allocations, one
 *                  running past an allocation's end inside its last 1 MiB unit) maps the right
 *                  bytes; host memory falls through;
 *   cloexec_fork   no export fd is ever visible without FD_CLOEXEC to a child forked while
 *                  another thread pins;
 *   fork_closes_exports  a forked child holds none of the parent's export fds (they would
 *                  keep the exports, and the GPU pages, alive after the parent unpins);
 *   ctx_pin        a primary context retained for a pin (no context current, memory that no
 *                  context owns) is held while the pin lives and released by its unpin or
 *                  by gdr_close;
 *   ctx_open_null  a forced gdr_open that fails (580: the trial's mmap refused) leaves no
 *                  primary context retained;
 *   trial_transient a forced trial that fails for want of memory does not disable the
 *                  backend: the next gdr_open tries again and works;
 *   env_probe      the backend's own probe reads GDRCOPY_USE_DMABUF_MMAP as upstream does:
 *                  only exactly "1" runs the trial on a driver older than 13.3;
 *   upstream_alignment  with VRAMIO_UPSTREAM_ALIGNMENT=1, gdr_map refuses what GDRCopy 2.6's
 *                  sanity tests expect refused (an address not on a host page: its
 *                  basic_unaligned_mapping and basic_small_buffers_mapping), and maps what its
 *                  dma-buf path maps (a host-page-aligned pin); without it both map.
 */
#include <cuda.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "t.h"
#include "vramio.h"

static CUresult (*alloc_on)(int, CUdeviceptr *, size_t);
static int (*refuse_mmap)(CUdeviceptr), (*retains)(int), (*gpa_version)(void);
static int (*primary_refs)(int);
static void (*fail_allocs)(int);
static CUresult (*push_ctx)(CUcontext), (*pop_ctx)(CUcontext *), (*retain)(CUcontext *, CUdevice);

static CUdeviceptr alloc(int dev, size_t n)
{
    CUdeviceptr d = 0;

    return alloc_on(dev, &d, n) == CUDA_SUCCESS ? d : 0;
}

static size_t host_page(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

/* Pin [addr, addr + n), map it as a client does, check both copies through the mapping at
 * map + (addr - info.va) against the memory itself. 0, or the step that failed. */
static const char *pin_map_copy(gdr_t g, unsigned long addr, size_t n, uint32_t flags,
                                int map_flags, gdr_mh_t *mh, gdr_info_t *info, int *rc)
{
    unsigned char *src = malloc(n), *got = malloc(n), *m0 = NULL;
    void *m = NULL;
    const char *bad = NULL;

    if (!src || !got)
        bad = "malloc";
    else if ((*rc = gdr_pin_buffer_v2(g, addr, n, flags, mh)))
        bad = "pin";
    else if ((*rc = gdr_map_v2(g, *mh, &m, n, map_flags)))
        bad = "map";
    else if ((*rc = gdr_get_info(g, *mh, info)))
        bad = "info";
    if (!bad) {
        m0 = (unsigned char *)m + (addr - info->va);
        t_pattern(src, n, addr);
        if ((*rc = gdr_copy_to_mapping(*mh, m0, src, n)))
            bad = "copy_to";
        else if (memcmp((void *)(uintptr_t)addr, src, n))
            bad = "bytes_to";
        else if ((t_pattern((void *)(uintptr_t)addr, n, addr + 1),
                  *rc = gdr_copy_from_mapping(*mh, got, m0, n)))
            bad = "copy_from";
        else if (memcmp((void *)(uintptr_t)addr, got, n))
            bad = "bytes_from";
    }
    free(src);
    free(got);
    return bad;
}

static void mode_open_refused(void)
{
    const char *want = getenv("EXPECT_WHY");
    gdr_t g = gdr_open();

    t_check(!g && want && strstr(vramio_last_error(), want), "gdr_open_null",
            "gdr_open %p, '%s' (expected '%s')", (void *)g, vramio_last_error(), want);
    if (g)
        gdr_close(g);
}

static void mode_coherent(void)
{
    CUdeviceptr d = alloc(0, 4 << 20);
    gdr_t g = gdr_open();
    gdr_mh_t mh, mh2;
    gdr_info_t info;
    void *m = NULL;
    const char *bad;
    int rc = 0;

    if (!t_check(g && d, "open", "%s", vramio_last_error()))
        return;
    bad = pin_map_copy(g, d, 65536, 0, GDR_MAP_FLAG_DEFAULT, &mh, &info, &rc);
    t_check(!bad && info.mapping_type == GDR_MAPPING_TYPE_CACHING && !info.wc_mapping,
            "default_caching", "%s rc %d type %d %s", bad ? bad : "-", rc, (int)info.mapping_type,
            vramio_last_error());
    gdr_unpin_buffer(g, mh);
    bad = pin_map_copy(g, d, 65536, 0, GDR_MAP_FLAG_REQ_CACHE_MAPPING, &mh, &info, &rc);
    t_check(!bad && info.mapping_type == GDR_MAPPING_TYPE_CACHING, "req_cache_accepted",
            "%s rc %d type %d %s", bad ? bad : "-", rc, (int)info.mapping_type,
            vramio_last_error());
    gdr_unpin_buffer(g, mh);
    rc = gdr_pin_buffer_v2(g, d, 65536, 0, &mh);
    t_check(rc == 0 && gdr_map_v2(g, mh, &m, 65536, GDR_MAP_FLAG_REQ_WC_MAPPING) == EINVAL,
            "req_wc_einval", "pin %d, WC request not refused", rc);
    gdr_unpin_buffer(g, mh);
    bad = pin_map_copy(g, d + (1 << 20), 65536, GDR_PIN_FLAG_FORCE_PCIE, GDR_MAP_FLAG_DEFAULT,
                       &mh2, &info, &rc);
    t_check(!bad && info.mapping_type == GDR_MAPPING_TYPE_WC && info.wc_mapping,
            "force_pcie_wc", "%s rc %d type %d %s", bad ? bad : "-", rc, (int)info.mapping_type,
            vramio_last_error());
    gdr_unmap(g, mh2, NULL, 0);
    t_check(gdr_map_v2(g, mh2, &m, 65536, GDR_MAP_FLAG_REQ_CACHE_MAPPING) == EINVAL,
            "force_pcie_req_cache_einval", "accepted");
    gdr_close(g);
}

static void mode_refuse_one(void)
{
    CUdeviceptr ok = alloc(0, 1 << 20), no = alloc(0, 1 << 20), later = alloc(0, 1 << 20);
    gdr_mh_t a, b, c;
    gdr_info_t info;
    void *m = NULL;
    gdr_t g = gdr_open();
    const char *bad;
    int rc = 0;

    if (!t_check(g && ok && no && later && refuse_mmap(no) == 0, "open", "%s",
                 vramio_last_error()))
        return;
    bad = pin_map_copy(g, ok, 65536, 0, 0, &a, &info, &rc);
    t_check(!bad, "first_buffer_maps", "%s rc %d %s", bad ? bad : "-", rc, vramio_last_error());
    rc = gdr_pin_buffer_v2(g, no, 65536, 0, &b);
    t_check(rc == 0, "refused_buffer_pins", "rc %d %s", rc, vramio_last_error());
    rc = rc ? rc : gdr_map(g, b, &m, 65536);
    t_check(rc == ENOTSUP && strstr(vramio_last_error(), "524") &&
                strstr(vramio_last_error(), "13.3") && !strstr(vramio_last_error(), " 0.0"),
            "its_map_fails_naming_driver", "rc %d '%s'", rc, vramio_last_error());
    bad = pin_map_copy(g, later, 65536, 0, 0, &c, &info, &rc);
    t_check(!bad, "later_buffer_maps", "%s rc %d %s", bad ? bad : "-", rc, vramio_last_error());
    gdr_close(g);
    g = gdr_open();
    bad = g ? pin_map_copy(g, later + 65536, 65536, 0, 0, &c, &info, &rc) : "gdr_open";
    t_check(!bad, "later_gdr_open_maps", "%s rc %d %s", bad ? bad : "-", rc, vramio_last_error());
    if (g)
        gdr_close(g);
}

static void mode_rounding(void)
{
    CUdeviceptr d = alloc(0, 1 << 20);
    size_t ps = host_page();
    unsigned long a4 = (unsigned long)d + 3 * ps, au = (unsigned long)d + 5 * ps + 100;
    gdr_t g = gdr_open();
    gdr_mh_t mh;
    gdr_info_t info;
    const char *bad;
    int rc = 0;

    if (!t_check(g && d, "open", "%s", vramio_last_error()))
        return;
    /* A page-aligned pin that is not 64 KiB aligned: the mapping starts at it. */
    bad = pin_map_copy(g, a4, 2 * ps, 0, 0, &mh, &info, &rc);
    t_check(!bad && info.va == a4 && info.mapped_size == 2 * ps && info.page_size == ps,
            "page_aligned_pin_copyable", "%s rc %d va %#llx (pinned %#lx) size %llu page %u %s",
            bad ? bad : "-", rc, (unsigned long long)info.va, a4,
            (unsigned long long)info.mapped_size, info.page_size, vramio_last_error());
    t_check(info.tm_cycles == 0 && info.cycles_per_ms == 0, "tm_cycles_zero",
            "tm_cycles %llu cycles_per_ms %u", (unsigned long long)info.tm_cycles,
            info.cycles_per_ms);
    gdr_unpin_buffer(g, mh);
    /* Unaligned: every byte of [au, au + n) reachable from the mapping gdr_map(n) gave. */
    bad = pin_map_copy(g, au, 5000, 0, 0, &mh, &info, &rc);
    t_check(!bad && info.va == (au & ~(ps - 1)), "unaligned_pin_every_byte_copyable",
            "%s rc %d va %#llx %s", bad ? bad : "-", rc, (unsigned long long)info.va,
            vramio_last_error());
    gdr_close(g);
}

static void mode_env_rule(void)
{
    static const char *const values[] = { "1", "2", "01", "true", "", " 1" };
    char why[256];
    size_t i;

    for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        int forced = strcmp(values[i], "1") == 0, says;

        setenv("GDRCOPY_USE_DMABUF_MMAP", values[i], 1);
        why[0] = 0;
        vramio_backend_probe(VRAMIO_BACKEND_GDRDRV, why, sizeof(why));
        says = strstr(why, "not selected") != NULL;
        t_check(says == forced, forced ? "forced_by_1" : "not_forced_by_other_values",
                "GDRCOPY_USE_DMABUF_MMAP='%s': gdrdrv '%s'", values[i], why);
    }
    unsetenv("GDRCOPY_USE_DMABUF_MMAP");
}

static void mode_fd_exhaustion(void)
{
    CUdeviceptr d = alloc(0, 1 << 20);
    struct rlimit rl;
    gdr_mh_t mh[64];
    gdr_t g = gdr_open();
    int i, rc = 0, fd = dup(0);

    if (!t_check(g && d && fd >= 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0, "open", "%s",
                 vramio_last_error()))
        return;
    /* Room for a few descriptors above the highest in use now. */
    rl.rlim_cur = (rlim_t)fd + 4;
    close(fd);
    setrlimit(RLIMIT_NOFILE, &rl);
    for (i = 0; i < 64 && rc == 0; i++)
        rc = gdr_pin_buffer_v2(g, d + (unsigned long)i * 4096, 4096, 0, &mh[i]);
    t_check(rc == EMFILE && strstr(vramio_last_error(), "file descriptors"), "emfile_said",
            "after %d pins: rc %d '%s'", i, rc, vramio_last_error());
    gdr_close(g);
}

static void mode_multidev(void)
{
    CUdeviceptr d1 = alloc(1, 1 << 20), d0 = alloc(0, 1 << 20);
    int dmabuf1 = getenv("FAKE_CUDA_DMABUF") == NULL;
    gdr_t g = gdr_open();
    gdr_mh_t mh;
    gdr_info_t info;
    CUcontext c0 = NULL, popped;
    const char *bad;
    int rc = 0;

    if (!t_check(g && d1 && d0, "open", "%s", vramio_last_error()))
        return;
    if (!dmabuf1) {
        rc = gdr_pin_buffer_v2(g, d1, 65536, 0, &mh);
        t_check(rc != 0 && strstr(vramio_last_error(), "device 1 does not support dma-buf"),
                "device_without_dmabuf_refused", "rc %d '%s'", rc, vramio_last_error());
        bad = pin_map_copy(g, d0, 65536, 0, 0, &mh, &info, &rc);
        t_check(!bad, "other_device_pins", "%s rc %d %s", bad ? bad : "-", rc, vramio_last_error());
        gdr_close(g);
        return;
    }
    bad = pin_map_copy(g, d1, 65536, 0, 0, &mh, &info, &rc);
    t_check(!bad && retains(0) == 0, "device1_no_context_gpu0_untouched",
            "%s rc %d, device 0 retained %d times %s", bad ? bad : "-", rc, retains(0),
            vramio_last_error());
    t_check(gpa_version() >= 13030, "export_through_cuGetProcAddress_13_3",
            "asked for version %d", gpa_version());
    gdr_unpin_buffer(g, mh);
    retain(&c0, 0);
    push_ctx(c0);
    bad = pin_map_copy(g, d1 + 65536, 65536, 0, 0, &mh, &info, &rc);
    t_check(!bad, "device1_memory_with_device0_current", "%s rc %d %s", bad ? bad : "-", rc,
            vramio_last_error());
    pop_ctx(&popped);
    gdr_close(g);
}

static void mode_exports(void)
{
    CUdeviceptr a = alloc(0, 2 << 20), b = alloc(0, 1 << 20), c = alloc(0, 768 << 10);
    CUdeviceptr e = alloc(0, 512 << 10);
    void *host = aligned_alloc(65536, 65536);
    gdr_t g = gdr_open();
    gdr_mh_t mh;
    gdr_info_t info;
    const char *bad;
    int rc = 0;

    if (!t_check(g && a && b && c && host, "open", "%s", vramio_last_error()))
        return;
    bad = pin_map_copy(g, a + 65536, 4096, 0, 0, &mh, &info, &rc);
    t_check(!bad, "sub_range", "%s rc %d %s", bad ? bad : "-", rc, vramio_last_error());
    if (t_check(b == a + (2 << 20), "allocations_adjacent", "a %#llx b %#llx",
                (unsigned long long)a, (unsigned long long)b)) {
        bad = pin_map_copy(g, b - 65536, 131072, 0, 0, &mh, &info, &rc);
        t_check(!bad, "two_allocations", "%s rc %d %s", bad ? bad : "-", rc, vramio_last_error());
    }
    /* Laid out as 580 lays out cuMemAlloc's: in whole 1 MiB units, one after the other. */
    t_check(c == b + (1 << 20) && e == c + (1 << 20), "allocations_1mib_apart",
            "b %#llx c %#llx e %#llx", (unsigned long long)b, (unsigned long long)c,
            (unsigned long long)e);
    bad = pin_map_copy(g, c + (768 << 10) - 65536, 131072, 0, 0, &mh, &info, &rc);
    t_check(!bad, "past_end_inside_block", "%s rc %d %s", bad ? bad : "-", rc,
            vramio_last_error());
    rc = gdr_pin_buffer_v2(g, (unsigned long)host, 65536, 0, &mh);
    t_check(rc != 0 && strstr(vramio_last_error(), "dmabuf: "), "not_device_memory_falls_through",
            "rc %d '%s'", rc, vramio_last_error());
    gdr_close(g);
    free(host);
}

/* The descriptors open before the pins began (inherited ones may lack FD_CLOEXEC). */
static unsigned char fd_before[4096];

/* snapshot: note the descriptors open now in fd_before, 0. Else how many this process holds
 * that were opened since (inheritable: only those without FD_CLOEXEC, which an exec now would
 * pass on with the export, and the GPU pages it holds). */
static int new_fds(int snapshot, int inheritable)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int fd, n = 0;

    if (snapshot)
        memset(fd_before, 0, sizeof(fd_before));
    while (d && (e = readdir(d))) {
        fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd == dirfd(d) || fd < 0 || fd >= 4096)
            continue;
        if (snapshot)
            fd_before[fd] = 1;
        else if (!fd_before[fd] && (!inheritable || !(fcntl(fd, F_GETFD) & FD_CLOEXEC)))
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

static volatile int pinning = 1;

static void *pin_loop(void *arg)
{
    gdr_t g = arg;
    CUdeviceptr d = alloc(0, 1 << 20);
    gdr_mh_t mh;

    for (int i = 0; i < 60 && d; i++)
        if (gdr_pin_buffer_v2(g, d + (unsigned long)(i % 8) * 65536, 65536, 0, &mh) == 0)
            gdr_unpin_buffer(g, mh);
    pinning = 0;
    return NULL;
}

static void mode_cloexec_fork(void)
{
    gdr_t g = gdr_open();
    pthread_t t;
    int forks = 0, leaks = 0, status;
    pid_t pid;

    new_fds(1, 0);
    if (!t_check(g && pthread_create(&t, NULL, pin_loop, g) == 0, "open", "%s",
                 vramio_last_error()))
        return;
    while (pinning && forks < 2000) {
        pid = fork();
        if (pid == 0)
            _exit(new_fds(0, 1) != 0);
        forks++;
        if (pid < 0 || t_wait_bounded(pid, &status, 30) || !WIFEXITED(status))
            break;
        leaks += WEXITSTATUS(status) != 0;
    }
    pthread_join(t, NULL);
    t_check(leaks == 0 && forks > 0, "no_fork_sees_export_without_cloexec",
            "%d of %d children saw an export fd without FD_CLOEXEC", leaks, forks);
    gdr_close(g);
}

static void mode_fork_closes_exports(void)
{
    CUdeviceptr d = alloc(0, 1 << 20);
    gdr_t g = gdr_open();
    gdr_mh_t mh[3];
    int i, rc = 0, status = -1, added;
    pid_t pid;

    if (!t_check(g && d, "open", "%s", vramio_last_error()))
        return;
    new_fds(1, 0);
    for (i = 0; i < 3 && rc == 0; i++)
        rc = gdr_pin_buffer_v2(g, d + (unsigned long)i * 65536, 65536, 0, &mh[i]);
    added = new_fds(0, 0);
    if (!t_check(rc == 0 && added == 3, "three_exports_open", "rc %d, %d new fds", rc, added))
        return;
    fflush(NULL);
    pid = fork();
    if (pid == 0)
        _exit(new_fds(0, 0));
    rc = pid < 0 ? errno : t_wait_bounded(pid, &status, 30);
    t_check(rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "child_holds_no_export",
            "rc %d, the child held %d of the parent's export fds", rc,
            WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    added = new_fds(0, 0);
    t_check(added == 3, "parent_keeps_its_exports", "%d of 3 export fds left", added);
    gdr_close(g);
}

static void mode_ctx_pin(void)
{
    CUdeviceptr d = alloc(0, 1 << 20);
    gdr_t g = gdr_open();
    gdr_mh_t mh, mh2;
    int rc, held, after;

    if (!t_check(g && d && primary_refs(0) == 0, "open", "%s, %d refs", vramio_last_error(),
                 primary_refs(0)))
        return;
    rc = gdr_pin_buffer_v2(g, d, 65536, 0, &mh);
    held = primary_refs(0);
    rc = rc ? rc : gdr_unpin_buffer(g, mh);
    after = primary_refs(0);
    t_check(rc == 0 && held == 1 && after == 0, "held_by_pin_released_by_unpin",
            "rc %d (%s), %d references while pinned, %d after unpin", rc, vramio_last_error(),
            held, after);
    rc = gdr_pin_buffer_v2(g, d, 65536, 0, &mh);
    rc = rc ? rc : gdr_pin_buffer_v2(g, d + 65536, 65536, 0, &mh2);
    held = primary_refs(0);
    gdr_close(g);
    t_check(rc == 0 && held == 2 && primary_refs(0) == 0, "released_by_gdr_close",
            "rc %d, %d references with two pins, %d after gdr_close", rc, held, primary_refs(0));
}

static void mode_ctx_open_null(void)
{
    gdr_t g = gdr_open();

    t_check(!g && primary_refs(0) == 0, "failed_open_leaves_no_context",
            "gdr_open %p, %d references on GPU 0's primary context after it (%s)", (void *)g,
            primary_refs(0), vramio_last_error());
    if (g)
        gdr_close(g);
}

static void mode_trial_transient(void)
{
    gdr_t g;

    fail_allocs(1);
    g = gdr_open();
    t_check(!g, "trial_out_of_memory_refused", "gdr_open %p", (void *)g);
    if (g)
        gdr_close(g);
    g = gdr_open();
    t_check(g != NULL, "next_gdr_open_tries_again", "%s", vramio_last_error());
    if (g)
        gdr_close(g);
}

static void mode_env_probe(void)
{
    static const char *const values[] = { "01", "2", "true", " 1", "", "1" };
    char why[256];
    size_t i;

    for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        int forced = strcmp(values[i], "1") == 0, rc;
        char name[64];

        setenv("GDRCOPY_USE_DMABUF_MMAP", values[i], 1);
        why[0] = 0;
        rc = vramio_backend_probe(VRAMIO_BACKEND_DMABUF, why, sizeof(why));
        snprintf(name, sizeof(name), forced ? "trial_run_for_1" : "no_trial_for_value_%zu", i);
        t_check((rc == 0) == forced, name,
                "GDRCOPY_USE_DMABUF_MMAP='%s' on 13.0: probe %d '%s'", values[i], rc, why);
    }
    unsetenv("GDRCOPY_USE_DMABUF_MMAP");
}

static void mode_upstream_alignment(void)
{
    CUdeviceptr d = alloc(0, 1 << 20);
    int strict = getenv("VRAMIO_UPSTREAM_ALIGNMENT") != NULL, rc;
    gdr_t g = gdr_open();
    gdr_mh_t small[2], page;
    void *m[2] = { NULL, NULL }, *mp = NULL;

    if (!t_check(g && d, "open", "%s", vramio_last_error()))
        return;
    /* basic_small_buffers_mapping: two 8-byte buffers in one GPU page. */
    rc = gdr_pin_buffer(g, d, 8, 0, 0, &small[0]);
    rc = rc ? rc : gdr_pin_buffer(g, d + 8, 8, 0, 0, &small[1]);
    rc = rc ? rc : gdr_map(g, small[0], &m[0], 8);
    t_check(rc == 0, "aligned_small_buffer_maps", "rc %d %s", rc, vramio_last_error());
    rc = gdr_map(g, small[1], &m[1], 8);
    if (strict)
        t_check(rc == EINVAL && strstr(vramio_last_error(), "aligned"), "unaligned_map_refused",
                "rc %d '%s'", rc, vramio_last_error());
    else
        t_check(rc == 0, "unaligned_map_maps", "rc %d '%s'", rc, vramio_last_error());
    rc = gdr_pin_buffer(g, d + 3 * host_page(), host_page(), 0, 0, &page);
    rc = rc ? rc : gdr_map(g, page, &mp, host_page());
    t_check(rc == 0, "host_page_aligned_maps", "rc %d %s", rc, vramio_last_error());
    gdr_close(g);
}

int main(int argc, char **argv)
{
    static const struct { const char *name; void (*fn)(void); } modes[] = {
        { "open_refused", mode_open_refused }, { "coherent", mode_coherent },
        { "refuse_one", mode_refuse_one }, { "rounding", mode_rounding },
        { "env_rule", mode_env_rule }, { "fd_exhaustion", mode_fd_exhaustion },
        { "multidev", mode_multidev }, { "exports", mode_exports },
        { "cloexec_fork", mode_cloexec_fork }, { "fork_closes_exports", mode_fork_closes_exports },
        { "ctx_pin", mode_ctx_pin }, { "ctx_open_null", mode_ctx_open_null },
        { "trial_transient", mode_trial_transient }, { "env_probe", mode_env_probe },
        { "upstream_alignment", mode_upstream_alignment },
    };
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    size_t i;

#define SYM(var, name) (var = lib ? (__typeof__(var))dlsym(lib, name) : NULL)
    if (argc != 2 || !SYM(alloc_on, "fake_cuda_alloc_on") ||
        !SYM(refuse_mmap, "fake_cuda_refuse_mmap") || !SYM(retains, "fake_cuda_retains") ||
        !SYM(gpa_version, "fake_cuda_gpa_version") || !SYM(push_ctx, "cuCtxPushCurrent_v2") ||
        !SYM(primary_refs, "fake_cuda_primary_refs") ||
        !SYM(fail_allocs, "fake_cuda_fail_allocs") ||
        !SYM(pop_ctx, "cuCtxPopCurrent_v2") || !SYM(retain, "cuDevicePrimaryCtxRetain")) {
        t_fail("setup", "libcuda.so.1 is not the stand-in driver, or no mode given");
        return 1;
    }
#undef SYM
    for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        if (strcmp(argv[1], modes[i].name) == 0) {
            modes[i].fn();
            return t_status();
        }
    }
    return 2;
}

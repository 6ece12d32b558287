// SPDX-License-Identifier: MIT
/*
 * dmabuf_client.c - the dma-buf backend end to end through the public API, against the
 * stand-in driver of fake_cuda_dmabuf.c (test_dmabuf_emulated.sh runs it once per mode):
 *   main     a driver that maps exports: pin, info, map, copies both ways checked against
 *            the memory itself, one fd per pin and none left after unpin or close, the
 *            FORCE_PCIE flag refused (no coherent link), mapping requests, a pin the export
 *            refuses falling through, a forked child refused;
 *   force_pcie_coherent   FORCE_PCIE on a coherent GPU: taken, mapped WC;
 *   old      a 13.0 driver: the probe's reason names the versions;
 *   refuse   a 13.3 driver that refuses to mmap exports: pins export, their gdr_map fails
 *            and says why, the backend stays usable (the refusal is per buffer);
 *   forced_refuse / forced_ok   GDRCOPY_USE_DMABUF_MMAP=1 on a 13.0 driver: the probe's
 *            trial decides, gdr_open fails with the mmap reason or works.
 */
#include <cuda.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "t.h"
#include "vramio.h"

static CUresult (*fake_alloc)(CUdeviceptr *, size_t);
static int (*fake_exports)(void);

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* Which descriptors below 1024 are open (seen[fd] = 1). */
static void fd_snapshot(unsigned char seen[1024])
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int fd;

    memset(seen, 0, 1024);
    while (d && (e = readdir(d))) {
        fd = atoi(e->d_name);
        if (e->d_name[0] != '.' && fd >= 0 && fd < 1024 && fd != dirfd(d))
            seen[fd] = 1;
    }
    if (d)
        closedir(d);
}

/* 1 when every descriptor opened since before[] is close-on-exec (the library's must be: a
 * program that forks and execs would pass a dma-buf export, and the GPU pages it holds, on). */
static int new_fds_cloexec(const unsigned char before[1024])
{
    unsigned char now[1024];
    int fd, ok = 1;

    fd_snapshot(now);
    for (fd = 0; fd < 1024; fd++)
        if (now[fd] && !before[fd] && !(fcntl(fd, F_GETFD) & FD_CLOEXEC))
            ok = 0;
    return ok;
}

static size_t round_page(size_t n)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);

    return (n + ps - 1) / ps * ps;
}

static CUdeviceptr alloc(size_t n)
{
    CUdeviceptr d = 0;

    if (fake_alloc(&d, n) != CUDA_SUCCESS)
        return 0;
    return d;
}

/* gdr_open picks dmabuf first, with its attributes and gdrdrv 2.6's version. */
static void check_open(gdr_t g)
{
    vramio_backend_t b = VRAMIO_BACKEND_NONE;
    int v1 = 0, v2 = 0, v3 = 0, major = 0, minor = 0, rc;

    vramio_get_backend(g, &b);
    t_check(b == VRAMIO_BACKEND_DMABUF, "first_backend_dmabuf", "%s", vramio_backend_name(b));
    gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &v1);
    gdr_get_attribute(g, GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE, &v2);
    gdr_get_attribute(g, GDR_ATTR_USING_DMA_BUF_MMAP, &v3);
    t_check(v1 == 1 && v2 == 1 && v3 == 1, "attributes", "%d %d %d", v1, v2, v3);
    rc = gdr_driver_get_version(g, &major, &minor);
    t_check(rc == 0 && major == 2 && minor == 6, "driver_version", "rc %d %d.%d", rc, major, minor);
}

/* An unaligned pin of d + 100: one fd, exported in whole host pages, as upstream. */
static int pin_unaligned(gdr_t g, CUdeviceptr d, size_t n, int base_fds, gdr_mh_t *mh)
{
    vramio_backend_t b = VRAMIO_BACKEND_NONE;
    gdr_info_t info;
    int rc = gdr_pin_buffer_v2(g, (unsigned long)d + 100, n, 0, mh);

    if (!t_check(rc == 0, "pin_unaligned", "%d %s", rc, vramio_last_error()))
        return rc;
    t_check(open_fds() == base_fds + 1, "one_fd_per_pin", "%d fds, %d before", open_fds(),
            base_fds);
    vramio_handle_backend(g, *mh, &b);
    gdr_get_info(g, *mh, &info);
    t_check(b == VRAMIO_BACKEND_DMABUF && info.va == d && info.mapped_size == round_page(100 + n) &&
                info.page_size == (unsigned)sysconf(_SC_PAGESIZE) && !info.mapped,
            "info", "backend %s va %#llx/%#llx size %llu page %u", vramio_backend_name(b),
            (unsigned long long)info.va, (unsigned long long)d,
            (unsigned long long)info.mapped_size, info.page_size);
    return 0;
}

/* Its mapping is write-combined only, and copies both ways reach the memory itself. */
static void map_and_copy(gdr_t g, gdr_mh_t mh, CUdeviceptr d)
{
    unsigned char src[5000], got[5000];
    gdr_info_t info;
    void *m = NULL;
    int rc;

    t_check(gdr_map_v2(g, mh, &m, round_page(5100), GDR_MAP_FLAG_REQ_CACHE_MAPPING) == EINVAL,
            "map_req_cache_einval", "accepted");
    rc = gdr_map(g, mh, &m, round_page(5100));
    gdr_get_info(g, mh, &info);
    if (!t_check(rc == 0 && info.mapped && info.wc_mapping &&
                     info.mapping_type == GDR_MAPPING_TYPE_WC,
                 "map_wc", "rc %d mapped %u type %d", rc, info.mapped, (int)info.mapping_type))
        return;
    t_pattern(src, sizeof(src), 1);
    gdr_copy_to_mapping(mh, (char *)m + 100, src, sizeof(src));
    t_check(memcmp((void *)(uintptr_t)(d + 100), src, sizeof(src)) == 0, "copy_to_device",
            "the memory behind the export differs");
    t_pattern((unsigned char *)(uintptr_t)(d + 100), sizeof(src), 2);
    gdr_copy_from_mapping(mh, got, (char *)m + 100, sizeof(got));
    t_check(memcmp((void *)(uintptr_t)(d + 100), got, sizeof(got)) == 0, "copy_from_device",
            "read other bytes");
}

/* FORCE_PCIE on a GPU without a coherent link: the stand-in refuses the PCIE flag there, as
 * NVIDIA's driver does, and that refusal is the pin's (EINVAL, final, nothing left open), as
 * upstream's pin fails; a client pins again without the flag. On a coherent GPU (mode
 * force_pcie_coherent) the flag is taken and the mapping is WC. A pin unpinned while mapped. */
static void force_pcie(gdr_t g, CUdeviceptr d2, int base_fds)
{
    gdr_mh_t mh;
    void *m = NULL;
    int rc = gdr_pin_buffer_v2(g, (unsigned long)d2, 1 << 20, GDR_PIN_FLAG_FORCE_PCIE, &mh);

    t_check(rc == EINVAL && strstr(vramio_last_error(), "coherent") &&
                open_fds() == base_fds + 1, "force_pcie_refused_without_coherent_link",
            "rc %d %s, %d fds", rc, vramio_last_error(), open_fds());
    if (rc == 0)
        gdr_unpin_buffer(g, mh);
    rc = gdr_pin_buffer_v2(g, (unsigned long)d2, 1 << 20, 0, &mh);
    if (rc == 0) {
        rc = gdr_map(g, mh, &m, 1 << 20);
        t_check(rc == 0 && gdr_unpin_buffer(g, mh) == 0, "unpin_live_mapping", "map rc %d", rc);
    }
}

static void mode_force_pcie_coherent(void)
{
    CUdeviceptr d = alloc(1 << 20);
    gdr_t g = gdr_open();
    gdr_info_t info;
    gdr_mh_t mh;
    void *m = NULL;
    int rc;

    if (!t_check(g && d, "open", "gdr_open %p: %s", (void *)g, vramio_last_error()))
        return;
    rc = gdr_pin_buffer_v2(g, (unsigned long)d, 1 << 20, GDR_PIN_FLAG_FORCE_PCIE, &mh);
    if (!t_check(rc == 0, "force_pcie_taken_on_coherent_gpu", "rc %d %s", rc,
                 vramio_last_error()))
        return;
    rc = gdr_map(g, mh, &m, 1 << 20);
    t_check(rc == 0 && gdr_get_info(g, mh, &info) == 0 && info.mapping_type == GDR_MAPPING_TYPE_WC,
            "force_pcie_maps_wc", "map rc %d type %d", rc, (int)info.mapping_type);
    if (rc == 0)
        gdr_unmap(g, mh, m, 1 << 20);
    gdr_unpin_buffer(g, mh);
    gdr_close(g);
}

/* A child forked while the pin is mapped is refused with EACCES and faults on the parent's
 * mapping (not inherited, as with gdrdrv); it may leave through exit() (end 0) as well as
 * _exit() (end 1). */
static void fork_child_refused(gdr_t g, void *m, CUdeviceptr d, CUdeviceptr d2, int end)
{
    int rc, status = -1;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        gdr_mh_t c;
        /* First, before anything could map something else into the hole: a fault, or at
         * least not the parent's bytes (those of the memory behind the export). */
        int seen = !m || (t_touch_faults(m) == 0 && memcmp(m, (void *)(uintptr_t)d, 64) == 0);
        int bad = (gdr_pin_buffer_v2(g, (unsigned long)d2, 4096, 0, &c) != EACCES) | seen << 1;

        alarm(20);
        if (end == 0)
            exit(bad);
        _exit(bad);
    }
    rc = pid < 0 ? errno : t_wait_bounded(pid, &status, 30);
    t_check(rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
            end ? "fork_child_refused__exit" : "fork_child_refused_exit",
            "rc %d, child status %#x (bit 1 of the exit code: it read the mapping)", rc,
            (unsigned)status);
}

/* The export's fd is close-on-exec; forked children are refused; the parent keeps its map. */
static void exports_and_fork(gdr_t g, CUdeviceptr d, CUdeviceptr d2)
{
    unsigned char fds_before[1024];
    gdr_mh_t mh;
    void *m = NULL;
    int rc;

    fd_snapshot(fds_before);
    rc = gdr_pin_buffer_v2(g, (unsigned long)d, 65536, 0, &mh);
    t_check(rc == 0 && new_fds_cloexec(fds_before), "export_fd_cloexec",
            "pin %d, a descriptor lacks FD_CLOEXEC", rc);
    if (rc == 0)
        gdr_map(g, mh, &m, 65536);
    for (int end = 0; end < 2; end++)
        fork_child_refused(g, m, d, d2, end);
    t_check(m && t_touch_faults(m) == 0, "fork_parent_keeps_mapping", "the parent lost it");
}

static void mode_main(void)
{
    CUdeviceptr d = alloc(1 << 20), d2 = alloc(1 << 20);
    unsigned char host[4096];
    gdr_t g = gdr_open();
    gdr_mh_t mh;
    int base_fds, rc;
    void *m2 = NULL;

    if (!t_check(g && d && d2, "open", "gdr_open %p: %s", (void *)g, vramio_last_error()))
        return;
    check_open(g);
    base_fds = open_fds();
    if (pin_unaligned(g, d, 5000, base_fds, &mh))
        return;
    map_and_copy(g, mh, d);
    force_pcie(g, d2, base_fds);
    t_check(gdr_unpin_buffer(g, mh) == 0 && open_fds() == base_fds, "unpin_closes_fd",
            "%d fds, %d before", open_fds(), base_fds);
    /* A range the export refuses (host memory here) is offered to the next backend; the
     * error names what each said. */
    rc = gdr_pin_buffer_v2(g, (unsigned long)host, sizeof(host), 0, &mh);
    t_check(rc != 0 && strstr(vramio_last_error(), "dmabuf"), "export_refused_falls_through",
            "rc %d, '%s'", rc, vramio_last_error());
    exports_and_fork(g, d, d2);
    rc = gdr_pin_buffer_v2(g, (unsigned long)d2, 65536, 0, &mh);
    gdr_map(g, mh, &m2, 65536);
    t_check(rc == 0 && gdr_close(g) == 0 && open_fds() == base_fds, "close_with_live_pins",
            "pin %d, %d fds, %d before", rc, open_fds(), base_fds);
}

static void mode_old(void)
{
    char why[256] = "";
    int rc = vramio_backend_probe(VRAMIO_BACKEND_DMABUF, why, sizeof(why));

    t_check(rc != 0 && strstr(why, "13.0") && strstr(why, "13.3"), "old_driver_reason",
            "rc %d '%s'", rc, why);
}

static void mode_refuse(void)
{
    CUdeviceptr d = alloc(1 << 20);
    char why[256] = "";
    gdr_mh_t mh;
    gdr_t g = gdr_open();
    void *m = NULL;
    int rc, before;

    if (!t_check(g && d, "open", "%s", vramio_last_error()))
        return;
    /* The driver says it maps exports (13.3): a refusal is this buffer's, found by its map. */
    rc = gdr_pin_buffer_v2(g, (unsigned long)d, 4096, 0, &mh);
    t_check(rc == 0, "pin_exports", "rc %d '%s'", rc, vramio_last_error());
    rc = rc ? rc : gdr_map(g, mh, &m, 4096);
    t_check(rc != 0 && strstr(vramio_last_error(), "dmabuf could not map"), "map_finds_refusal",
            "rc %d '%s'", rc, vramio_last_error());
    rc = vramio_backend_probe(VRAMIO_BACKEND_DMABUF, why, sizeof(why));
    t_check(rc == 0, "probe_still_usable", "rc %d '%s'", rc, why);
    before = fake_exports();
    rc = gdr_pin_buffer_v2(g, (unsigned long)d + 4096, 4096, 0, &mh);
    t_check(rc == 0 && fake_exports() == before + 1, "later_pins_still_export",
            "rc %d, %d exports more", rc, fake_exports() - before);
    gdr_close(g);
}

static void mode_forced(int expect_ok)
{
    CUdeviceptr d;
    vramio_backend_t b = VRAMIO_BACKEND_NONE;
    gdr_mh_t mh;
    gdr_t g = gdr_open();

    if (!expect_ok) {
        t_check(!g && strstr(vramio_last_error(), "mmap"), "forced_trial_refusal",
                "gdr_open %p, '%s'", (void *)g, vramio_last_error());
        return;
    }
    d = alloc(1 << 20);
    if (!t_check(g != NULL, "forced_trial_ok", "%s", vramio_last_error()))
        return;
    vramio_get_backend(g, &b);
    t_check(b == VRAMIO_BACKEND_DMABUF && gdr_pin_buffer_v2(g, (unsigned long)d, 4096, 0, &mh) == 0,
            "forced_pins_by_dmabuf", "backend %s, %s", vramio_backend_name(b), vramio_last_error());
    gdr_close(g);
}

int main(int argc, char **argv)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

    if (argc != 2)
        return 2;
    if (!lib) /* the library loads it on demand: make sure it is the stand-in */
        lib = dlopen("libcuda.so.1", RTLD_NOW);
    fake_alloc = lib ? (CUresult (*)(CUdeviceptr *, size_t))dlsym(lib, "cuMemAlloc_v2") : NULL;
    fake_exports = lib ? (int (*)(void))dlsym(lib, "fake_cuda_exports") : NULL;
    if (!fake_alloc || !fake_exports) {
        t_fail("setup", "libcuda.so.1 is not the stand-in driver");
        return 1;
    }
    if (strcmp(argv[1], "main") == 0)
        mode_main();
    else if (strcmp(argv[1], "old") == 0)
        mode_old();
    else if (strcmp(argv[1], "refuse") == 0)
        mode_refuse();
    else if (strcmp(argv[1], "forced_refuse") == 0)
        mode_forced(0);
    else if (strcmp(argv[1], "forced_ok") == 0)
        mode_forced(1);
    else if (strcmp(argv[1], "force_pcie_coherent") == 0)
        mode_force_pcie_coherent();
    else
        return 2;
    return t_status();
}

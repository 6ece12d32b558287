// SPDX-License-Identifier: MIT
/*
 * gdrdrv_test.c - checks of the module's own promises (driver/README.md) that the other
 * guest tests do not cover: the device node's mode and group parameters,
 * /proc/driver/gdrdrv/params (its pin count hidden from other users), non-overlapping handle
 * ranges and the wrap of the handle space, memory types per page-table flag, several mappings
 * of one pin, unpin under a live mapping (SIGBUS, pages given back at once), mmap refusals
 * (PROT_EXEC too). Run by tests/kernel/guest/init.sh with gdrdrv loaded with default
 * parameters; it reloads the module with other parameters and restores it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "race.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
#define MODULE "/modules/gdrdrv.ko"

static int fd = -1;
static long page;

static int ioc(unsigned long cmd, void *arg)
{
    return ioctl(fd, cmd, arg) == 0 ? 0 : errno;
}

static int pin(uint64_t addr, uint64_t size, uint64_t *handle)
{
    struct gdrdrv_pin_buffer_v2 p = { .addr = addr, .size = size };
    int e = ioc(GDRDRV_IOC_PIN_BUFFER_V2, &p);

    *handle = p.handle;
    return e;
}

static int unpin(uint64_t handle)
{
    struct gdrdrv_unpin_buffer u = { .handle = handle };

    return ioc(GDRDRV_IOC_UNPIN_BUFFER, &u);
}

static uint32_t mapping_type(uint64_t handle)
{
    struct gdrdrv_get_info_v2 i = { .handle = handle };

    return ioc(GDRDRV_IOC_GET_INFO_V2, &i) ? 0xffffffffu : i.mapping_type;
}

static void *map(uint64_t handle, size_t len, int flags)
{
    return mmap(NULL, len, PROT_READ | PROT_WRITE, flags, fd, (off_t)(handle * (uint64_t)page));
}

/* Reload gdrdrv with params; reopen the device. 0 or -1. */
static int reload(const char *params)
{
    char cmd[256];

    if (fd >= 0)
        close(fd);
    fd = -1;
    snprintf(cmd, sizeof(cmd), "rmmod gdrdrv && insmod " MODULE " %s", params);
    if (system(cmd) != 0)
        return -1;
    /* The node comes with the load; a slow guest gets as long as it takes (bounded). */
    for (double end = race_now() + RACE_WAIT_S; access("/dev/gdrdrv", F_OK) && race_now() < end;)
        race_sleep_ms(10);
    fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
    return fd < 0 ? -1 : 0;
}

static int proprietary;     /* the misc-device flavour: mode only, no group */

/* A file's text, NUL-terminated in buf; the bytes read or -1. */
static long read_text(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, size - 1, f) : 0;

    if (f)
        fclose(f);
    buf[n] = '\0';
    return f ? (long)n : -1;
}

static void test_params_file(void)
{
    char buf[1024];

    read_text("/proc/driver/gdrdrv/params", buf, sizeof(buf));
    proprietary = strstr(buf, "flavour: proprietary\n") != NULL;
    t_check(strstr(buf, "version: 2.6\n") && strstr(buf, "flavour: ") &&
            strstr(buf, "use_persistent_mapping: 1\n") && strstr(buf, "dbg_enabled: 0\n"),
            "proc_params", "got '%s'", buf);
}

/*
 * The params file is world-readable, but the system-wide pin count in it is root's only: any
 * other user would watch everyone's pinning. A child that becomes nobody (65534) reads it.
 */
static void test_params_unprivileged(void)
{
    char buf[1024];
    int status = -1;
    pid_t pid;

    read_text("/proc/driver/gdrdrv/params", buf, sizeof(buf));
    t_check(strstr(buf, "\npins: ") != NULL, "proc_params_root_pins", "root does not see pins: '%s'",
            buf);
    pid = fork();
    if (pid == 0) {
        alarm(10);
        if (setgid(65534) || setuid(65534) || getuid() != 65534)
            _exit(3);
        if (read_text("/proc/driver/gdrdrv/params", buf, sizeof(buf)) <= 0)
            _exit(2);
        if (!strstr(buf, "version: "))
            _exit(2);
        _exit(strstr(buf, "pins: ") ? 1 : 0);
    }
    if (pid > 0)
        waitpid(pid, &status, 0);
    t_check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "proc_params_user_no_pins",
            "as uid 65534: %s", !WIFEXITED(status) ? "child died" :
            WEXITSTATUS(status) == 1 ? "the system-wide pins: count is shown" :
            WEXITSTATUS(status) == 2 ? "the file could not be read" : "could not become uid 65534");
}

static void test_device_node(void)
{
    struct stat st = { 0 };

    t_check(stat("/dev/gdrdrv", &st) == 0 && S_ISCHR(st.st_mode) &&
            (st.st_mode & 07777) == 0666 && st.st_gid == 0,
            "node_default_mode", "mode %o gid %u", (unsigned)st.st_mode, (unsigned)st.st_gid);
    if (reload("dev_mode=0640 dev_gid=44")) {
        t_fail("node_params", "reload with dev_mode/dev_gid failed");
        return;
    }
    t_check(stat("/dev/gdrdrv", &st) == 0 && (st.st_mode & 07777) == 0640 &&
            st.st_gid == (proprietary ? 0u : 44u),
            "node_params", "mode %o gid %u (%s flavour)", (unsigned)st.st_mode,
            (unsigned)st.st_gid, proprietary ? "proprietary" : "open");
}

/* Handles are page offsets: no two live pins may share one. */
static void test_handle_ranges(uint64_t va)
{
    uint64_t h[4];
    int e = 0, ok = 1;

    for (int i = 0; i < 4 && !e; i++)
        e = pin(va + (uint64_t)i * GPU_PAGE, (uint64_t)(i + 1) * GPU_PAGE, &h[i]);
    for (int i = 0; i < 4 && !e; i++)
        for (int j = 0; j < 4; j++) {
            uint64_t len_i = (uint64_t)(i + 1) * GPU_PAGE / (uint64_t)page;

            if (i != j && h[j] >= h[i] && h[j] < h[i] + len_i)
                ok = 0;
        }
    t_check(!e && ok, "handle_ranges_disjoint", "pin %d, handles %#llx %#llx %#llx %#llx", e,
            (unsigned long long)h[0], (unsigned long long)h[1], (unsigned long long)h[2],
            (unsigned long long)h[3]);
    for (int i = 0; i < 4 && !e; i++)
        unpin(h[i]);
}

/* With a 2^16-page offset space: wrap many times around a long-lived pin, fill, drain. */
static void test_handle_wrap(uint64_t va)
{
    uint64_t keep, h, held[1024], span = 8 * GPU_PAGE / (uint64_t)page, wraps = 0, last = 0;
    int e, n = 0, overlap = 0;

    if (reload("offset_space_log2=16")) {
        t_fail("handle_wrap", "reload with offset_space_log2=16 failed");
        return;
    }
    e = pin(va, GPU_PAGE, &keep);
    for (int i = 0; i < 3000 && !e; i++) {
        e = pin(va, 8 * GPU_PAGE, &h);
        if (e)
            break;
        if (h < last)
            wraps++;
        last = h;
        if (keep >= h && keep < h + span)
            overlap = 1;
        e = unpin(h);
    }
    t_check(!e && wraps >= 3 && !overlap, "handle_wrap", "error %d after %llu wraps, overlap %d",
            e, (unsigned long long)wraps, overlap);

    while (n < 1024 && (e = pin(va, 8 * GPU_PAGE, &held[n])) == 0)
        n++;
    t_check(e == ENOSPC && n > 400, "handle_space_full_enospc", "%d pins then error %d", n, e);
    for (int i = 0; i < n; i++)
        unpin(held[i]);
    e = pin(va, 8 * GPU_PAGE, &h);
    t_check(!e, "handle_space_reusable", "pin after draining: %d", e);
    if (!e)
        unpin(h);
    unpin(keep);
}

/* Default type by the page table's CPU_CACHEABLE flag; what REQ_MAPPING_TYPE may ask. */
static void test_mapping_types(uint64_t va_wc, uint64_t va_cached)
{
    struct gdrdrv_req_mapping_type r;
    uint64_t h1, h2;
    void *m;
    int e;

    if (pin(va_cached, GPU_PAGE, &h1) || pin(va_wc, GPU_PAGE, &h2)) {
        t_fail("mapping_types", "pins failed");
        return;
    }
    m = map(h1, GPU_PAGE, MAP_SHARED);
    t_check(m != MAP_FAILED && mapping_type(h1) == GDRDRV_MAPPING_TYPE_CACHING,
            "cacheable_maps_caching", "type %u", mapping_type(h1));
    if (m != MAP_FAILED)
        munmap(m, GPU_PAGE);
    m = map(h2, GPU_PAGE, MAP_SHARED);
    t_check(m != MAP_FAILED && mapping_type(h2) == GDRDRV_MAPPING_TYPE_WC,
            "default_maps_wc", "type %u", mapping_type(h2));
    if (m != MAP_FAILED)
        munmap(m, GPU_PAGE);

    r = (struct gdrdrv_req_mapping_type){ .handle = h2, .mapping_type = GDRDRV_MAPPING_TYPE_CACHING };
    e = ioc(GDRDRV_IOC_REQ_MAPPING_TYPE, &r);
    t_check(e == EINVAL, "caching_needs_cacheable", "got %d", e);
    r.mapping_type = GDRDRV_MAPPING_TYPE_DEVICE;
    e = ioc(GDRDRV_IOC_REQ_MAPPING_TYPE, &r);
    m = e ? MAP_FAILED : map(h2, GPU_PAGE, MAP_SHARED);
    t_check(m != MAP_FAILED && mapping_type(h2) == GDRDRV_MAPPING_TYPE_DEVICE,
            "device_on_request", "req %d type %u", e, mapping_type(h2));
    if (m != MAP_FAILED)
        munmap(m, GPU_PAGE);
    unpin(h1);
    unpin(h2);
}

/* Two mappings share the pin and its type; REQ_MAPPING_TYPE is EBUSY until both go. */
static void test_two_mappings(uint64_t va)
{
    struct gdrdrv_req_mapping_type r = { .mapping_type = GDRDRV_MAPPING_TYPE_WC };
    uint64_t h;
    uint32_t v = 0x600dcafe, got = 0;
    void *a, *b;

    if (pin(va, GPU_PAGE, &h)) {
        t_fail("two_mappings", "pin failed");
        return;
    }
    r.handle = h;
    a = map(h, GPU_PAGE, MAP_SHARED);
    b = map(h, GPU_PAGE, MAP_SHARED);
    if (a == MAP_FAILED || b == MAP_FAILED) {
        t_fail("two_mappings", "mmap: %s", strerror(errno));
        return;
    }
    *(volatile uint32_t *)a = v;
    got = *(volatile uint32_t *)b;
    t_check(got == v, "two_mappings_same_pages", "read %#x", got);
    munmap(a, GPU_PAGE);
    t_check(ioc(GDRDRV_IOC_REQ_MAPPING_TYPE, &r) == EBUSY, "req_type_busy_while_mapped", "not EBUSY");
    munmap(b, GPU_PAGE);
    t_check(ioc(GDRDRV_IOC_REQ_MAPPING_TYPE, &r) == 0, "req_type_after_unmap", "refused");
    unpin(h);
}

/* UNPIN under a live mapping: the mapping faults (SIGBUS) and the pages go at once. */
static void test_unpin_while_mapped(uint64_t va)
{
    uint64_t h, base = emu_live_pins();
    volatile uint32_t *m;
    int faulted = 0;

    if (pin(va, GPU_PAGE, &h)) {
        t_fail("unpin_while_mapped", "pin failed");
        return;
    }
    m = map(h, GPU_PAGE, MAP_SHARED);
    if (m == MAP_FAILED) {
        t_fail("unpin_while_mapped", "mmap: %s", strerror(errno));
        return;
    }
    m[0] = 1;
    /* The mapping is zapped and can only fault (SIGBUS) from now: the pages go at once. */
    t_check(unpin(h) == 0 && emu_live_pins() == base, "unpin_releases_pages_while_mapped",
            "live pins %llu (base %llu)", (unsigned long long)emu_live_pins(), (unsigned long long)base);
    faulted = t_touch_faults(m) == SIGBUS;
    t_check(faulted, "unpin_zaps_mapping", "access after UNPIN did not fault");
    munmap((void *)m, GPU_PAGE);
    t_check(emu_live_pins() == base, "munmap_after_unpin_clean", "live pins %llu (base %llu)",
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
}

static void test_mmap_refusals(uint64_t va)
{
    uint64_t h;
    void *m;

    if (!pin(va + 0x100, GPU_PAGE, &h)) {
        m = map(h, GPU_PAGE, MAP_SHARED);
        t_check(m == MAP_FAILED && errno == EINVAL, "unaligned_pin_mmap_einval", "mapped");
        unpin(h);
    }
    if (!pin(va, GPU_PAGE, &h)) {
        m = map(h, 2 * GPU_PAGE, MAP_SHARED);
        t_check(m == MAP_FAILED && errno == EINVAL, "mmap_longer_than_pin", "mapped");
        m = map(h, GPU_PAGE, MAP_PRIVATE);
        t_check(m == MAP_FAILED && errno == EINVAL, "mmap_private_refused", "mapped");
        m = map(h + 1, page, MAP_SHARED);
        t_check(m == MAP_FAILED && errno == EINVAL, "mmap_inside_range_refused", "mapped");
        /* BAR memory is never code: no PROT_EXEC, now or later by mprotect. */
        m = mmap(NULL, GPU_PAGE, PROT_READ | PROT_EXEC, MAP_SHARED, fd, (off_t)(h * (uint64_t)page));
        t_check(m == MAP_FAILED && errno == EPERM, "mmap_exec_refused", "%s",
                m == MAP_FAILED ? strerror(errno) : "mapped");
        if (m != MAP_FAILED)
            munmap(m, GPU_PAGE);
        m = map(h, GPU_PAGE, MAP_SHARED);
        t_check(m != MAP_FAILED && mprotect(m, GPU_PAGE, PROT_READ | PROT_EXEC) && errno == EACCES,
                "mprotect_exec_refused", "%s", m == MAP_FAILED ? "mmap failed" : "allowed or not EACCES");
        if (m != MAP_FAILED)
            munmap(m, GPU_PAGE);
        unpin(h);
    }
}

int main(void)
{
    uint64_t va, va_cached;

    page = sysconf(_SC_PAGESIZE);
    if (access(MODULE, F_OK) || emu_fd() < 0) {
        printf("needs the QEMU guest of tests/kernel (%s and /dev/nvp2p_emu)\n", MODULE);
        return 77;
    }
    if (emu_alloc(16 * GPU_PAGE, 1, 0, &va) ||
        emu_alloc(GPU_PAGE, 1, NVP2P_EMU_ALLOC_CPU_CACHEABLE, &va_cached)) {
        t_fail("setup", "provider ALLOC failed");
        return 1;
    }
    fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        t_fail("setup", "/dev/gdrdrv: %s", strerror(errno));
        return 1;
    }
    test_params_file();
    test_params_unprivileged();
    test_handle_ranges(va);
    /* In the provider's coherent mode no RAM page is non-cacheable; coherent_test covers it. */
    if (emu_coherent())
        t_skip("mapping_types", "the provider is in coherent mode (every RAM page is cacheable)");
    else
        test_mapping_types(va, va_cached);
    test_two_mappings(va);
    test_unpin_while_mapped(va);
    test_mmap_refusals(va);
    test_device_node();
    test_handle_wrap(va);
    if (reload(""))
        t_fail("restore", "could not reload gdrdrv with default parameters");
    close(fd);
    emu_free(va);
    emu_free(va_cached);
    return t_status();
}

// SPDX-License-Identifier: MIT
/* mmio.c - BAR allocations, the PAT memory-type list and the kernel log for the MMIO guest
 * tests (see mmio.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "mmio.h"

#define PAT_LIST "/sys/kernel/debug/x86/pat_memtype_list"

uint64_t bar_lo, bar_hi;
static int have_pat;                     /* the memtype list is readable */

/* ---- physical pages and the PAT memory-type list ----------------------------------------- */

/* The physical address of each host page of [va, va + len), taken while the allocation lives. */
uint64_t *bar_capture(uint64_t va, uint64_t len, size_t *n)
{
    uint64_t *p = malloc(len / HOST_PAGE * sizeof(*p));

    *n = len / HOST_PAGE;
    for (size_t i = 0; p && i < *n; i++)
        if (emu_phys(va + i * HOST_PAGE, &p[i]) || p[i] < bar_lo || p[i] + HOST_PAGE > bar_hi) {
            free(p);
            return NULL;
        }
    return p;
}

struct memtype { uint64_t start, end; int wc; };
static struct memtype mt[4096];

static int read_memtypes(void)
{
    FILE *f = fopen(PAT_LIST, "r");
    char line[256], type[64];
    unsigned long long s, e;
    int n = 0;

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f) && n < (int)(sizeof(mt) / sizeof(mt[0])))
        if (sscanf(line, "PAT: [mem 0x%llx-0x%llx] %63s", &s, &e, type) == 3)
            mt[n++] = (struct memtype){ s, e, !strcmp(type, "write-combining") };
    fclose(f);
    return n;
}

int memtype_cover(const uint64_t *p, size_t n, size_t *wc, size_t *any)
{
    int k = have_pat ? read_memtypes() : -1;

    *wc = *any = 0;
    for (size_t i = 0; i < n; i++) {
        int w = 0, a = 0;

        for (int j = 0; j < k; j++) {
            if (mt[j].start < p[i] + HOST_PAGE && p[i] < mt[j].end)
                a = 1;
            if (mt[j].wc && mt[j].start <= p[i] && p[i] + HOST_PAGE <= mt[j].end)
                w = 1;
        }
        *wc += w;
        *any += a;
    }
    return k < 0 ? -1 : 0;
}

int memtype_entries(uint64_t lo, uint64_t hi)
{
    int k = have_pat ? read_memtypes() : -1, n = 0;

    for (int j = 0; j < k; j++)
        n += mt[j].start < hi && lo < mt[j].end;
    return k < 0 ? -1 : n;
}

void check_wc(const char *name, const uint64_t *p, size_t n)
{
    static int noted;
    size_t wc, any;

    if (!have_pat)
        return;
    memtype_cover(p, n, &wc, &any);
    t_check(wc == n, name, "%zu of %zu pages under a write-combining PAT entry", wc, n);
    for (size_t j = 0; !noted && wc && j < sizeof(mt) / sizeof(mt[0]); j++)
        if (mt[j].wc && mt[j].start <= p[0] && p[0] < mt[j].end) {
            printf("# mapped pin's first page 0x%llx: PAT [mem 0x%llx-0x%llx] write-combining\n",
                   (unsigned long long)p[0], (unsigned long long)mt[j].start,
                   (unsigned long long)mt[j].end);
            noted = 1;
        }
}

void check_released(const char *name, const uint64_t *p, size_t n)
{
    size_t wc, any;

    if (!have_pat)
        return;
    memtype_cover(p, n, &wc, &any);
    t_check(any == 0, name, "%zu of %zu pages still have a PAT entry (%zu WC)", any, n, wc);
}

void check_ptes(const char *name, const void *map, const uint64_t *p, size_t n, unsigned modes)
{
    static const char *const mode_names[] = { "WB", "WC", "UC-", "UC", "WT", "WP" };
    static int noted;
    size_t bad = 0, first = 0;
    uint64_t pfn = 0, bad_pfn = 0;
    uint32_t mode = 0, bad_mode = 0;
    int ret, bad_ret = 0;

    for (size_t i = 0; i < n; i++) {
        pfn = 0;
        mode = NVP2P_EMU_CACHE_UNKNOWN;
        /* PTEs may be made at the first access (gdrdrv fills them from its fault handler). */
        if (modes)
            (void)*((const volatile unsigned char *)map + i * HOST_PAGE);
        ret = emu_pte((const char *)map + i * HOST_PAGE, &pfn, &mode);
        int ok = modes ? !ret && pfn == p[i] / HOST_PAGE && mode < 32 && (modes & (1u << mode))
                       : ret == ENOENT;
        if (!ok && !bad++) {
            first = i;
            bad_ret = ret;
            bad_pfn = pfn;
            bad_mode = mode;
        }
        if (!noted && modes && !ret && mode < 6) {
            printf("# PTE of a mapped BAR page: pfn 0x%llx, cache mode %s\n",
                   (unsigned long long)pfn, mode_names[mode]);
            noted = 1;
        }
    }
    t_check(!bad, name, "%zu of %zu PTEs wrong; first: page %zu: errno %d pfn 0x%llx (want 0x%llx) mode %d",
            bad, n, first, bad_ret, (unsigned long long)bad_pfn,
            (unsigned long long)(p[first] / HOST_PAGE), (int)bad_mode);
}

/* ---- the kernel log written while we run ------------------------------------------------ */
static int kmsg_fd = -1;
static const char *kmsg_expected[4];

void kmsg_expect(const char *what)
{
    for (size_t i = 0; i < sizeof(kmsg_expected) / sizeof(kmsg_expected[0]); i++)
        if (!kmsg_expected[i]) {
            kmsg_expected[i] = what;
            return;
        }
}

static int kmsg_is_expected(const char *msg)
{
    for (size_t i = 0; i < sizeof(kmsg_expected) / sizeof(kmsg_expected[0]); i++)
        if (kmsg_expected[i] && strstr(msg, kmsg_expected[i]))
            return 1;
    return 0;
}

static void kmsg_check(void)
{
    static const char *const words[] = { "WARNING", "BUG", "Oops", "Call Trace", "untrack",
                                         "memtype", "PAT", "no WC memory type",
                                         "resource sanity check" };
    char rec[2048];
    ssize_t r;
    int bad = 0;

    if (kmsg_fd < 0) {
        t_fail("kernel_log_clean", "/dev/kmsg could not be opened");
        return;
    }
    /* One record per read; EPIPE says records were overwritten, the next read goes on. */
    while ((r = read(kmsg_fd, rec, sizeof(rec) - 1)) > 0 || (r < 0 && errno == EPIPE)) {
        if (r <= 0)
            continue;
        rec[r] = 0;
        const char *msg = strchr(rec, ';') ? strchr(rec, ';') + 1 : rec;
        if (kmsg_is_expected(msg)) {
            printf("# kernel (expected): %s", msg);
            continue;
        }
        for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++)
            if (strstr(msg, words[w])) {
                printf("# kernel: %s", msg);
                bad++;
                break;
            }
    }
    t_check(!bad, "kernel_log_clean", "%d complaint(s) in the kernel log (# kernel: lines)", bad);
}

/* ---- the ivshmem BAR, as sysfs and /proc/iomem show it --------------------------------- */
static int read_hex(const char *dir, const char *file, unsigned long long *v)
{
    char path[512];
    FILE *f;
    int ok;

    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", dir, file);
    f = fopen(path, "r");
    if (!f)
        return 0;
    ok = fscanf(f, "%llx", v) == 1;
    fclose(f);
    return ok;
}

static int find_bar(void)
{
    DIR *d = opendir("/sys/bus/pci/devices");
    struct dirent *e;
    int found = 0;

    while (d && !found && (e = readdir(d))) {
        unsigned long long ven, dev, s, end, fl;
        char path[512];
        FILE *f;

        if (!read_hex(e->d_name, "vendor", &ven) || !read_hex(e->d_name, "device", &dev) ||
            ven != 0x1af4 || dev != 0x1110)
            continue;
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", e->d_name);
        f = fopen(path, "r");
        for (int line = 0; f && line <= 2; line++)      /* BAR 2 is the third line */
            if (fscanf(f, "%llx %llx %llx", &s, &end, &fl) != 3)
                break;
            else if (line == 2 && end > s) {
                bar_lo = s;
                bar_hi = end + 1;
                found = 1;
            }
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return found;
}

static void note_iomem(void)
{
    FILE *f = fopen("/proc/iomem", "r");
    char line[256];

    while (f && fgets(line, sizeof(line), f))
        if (strstr(line, "nvp2p_emu"))
            printf("# /proc/iomem: %s", line + strspn(line, " "));
    if (f)
        fclose(f);
}

int mmio_begin(struct nvp2p_emu_stats *st0)
{
    uint64_t va = 0;
    int ret;

    kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (kmsg_fd >= 0)
        lseek(kmsg_fd, 0, SEEK_END);    /* only what is logged from now on */
    if (emu_fd() < 0 || emu_stats(st0)) {
        t_fail("setup", "%s: %s", NVP2P_EMU_DEVICE, strerror(errno));
        return 0;
    }
    ret = emu_alloc(GPU_PAGE, 1, BAR_FLAG, &va);
    if (ret == ENODEV) {
        t_skip("ivshmem_bar", "no ivshmem BAR in this guest (provider ALLOC_BAR: ENODEV)");
        return 0;
    }
    if (!t_check(!ret && find_bar(), "bar_alloc", "ALLOC_BAR %s, BAR 2 of 1af4:1110 %s in sysfs",
                 strerror(ret), bar_hi ? "found" : "not found"))
        return 0;
    emu_free(va);
    printf("# BAR [0x%llx, 0x%llx)\n", (unsigned long long)bar_lo, (unsigned long long)bar_hi);
    note_iomem();
    if (mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL) && errno != EBUSY)
        printf("# mount debugfs: %s\n", strerror(errno));
    have_pat = access(PAT_LIST, R_OK) == 0;
    if (!have_pat)
        t_skip("memtype_checks", "%s: %s (PAT off or no debugfs)", PAT_LIST, strerror(errno));
    return 1;
}

void mmio_end(const struct nvp2p_emu_stats *st0)
{
    struct nvp2p_emu_stats st1 = { 0 };

    emu_stats(&st1);
    t_check(st1.live_pins == st0->live_pins && st1.live_allocs == st0->live_allocs, "no_leaks",
            "live pins %llu -> %llu, live allocs %llu -> %llu",
            (unsigned long long)st0->live_pins, (unsigned long long)st1.live_pins,
            (unsigned long long)st0->live_allocs, (unsigned long long)st1.live_allocs);
    if (have_pat) {
        int k = read_memtypes(), left = 0;

        for (int j = 0; j < k; j++)
            left += mt[j].start < bar_hi && bar_lo < mt[j].end;
        t_check(left == 0, "no_memtype_left_in_bar", "%d PAT entries left in the BAR", left);
    }
    kmsg_check();
}

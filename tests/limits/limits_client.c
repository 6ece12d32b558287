// SPDX-License-Identifier: MIT
/*
 * limits_client.c - what the library does at the limits of the machine, against the stand-in
 * drivers (tests/fake/, found through LD_LIBRARY_PATH; test_limits.sh runs one mode per
 * process): the last call that cannot be served fails with a clear error (the errno a program
 * can act on, and a reason that names what ran out), the same call works once something is
 * given back, and once everything is given back nothing is left: descriptors, mappings of the
 * stand-ins' memory, exports, imports, VMM allocations.
 *
 *   fd_dmabuf    the process's descriptor limit, dma-buf backend (one fd per pin): EMFILE
 *   bar_dmabuf   BAR1 full (FAKE_CUDA_BAR_BYTES): ENOMEM
 *   fd_vulkan    no descriptor left for the export of an allocation to Vulkan: EMFILE
 *   bar_vulkan   BAR1 full (FAKE_VK_BAR_BYTES: the host-visible heap): ENOMEM
 *   vram_vulkan  GPU memory full (FAKE_CUDA_VRAM_BYTES): vramio_alloc says ENOMEM, a pin of
 *                what was allocated before still works
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "t.h"
#include "vramio.h"

#define MIB ((size_t)1 << 20)

static int (*alloc_on)(int, unsigned long long *, size_t);   /* the dma-buf stand-in's */
static int (*vmm_live)(void), (*vk_live)(void);               /* the VMM / Vulkan stand-ins' */

/* ---- what must come back ------------------------------------------------------------------- */
struct counts { int fds, maps, vmm, vk; };

static struct counts counts(void)
{
    return (struct counts){ t_count_fds(), t_count_maps("/memfd:fake"), vmm_live ? vmm_live() : 0,
                            vk_live ? vk_live() : 0 };
}

static void check_back(const struct counts *before, const char *name)
{
    struct counts now = counts();

    t_check(now.fds == before->fds && now.maps == before->maps && now.vmm == before->vmm &&
                now.vk == before->vk, name,
            "descriptors %d -> %d, mappings of GPU memory %d -> %d, VMM allocations %d -> %d, "
            "Vulkan imports %d -> %d", before->fds, now.fds, before->maps, now.maps, before->vmm,
            now.vmm, before->vk, now.vk);
}

/* ---- helpers ------------------------------------------------------------------------------- */
/* Map a pin and copy through it both ways: the pin works. */
static int usable(gdr_t g, gdr_mh_t mh, size_t size)
{
    static unsigned char in[4096], out[4096];
    size_t n = size < sizeof(in) ? size : sizeof(in);
    void *map;
    int ok;

    if (gdr_map(g, mh, &map, size))
        return 0;
    t_pattern(in, n, size);
    ok = gdr_copy_to_mapping(mh, map, in, n) == 0 && gdr_copy_from_mapping(mh, out, map, n) == 0 &&
         memcmp(in, out, n) == 0;
    return gdr_unmap(g, mh, map, size) == 0 && ok;
}

/* Pin each of the n ranges of size bytes at d[i] until one fails: the index of the one that
 * failed (n when none did), its return code in *rc. */
static int pin_until_refused(gdr_t g, const unsigned long long *d, int n, size_t size,
                             gdr_mh_t *mh, int *rc)
{
    int i;

    *rc = 0;
    for (i = 0; i < n; i++) {
        *rc = gdr_pin_buffer_v2(g, d[i], size, 0, &mh[i]);
        if (*rc)
            break;
    }
    return i;
}

/* The refusal at a limit, then the same call once a pin is given back. */
static void refused_then_served(gdr_t g, const unsigned long long *d, int n, size_t size,
                                int want_rc, const char *want_why, const char *tag)
{
    gdr_mh_t mh[64];
    char name[96];
    int rc, at = pin_until_refused(g, d, n, size, mh, &rc);

    snprintf(name, sizeof(name), "%s/refused_clearly", tag);
    t_check(at > 0 && at < n && rc == want_rc && strstr(vramio_last_error(), want_why), name,
            "pin %d of %d: rc %d (%s), wanted %d and a reason naming '%s'", at, n, rc,
            vramio_last_error(), want_rc, want_why);
    if (at == 0 || at >= n)
        return;
    snprintf(name, sizeof(name), "%s/served_once_one_is_unpinned", tag);
    rc = gdr_unpin_buffer(g, mh[0]);
    t_check(rc == 0 && gdr_pin_buffer_v2(g, d[at], size, 0, &mh[at]) == 0 &&
                usable(g, mh[at], size),
            name, "unpin %d, then: %s", rc, vramio_last_error());
}

/* ---- the modes ----------------------------------------------------------------------------- */
/* The dma-buf stand-in's GPU memory is never given back (its allocations keep a memfd and a
 * mapping each): the counts start after it is made. */
static void mode_fd_dmabuf(void)
{
    unsigned long long d[64], base = 0;
    struct counts before;
    struct rlimit old;
    gdr_t g;

    if (!t_check(alloc_on(0, &base, 4 * MIB) == 0, "fd_dmabuf/setup", "stand-in allocation"))
        return;
    before = counts();
    g = gdr_open();
    if (!t_check(g != NULL, "fd_dmabuf/open", "%s", vramio_last_error()))
        return;
    for (int i = 0; i < 64; i++)
        d[i] = base + (unsigned long long)i * 4096;
    t_fd_room(4, &old);
    refused_then_served(g, d, 64, 4096, EMFILE, "file descriptors", "fd_dmabuf");
    setrlimit(RLIMIT_NOFILE, &old);
    gdr_close(g);
    check_back(&before, "fd_dmabuf/nothing_left");
}

static void mode_bar_dmabuf(void)
{
    unsigned long long d[4];
    struct counts before;
    gdr_t g;
    int ok = 1;

    /* BAR1 of 3 MiB (test_limits.sh): three whole 1 MiB allocations fit, the fourth not. */
    for (int i = 0; i < 4; i++)
        ok = ok && alloc_on(0, &d[i], MIB) == 0;
    before = counts();
    g = gdr_open();
    if (!t_check(ok && g, "bar_dmabuf/setup", "%s", vramio_last_error()))
        return;
    refused_then_served(g, d, 4, MIB, ENOMEM, "CUDA_ERROR_OUT_OF_MEMORY", "bar_dmabuf");
    gdr_close(g);
    check_back(&before, "bar_dmabuf/nothing_left");
}

/* n allocations of size bytes each with a VMM allocation of its own (over 1 MiB). */
static int vmm_allocs(unsigned long long *d, int n, size_t size)
{
    for (int i = 0; i < n; i++)
        if (vramio_alloc(0, size, &d[i]))
            return 0;
    return 1;
}

static void vmm_free(unsigned long long *d, int n)
{
    for (int i = 0; i < n; i++)
        if (d[i])
            vramio_free(d[i]);
    vramio_pool_trim(-1);
}

static void mode_fd_vulkan(void)
{
    struct counts before = counts();
    unsigned long long d[4] = { 0 };
    struct rlimit old;
    gdr_mh_t mh;
    gdr_t g = gdr_open();
    int rc;

    if (!t_check(g && vmm_allocs(d, 4, 2 * MIB) && gdr_pin_buffer_v2(g, d[0], MIB, 0, &mh) == 0,
                 "fd_vulkan/setup", "%s", vramio_last_error()))
        return;
    /* Vulkan started with the first pin; the next allocation's export needs a descriptor. */
    t_fd_room(0, &old);
    rc = gdr_pin_buffer_v2(g, d[1], MIB, 0, &mh);
    t_check(rc == EMFILE && strstr(vramio_last_error(), "file descriptors"),
            "fd_vulkan/refused_clearly", "rc %d (%s), wanted EMFILE and a reason naming file "
            "descriptors", rc, vramio_last_error());
    setrlimit(RLIMIT_NOFILE, &old);
    rc = gdr_pin_buffer_v2(g, d[1], MIB, 0, &mh);
    t_check(rc == 0 && usable(g, mh, MIB), "fd_vulkan/served_once_descriptors_are_free",
            "rc %d: %s", rc, vramio_last_error());
    gdr_close(g);
    vmm_free(d, 4);
    check_back(&before, "fd_vulkan/nothing_left");
}

/*
 * A 64 KiB pin inside an 8 MiB allocation, BAR1 6 MiB: the import of the whole allocation does
 * not fit, and the reason must say that the pin pays for all of it (JAX's case on an H100).
 */
static void small_pin_in_large_allocation(void)
{
    unsigned long long d = 0;
    gdr_mh_t mh;
    gdr_t g = gdr_open();
    int rc = -1;

    if (g && vramio_alloc(0, 8 * MIB, &d) == 0)
        rc = gdr_pin_buffer_v2(g, d, 64 << 10, 0, &mh);
    t_check(rc == ENOMEM && strstr(vramio_last_error(), "OUT_OF_DEVICE_MEMORY") &&
                strstr(vramio_last_error(), "a pin imports all of its allocation: 65536 of "
                       "8388608 bytes were asked for"),
            "bar_vulkan/small_pin_says_whole_allocation", "rc %d (%s)", rc, vramio_last_error());
    if (rc == 0)
        gdr_unpin_buffer(g, mh);
    if (g)
        gdr_close(g);
    vmm_free(&d, 1);
}

static void mode_bar_vulkan(void)
{
    struct counts before = counts();
    unsigned long long d[4] = { 0 };
    gdr_t g = gdr_open();

    /* BAR1 of 6 MiB (test_limits.sh): three 2 MiB allocations fit, the fourth not. */
    if (!t_check(g && vmm_allocs(d, 4, 2 * MIB), "bar_vulkan/setup", "%s", vramio_last_error()))
        return;
    refused_then_served(g, d, 4, 2 * MIB, ENOMEM, "OUT_OF_DEVICE_MEMORY", "bar_vulkan");
    gdr_close(g);
    vmm_free(d, 4);
    small_pin_in_large_allocation();
    check_back(&before, "bar_vulkan/nothing_left");
}

static void mode_vram_vulkan(void)
{
    struct counts before = counts();
    unsigned long long d[8] = { 0 }, more = 0, small = 0;
    gdr_mh_t mh;
    gdr_t g = gdr_open();
    int n, rc, rc_small;

    /* GPU memory of 16 MiB (test_limits.sh): four 4 MiB allocations fill it. */
    for (n = 0; n < 8 && vramio_alloc(0, 4 * MIB, &d[n]) == 0; n++)
        ;
    rc = vramio_alloc(0, 4 * MIB, &more);
    t_check(g && n == 4 && rc == ENOMEM && strstr(vramio_last_error(), "OUT_OF_MEMORY"),
            "vram_vulkan/refused_clearly", "%d allocations, then rc %d (%s)", n, rc,
            vramio_last_error());
    rc_small = vramio_alloc(0, 4096, &small);
    t_check(rc_small == ENOMEM, "vram_vulkan/small_refused_too", "rc %d", rc_small);
    rc = gdr_pin_buffer_v2(g, d[0], 4 * MIB, 0, &mh);
    t_check(rc == 0 && usable(g, mh, 4 * MIB), "vram_vulkan/pins_still_work", "rc %d: %s", rc,
            vramio_last_error());
    vramio_free(d[1]);
    d[1] = 0;
    rc = vramio_alloc(0, 4 * MIB, &more);
    t_check(rc == 0, "vram_vulkan/served_once_one_is_freed", "rc %d: %s", rc, vramio_last_error());
    if (rc == 0)
        d[1] = more;
    gdr_close(g);
    vmm_free(d, 8);
    check_back(&before, "vram_vulkan/nothing_left");
}

int main(int argc, char **argv)
{
    static const struct { const char *name; void (*fn)(void); int vmm; } modes[] = {
        { "fd_dmabuf", mode_fd_dmabuf, 0 }, { "bar_dmabuf", mode_bar_dmabuf, 0 },
        { "fd_vulkan", mode_fd_vulkan, 1 }, { "bar_vulkan", mode_bar_vulkan, 1 },
        { "vram_vulkan", mode_vram_vulkan, 1 },
    };
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW), *vk = dlopen("libvulkan.so.1", RTLD_NOW);

    for (size_t i = 0; argc == 2 && i < sizeof(modes) / sizeof(modes[0]); i++) {
        if (strcmp(argv[1], modes[i].name))
            continue;
        *(void **)&alloc_on = cuda ? dlsym(cuda, "fake_cuda_alloc_on") : NULL;
        *(void **)&vmm_live = cuda ? dlsym(cuda, "fake_vmm_live") : NULL;
        *(void **)&vk_live = vk ? dlsym(vk, "fake_vk_live") : NULL;
        if (modes[i].vmm ? !vmm_live || !vk_live : !alloc_on) {
            t_fail(argv[1], "the stand-in drivers are not the ones this mode needs");
            return 1;
        }
        modes[i].fn();
        return t_status();
    }
    fprintf(stderr, "usage: limits_client fd_dmabuf|bar_dmabuf|fd_vulkan|bar_vulkan|vram_vulkan\n");
    return 2;
}

// SPDX-License-Identifier: MIT
/*
 * abi_test.c - every pairing of a gdrdrv 2.0 .. 2.6 ABI with a library of those versions.
 *   abi_test module 2.N   gdrdrv loaded with abi=2.N: the module shows exactly that ABI (its
 *                     GET_VERSION, the newer codes answered ENOTTY, the older ones served),
 *                     and our library (static libgdrapi) reports it honestly and degrades as
 *                     upstream's does with such a module: FORCE_PCIE pins and typed mappings
 *                     other than WC fail with EINVAL, the attributes read 0, GET_INFO v1
 *                     stands in for v2, callback pins report their callback; never a crash.
 *   abi_test oldlib   gdrdrv at its own ABI: the ioctl sequence of each library 2.0 .. 2.5,
 *                     with the structs as those versions declared them (implicit padding left
 *                     as garbage), pins, maps and moves data.
 * The code each version brought: GET_INFO_V2 2.4; GET_ATTR, PIN_BUFFER_V2, REQ_MAPPING_TYPE
 * 2.5 (driver/uapi/gdrdrv.h, GDRDRV_VERSION_WITH_*; driver/README.md has the matrix).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gdrapi.h>

#include "emu.h"
#include "t.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
#define V(minor) ((2u << 16) | (minor))

static int fd = -1;

static int ioc(unsigned long cmd, void *arg)
{
    return ioctl(fd, cmd, arg) ? errno : 0;
}

/* ---- abi_test module ------------------------------------------------------------------- */

/* The raw ABI: version numbers, and which codes the module knows. */
static void check_codes(unsigned minor)
{
    static const struct { unsigned long cmd; const char *name; unsigned since; } codes[] = {
        { GDRDRV_IOC_GET_INFO_V2, "get_info_v2", GDRDRV_VERSION_WITH_GET_INFO_V2 },
        { GDRDRV_IOC_GET_ATTR, "get_attr", GDRDRV_VERSION_WITH_GET_ATTR },
        { GDRDRV_IOC_PIN_BUFFER_V2, "pin_buffer_v2", GDRDRV_VERSION_WITH_PIN_BUFFER_V2 },
        { GDRDRV_IOC_REQ_MAPPING_TYPE, "req_mapping_type", GDRDRV_VERSION_WITH_REQ_MAPPING_TYPE },
        { GDRDRV_IOC_GET_INFO, "get_info", V(0) },
        { GDRDRV_IOC_GET_CB_FLAG, "get_cb_flag", V(0) },
        { GDRDRV_IOC_UNPIN_BUFFER, "unpin_buffer", V(0) },
    };
    struct gdrdrv_get_version v = { 0, 0 };
    char name[64];
    int e = ioc(GDRDRV_IOC_GET_VERSION, &v);

    t_check(!e && v.gdrdrv_version == V(minor) && v.minimum_gdr_api_version == V(0),
            "raw_get_version", "ret %d version %#x min api %#x (want %#x, 0x20000)", e,
            v.gdrdrv_version, v.minimum_gdr_api_version, V(minor));
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        /* Handle 0 and attribute 0 are never valid: a known code answers EINVAL. */
        uint64_t arg[6] = { 0 };
        int want = V(minor) >= codes[i].since ? EINVAL : ENOTTY;

        e = ioc(codes[i].cmd, arg);
        snprintf(name, sizeof(name), "raw_%s", codes[i].name);
        t_check(e == want, name, "%s, want %s", strerror(e), strerror(want));
    }
}

/* Our library against the module: honest version, and what an older module lacks degrades. */
static void check_library(unsigned minor)
{
    int maj = -1, min = -1, v = -1, flag = -1, ret;
    uint64_t va = 0;
    gdr_mh_t mh = { 0 };
    gdr_info_t info;
    void *map = NULL;
    unsigned char in[4096], out[4096];
    gdr_t g = gdr_open();

    if (!t_check(g != NULL, "lib_open", "gdr_open failed against abi 2.%u", minor))
        return;
    ret = gdr_driver_get_version(g, &maj, &min);
    t_check(!ret && maj == 2 && min == (int)minor, "lib_driver_version", "ret %d %d.%d (want 2.%u)",
            ret, maj, min, minor);
    ret = gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &v);
    t_check(!ret && (minor >= 5 || v == 0), "lib_attr_persistent", "ret %d value %d", ret, v);
    ret = gdr_get_attribute(g, GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE, &v);
    t_check(!ret && (minor >= 5 || v == 0), "lib_attr_force_pcie", "ret %d value %d", ret, v);
    if (emu_alloc(2 * GPU_PAGE, 1, 0, &va)) {
        t_fail("lib_setup", "ALLOC failed");
        goto out;
    }
    /* FORCE_PCIE: an older module does not know it; a 2.5+ one passes it to the provider,
     * which refuses it here (no coherent link, as NVIDIA's driver on a PCIe GPU): EINVAL
     * either way, as the dmabuf and vulkan backends answer. */
    ret = gdr_pin_buffer_v2(g, va, GPU_PAGE, GDR_PIN_FLAG_FORCE_PCIE, &mh);
    if (!emu_coherent())
        t_check(ret == EINVAL, "lib_pin_force_pcie", "ret %d (want EINVAL from a %u.%u module%s)",
                ret, 2, minor, minor < 5 ? "" : " on a GPU without a coherent link");
    if (!ret)
        gdr_unpin_buffer(g, mh);
    ret = gdr_pin_buffer_v2(g, va, 2 * GPU_PAGE, 0, &mh);
    if (!t_check(!ret, "lib_pin", "%s", strerror(ret)))
        goto out;
    ret = gdr_map_v2(g, mh, &map, 2 * GPU_PAGE, GDR_MAP_FLAG_REQ_DEVICE_MAPPING);
    t_check(minor >= 5 ? ret == 0 : ret == EINVAL, "lib_map_req_device", "ret %d", ret);
    if (!ret)
        gdr_unmap(g, mh, map, 2 * GPU_PAGE);
    ret = gdr_map_v2(g, mh, &map, 2 * GPU_PAGE, GDR_MAP_FLAG_REQ_WC_MAPPING);
    if (t_check(!ret, "lib_map_req_wc", "%s", strerror(ret))) {
        ret = gdr_get_info_v2(g, mh, &info);
        t_check(!ret && info.mapping_type == GDR_MAPPING_TYPE_WC && info.va == va &&
                info.mapped_size == 2 * GPU_PAGE && info.page_size == GPU_PAGE, "lib_info_v2",
                "ret %d type %d va %#llx size %llu", ret, info.mapping_type,
                (unsigned long long)info.va, (unsigned long long)info.mapped_size);
        t_pattern(in, sizeof(in), 200 + minor);
        gdr_copy_to_mapping(mh, (char *)map + GPU_PAGE, in, sizeof(in));
        emu_read(va + GPU_PAGE, out, sizeof(out));
        gdr_copy_from_mapping(mh, in, (char *)map + GPU_PAGE, sizeof(in));
        t_check(!memcmp(in, out, sizeof(in)), "lib_copy", "data differ through the mapping");
        gdr_unmap(g, mh, map, 2 * GPU_PAGE);
    }
    /* Before 2.5 pins are callback pins: freeing the memory fires the callback. */
    if (minor < 5) {
        ret = emu_free(va);
        va = 0;
        ret = ret ? ret : gdr_get_callback_flag(g, mh, &flag);
        t_check(!ret && flag == 1, "lib_callback_flag", "ret %d flag %d after the free", ret, flag);
    }
    ret = gdr_unpin_buffer(g, mh);
    t_check(!ret, "lib_unpin", "%s", strerror(ret));
out:
    if (va)
        emu_free(va);
    gdr_close(g);
}

/* ---- abi_test oldlib ------------------------------------------------------------------- */

/* The structs of libraries 2.0 .. 2.5 as they declared them: no explicit padding. */
struct old_pin { uint64_t addr, size, p2p_token; uint32_t va_space; uint64_t handle; };
struct old_cb_flag { uint64_t handle; uint32_t flag; };
struct old_info { uint64_t handle, va, mapped_size; uint32_t page_size, tsc_khz; uint64_t tm_cycles;
                  uint32_t mapped, wc_mapping; };
struct old_info_v2 { uint64_t handle, va, mapped_size; uint32_t page_size, tsc_khz;
                     uint64_t tm_cycles; uint32_t mapping_type; };
struct old_attr { uint32_t attr, val; };
struct old_pin_v2 { uint64_t addr, size; uint32_t flags, pad; uint64_t handle; };
struct old_req_type { uint64_t handle; uint32_t mapping_type; };
struct old_version { uint32_t gdrdrv_version, minimum_gdr_api_version; };

/* A result's name, "lib2.<lib>/<step>"; one buffer, each name used before the next is made. */
static const char *lib_step(unsigned lib, const char *step)
{
    static char name[64];

    snprintf(name, sizeof(name), "lib2.%u/%s", lib, step);
    return name;
}

/* The library's checks at open: GET_VERSION, and from 2.5 the persistent attribute. */
static void old_open(unsigned lib)
{
    struct old_version ver;
    int e;

    memset(&ver, 0xa5, sizeof(ver));
    e = ioc(GDRDRV_IOC_GET_VERSION, &ver);
    /* The library's own checks at open: module at least 2.0, and needs no newer library. */
    t_check(!e && ver.gdrdrv_version >= V(0) && ver.minimum_gdr_api_version <= V(lib),
            lib_step(lib, "open_version_check"), "ret %d version %#x min api %#x", e,
            ver.gdrdrv_version, ver.minimum_gdr_api_version);
    if (lib >= 5) {
        struct old_attr a = { .attr = GDRDRV_ATTR_USE_PERSISTENT_MAPPING, .val = 7 };

        e = ioc(GDRDRV_IOC_GET_ATTR, &a);
        t_check(!e && a.val <= 1, lib_step(lib, "get_attr"), "ret %d val %u", e, a.val);
    }
}

/* The pin call of the version (PIN_BUFFER_V2 from 2.5); returns its error, *handle the pin. */
static int old_pin(unsigned lib, uint64_t va, uint64_t *handle)
{
    int e;

    if (lib >= 5) {
        struct old_pin_v2 p;
        memset(&p, 0xa5, sizeof(p));
        p.addr = va, p.size = 2 * GPU_PAGE, p.flags = 0, p.pad = 0, p.handle = 0;
        e = ioc(GDRDRV_IOC_PIN_BUFFER_V2, &p);
        *handle = p.handle;
    } else {
        struct old_pin p;
        memset(&p, 0xa5, sizeof(p));     /* the implicit padding after va_space is garbage */
        p.addr = va, p.size = 2 * GPU_PAGE, p.p2p_token = 0, p.va_space = 0, p.handle = 0;
        e = ioc(GDRDRV_IOC_PIN_BUFFER, &p);
        *handle = p.handle;
    }
    return e;
}

/* The info call of the version (GET_INFO_V2 from 2.4): whether the pin is mapped, and WC. */
static int old_info(unsigned lib, uint64_t va, uint64_t handle, uint32_t *mapped, uint32_t *wc)
{
    int e;

    if (lib >= 4) {
        struct old_info_v2 i;
        memset(&i, 0xa5, sizeof(i));
        i.handle = handle;
        e = ioc(GDRDRV_IOC_GET_INFO_V2, &i);
        *mapped = i.mapping_type != GDRDRV_MAPPING_TYPE_NONE;
        *wc = i.mapping_type == GDRDRV_MAPPING_TYPE_WC;
        e = e ? e : i.va != va || i.mapped_size != 2 * GPU_PAGE ? EIO : 0;
    } else {
        struct old_info i;
        memset(&i, 0xa5, sizeof(i));
        i.handle = handle;
        e = ioc(GDRDRV_IOC_GET_INFO, &i);
        *mapped = i.mapped, *wc = i.wc_mapping;
        e = e ? e : i.va != va || i.mapped_size != 2 * GPU_PAGE ? EIO : 0;
    }
    return e;
}

/* The pin mapped as the library maps it: the info says WC, and the provider sees the bytes. */
static void old_map(unsigned lib, uint64_t va, uint64_t handle)
{
    long pshift = __builtin_ctzl((unsigned long)sysconf(_SC_PAGESIZE));
    unsigned char *m = mmap(NULL, 2 * GPU_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                            (off_t)(handle << pshift));

    if (!t_check(m != MAP_FAILED, lib_step(lib, "mmap"), "%s", strerror(errno)))
        return;
    uint32_t mapped = 0, wc = 0;
    int e = old_info(lib, va, handle, &mapped, &wc);
    t_check(!e && mapped == 1 && wc == 1, lib_step(lib, "get_info"), "ret %d mapped %u wc %u", e,
            mapped, wc);
    unsigned char want[512], got[512];
    t_pattern(got, sizeof(got), 4000 + lib);
    memcpy(m + GPU_PAGE + 64, got, sizeof(got));
    __sync_synchronize();
    emu_read(va + GPU_PAGE + 64, want, sizeof(want));
    t_check(!memcmp(want, got, sizeof(got)), lib_step(lib, "data"),
            "the provider sees other bytes");
    munmap(m, 2 * GPU_PAGE);
}

/* One library version's calls: open check, pin, (request,) map, info, data, flag, unpin. */
static void old_library(unsigned lib, uint64_t va)
{
    uint64_t handle = 0;
    int e;

    old_open(lib);
    e = old_pin(lib, va, &handle);
    if (!t_check(!e && handle, lib_step(lib, "pin"), "ret %d handle %#llx", e,
                 (unsigned long long)handle))
        return;
    if (lib >= 5) {
        struct old_req_type r;
        memset(&r, 0xa5, sizeof(r));
        r.handle = handle, r.mapping_type = GDRDRV_MAPPING_TYPE_NONE;
        e = ioc(GDRDRV_IOC_REQ_MAPPING_TYPE, &r);
        t_check(!e, lib_step(lib, "req_mapping_type"), "%s", strerror(e));
    }
    old_map(lib, va, handle);
    struct old_cb_flag c;
    memset(&c, 0xa5, sizeof(c));
    c.handle = handle;
    e = ioc(GDRDRV_IOC_GET_CB_FLAG, &c);
    t_check(!e && c.flag == 0, lib_step(lib, "get_cb_flag"), "ret %d flag %u", e, c.flag);
    struct gdrdrv_unpin_buffer u = { .handle = handle };
    e = ioc(GDRDRV_IOC_UNPIN_BUFFER, &u);
    t_check(!e, lib_step(lib, "unpin"), "%s", strerror(e));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    uint64_t va = 0;

    if (emu_fd() < 0 || (fd = open("/dev/gdrdrv", O_RDWR | O_CLOEXEC)) < 0) {
        t_fail("setup", "needs the provider and gdrdrv: %s", strerror(errno));
        return 1;
    }
    unsigned minor;
    if (!strcmp(mode, "module") && argc > 2 && sscanf(argv[2], "2.%u", &minor) == 1) {
        check_codes(minor);
        check_library(minor);
    } else if (!strcmp(mode, "oldlib") && !emu_alloc(2 * GPU_PAGE, 1, 0, &va)) {
        for (unsigned lib = 0; lib <= 5; lib++)
            old_library(lib, va);
        emu_free(va);
    } else {
        t_fail("usage", "abi_test module 2.N | oldlib (and the provider's ALLOC)");
    }
    close(fd);
    return t_status();
}

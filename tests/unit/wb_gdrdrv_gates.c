/* SPDX-License-Identifier: MIT */
/*
 * wb_gdrdrv_gates.c - white-box test of the gdrdrv backend's version gates and error rules
 * against a scripted stand-in for /dev/gdrdrv: the program is linked with the backend's object
 * and -Wl,--wrap for open, close, ioctl, mmap and munmap (tests/tests.mk), so the backend's
 * calls of /dev/gdrdrv reach the __wrap_ functions here, which answer as a module of a chosen
 * version would and record which ioctl codes were used; every other call goes on to libc. The
 * real module is exercised in the QEMU guests; this covers what no module at hand can show:
 * 2.0 .. 2.4 modules (PIN_BUFFER v1, GET_INFO v1, no GET_ATTR / REQ_MAPPING_TYPE), refused
 * versions, whole 64-bit handles, and which pin errors let the next backend try.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>
#include "backends/backend.h"
#include "t.h"
#include "uapi/gdrdrv.h"

#define FAKE_FD 4242
#define MOD_VERSION(major, minor) (((uint32_t)(major) << 16) | (minor))

static struct {
    uint32_t version, min_api;
    int pin_errno;                  /* what PIN_BUFFER* answers */
    uint64_t handle;                /* what PIN_BUFFER* returns */
    uint32_t cacheable_type;        /* mapping type GET_INFO* reports once mapped */
    int mapped;
    unsigned long used[16];         /* ioctl codes seen, in order */
    int nused;
    off_t mmap_off;
    size_t mmap_len;
    char page[1 << 16];
} fake;

int __real_open(const char *path, int flags, ...);
int __real_close(int fd);
int __real_ioctl(int fd, unsigned long cmd, void *arg);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_munmap(void *addr, size_t len);

int __wrap_open(const char *path, int flags, ...);
int __wrap_close(int fd);
int __wrap_ioctl(int fd, unsigned long cmd, void *arg);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __wrap_munmap(void *addr, size_t len);

int __wrap_open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    va_list ap;

    if (strcmp(path, "/dev/gdrdrv") == 0)
        return FAKE_FD;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    return __real_open(path, flags, mode);
}

int __wrap_close(int fd)
{
    return fd == FAKE_FD ? 0 : __real_close(fd);
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (fd != FAKE_FD)
        return __real_mmap(addr, len, prot, flags, fd, off);
    fake.mmap_off = off;
    fake.mmap_len = len;
    fake.mapped = 1;
    return fake.page;
}

int __wrap_munmap(void *addr, size_t len)
{
    if (addr != fake.page)
        return __real_munmap(addr, len);
    fake.mapped = 0;
    return 0;
}

int __wrap_ioctl(int fd, unsigned long cmd, void *arg)
{
    int old = fake.version < MOD_VERSION(2, 5);

    if (fd != FAKE_FD)
        return __real_ioctl(fd, cmd, arg);
    if (fake.nused < 16)
        fake.used[fake.nused++] = cmd;
    switch (cmd) {
    case GDRDRV_IOC_GET_VERSION: {
        struct gdrdrv_get_version *v = arg;
        v->gdrdrv_version = fake.version;
        v->minimum_gdr_api_version = fake.min_api;
        return 0;
    }
    case GDRDRV_IOC_PIN_BUFFER:
        if (fake.pin_errno)
            break;
        ((struct gdrdrv_pin_buffer *)arg)->handle = fake.handle;
        return 0;
    case GDRDRV_IOC_PIN_BUFFER_V2:
        if (old) {
            errno = ENOTTY;
            return -1;
        }
        if (fake.pin_errno)
            break;
        ((struct gdrdrv_pin_buffer_v2 *)arg)->handle = fake.handle;
        return 0;
    case GDRDRV_IOC_GET_INFO: {
        struct gdrdrv_get_info *i = arg;
        i->va = 0x100000;
        i->mapped_size = 0x10000;
        i->page_size = 0x10000;
        i->mapped = fake.mapped;
        i->wc_mapping = fake.mapped;
        return 0;
    }
    case GDRDRV_IOC_GET_INFO_V2: {
        struct gdrdrv_get_info_v2 *i = arg;
        if (fake.version < MOD_VERSION(2, 4))
            break;
        i->va = 0x100000;
        i->mapped_size = 0x10000;
        i->page_size = 0x10000;
        i->mapping_type = fake.mapped ? fake.cacheable_type : GDRDRV_MAPPING_TYPE_NONE;
        return 0;
    }
    case GDRDRV_IOC_GET_ATTR:
    case GDRDRV_IOC_REQ_MAPPING_TYPE:
        if (old)
            break;
        if (cmd == GDRDRV_IOC_GET_ATTR)
            ((struct gdrdrv_get_attr *)arg)->val = 1;
        else
            fake.cacheable_type = ((struct gdrdrv_req_mapping_type *)arg)->mapping_type;
        return 0;
    case GDRDRV_IOC_UNPIN_BUFFER:
        return 0;
    }
    errno = cmd == GDRDRV_IOC_GET_INFO_V2 || old ? ENOTTY : fake.pin_errno;
    return -1;
}

static int used(unsigned long cmd)
{
    for (int i = 0; i < fake.nused; i++)
        if (fake.used[i] == cmd)
            return 1;
    return 0;
}

static void reset(uint32_t version)
{
    memset(&fake, 0, offsetof(__typeof__(fake), page));
    fake.version = version;
    fake.min_api = MOD_VERSION(2, 0);
    fake.handle = 0x100000003ULL;            /* above 32 bits: must be kept whole */
    fake.cacheable_type = GDRDRV_MAPPING_TYPE_WC;
}

/* Pin, map, info, unpin through the backend against a module of this version. */
static void round_trip(uint32_t version, const char *tag)
{
    struct vr_pin_req req = { .addr = 0x100000, .size = 0x10000, .va = 0x100000, .len = 0x10000 };
    gdr_mapping_type_t granted = GDR_MAPPING_TYPE_NONE;
    struct vr_pin_info info;
    char why[256] = "", name[96];
    void *ctx = NULL, *pin = NULL, *ptr = NULL;
    int rc, major = 0, minor = 0, attr = -1;
    int old = version < MOD_VERSION(2, 5), v24 = version >= MOD_VERSION(2, 4);

    reset(version);
    rc = vr_backend_gdrdrv.open(&ctx, why, sizeof(why));
    snprintf(name, sizeof(name), "%s/open", tag);
    t_check(rc == 0 && ctx, name, "rc %d: %s", rc, why);
    if (rc)
        return;
    vr_backend_gdrdrv.driver_version(ctx, &major, &minor);
    snprintf(name, sizeof(name), "%s/driver_version", tag);
    t_check((uint32_t)MOD_VERSION(major, minor) == version, name, "%d.%d", major, minor);

    fake.nused = 0;
    rc = vr_backend_gdrdrv.pin(ctx, &req, &pin, &info, why, sizeof(why));
    snprintf(name, sizeof(name), "%s/pin_uses_%s", tag, old ? "v1" : "v2");
    t_check(rc == 0 && used(old ? GDRDRV_IOC_PIN_BUFFER : GDRDRV_IOC_PIN_BUFFER_V2) &&
            !used(old ? GDRDRV_IOC_PIN_BUFFER_V2 : GDRDRV_IOC_PIN_BUFFER), name, "rc %d: %s", rc, why);
    if (rc)
        goto out;
    snprintf(name, sizeof(name), "%s/pin_info_uses_%s", tag, v24 ? "v2" : "v1");
    t_check(used(v24 ? GDRDRV_IOC_GET_INFO_V2 : GDRDRV_IOC_GET_INFO) && info.va == 0x100000 &&
            info.mapped_size == 0x10000 && info.page_size == 0x10000, name, "va %#llx size %llu",
            (unsigned long long)info.va, (unsigned long long)info.mapped_size);
    fake.nused = 0;
    rc = vr_backend_gdrdrv.map(ctx, pin, 0x10000, GDR_MAPPING_TYPE_NONE, &ptr, &granted, why, sizeof(why));
    snprintf(name, sizeof(name), "%s/map_offset_whole_handle", tag);
    t_check(rc == 0 && (uint64_t)fake.mmap_off == fake.handle * (uint64_t)sysconf(_SC_PAGESIZE) &&
            granted == GDR_MAPPING_TYPE_WC, name, "rc %d off %#llx granted %d", rc,
            (unsigned long long)fake.mmap_off, granted);
    snprintf(name, sizeof(name), "%s/map_type_from_%s", tag, v24 ? "get_info_v2" : "get_info");
    t_check(rc == 0 && used(v24 ? GDRDRV_IOC_GET_INFO_V2 : GDRDRV_IOC_GET_INFO), name, "rc %d", rc);
    vr_backend_gdrdrv.unmap(ctx, pin, ptr, 0x10000);

    /* A typed request: REQ_MAPPING_TYPE from 2.5; older modules grant WC only. */
    fake.nused = 0;
    rc = vr_backend_gdrdrv.map(ctx, pin, 0x10000, GDR_MAPPING_TYPE_CACHING, &ptr, &granted, why, sizeof(why));
    snprintf(name, sizeof(name), "%s/map_caching", tag);
    if (old)
        t_check(rc == EINVAL && !used(GDRDRV_IOC_REQ_MAPPING_TYPE), name, "rc %d", rc);
    else
        t_check(rc == 0 && used(GDRDRV_IOC_REQ_MAPPING_TYPE) && granted == GDR_MAPPING_TYPE_CACHING,
                name, "rc %d granted %d", rc, granted);
    if (!rc)
        vr_backend_gdrdrv.unmap(ctx, pin, ptr, 0x10000);

    fake.nused = 0;
    rc = vr_backend_gdrdrv.get_attr(ctx, GDR_ATTR_USE_PERSISTENT_MAPPING, &attr);
    snprintf(name, sizeof(name), "%s/get_attr", tag);
    t_check(rc == 0 && attr == !old && used(GDRDRV_IOC_GET_ATTR) == !old, name, "rc %d attr %d", rc, attr);
    vr_backend_gdrdrv.unpin(ctx, pin);
out:
    vr_backend_gdrdrv.close(ctx);
}

static void refused(uint32_t version, uint32_t min_api, const char *name, const char *words)
{
    char why[256] = "";
    int rc;

    reset(version);
    fake.min_api = min_api;
    rc = vr_backend_gdrdrv.probe(why, sizeof(why));
    t_check(rc != 0 && strstr(why, words), name, "rc %d: %s", rc, why);
}

/* EINVAL from the module: not its memory, the next backend may try; others are final. */
static void pin_errors(void)
{
    static const struct { int kernel, want; const char *name; } cases[] = {
        { EINVAL, ENOTSUP, "pin_einval_is_enotsup" },
        { ENOMEM, ENOMEM, "pin_enomem_final" },
        { EACCES, EACCES, "pin_eacces_final" },
        { ENOSPC, ENOSPC, "pin_enospc_final" },
    };
    struct vr_pin_req req = { .addr = 0x100000, .size = 1, .va = 0x100000, .len = 0x10000 };
    struct vr_pin_info info;
    char why[256];
    void *ctx = NULL, *pin = NULL;

    reset(MOD_VERSION(2, 6));
    if (vr_backend_gdrdrv.open(&ctx, why, sizeof(why))) {
        t_check(0, "pin_errors", "open failed: %s", why);
        return;
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc;

        fake.pin_errno = cases[i].kernel;
        why[0] = '\0';
        rc = vr_backend_gdrdrv.pin(ctx, &req, &pin, &info, why, sizeof(why));
        t_check(rc == cases[i].want && why[0], cases[i].name, "rc %d: '%s'", rc, why);
    }
    /* FORCE_PCIE on a GPU without a coherent link: NVIDIA's driver refuses FORCE_BAR1_MAPPING
     * there (NV_ERR_NOT_SUPPORTED, the kernel's ENOTSUPP 524, passed on by the module). The
     * pin's refusal is EINVAL, final, with the reason, as the dmabuf and vulkan backends'. */
    {
        struct vr_pin_req force = req;
        int rc;

        force.flags = GDR_PIN_FLAG_FORCE_PCIE;
        fake.pin_errno = 524;
        why[0] = '\0';
        rc = vr_backend_gdrdrv.pin(ctx, &force, &pin, &info, why, sizeof(why));
        t_check(rc == EINVAL && strstr(why, "coherent"), "pin_force_pcie_refused_by_driver_einval",
                "rc %d: '%s'", rc, why);
        req.flags = 0;
        rc = vr_backend_gdrdrv.pin(ctx, &req, &pin, &info, why, sizeof(why));
        t_check(rc == 524, "pin_524_without_flag_passed_on", "rc %d: '%s'", rc, why);
    }
    vr_backend_gdrdrv.close(ctx);
}

int main(void)
{
    round_trip(MOD_VERSION(2, 0), "v2.0");
    round_trip(MOD_VERSION(2, 4), "v2.4");
    round_trip(MOD_VERSION(2, 5), "v2.5");
    round_trip(MOD_VERSION(2, 6), "v2.6");
    refused(MOD_VERSION(1, 9), MOD_VERSION(1, 0), "refuse_version_1_9", "too old");
    refused(MOD_VERSION(2, 9), MOD_VERSION(2, 7), "refuse_newer_api_needed", "needs a gdrapi library");
    pin_errors();
    return t_status();
}

/* SPDX-License-Identifier: MIT */
/*
 * gdrdrv.c - the gdrdrv backend: pins and maps GPU memory through the kernel module's
 * ioctl ABI (driver/uapi/gdrdrv.h), with gdrdrv 2.0 .. 2.6 modules, ours or upstream's.
 *
 * Version gates (docs/gdrdrv-abi.md; GDRDRV_VERSION_WITH_* in the header): GET_INFO_V2 from
 * 2.4; GET_ATTR, PIN_BUFFER_V2 and REQ_MAPPING_TYPE from 2.5. Against an older module pins
 * go through PIN_BUFFER (v1), info through GET_INFO, and the attributes are answered as such
 * a module behaves (no persistent pins, no FORCE_PCIE).
 *
 * Which pin errors are final: the module answers EINVAL when the address is not GPU memory
 * it can pin (the NVIDIA driver rejects it); that becomes ENOTSUP so the core offers the
 * range to the next backend. Every other error (ENOMEM, EACCES, ENOSPC, EFAULT, ...) comes
 * from memory the module does serve, or from the module itself, and is final.
 *
 * Fork: the module refuses ioctls and mmap from any process but the opener (EACCES), and
 * mappings are not inherited. The core refuses a child's use of its parent's gdr_t before
 * it gets here (instance.c, vr_gdr_get), so every call below runs in the opener.
 *
 * Names: the gdrdrv_* names are the module's (driver/, and the ioctl structs of its uapi
 * header); this file's are gd_*, and the op that fills slot X of the table is gd_op_X.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "arch/cycles.h"
#include "backend.h"
#include "uapi/gdrdrv.h"
#include "process/log.h"

#define GD_DEVICE "/dev/gdrdrv"
#define GD_VERSION(major, minor) (((uint32_t)(major) << 16) | (minor))

struct gd_ctx {
    int fd;
    uint32_t version;        /* the module's, major << 16 | minor */
};

struct gd_pin {
    uint64_t handle;         /* the module's 64-bit handle, kept whole */
    uint64_t mapped_size;    /* the pinned range's, in whole GPU pages: what a mapping maps */
    gdr_mapping_type_t req;  /* last REQ_MAPPING_TYPE sent: the module keeps it */
};

/* Why /dev/gdrdrv cannot be opened, in words a user can act on. */
static void gd_explain_open_error(int err, char *why, size_t len)
{
    struct stat st;
    char gname[64] = "";

    if (err == ENOENT) {
        if (access("/sys/module/gdrdrv", F_OK) == 0)
            snprintf(why, len, "the gdrdrv module is loaded but " GD_DEVICE " does not exist "
                     "(no devtmpfs or udev?)");
        else
            snprintf(why, len, "the gdrdrv kernel module is not loaded (no " GD_DEVICE ")");
    } else if (err == ENXIO || err == ENODEV) {
        snprintf(why, len, GD_DEVICE " exists but no driver answers it (module not loaded)");
    } else if ((err == EACCES || err == EPERM) && stat(GD_DEVICE, &st) == 0) {
        struct group gr, *res = NULL;
        char buf[1024];

        if (getgrgid_r(st.st_gid, &gr, buf, sizeof(buf), &res) == 0 && res)
            snprintf(gname, sizeof(gname), "%s", res->gr_name);
        else
            snprintf(gname, sizeof(gname), "%u", (unsigned)st.st_gid);
        snprintf(why, len, "permission denied on " GD_DEVICE " (mode %04o, group %s): join "
                 "that group or load gdrdrv with dev_mode/dev_gid", (unsigned)(st.st_mode & 07777),
                 gname);
    } else {
        snprintf(why, len, "cannot open " GD_DEVICE ": %s", strerror(err));
    }
}

/* Open the device and check its version; 0 with *fd and *version, or an errno and why. */
static int gd_open_device(int *fd, uint32_t *version, char *why, size_t len)
{
    struct gdrdrv_get_version v = { 0, 0 };
    int rc;

    *fd = open(GD_DEVICE, O_RDWR | O_CLOEXEC);
    if (*fd < 0) {
        rc = errno;
        gd_explain_open_error(rc, why, len);
        return rc == ENOENT || rc == ENXIO ? ENODEV : rc;
    }
    if (ioctl(*fd, GDRDRV_IOC_GET_VERSION, &v) != 0) {
        rc = errno;
        snprintf(why, len, GD_DEVICE " does not answer GET_VERSION (%s): not a gdrdrv module?",
                 strerror(rc));
        goto fail;
    }
    if (v.gdrdrv_version < GD_VERSION(2, 0)) {
        rc = ENOTSUP;
        snprintf(why, len, "gdrdrv module version %u.%u is too old (2.0 or newer needed)",
                 v.gdrdrv_version >> 16, v.gdrdrv_version & 0xffff);
        goto fail;
    }
    if (v.minimum_gdr_api_version > (uint32_t)GDR_API_VERSION) {
        rc = ENOTSUP;
        snprintf(why, len, "gdrdrv module %u.%u needs a gdrapi library %u.%u or newer",
                 v.gdrdrv_version >> 16, v.gdrdrv_version & 0xffff,
                 v.minimum_gdr_api_version >> 16, v.minimum_gdr_api_version & 0xffff);
        goto fail;
    }
    *version = v.gdrdrv_version;
    return 0;
fail:
    close(*fd);
    *fd = -1;
    return rc;
}

static int gd_op_probe(char *why, size_t len)
{
    uint32_t version;
    int fd, rc = gd_open_device(&fd, &version, why, len);

    if (rc == 0)
        close(fd);
    return rc;
}

static int gd_op_open(void **ctx, char *why, size_t len)
{
    struct gd_ctx *c = calloc(1, sizeof(*c));
    int rc;

    *ctx = NULL;
    if (!c)
        return ENOMEM;
    rc = gd_open_device(&c->fd, &c->version, why, len);
    if (rc) {
        free(c);
        return rc;
    }
    vr_dbg("gdrdrv: module version %u.%u on fd %d", c->version >> 16, c->version & 0xffff, c->fd);
    *ctx = c;
    return 0;
}

static void gd_op_close(void *ctx)
{
    struct gd_ctx *c = ctx;

    if (!c)
        return;
    close(c->fd);   /* the module drops whatever this fd still holds */
    free(c);
}

/* An ioctl, 0 or errno. */
static int gd_ioctl(const struct gd_ctx *c, unsigned long cmd, void *arg)
{
    return ioctl(c->fd, cmd, arg) == 0 ? 0 : errno;
}

/* GET_INFO and GET_INFO_V2 answer the pin's fields under the same names. */
#define GD_PIN_INFO(i) ((struct vr_pin_info){ .va = (i).va, .mapped_size = (i).mapped_size, \
                                              .page_size = (i).page_size,                 \
                                              .tm_cycles = (i).tm_cycles,                 \
                                              .cycles_per_ms = (i).tsc_khz })

/* The module's view of a pin, through the newest GET_INFO it has: what it pinned in info,
 * how it is mapped now in *type. */
static int gd_query(const struct gd_ctx *c, uint64_t handle, struct vr_pin_info *info,
                    gdr_mapping_type_t *type)
{
    int rc;

    if (c->version >= GDRDRV_VERSION_WITH_GET_INFO_V2) {
        struct gdrdrv_get_info_v2 i = { .handle = handle };

        if ((rc = gd_ioctl(c, GDRDRV_IOC_GET_INFO_V2, &i)))
            return rc;
        *info = GD_PIN_INFO(i);
        *type = i.mapping_type <= GDRDRV_MAPPING_TYPE_DEVICE ?
                (gdr_mapping_type_t)i.mapping_type : GDR_MAPPING_TYPE_NONE;
    } else {
        struct gdrdrv_get_info i = { .handle = handle };

        if ((rc = gd_ioctl(c, GDRDRV_IOC_GET_INFO, &i)))
            return rc;
        *info = GD_PIN_INFO(i);
        /* Modules before 2.4 map write-combined or, failing that, cached. */
        *type = !i.mapped ? GDR_MAPPING_TYPE_NONE :
                i.wc_mapping ? GDR_MAPPING_TYPE_WC : GDR_MAPPING_TYPE_CACHING;
    }
    if (!info->cycles_per_ms)           /* the module did not say: its get_cycles() rate */
        info->cycles_per_ms = vr_kernel_cycles_per_ms();
    return 0;
}

static int gd_op_pin(void *ctx, const struct vr_pin_req *req, void **pinp,
                     struct vr_pin_info *info, char *why, size_t len)
{
    struct gd_ctx *c = ctx;
    struct gd_pin *p;
    gdr_mapping_type_t type;
    uint64_t handle;
    int rc;

    if (req->flags & GDR_PIN_FLAG_FORCE_PCIE) {
        struct gdrdrv_get_attr a = { GDRDRV_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE, 0 };

        if (c->version < GDRDRV_VERSION_WITH_GET_ATTR || gd_ioctl(c, GDRDRV_IOC_GET_ATTR, &a) ||
            !a.val) {
            snprintf(why, len, "the gdrdrv module does not support GDR_PIN_FLAG_FORCE_PCIE");
            return EINVAL;
        }
    }
    /* Legacy calls carry tokens, which only PIN_BUFFER (v1) passes on. */
    if (req->legacy || c->version < GDRDRV_VERSION_WITH_PIN_BUFFER_V2) {
        struct gdrdrv_pin_buffer b = { .addr = req->addr, .size = req->size,
                                       .p2p_token = req->p2p_token, .va_space = req->va_space };

        rc = gd_ioctl(c, GDRDRV_IOC_PIN_BUFFER, &b);
        handle = b.handle;
    } else {
        struct gdrdrv_pin_buffer_v2 b = { .addr = req->addr, .size = req->size,
                                          .flags = req->flags };

        rc = gd_ioctl(c, GDRDRV_IOC_PIN_BUFFER_V2, &b);
        handle = b.handle;
    }
    if (rc == VR_KERNEL_ENOTSUPP && (req->flags & GDR_PIN_FLAG_FORCE_PCIE)) {
        /* NVIDIA's driver takes FORCE_BAR1_MAPPING only on a GPU with a coherent link: the
         * refusal every backend gives for the flag there (final; clients pin again without). */
        snprintf(why, len, "GDR_PIN_FLAG_FORCE_PCIE refused by the GPU driver (errno 524): it "
                 "maps through the PCIe BAR on request only on a GPU with a coherent (C2C) "
                 "link; pin without the flag");
        return EINVAL;
    }
    switch (rc) {
    case 0:
        break;
    case EINVAL:
        snprintf(why, len, "not GPU memory the gdrdrv module can pin");
        return ENOTSUP;
    case EACCES:
        snprintf(why, len, "the gdrdrv module refused access (EACCES)");
        return EACCES;
    case EOPNOTSUPP:    /* FORCE_PCIE refused after all: an error of this memory, final */
        snprintf(why, len, "the gdrdrv module refused the pin flags");
        return EINVAL;
    default:
        snprintf(why, len, "gdrdrv PIN_BUFFER: %s", strerror(rc));
        return rc;
    }

    rc = gd_query(c, handle, info, &type);
    if (rc)
        snprintf(why, len, "gdrdrv GET_INFO of the new pin: %s", strerror(rc));
    p = rc ? NULL : calloc(1, sizeof(*p));
    if (!p) {
        struct gdrdrv_unpin_buffer u = { handle };

        gd_ioctl(c, GDRDRV_IOC_UNPIN_BUFFER, &u);
        return rc ? rc : ENOMEM;
    }
    p->handle = handle;
    p->mapped_size = req->len;
    *pinp = p;
    return 0;
}

static int gd_op_unpin(void *ctx, void *pin)
{
    struct gd_ctx *c = ctx;
    struct gd_pin *p = pin;
    struct gdrdrv_unpin_buffer u = { p->handle };
    int rc;

    rc = gd_ioctl(c, GDRDRV_IOC_UNPIN_BUFFER, &u);
    if (rc)
        vr_dbg("gdrdrv: UNPIN_BUFFER %#llx: %s", (unsigned long long)p->handle, strerror(rc));
    free(p);
    return rc;
}

static int gd_op_map(void *ctx, void *pin, size_t size, gdr_mapping_type_t want, void **ptr,
                     gdr_mapping_type_t *granted, char *why, size_t why_len)
{
    struct gd_ctx *c = ctx;
    struct gd_pin *p = pin;
    struct vr_pin_info info;
    gdr_mapping_type_t type = GDR_MAPPING_TYPE_NONE;
    long page = sysconf(_SC_PAGESIZE);
    size_t len;
    void *va;
    int rc, typed;

    if (size > p->mapped_size || page <= 0)
        return EINVAL;
    if (p->handle > (uint64_t)INT64_MAX / (uint64_t)page)
        return EINVAL;                   /* no file offset can express it */
    typed = c->version >= GDRDRV_VERSION_WITH_REQ_MAPPING_TYPE;
    if (typed && (want != GDR_MAPPING_TYPE_NONE || p->req != want)) {
        /* Also sent to go back to the module's choice after an earlier typed request. */
        struct gdrdrv_req_mapping_type r = { .handle = p->handle, .mapping_type = want };

        rc = gd_ioctl(c, GDRDRV_IOC_REQ_MAPPING_TYPE, &r);
        if (rc)
            return rc == EBUSY ? EAGAIN : rc;
        p->req = want;
    } else if (!typed && want != GDR_MAPPING_TYPE_NONE && want != GDR_MAPPING_TYPE_WC) {
        snprintf(why, why_len, "gdrdrv %d.%d maps write-combined only (typed mappings need 2.5)",
                 c->version >> 16, c->version & 0xffff);
        return EINVAL;
    }
    /* The caller's size may be smaller: map every pinned page, so that ptr + (addr - va)
     * stays valid over the whole pinned range. */
    len = (size_t)p->mapped_size;
    va = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd,
              (off_t)(p->handle * (uint64_t)page));
    if (va == MAP_FAILED) {
        rc = errno;
        snprintf(why, why_len, "mmap of /dev/gdrdrv at the pin's offset failed: %s", strerror(rc));
        return rc;
    }
    rc = gd_query(c, p->handle, &info, &type);
    if (rc == 0 && type == GDR_MAPPING_TYPE_NONE)
        rc = EIO;
    if (rc == 0 && want != GDR_MAPPING_TYPE_NONE && type != want)
        rc = EINVAL;                     /* the module gave another type than asked */
    if (rc) {
        munmap(va, len);
        return rc;
    }
    *ptr = va;
    *granted = type;
    return 0;
}

static int gd_op_unmap(void *ctx, void *pin, void *ptr, size_t size)
{
    const struct gd_pin *p = pin;

    munmap(ptr, (size_t)p->mapped_size);  /* size: we mapped the whole pin, so that goes */
    return 0;
}

static int gd_op_callback_flag(void *ctx, void *pin, int *flag)
{
    struct gd_pin *p = pin;
    struct gdrdrv_get_cb_flag f = { .handle = p->handle };
    int rc = gd_ioctl(ctx, GDRDRV_IOC_GET_CB_FLAG, &f);

    *flag = rc ? 0 : (f.flag != 0);
    return rc;
}

static int gd_op_get_attr(void *ctx, gdr_attr_t attr, int *value)
{
    struct gd_ctx *c = ctx;
    struct gdrdrv_get_attr a = { 0, 0 };
    int rc;

    *value = 0;
    if (attr == GDR_ATTR_USING_DMA_BUF_MMAP)
        return 0;
    if (c->version < GDRDRV_VERSION_WITH_GET_ATTR)
        return 0;   /* older modules: callback pins only, no FORCE_PCIE */
    a.attr = attr == GDR_ATTR_USE_PERSISTENT_MAPPING ? GDRDRV_ATTR_USE_PERSISTENT_MAPPING :
             GDRDRV_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE;
    rc = gd_ioctl(c, GDRDRV_IOC_GET_ATTR, &a);
    if (rc == 0)
        *value = (int)a.val;
    return rc;
}

static int gd_op_driver_version(void *ctx, int *major, int *minor)
{
    const struct gd_ctx *c = ctx;

    *major = (int)(c->version >> 16);
    *minor = (int)(c->version & 0xffff);
    return 0;
}

/* Everything gdr_get_attribute, gdr_driver_get_version and the mapping types depend on is
 * the module at hand, so the table's data stays at its defaults and the ops ask the module. */
const struct vr_backend_ops vr_backend_gdrdrv = {
    .id = VRAMIO_BACKEND_GDRDRV,
    .name = "gdrdrv",
    .probe = gd_op_probe,
    .open = gd_op_open,
    .close = gd_op_close,
    .pin = gd_op_pin,
    .unpin = gd_op_unpin,
    .map = gd_op_map,
    .unmap = gd_op_unmap,
    .callback_flag = gd_op_callback_flag,
    .get_attr = gd_op_get_attr,
    .driver_version = gd_op_driver_version,
};

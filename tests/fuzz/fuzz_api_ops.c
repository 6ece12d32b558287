/* SPDX-License-Identifier: MIT */
/*
 * fuzz_api_ops.c - the operations of the API fuzz target (fuzz_api.c says what a finding is).
 * Each reads what it needs from the input: which gdr_t and handle slot (live, stale or made
 * up), addresses in the stand-ins' GPU memory or anywhere, sizes, flags; calls the API; and
 * checks the answer against what the slots know.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fake_gdrdrv.h"
#include "fuzz_api.h"
#include "uapi/gdrdrv.h"

#define GDRV(major, minor) (((uint32_t)(major) << 16) | (minor))

/* ---- choosing slots and values --------------------------------------------------------- */
/* A gdr_t: a slot's (open or stale), NULL, or a made-up value; *slot its index or -1. */
gdr_t fz_pick_g(struct fz_in *in, int *slot)
{
    unsigned s = fz_u8(in);

    *slot = -1;
    if (s < 0xf0) {
        *slot = (int)(s % FZ_NG);
        return fz.gdrs[*slot].g;
    }
    return s < 0xf8 ? NULL : (gdr_t)(uintptr_t)fz_u64(in);
}

/* Whether value g is that of an open slot (a stale value reused would be one). */
static int g_open_value(gdr_t g)
{
    for (int i = 0; i < FZ_NG; i++)
        if (fz.gdrs[i].open && fz.gdrs[i].g == g)
            return 1;
    return 0;
}

int fz_h_live_value(gdr_mh_t mh)
{
    for (int i = 0; i < FZ_NH; i++)
        if (fz.hs[i].live && fz.hs[i].mh.h == mh.h)
            return 1;
    return 0;
}

/* A handle slot, and the gdr_t to use with it: mostly its own, sometimes another. */
struct fz_handle *fz_pick_h(struct fz_in *in, gdr_t *g, int *own)
{
    unsigned s = fz_u8(in);
    struct fz_handle *h = &fz.hs[s % FZ_NH];
    int slot;

    if (s & 0x80) {
        *g = fz_pick_g(in, &slot);
        *own = slot == h->g && fz.gdrs[slot].open;
    } else {
        *g = fz.gdrs[h->g].g;
        *own = fz.gdrs[h->g].open;
    }
    return h;
}

/* Where to pin: in the stand-ins' GPU memory (at any offset, past its end too), anywhere. */
static uint64_t pick_addr(struct fz_in *in)
{
    unsigned s = fz_u8(in), k;
    uint64_t base = 0, size = 0, off;

    switch (s % 8) {
    case 0: case 1: case 2: case 3:
        k = fz_u8(in);
        if (FZ_VMM && (k & 1)) {
            const struct fz_alloc *a = &fz.allocs[(k >> 1) % FZ_NA];
            base = a->d;
            size = a->size;
        } else {
            base = fz_gpus[(k >> 1) % (unsigned)fz_ngpus].base;
            size = fz_gpus[(k >> 1) % (unsigned)fz_ngpus].size;
        }
        off = fz_size(in, FZ_GPU_PAGE);
        return base + (s & 0x80 ? off : off % (size + 2 * FZ_GPU_PAGE));
    case 4:
        return fz_u64(in);
    case 5:
        return (uintptr_t)fz_host + fz_u16(in);
    case 6: {
        const struct fz_handle *h = &fz.hs[fz_u8(in) % FZ_NH];
        return h->addr + (uint64_t)(int16_t)fz_u16(in);
    }
    default:
        return s & 0x80 ? UINT64_MAX - fz_u16(in) : fz_u16(in);
    }
}

/* ---- the environment of gdr_open and the gdrdrv stand-in's module ---------------------- */
static void set_or_unset(const char *name, const char *value)
{
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

static void open_env(struct fz_in *in)
{
    static const char *const backend[] = { NULL, "gdrdrv", "dmabuf", "vulkan", "", "bogus",
                                           "DMABUF", NULL };
    static const char *const dmabuf[] = { NULL, "1", "0", "01" };
    static const char *const vulkan[] = { NULL, "1", "0", "2" };
    static const int open_err[] = { ENOENT, EACCES, 0, 0, 0, 0, ENXIO, 0 };
    unsigned e = fz_u8(in), c = fz_u8(in), v = fz_u8(in);
    struct fgd_config cfg = { 0 };

    set_or_unset("GDRCOPY_BACKEND", backend[e & 7]);
    set_or_unset("GDRCOPY_USE_DMABUF_MMAP", dmabuf[(e >> 3) & 3]);
    set_or_unset("VRAMIO_ENABLE_VULKAN", vulkan[(e >> 5) & 3]);
    set_or_unset("VRAMIO_UPSTREAM_ALIGNMENT", (e & 0x80) ? "1" : NULL);
    cfg.open_errno = open_err[c & 7];
    cfg.version = (v & 7) == 7 ? GDRV(1, 9) : GDRV(2, v & 7);
    cfg.min_api = ((c >> 3) & 7) == 0 ? GDRV(2, 7) : GDRV(2, 0);
    cfg.version_errno = ((c >> 3) & 7) == 1 ? ENOTTY : 0;
    cfg.persistent = (c >> 6) & 1;
    cfg.force_pcie = (c >> 7) & 1;
    cfg.coherent = (v >> 3) & 1;
    cfg.huge_handles = ((v >> 4) & 7) == 0;
    if (cfg.version < GDRV(2, 5))
        cfg.force_pcie = cfg.persistent = 0;
    fgd_config(&cfg);
}

/* The stand-ins' faults, as environment they read at each call, and the gdrdrv stand-in's. */
static const char *const dmabuf_knobs[][2] = {
    { "FAKE_CUDA_MMAP", "refuse" }, { "FAKE_CUDA_COHERENT", "1" },
    { "FAKE_CUDA_VERSION", "13000" }, { "FAKE_CUDA_FAIL_DMA", "999" },
    { "FAKE_CUDA_SYNC_ERROR", "999" }, { "FAKE_CUDA_DMABUF", "1:0" },
    { "FAKE_CUDA_INTEGRATED", "1" }, { "FAKE_CUDA_NO_OWNER", "1" },
};
static const char *const vmm_knobs[][2] = {
    { "FAKE_CUDA_VMM", "0" }, { "FAKE_CUDA_PEER_REFUSE", "1" },
    { "FAKE_CUDA_FAIL_DMA", "999" }, { "FAKE_CUDA_SYNC_ERROR", "999" },
    { "FAKE_CUDA_VMM_REFUSE", "1" }, { "FAKE_VK_ACCEPT_FOREIGN", "1" },
    { "FAKE_CUDA_OTHER_CTX", "1" }, { "FAKE_CUDA_NO_OWNER", "1" },
};
#define KNOBS (FZ_VMM ? vmm_knobs : dmabuf_knobs)
#define NKNOBS 8

void fz_faults_clear(void)
{
    for (int i = 0; i < NKNOBS; i++)
        unsetenv(KNOBS[i][0]);
    fgd_fail_ioctl(0, 0, 0);
    fgd_fail_mmap(0, 0);
}

static void op_fault(struct fz_in *in)
{
    static const unsigned long cmds[] = {
        0, GDRDRV_IOC_PIN_BUFFER, GDRDRV_IOC_PIN_BUFFER_V2, GDRDRV_IOC_GET_INFO,
        GDRDRV_IOC_GET_INFO_V2, GDRDRV_IOC_GET_ATTR, GDRDRV_IOC_REQ_MAPPING_TYPE,
        GDRDRV_IOC_GET_CB_FLAG,
    };
    static const int errs[] = { ENOMEM, EINVAL, EACCES, EFAULT, ENOSPC, EBUSY, EIO, ENOTTY };
    unsigned s = fz_u8(in), k = fz_u8(in);

    switch (s % 5) {
    case 0:
        fgd_fail_ioctl(cmds[k % 8], errs[(k >> 3) % 8], 1 + (int)(k >> 6));
        fz.faults = 1;
        break;
    case 1:
        fgd_fail_mmap(errs[k % 8], 1 + (int)((k >> 3) & 3));
        fz.faults = 1;
        break;
    case 2:
        fgd_invalidate_all();
        break;
    case 3:
        setenv(KNOBS[k % NKNOBS][0], KNOBS[k % NKNOBS][1], 1);
        fz.faults = 1;
        break;
    default:
        unsetenv(KNOBS[k % NKNOBS][0]);
    }
}

/* ---- open, close ----------------------------------------------------------------------- */
static void forget_handles_of(int slot)
{
    for (int i = 0; i < FZ_NH; i++)
        if (fz.hs[i].g == slot && fz.hs[i].live) {
            fz.hs[i].live = 0;
            fz.hs[i].map = NULL;
        }
}

static void close_slot(int slot)
{
    int rc = gdr_close(fz.gdrs[slot].g);

    if (rc != 0)
        fz_finding("gdr_close of an open gdr_t: %d (%s)", rc, vramio_last_error());
    fz.gdrs[slot].open = 0;
    forget_handles_of(slot);
}

static void op_open(struct fz_in *in)
{
    int slot = (int)(fz_u8(in) % FZ_NG);
    gdr_t g;

    open_env(in);
    if (fz.gdrs[slot].open)
        close_slot(slot);
    g = gdr_open();
    if (!g && !vramio_last_error()[0])
        fz_finding("gdr_open returned NULL with no reason");
    if (g) {
        if (g_open_value(g))
            fz_finding("gdr_open returned %p, the value of a gdr_t that is still open", (void *)g);
        fz.gdrs[slot] = (struct fz_gdr){ g, 1 };
    }
}

static void op_close(struct fz_in *in)
{
    int slot, rc;
    gdr_t g = fz_pick_g(in, &slot);

    if (slot >= 0 && fz.gdrs[slot].open) {
        close_slot(slot);
        return;
    }
    rc = gdr_close(g);
    fz_errno_ok(rc, "gdr_close");
    if (rc == 0 && !g_open_value(g))
        fz_finding("gdr_close(%p) of a closed or made-up gdr_t returned 0", (void *)g);
    if (rc == 0)
        for (int i = 0; i < FZ_NG; i++)
            if (fz.gdrs[i].open && fz.gdrs[i].g == g)
                close_slot(i);
}

/* ---- pin, unpin ------------------------------------------------------------------------ */
void fz_check_info(const struct fz_handle *h, const gdr_info_v2_t *i, const char *when)
{
    if (i->va > h->addr || h->addr - i->va >= i->mapped_size ||
        i->mapped_size - (h->addr - i->va) < h->size)
        fz_finding("%s: info %#llx+%#llx does not hold the pinned %#llx+%#llx", when,
                   (unsigned long long)i->va, (unsigned long long)i->mapped_size,
                   (unsigned long long)h->addr, (unsigned long long)h->size);
    /* va is on a page: the pin's own, or a GPU page where that is larger (the vulkan backend
     * reports its allocation granularity, 2 MiB, and pins in GPU pages). */
    if (!i->page_size || (i->page_size & (i->page_size - 1)) ||
        (i->va & ((i->page_size < FZ_GPU_PAGE ? i->page_size : FZ_GPU_PAGE) - 1)))
        fz_finding("%s: page size %u, va %#llx", when, i->page_size, (unsigned long long)i->va);
    if (i->mapped != (h->map != NULL) ||
        (h->map && (i->mapping_type != h->map_type ||
                    i->wc_mapping != (h->map_type == GDR_MAPPING_TYPE_WC))) ||
        (!h->map && i->mapping_type != GDR_MAPPING_TYPE_NONE))
        fz_finding("%s: info says mapped %u type %d, the handle is %s (type %d)", when,
                   i->mapped, (int)i->mapping_type, h->map ? "mapped" : "not mapped",
                   (int)h->map_type);
}

static struct fz_handle *op_pin(struct fz_in *in, int legacy)
{
    struct fz_handle *h = NULL, nh = { 0 };
    gdr_info_v2_t info;
    uint64_t addr, size, token = 0;
    uint32_t flags = 0, space = 0;
    unsigned s;
    int slot, rc;
    gdr_t g = fz_pick_g(in, &slot);

    addr = pick_addr(in);
    size = fz_size(in, FZ_GPU_PAGE);
    s = fz_u8(in);
    if (legacy) {
        token = s & 1 ? fz_u64(in) : 0;
        space = s & 2 ? fz_u32(in) : 0;
    } else {
        flags = s < 0xf0 ? (s & 1) : fz_u32(in);
    }
    for (int i = 0, at = (int)fz_u8(in); i < FZ_NH; i++)
        if (!fz.hs[(at + i) % FZ_NH].live) {
            h = &fz.hs[(at + i) % FZ_NH];
            break;
        }
    if (!h)
        return NULL;
    nh.mh.h = 0xdeadbeef;
    rc = legacy ? gdr_pin_buffer(g, (unsigned long)addr, (size_t)size, token, space, &nh.mh)
                : gdr_pin_buffer_v2(g, (unsigned long)addr, (size_t)size, flags, &nh.mh);
    fz_errno_ok(rc, "gdr_pin_buffer");
    if (rc) {
        if (nh.mh.h != 0)
            fz_finding("a failed pin left the handle %#lx, not 0", nh.mh.h);
        return NULL;
    }
    if (slot < 0 || !fz.gdrs[slot].open)
        fz_finding("a pin through a closed or made-up gdr_t %p worked", (void *)g);
    if (!nh.mh.h || fz_h_live_value(nh.mh))
        fz_finding("a pin returned the handle %#lx, 0 or that of a live pin", nh.mh.h);
    if (flags & ~(uint32_t)GDR_PIN_FLAG_FORCE_PCIE)
        fz_finding("a pin with the unknown flags %#x worked", flags);
    nh.g = slot;
    nh.live = 1;
    nh.addr = addr;
    nh.size = size;
    rc = gdr_get_info_v2(g, nh.mh, &info);
    if (rc)
        fz_finding("gdr_get_info_v2 of a new pin: %d (%s)", rc, vramio_last_error());
    fz_check_info(&nh, &info, "after the pin");
    nh.va = info.va;
    nh.mapped_size = info.mapped_size;
    nh.page_size = info.page_size;
    *h = nh;
    return h;
}

static void op_unpin(struct fz_in *in)
{
    int own, rc;
    gdr_t g;
    struct fz_handle *h = fz_pick_h(in, &g, &own);
    gdr_mh_t mh = h->mh;

    if (fz_u8(in) == 0xff)
        mh.h = fz_u64(in);
    rc = gdr_unpin_buffer(g, mh);
    fz_errno_ok(rc, "gdr_unpin_buffer");
    if (mh.h == h->mh.h && h->live && own) {
        if (rc)
            fz_finding("gdr_unpin_buffer of a live pin: %d (%s)", rc, vramio_last_error());
        h->live = 0;
        h->map = NULL;
    } else if (rc == 0 && !fz_h_live_value(mh)) {
        fz_finding("gdr_unpin_buffer of a stale, foreign or made-up handle %#lx returned 0",
                   mh.h);
    } else if (rc == 0) {
        fz_finding("gdr_unpin_buffer of handle %#lx through another gdr_t returned 0", mh.h);
    }
}

/* ---- map, unmap ------------------------------------------------------------------------ */
static void do_map(struct fz_handle *h, gdr_t g, int own, size_t size, int flags)
{
    gdr_info_v2_t info;
    void *va = (void *)1;
    int rc = gdr_map_v2(g, h->mh, &va, size, flags);

    fz_errno_ok(rc, "gdr_map");
    /* (A module that says EBUSY to REQ_MAPPING_TYPE, a fault of the stand-in, is EAGAIN.) */
    if (rc == EAGAIN && !h->map && !fz.faults)
        fz_finding("gdr_map of a handle that is not mapped: EAGAIN");
    if (rc)
        return;
    if (!h->live || !own)
        fz_finding("gdr_map of a stale or foreign handle %#lx worked", h->mh.h);
    if (h->map)
        fz_finding("gdr_map of a mapped handle worked (EAGAIN expected)");
    if (size == 0 || size > h->mapped_size || flags < 0 || flags > 3 || !va)
        fz_finding("gdr_map(size %zu of %llu, flags %d) worked, at %p", size,
                   (unsigned long long)h->mapped_size, flags, va);
    if (gdr_get_info_v2(g, h->mh, &info))
        fz_finding("gdr_get_info_v2 after gdr_map: %s", vramio_last_error());
    if (info.mapping_type <= GDR_MAPPING_TYPE_NONE || info.mapping_type >= GDR_MAPPING_TYPE_MAX ||
        (flags && (int)info.mapping_type != flags))
        fz_finding("gdr_map(flags %d) gave the mapping type %d", flags, (int)info.mapping_type);
    h->map = h->old_map = va;
    h->map_size = size;
    h->map_type = info.mapping_type;
    fz_check_info(h, &info, "after gdr_map");
}

static void op_map(struct fz_in *in)
{
    int own, flags;
    unsigned s;
    size_t size;
    gdr_t g;
    struct fz_handle *h = fz_pick_h(in, &g, &own);

    s = fz_u8(in);
    size = s % 4 == 0 ? (size_t)h->mapped_size : s % 4 == 1 ? (size_t)h->size :
           (size_t)fz_size(in, FZ_GPU_PAGE);
    flags = (s & 0x70) == 0x70 ? (int)fz_u32(in) : (int)((s >> 4) & 3);
    do_map(h, g, own, size, flags);
}

static void op_unmap(struct fz_in *in)
{
    int own, rc;
    unsigned s;
    gdr_t g;
    struct fz_handle *h = fz_pick_h(in, &g, &own);
    void *va = h->map ? h->map : h->old_map;
    size_t size = h->map_size;

    s = fz_u8(in);
    if (s & 1)
        va = (void *)(uintptr_t)fz_u64(in);
    if (s & 2)
        size = (size_t)fz_size(in, FZ_GPU_PAGE);
    rc = gdr_unmap(g, h->mh, va, size);
    fz_errno_ok(rc, "gdr_unmap");
    if (h->live && own && h->map) {
        /* Upstream's rule: whatever it is given, the handle's mapping goes, and 0. */
        if (rc)
            fz_finding("gdr_unmap of a mapped handle: %d (%s)", rc, vramio_last_error());
        h->map = NULL;
    } else if (rc == 0) {
        fz_finding("gdr_unmap of a %s handle returned 0",
                   !h->live ? "stale" : !own ? "foreign" : "not mapped");
    }
}

/* Open where no gdr_t is, pin, map the whole pin: the deep states in few bytes. */
static void op_combo(struct fz_in *in)
{
    struct fz_handle *h;
    int i;

    for (i = 0; i < FZ_NG && !fz.gdrs[i].open; i++)
        ;
    if (i == FZ_NG)
        op_open(in);
    h = op_pin(in, 0);
    if (h)
        do_map(h, fz.gdrs[h->g].g, 1, (size_t)h->mapped_size, 0);
}

/* ---- warming up -------------------------------------------------------------------------- */
static void warm_pin(gdr_t g, uint64_t addr, size_t size)
{
    gdr_mh_t mh;
    void *map;

    if (gdr_pin_buffer_v2(g, (unsigned long)addr, size, 0, &mh))
        fz_finding("warm-up: pin %#llx+%zu: %s", (unsigned long long)addr, size,
                   vramio_last_error());
    if (gdr_map(g, mh, &map, size))
        fz_finding("warm-up: map: %s", vramio_last_error());
    if (gdr_copy_to_mapping(mh, map, fz_host, size) ||
        gdr_copy_from_mapping(mh, fz_host, map, size) ||
        vramio_copy_to_mapping_auto(mh, map, fz_host, size) ||
        vramio_copy_from_mapping_auto(mh, fz_host, map, size))
        fz_finding("warm-up: copies: %s", vramio_last_error());
    if (gdr_unmap(g, mh, map, size) || gdr_unpin_buffer(g, mh))
        fz_finding("warm-up: unmap, unpin: %s", vramio_last_error());
}

void fz_warm_up(void)
{
    struct fgd_config cfg = { .version = GDRV(2, 6), .min_api = GDRV(2, 0), .persistent = 1 };
    unsigned long long d[3] = { 0 };
    gdr_t g;
    int i;

    fz_faults_clear();
    unsetenv("GDRCOPY_BACKEND");
    if (FZ_VMM)
        setenv("VRAMIO_ENABLE_VULKAN", "1", 1);
    fgd_config(&cfg);
    g = gdr_open();
    if (!g)
        fz_finding("warm-up: gdr_open: %s", vramio_last_error());
    for (i = 0; i < fz_ngpus; i++)
        if (!FZ_VMM || i == 0)          /* the VMM stand-in's cuMemAlloc memory: refused */
            warm_pin(g, fz_gpus[i].base, 64 << 10);
    for (i = 0; FZ_VMM && i < 3; i++) {
        if (vramio_alloc(i == 2 ? 0 : i, i == 2 ? 4096 : (4 << 20), &d[i]))
            fz_finding("warm-up: vramio_alloc: %s", vramio_last_error());
        warm_pin(g, d[i], 64 << 10);
    }
    gdr_close(g);
    for (i = 0; i < 3; i++)
        if (d[i])
            vramio_free(d[i]);
    cfg.open_errno = ENOENT;
    fgd_config(&cfg);
    unsetenv("VRAMIO_ENABLE_VULKAN");
}

/* ---- one operation ------------------------------------------------------------------------ */
void fz_op(struct fz_in *in)
{
    unsigned op = fz_u8(in);

    switch (op % 16) {
    case 0: op_open(in); break;
    case 1: op_close(in); break;
    case 2: op_pin(in, 0); break;
    case 3: op_pin(in, 1); break;
    case 4: op_unpin(in); break;
    case 5: op_map(in); break;
    case 6: op_unmap(in); break;
    case 7: fz_op_copy(in, 1, 0); break;
    case 8: fz_op_copy(in, 0, 0); break;
    case 9: fz_op_copy(in, (op >> 4) & 1, 1); break;
    case 10: fz_op_query(in); break;
    case 11: fz_op_instance(in); break;
    case 12: op_fault(in); break;
    case 13: fz_op_alloc(in); break;
    case 14: fz_op_free(in); break;
    default:
        op_combo(in);
    }
}

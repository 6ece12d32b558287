/* SPDX-License-Identifier: MIT */
/*
 * fuzz_api_copy.c - the API fuzz target's operations on data and answers (fuzz_api_ops.c has
 * the others and the choice among them): the copies and _auto copies, each checked against
 * the GPU memory itself; the queries of a handle and of a gdr_t; vramio_alloc and
 * vramio_free (over the VMM stand-in).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_api.h"
#include "legacy_info.h"

/* Host memory for a copy: at any alignment in fz_host, sometimes NULL. */
static unsigned char *pick_host(struct fz_in *in)
{
    unsigned s = fz_u8(in);

    return s == 0xff ? NULL : fz_host + (s & 63);
}

/* ---- copies ------------------------------------------------------------------------------ */
/* The GPU memory behind byte off of h's mapping (which starts at info.va). */
static unsigned char *gpu_at(const struct fz_handle *h, uint64_t off)
{
    return (unsigned char *)(uintptr_t)(h->va + off);
}

void fz_op_copy(struct fz_in *in, int to_map, int automatic)
{
    int own, rc, ok, inside;
    unsigned s;
    uint64_t off, n;
    unsigned char *host, *gpu;
    void *ptr;
    gdr_t g;
    struct fz_handle *h = fz_pick_h(in, &g, &own);

    s = fz_u8(in);
    off = s & 1 ? fz_size(in, 4096) : fz_u16(in);
    n = fz_size(in, 4096);
    host = pick_host(in);
    ptr = (void *)((uintptr_t)(h->map ? h->map : h->old_map) + (uintptr_t)off);
    if (s & 2)
        ptr = (void *)(uintptr_t)fz_u64(in);
    /* Never more than the host buffer holds, unless the library must refuse it anyway. */
    if (n > FZ_HOST_SIZE && n <= (uint64_t)1 << 32)
        n %= FZ_HOST_SIZE;
    ok = h->live && h->map;
    off = (uintptr_t)ptr - (uintptr_t)h->map;
    inside = ok && (uintptr_t)ptr >= (uintptr_t)h->map && off <= h->mapped_size &&
             n <= h->mapped_size - off;
    if (to_map && host && n <= FZ_HOST_SIZE)
        memset(host, (int)(s | 1), (size_t)n);
    gpu = inside ? gpu_at(h, off) : NULL;
    if (!to_map && gpu && !h->gpu_gone)
        memset(gpu, (int)(s | 2), (size_t)n);
    if (automatic)
        rc = to_map ? vramio_copy_to_mapping_auto(h->mh, ptr, host, (size_t)n)
                    : vramio_copy_from_mapping_auto(h->mh, host, ptr, (size_t)n);
    else
        rc = to_map ? gdr_copy_to_mapping(h->mh, ptr, host, (size_t)n)
                    : gdr_copy_from_mapping(h->mh, host, ptr, (size_t)n);
    fz_errno_ok(rc, "a copy");
    if (rc == 0 && n && (!inside || !host))
        fz_finding("a copy of %llu bytes at %p (mapping %p+%zu of %llu pinned, %s) with host %p "
                   "returned 0", (unsigned long long)n, ptr, h->map, h->map_size,
                   (unsigned long long)h->mapped_size, h->live ? "live" : "stale",
                   (void *)host);
    if (rc && inside && host && n && off + n <= h->map_size && !(automatic && fz.faults))
        fz_finding("a %scopy of %llu bytes at offset %llu of a mapping of %zu: %d (%s)",
                   automatic ? "_auto " : "", (unsigned long long)n, (unsigned long long)off,
                   h->map_size, rc, vramio_last_error());
    if (rc == 0 && n && gpu && host && !h->gpu_gone &&
        memcmp(to_map ? gpu : host, to_map ? host : gpu, (size_t)n) != 0)
        fz_finding("a %scopy %s the mapping at offset %llu, %llu bytes, did not %s GPU memory",
                   automatic ? "_auto " : "", to_map ? "to" : "from", (unsigned long long)off,
                   (unsigned long long)n, to_map ? "reach the" : "come from the");
}

/* ---- queries ----------------------------------------------------------------------------- */
void fz_op_query(struct fz_in *in)
{
    int own, rc, flag = -1;
    unsigned s;
    gdr_t g;
    struct fz_handle *h = fz_pick_h(in, &g, &own);
    gdr_info_v2_t info;
    struct t_info_v1 v1;
    vramio_backend_t b;
    size_t rd, wr;

    s = fz_u8(in);
    switch (s % 6) {
    case 0:
        rc = gdr_get_info_v2(g, h->mh, &info);
        if (rc == 0 && h->live && own)
            fz_check_info(h, &info, "gdr_get_info_v2");
        break;
    case 1:
        rc = t_get_info_v1(g, h->mh, &v1);
        if (rc == 0 && (v1.va != h->va || v1.mapped_size != h->mapped_size ||
                        v1.mapped != (h->map != NULL)))
            fz_finding("the legacy gdr_get_info disagrees with the pin");
        break;
    case 2:
        rc = gdr_get_callback_flag(g, h->mh, &flag);
        if (rc == 0 && flag != 0 && flag != 1)
            fz_finding("gdr_get_callback_flag gave %d", flag);
        break;
    case 3:
        rc = vramio_handle_backend(g, h->mh, &b);
        if (rc == 0 && (b <= VRAMIO_BACKEND_NONE || b >= VRAMIO_BACKEND_COUNT))
            fz_finding("vramio_handle_backend gave %d", (int)b);
        break;
    case 4:
        rc = vramio_copy_auto_crossover(h->mh, &rd, &wr);
        fz_errno_ok(rc, "vramio_copy_auto_crossover");
        return;     /* its own rules (mapped pins only): not the handle's */
    default:
        rc = gdr_get_info_v2(g, h->mh, NULL);
        if (rc == 0)
            fz_finding("gdr_get_info_v2 with a NULL info returned 0");
        return;
    }
    fz_errno_ok(rc, "a query of a handle");
    if (rc && h->live && own && s % 6 != 2)
        fz_finding("query %u of a live pin: %d (%s)", s % 6, rc, vramio_last_error());
    if (rc == 0 && !(h->live && own) && !fz_h_live_value(h->mh))
        fz_finding("query %u of a stale or foreign handle %#lx returned 0", s % 6, h->mh.h);
}

void fz_op_instance(struct fz_in *in)
{
    char reason[80];
    int slot, rc, v = 0, major, minor, open;
    unsigned s;
    const char *str;
    vramio_backend_t b;
    gdr_t g = fz_pick_g(in, &slot);

    open = slot >= 0 && fz.gdrs[slot].open;
    s = fz_u8(in);
    switch (s % 8) {
    case 0: {
        int attr = s & 0x80 ? (int)fz_u32(in) : (int)(fz_u8(in) % 5);
        rc = gdr_get_attribute(g, (gdr_attr_t)attr, (s & 0x40) ? NULL : &v);
        fz_errno_ok(rc, "gdr_get_attribute");
        if (rc == 0 && (!open || attr < 1 || attr > 3 || (s & 0x40)))
            fz_finding("gdr_get_attribute(%d) of a %s gdr_t returned 0", attr,
                       open ? "open" : "closed");
        /* gdrdrv asks the module, whose answer may be an error (a fault of the stand-in). */
        if (rc && open && attr >= 1 && attr <= 3 && !(s & 0x40) && !fz.faults)
            fz_finding("gdr_get_attribute(%d) of an open gdr_t: %d", attr, rc);
        return;
    }
    case 1:
        rc = gdr_driver_get_version(g, (s & 0x40) ? NULL : &major, &minor);
        fz_errno_ok(rc, "gdr_driver_get_version");
        if (rc == 0 && (!open || (s & 0x40)))
            fz_finding("gdr_driver_get_version of a closed gdr_t or to NULL returned 0");
        return;
    case 2:
        rc = vramio_get_backend(g, &b);
        fz_errno_ok(rc, "vramio_get_backend");
        if ((rc == 0) != open)
            fz_finding("vramio_get_backend of a%s gdr_t: %d", open ? "n open" : " closed", rc);
        return;
    case 3:
        rc = vramio_backend_status(g, (vramio_backend_t)(int)fz_u32(in), reason,
                                   fz_u8(in) % sizeof(reason));
        fz_errno_ok(rc, "vramio_backend_status");
        return;
    case 4:
        rc = vramio_backend_probe((vramio_backend_t)(fz_u8(in) % 5), reason, sizeof(reason));
        fz_errno_ok(rc, "vramio_backend_probe");
        return;
    case 5:
        rc = gdr_get_mapping_type_string((gdr_mapping_type_t)(int)fz_u32(in),
                                         (s & 0x40) ? NULL : &str);
        fz_errno_ok(rc, "gdr_get_mapping_type_string");
        if (rc == 0 && !str)
            fz_finding("gdr_get_mapping_type_string gave NULL");
        return;
    case 6:
        str = vramio_backend_name((vramio_backend_t)(int)fz_u32(in));
        str = vramio_strerror((int)fz_u32(in));
        if (!str || !vramio_last_error())
            fz_finding("vramio_strerror or vramio_last_error gave NULL");
        return;
    default:
        gdr_runtime_get_version(&major, &minor);
        if (major != 2 || minor != 6)
            fz_finding("gdr_runtime_get_version gave %d.%d", major, minor);
    }
}

/* ---- allocations (the VMM stand-in: vramio_alloc's pool) -------------------------------- */
/* The slot's allocation was just freed (rc: vramio_free's answer): the pins on it keep their
 * mappings, but its GPU memory may be unmapped or another allocation's now. */
static void alloc_freed(struct fz_alloc *a, int rc)
{
    if (rc)
        fz_finding("vramio_free of a live allocation: %d (%s)", rc, vramio_last_error());
    for (int i = 0; i < FZ_NH; i++)
        if (fz.hs[i].va < a->d + a->size && a->d < fz.hs[i].va + fz.hs[i].mapped_size)
            fz.hs[i].gpu_gone = 1;
    a->d = 0;
}

void fz_op_alloc(struct fz_in *in)
{
    struct fz_alloc *a = &fz.allocs[fz_u8(in) % FZ_NA];
    int gpu = (int)(fz_u8(in) % 4) - 1, rc;
    uint64_t size = fz_size(in, 4096);
    unsigned long long d = 0;

    if (!FZ_VMM)
        return;
    if (size > ((uint64_t)1 << 34) && size < ((uint64_t)1 << 63))
        size &= ((uint64_t)1 << 30) - 1;        /* big, but no stand-in memfd of terabytes */
    if (a->d)
        alloc_freed(a, vramio_free(a->d));
    rc = vramio_alloc(gpu, (size_t)size, &d);
    fz_errno_ok(rc, "vramio_alloc");
    if (rc == 0 && (!d || size == 0))
        fz_finding("vramio_alloc(%d, %llu) gave %#llx", gpu, (unsigned long long)size, d);
    if (rc == 0)
        *a = (struct fz_alloc){ d, (size_t)size };
}

void fz_op_free(struct fz_in *in)
{
    unsigned s = fz_u8(in);
    unsigned long long d = s & 0x80 ? fz_u64(in) : fz.allocs[s % FZ_NA].d + (s & 0x40 ? 512 : 0);
    int rc;

    if (!FZ_VMM || !d)
        return;
    rc = vramio_free(d);
    fz_errno_ok(rc, "vramio_free");
    for (int i = 0; i < FZ_NA; i++) {
        struct fz_alloc *a = &fz.allocs[i];

        if (a->d && a->d == d) {
            alloc_freed(a, rc);
            return;
        }
    }
    if (rc == 0)
        fz_finding("vramio_free(%#llx) of no live allocation returned 0", d);
}


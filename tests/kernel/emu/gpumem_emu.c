/* SPDX-License-Identifier: MIT */
/*
 * gpumem_emu.c - the "emu" allocation kind of the tools (tools/common/gpumem.h): memory of
 * the emulated p2p provider (/dev/nvp2p_emu, tests/kernel/emu/provider), written and read through
 * its READ/WRITE ioctls by the test kit's wrappers (tests/kernel/emu/emu.h). TEST ONLY: linked into
 * the QEMU guest's gdrcopy_sanity_static, never into the installed tools.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/gpumem_kind.h"
#include "emu.h"

static int inited;

static int gm_emu_init(int gpu, char *why, size_t len)
{
    if (inited)
        return 0;
    if (emu_fd() < 0) {
        int e = errno;
        snprintf(why, len, "the emulated p2p provider is not available (%s: %s)",
                 NVP2P_EMU_DEVICE, strerror(e));
        return e == ENOENT ? ENODEV : e;
    }
    inited = 1;
    return 0;
}

static int gm_emu_ready(void)
{
    return inited;
}

static int gm_emu_alloc(size_t size, struct gm_buf *b, char *why, size_t len)
{
    uint64_t va;
    int rc = emu_alloc(size, 1, 0, &va);

    if (rc) {
        snprintf(why, len, "NVP2P_EMU_IOC_ALLOC(%zu) failed: %s", size, strerror(rc));
        return rc;
    }
    b->dptr = va;
    b->alloc_size = (size + 0xffff) & ~(size_t)0xffff;
    return 0;
}

/* Fires the free callback of the provider's non-persistent pins of this memory. */
static int gm_emu_free(struct gm_buf *b)
{
    return emu_free(b->dptr);
}

static int gm_emu_write(const struct gm_buf *b, size_t off, const void *src, size_t n)
{
    return emu_write(b->dptr + off, src, n);
}

static int gm_emu_read(const struct gm_buf *b, size_t off, void *dst, size_t n)
{
    return emu_read(b->dptr + off, dst, n);
}

static int gm_emu_fill(const struct gm_buf *b, uint8_t byte)
{
    unsigned char chunk[4096];
    size_t off;
    int rc = 0;

    memset(chunk, byte, sizeof(chunk));
    for (off = 0; off < b->alloc_size && !rc; off += sizeof(chunk)) {
        size_t n = b->alloc_size - off < sizeof(chunk) ? b->alloc_size - off : sizeof(chunk);
        rc = gm_emu_write(b, off, chunk, n);
    }
    return rc;
}

static int gm_emu_live_pins(uint64_t *pins)
{
    struct nvp2p_emu_stats st;
    int rc;

    if (!inited)
        return ENOTSUP;
    rc = emu_stats(&st);
    if (!rc)
        *pins = st.live_pins;
    return rc;
}

const struct gm_kind_ops gm_emu_kind = {
    .init = gm_emu_init, .ready = gm_emu_ready, .alloc = gm_emu_alloc, .free = gm_emu_free,
    .write = gm_emu_write, .read = gm_emu_read, .fill = gm_emu_fill,
    .live_pins = gm_emu_live_pins,
};

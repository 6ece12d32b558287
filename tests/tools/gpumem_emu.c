/* SPDX-License-Identifier: MIT */
/*
 * gpumem_emu.c - the "emu" allocation kind of the tools (tools/common/gpumem.h): memory of
 * the emulated p2p provider (/dev/nvp2p_emu, tests/kernel/provider), written and read through
 * its READ/WRITE ioctls. TEST ONLY: linked into the QEMU guest's gdrcopy_sanity_static,
 * never into the installed tools.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/gpumem_kind.h"
#include "nvp2p_emu.h"

static int emu_fd = -1;

static int emu_init(int gpu, char *why, size_t len)
{
    (void)gpu;
    if (emu_fd >= 0)
        return 0;
    emu_fd = open(NVP2P_EMU_DEVICE, O_RDWR | O_CLOEXEC);
    if (emu_fd < 0) {
        int e = errno;
        snprintf(why, len, "the emulated p2p provider is not available (%s: %s)",
                 NVP2P_EMU_DEVICE, strerror(e));
        return e == ENOENT ? ENODEV : e;
    }
    return 0;
}

static int emu_ready(void)
{
    return emu_fd >= 0;
}

static int emu_alloc(size_t size, struct gm_buf *b, char *why, size_t len)
{
    struct nvp2p_emu_alloc a = { .size = size, .page_kind = 1 };
    int rc;

    if (ioctl(emu_fd, NVP2P_EMU_IOC_ALLOC, &a) < 0) {
        rc = errno;
        snprintf(why, len, "NVP2P_EMU_IOC_ALLOC(%zu) failed: %s", size, strerror(rc));
        return rc;
    }
    b->dptr = a.va;
    b->alloc_size = (size + 0xffff) & ~(size_t)0xffff;
    return 0;
}

/* Fires the free callback of the provider's non-persistent pins of this memory. */
static int emu_free(struct gm_buf *b)
{
    struct nvp2p_emu_free f = { .va = b->dptr };

    return ioctl(emu_fd, NVP2P_EMU_IOC_FREE, &f) < 0 ? errno : 0;
}

static int emu_rw(unsigned long cmd, uint64_t va, void *p, size_t n)
{
    struct nvp2p_emu_rw rw = { .va = va, .len = n, .user_ptr = (uintptr_t)p };

    return ioctl(emu_fd, cmd, &rw) < 0 ? errno : 0;
}

static int emu_write(const struct gm_buf *b, size_t off, const void *src, size_t n)
{
    return emu_rw(NVP2P_EMU_IOC_WRITE, b->dptr + off, (void *)src, n);
}

static int emu_read(const struct gm_buf *b, size_t off, void *dst, size_t n)
{
    return emu_rw(NVP2P_EMU_IOC_READ, b->dptr + off, dst, n);
}

static int emu_fill(const struct gm_buf *b, uint8_t byte)
{
    unsigned char chunk[4096];
    size_t off;
    int rc = 0;

    memset(chunk, byte, sizeof(chunk));
    for (off = 0; off < b->alloc_size && !rc; off += sizeof(chunk)) {
        size_t n = b->alloc_size - off < sizeof(chunk) ? b->alloc_size - off : sizeof(chunk);
        rc = emu_write(b, off, chunk, n);
    }
    return rc;
}

static int emu_live_pins(uint64_t *pins)
{
    struct nvp2p_emu_stats st;

    if (emu_fd < 0)
        return ENOTSUP;
    if (ioctl(emu_fd, NVP2P_EMU_IOC_STATS, &st) < 0)
        return errno;
    *pins = st.live_pins;
    return 0;
}

const struct gm_kind_ops gm_emu_kind = {
    .init = emu_init, .ready = emu_ready, .alloc = emu_alloc, .free = emu_free,
    .write = emu_write, .read = emu_read, .fill = emu_fill, .live_pins = emu_live_pins,
};

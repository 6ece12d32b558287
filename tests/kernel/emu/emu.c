/* SPDX-License-Identifier: MIT */
/* emu.c - the emulated provider's control device, one wrapper per ioctl (see emu.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "emu.h"

int emu_fd(void)
{
    static int fd = -1;

    if (fd < 0)
        fd = open(NVP2P_EMU_DEVICE, O_RDWR | O_CLOEXEC);
    return fd;
}

static int emu_ioctl(unsigned long cmd, void *arg)
{
    if (emu_fd() < 0)
        return errno;
    return ioctl(emu_fd(), cmd, arg) ? errno : 0;
}

int emu_alloc(uint64_t size, unsigned int page_kind, unsigned int flags, uint64_t *va)
{
    struct nvp2p_emu_alloc a = { .size = size, .page_kind = page_kind, .flags = flags };
    int ret = emu_ioctl(NVP2P_EMU_IOC_ALLOC, &a);

    if (!ret)
        *va = a.va;
    return ret;
}

int emu_free(uint64_t va)
{
    struct nvp2p_emu_free f = { .va = va };

    return emu_ioctl(NVP2P_EMU_IOC_FREE, &f);
}

int emu_write(uint64_t va, const void *buf, size_t len)
{
    struct nvp2p_emu_rw rw = { .va = va, .len = len, .user_ptr = (uintptr_t)buf };

    return emu_ioctl(NVP2P_EMU_IOC_WRITE, &rw);
}

int emu_read(uint64_t va, void *buf, size_t len)
{
    struct nvp2p_emu_rw rw = { .va = va, .len = len, .user_ptr = (uintptr_t)buf };

    return emu_ioctl(NVP2P_EMU_IOC_READ, &rw);
}

int emu_stats(struct nvp2p_emu_stats *st)
{
    return emu_ioctl(NVP2P_EMU_IOC_STATS, st);
}

int emu_inject(unsigned int what, unsigned int count, int errno_value)
{
    struct nvp2p_emu_inject in = { .what = what, .count = count, .errno_value = errno_value };

    return emu_ioctl(NVP2P_EMU_IOC_INJECT, &in);
}

int emu_cb_delay(unsigned int ms)
{
    struct nvp2p_emu_cb_delay d = { .ms = ms };

    return emu_ioctl(NVP2P_EMU_IOC_CB_DELAY, &d);
}

int emu_phys(uint64_t va, uint64_t *phys)
{
    struct nvp2p_emu_phys q = { .va = va };
    int ret = emu_ioctl(NVP2P_EMU_IOC_PHYS, &q);

    if (!ret)
        *phys = q.phys;
    return ret;
}

int emu_pte(const void *addr, uint64_t *pfn, uint32_t *cache_mode)
{
    struct nvp2p_emu_pte q = { .uaddr = (uintptr_t)addr };
    int ret = emu_ioctl(NVP2P_EMU_IOC_PTE, &q);

    if (!ret) {
        *pfn = q.pfn;
        *cache_mode = q.cache_mode;
    }
    return ret;
}

int emu_hold(uint64_t va, uint64_t len, unsigned mode)
{
    struct nvp2p_emu_hold h = { .va = va, .len = len, .mode = mode };

    return emu_ioctl(NVP2P_EMU_IOC_HOLD, &h);
}

int emu_release(uint64_t va)
{
    struct nvp2p_emu_hold h = { .va = va };

    return emu_ioctl(NVP2P_EMU_IOC_RELEASE, &h);
}

int emu_coherent(void)
{
    FILE *f = fopen(NVP2P_EMU_COHERENT_PARAM, "r");
    int c = 0;

    if (f) {
        c = fgetc(f);
        fclose(f);
    }
    return c == 'Y';
}

int emu_gate(unsigned int mask)
{
    FILE *f = fopen(NVP2P_EMU_GATE_PARAM, "w");
    int e = 0;

    if (!f)
        return errno;
    if (fprintf(f, "%u\n", mask) < 0)
        e = errno;
    if (fclose(f) && !e)
        e = errno;              /* the write happens at the flush: EINVAL shows here */
    return e;
}

int emu_stopped(unsigned int place)
{
    FILE *f = fopen(NVP2P_EMU_STOPPED_PARAM, "r");
    int n[3] = { -1, -1, -1 }, i;

    if (!f)
        return -1;
    if (fscanf(f, "%d %d %d", &n[0], &n[1], &n[2]) != 3)
        n[0] = n[1] = n[2] = -1;
    fclose(f);
    for (i = 0; i < 3 && place != 1U << i; i++)
        ;
    return i < 3 ? n[i] : -1;
}

uint64_t emu_live_pins(void)
{
    struct nvp2p_emu_stats st;

    return emu_stats(&st) ? UINT64_MAX : st.live_pins;
}

uint64_t emu_callbacks_fired(void)
{
    struct nvp2p_emu_stats st;

    return emu_stats(&st) ? UINT64_MAX : st.callbacks_fired;
}

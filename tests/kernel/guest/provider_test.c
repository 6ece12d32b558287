// SPDX-License-Identifier: MIT
/*
 * provider_test.c - the emulated provider's own behaviour through /dev/nvp2p_emu, so the
 * harness proves its test double before trusting it: allocation per page size, zero fill,
 * READ/WRITE across GPU page boundaries, range checks, FREE, failure injection, the limits,
 * the counters and the gates' parameters. The nvidia_p2p_* exports are exercised through
 * gdrdrv by the other tests.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "t.h"
#include "emu.h"

static const unsigned long kind_bytes[3] = { 4096, 65536, 131072 };

static void test_alloc_rw(unsigned int kind)
{
    char name[64];
    size_t size = 5 * kind_bytes[kind] + 12345; /* rounded up by the provider */
    unsigned char *in = malloc(size), *out = malloc(size), *zero = calloc(1, size);
    uint64_t va = 0;
    int ret;

    snprintf(name, sizeof(name), "alloc_kind%u", kind);
    ret = emu_alloc(size, kind, 0, &va);
    if (!t_check(!ret && va && !(va & 0xffff), name, "ret %d va 0x%llx", ret,
                 (unsigned long long)va))
        goto out;

    snprintf(name, sizeof(name), "zero_filled_kind%u", kind);
    ret = emu_read(va, out, size);
    t_check(!ret && !memcmp(out, zero, size), name, "ret %d or nonzero data", ret);

    /* Whole range, then a short unaligned piece straddling a GPU page boundary. */
    snprintf(name, sizeof(name), "write_read_kind%u", kind);
    t_pattern(in, size, kind + 1);
    ret = emu_write(va, in, size);
    if (!ret)
        ret = emu_read(va, out, size);
    t_check(!ret && !memcmp(in, out, size), name, "ret %d or data mismatch", ret);

    snprintf(name, sizeof(name), "straddle_kind%u", kind);
    {
        uint64_t off = kind_bytes[kind] - 7;
        unsigned char piece[64], back[64];

        t_pattern(piece, sizeof(piece), 99 + kind);
        ret = emu_write(va + off, piece, sizeof(piece));
        if (!ret)
            ret = emu_read(va + off, back, sizeof(back));
        t_check(!ret && !memcmp(piece, back, sizeof(piece)), name, "ret %d or mismatch", ret);
    }

    snprintf(name, sizeof(name), "rw_out_of_range_kind%u", kind);
    {
        /* The provider rounds up to the GPU page size, then to 64 KiB. */
        uint64_t chunk = kind_bytes[kind];
        uint64_t rounded = ((size + chunk - 1) / chunk * chunk + 65535) & ~65535ULL;
        int a = emu_read(va + rounded - 8, out, 16);     /* runs past the end */
        int b = emu_read(va - 4096, out, 16);            /* before the start */
        int c = emu_read(va, out, 0);                    /* empty */
        int d = emu_read(va, (void *)8, 16);             /* bad user pointer */
        t_check(a == EINVAL && b == EINVAL && c == EINVAL && d == EFAULT, name,
                "got %d %d %d %d, want EINVAL EINVAL EINVAL EFAULT", a, b, c, d);
    }

    snprintf(name, sizeof(name), "free_kind%u", kind);
    {
        int bad = emu_free(va + 65536);                  /* not the start */
        int f = emu_free(va);
        int again = emu_free(va);
        int rd = emu_read(va, out, 16);
        t_check(bad == EINVAL && !f && again == EINVAL && rd == EINVAL, name,
                "free(mid) %d free %d double %d read-after %d", bad, f, again, rd);
    }
out:
    free(in);
    free(out);
    free(zero);
}

static void test_bad_alloc(void)
{
    uint64_t va;
    int a = emu_alloc(0, 1, 0, &va);
    int b = emu_alloc(65536, 3, 0, &va);
    int c = emu_alloc(65536, 1, 0x2, &va);
    int d = emu_alloc(1ULL << 40, 1, 0, &va);

    t_check(a == EINVAL && b == EINVAL && c == EINVAL && d == EINVAL, "alloc_bad_args",
            "size0 %d kind3 %d flags %d huge %d", a, b, c, d);
}

static void test_distinct_and_cacheable(void)
{
    uint64_t v1 = 0, v2 = 0;
    int a = emu_alloc(65536, 1, 0, &v1);
    int b = emu_alloc(65536, 1, NVP2P_EMU_ALLOC_CPU_CACHEABLE, &v2);

    /* Ranges must not touch, so a pin can never span two allocations. */
    t_check(!a && !b && v1 != v2 && (v2 > v1 + 65536 || v1 > v2 + 65536), "alloc_distinct",
            "ret %d %d va 0x%llx 0x%llx", a, b, (unsigned long long)v1, (unsigned long long)v2);
    if (!a)
        emu_free(v1);
    if (!b)
        emu_free(v2);
}

static void test_inject(void)
{
    uint64_t va = 0;
    int a = emu_inject(NVP2P_EMU_FAIL_ALLOC, 2, ENOMEM);
    int f1 = emu_alloc(65536, 1, 0, &va);
    int f2 = emu_alloc(65536, 1, 0, &va);
    int ok = emu_alloc(65536, 1, 0, &va);

    t_check(!a && f1 == ENOMEM && f2 == ENOMEM && !ok, "inject_alloc",
            "inject %d then %d %d %d", a, f1, f2, ok);
    if (!ok)
        emu_free(va);
    a = emu_inject(0, 1, ENOMEM);
    f1 = emu_inject(99, 1, ENOMEM);
    f2 = emu_inject(NVP2P_EMU_FAIL_GET_PAGES, 1, 0);
    ok = emu_inject(NVP2P_EMU_FAIL_GET_PAGES, 0, EIO); /* clears */
    t_check(a == EINVAL && f1 == EINVAL && f2 == EINVAL && !ok, "inject_bad_args",
            "%d %d %d %d", a, f1, f2, ok);
}

static void test_limits(void)
{
    uint64_t va[4] = { 0 };
    int ret[4];

    /* 192 MiB in all: three 64 MiB allocations fit, a fourth does not. */
    for (int i = 0; i < 4; i++)
        ret[i] = emu_alloc(64ULL << 20, 2, 0, &va[i]);
    t_check(!ret[0] && !ret[1] && !ret[2] && ret[3] == ENOMEM, "alloc_total_limit",
            "%d %d %d %d", ret[0], ret[1], ret[2], ret[3]);
    for (int i = 0; i < 4; i++)
        if (!ret[i])
            emu_free(va[i]);
}

static void test_misc_ioctls(void)
{
    int unknown = ioctl(emu_fd(), _IO(NVP2P_EMU_MAGIC, 77)) ? errno : 0;
    int big = emu_cb_delay(20000);
    int zero = emu_cb_delay(0);

    t_check(unknown == ENOTTY && big == EINVAL && !zero, "misc_ioctls",
            "unknown %d delay-too-long %d delay-0 %d", unknown, big, zero);
}

/*
 * The gates' parameters (the race tests use them: tests/kernel/guest/race.h): a mask of the
 * three places is taken, anything else refused; nobody is stopped anywhere now.
 */
static void test_gates(void)
{
    int all = emu_gate(NVP2P_EMU_GATE_CB | NVP2P_EMU_GATE_PUT | NVP2P_EMU_GATE_UNLINK);
    int open = emu_gate(0), unknown = emu_gate(1U << 3);
    int cb = emu_stopped(NVP2P_EMU_GATE_CB), put = emu_stopped(NVP2P_EMU_GATE_PUT);
    int unlink = emu_stopped(NVP2P_EMU_GATE_UNLINK), two = emu_stopped(3);

    t_check(!all && !open && unknown == EINVAL && !cb && !put && !unlink && two == -1, "gates",
            "all %d open %d unknown-bit %d, stopped %d %d %d, two places %d", all, open,
            unknown, cb, put, unlink, two);
    emu_gate(0);
}

int main(void)
{
    struct nvp2p_emu_stats before, after;

    if (emu_fd() < 0) {
        t_fail("open", "%s: %s", NVP2P_EMU_DEVICE, strerror(errno));
        return 1;
    }
    if (emu_stats(&before)) {
        t_fail("stats", "%s", strerror(errno));
        return 1;
    }
    for (unsigned int kind = 0; kind < 3; kind++)
        test_alloc_rw(kind);
    test_bad_alloc();
    test_distinct_and_cacheable();
    test_inject();
    test_limits();
    test_misc_ioctls();
    test_gates();
    emu_stats(&after);
    t_check(after.live_allocs == before.live_allocs && after.live_pins == before.live_pins,
            "counters_balanced", "allocs %llu -> %llu, pins %llu -> %llu",
            (unsigned long long)before.live_allocs, (unsigned long long)after.live_allocs,
            (unsigned long long)before.live_pins, (unsigned long long)after.live_pins);
    return t_status();
}

// SPDX-License-Identifier: MIT
/*
 * badinput_test.c - hostile input to /dev/gdrdrv through raw ioctls and mmap (the library
 * would refuse most of it before the kernel sees it): every ioctl with a NULL, unmapped,
 * kernel-space, zeroed, garbage, huge and misaligned argument; the same numbers encoded with
 * other sizes and directions; unknown numbers; then a bounded random ioctl/mmap/munmap fuzzer
 * with a fixed seed. The kernel must answer with errors, never an oops or WARN (the guest
 * runs with panic_on_warn), and release every pin when the fd is closed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"
#include "uapi/gdrdrv.h"

#define GPU_PAGE 65536ULL
#define GUEST_PAGE_SHIFT 12          /* x86_64 guest */
#define FUZZ_STEPS 4000

static const unsigned long codes[] = {
    GDRDRV_IOC_PIN_BUFFER, GDRDRV_IOC_UNPIN_BUFFER, GDRDRV_IOC_GET_CB_FLAG,
    GDRDRV_IOC_GET_INFO, GDRDRV_IOC_GET_INFO_V2, GDRDRV_IOC_GET_ATTR,
    GDRDRV_IOC_PIN_BUFFER_V2, GDRDRV_IOC_REQ_MAPPING_TYPE, GDRDRV_IOC_GET_VERSION,
};
#define NCODES (sizeof(codes) / sizeof(codes[0]))

static int fd;

static int ioc(unsigned long cmd, void *arg)
{
    return ioctl(fd, cmd, arg) ? errno : 0;
}

/* Bad pointers: each must fail with EFAULT (GET_VERSION and GET_ATTR included). */
static void test_bad_pointers(void)
{
    static void *const ptrs[] = { NULL, (void *)1, (void *)0xffff888000000000ULL,
                                  (void *)0x00007ffffffff000ULL };
    char name[64];

    for (size_t c = 0; c < NCODES; c++) {
        int worst = 0;

        for (size_t p = 0; p < sizeof(ptrs) / sizeof(ptrs[0]); p++) {
            int e = ioc(codes[c], ptrs[p]);

            if (e != EFAULT)
                worst = e ? e : -1;
        }
        snprintf(name, sizeof(name), "bad_pointer_0x%08lx", codes[c]);
        t_check(!worst, name, "an unreadable argument gave %d instead of EFAULT", worst);
    }
}

/* A struct at an odd address is as good as an aligned one: the kernel copies it in. */
static void test_misaligned_struct(uint64_t va)
{
    _Alignas(16) unsigned char raw[128];
    struct gdrdrv_get_version v;
    struct gdrdrv_pin_buffer_v2 p = { .addr = va, .size = GPU_PAGE };
    struct gdrdrv_unpin_buffer u;
    int e1, e2, e3;

    e1 = ioc(GDRDRV_IOC_GET_VERSION, raw + 1);
    memcpy(&v, raw + 1, sizeof(v));
    memcpy(raw + 3, &p, sizeof(p));
    e2 = ioc(GDRDRV_IOC_PIN_BUFFER_V2, raw + 3);
    memcpy(&p, raw + 3, sizeof(p));
    u.handle = p.handle;
    memcpy(raw + 5, &u, sizeof(u));
    e3 = e2 ? -1 : ioc(GDRDRV_IOC_UNPIN_BUFFER, raw + 5);
    t_check(!e1 && v.gdrdrv_version == GDRDRV_VERSION && !e2 && !e3, "misaligned_struct_pointers",
            "get_version %d (0x%x) pin %d unpin %d", e1, v.gdrdrv_version, e2, e3);
}

static void unpin(uint64_t handle)
{
    struct gdrdrv_unpin_buffer u = { .handle = handle };

    ioc(GDRDRV_IOC_UNPIN_BUFFER, &u);
}

/* Each code with a zeroed and a 0xff-filled argument. */
static void test_zeroed_and_filled(void)
{
    unsigned char buf[64];
    char name[64];
    int e;

    for (size_t c = 0; c < NCODES; c++) {
        int fails = 0;
        char why[96] = "";

        memset(buf, 0, sizeof(buf));
        e = ioc(codes[c], buf);
        /* Zeroed: GET_VERSION succeeds; nothing else names a valid pin, attr or address. */
        if (codes[c] == GDRDRV_IOC_GET_VERSION ? e != 0 : e == 0) {
            fails++;
            snprintf(why, sizeof(why), "zeroed -> %d", e);
        }
        memset(buf, 0xff, sizeof(buf));
        e = ioc(codes[c], buf);
        if (codes[c] != GDRDRV_IOC_GET_VERSION && e == 0) {
            fails++;
            snprintf(why, sizeof(why), "0xff-filled -> success");
        }
        snprintf(name, sizeof(name), "bad_values_0x%08lx", codes[c]);
        t_check(!fails, name, "%s", why);
    }
}

/* Pins of ranges that name no valid GPU memory, or with an unknown flag or a nonzero pad. */
static void test_pin_rejects(uint64_t va)
{
    struct gdrdrv_pin_buffer_v2 p;
    struct { uint64_t addr, size; const char *what; } cases[] = {
        { va, ~0ULL, "huge size" },
        { va, 0, "size 0" },
        { ~0ULL - GPU_PAGE, 2 * GPU_PAGE, "wrapping range" },
        { va + 7 * GPU_PAGE, 2 * GPU_PAGE, "past the allocation" },
        { 0, GPU_PAGE, "address 0" },
        { 0xffff888000000000ULL, GPU_PAGE, "kernel address" },
        { va, 1ULL << 40, "1 TiB" },
    };
    char name[64];
    int e;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        p = (struct gdrdrv_pin_buffer_v2){ .addr = cases[i].addr, .size = cases[i].size };
        e = ioc(GDRDRV_IOC_PIN_BUFFER_V2, &p);
        snprintf(name, sizeof(name), "pin_rejects_%zu", i);
        t_check(e != 0, name, "%s was pinned", cases[i].what);
        if (!e)
            unpin(p.handle);
    }
    p = (struct gdrdrv_pin_buffer_v2){ .addr = va, .size = GPU_PAGE, .flags = 0x80000000u };
    e = ioc(GDRDRV_IOC_PIN_BUFFER_V2, &p);
    t_check(e == EINVAL, "pin_v2_unknown_flag", "got %d", e);
    p = (struct gdrdrv_pin_buffer_v2){ .addr = va, .size = GPU_PAGE, .pad = 1 };
    e = ioc(GDRDRV_IOC_PIN_BUFFER_V2, &p);
    printf("# PIN_BUFFER_V2 with nonzero pad -> %d\n", e);
    if (!e)
        unpin(p.handle);
}

/* Out-of-range attributes, and out-of-range mapping types on a valid pin. */
static void test_bad_selectors(uint64_t va)
{
    struct gdrdrv_get_attr a = { .attr = 0 };
    int a0 = ioc(GDRDRV_IOC_GET_ATTR, &a);
    a.attr = 3;
    int a3 = ioc(GDRDRV_IOC_GET_ATTR, &a);
    a.attr = 0xffffffffu;
    int am = ioc(GDRDRV_IOC_GET_ATTR, &a);
    t_check(a0 == EINVAL && a3 == EINVAL && am == EINVAL, "get_attr_unknown", "%d %d %d", a0, a3,
            am);

    /* REQ_MAPPING_TYPE with an out-of-range type on a valid pin. */
    struct gdrdrv_pin_buffer_v2 p = { .addr = va, .size = GPU_PAGE };
    if (!ioc(GDRDRV_IOC_PIN_BUFFER_V2, &p)) {
        struct gdrdrv_req_mapping_type r = { .handle = p.handle, .mapping_type = 4 };
        int r4 = ioc(GDRDRV_IOC_REQ_MAPPING_TYPE, &r);
        r.mapping_type = 0xffffffffu;
        int rm = ioc(GDRDRV_IOC_REQ_MAPPING_TYPE, &r);
        struct gdrdrv_unpin_buffer u = { .handle = p.handle };
        int u1 = ioc(GDRDRV_IOC_UNPIN_BUFFER, &u), u2 = ioc(GDRDRV_IOC_UNPIN_BUFFER, &u);
        t_check(r4 == EINVAL && rm == EINVAL, "req_mapping_type_range", "type 4 -> %d, ~0 -> %d",
                r4, rm);
        t_check(!u1 && u2 != 0, "double_unpin", "first %d second %d", u1, u2);
    } else {
        t_fail("req_mapping_type_range", "valid pin failed");
    }
}

/* Zeroed, garbage and huge arguments: errors for everything that names no valid object. */
static void test_bad_values(uint64_t va)
{
    test_zeroed_and_filled();
    test_pin_rejects(va);
    test_bad_selectors(va);
}

/* Same numbers with other size/direction encodings, and unknown numbers: ENOTTY or EINVAL. */
static void test_encodings(void)
{
    static const unsigned sizes[] = { 0, 4, 8, 16, 24, 32, 40, 48, 56, 64, 256 };
    static const unsigned dirs[] = { _IOC_NONE, _IOC_READ, _IOC_WRITE, _IOC_READ | _IOC_WRITE };
    static const unsigned nrs[] = { 1, 2, 3, 4, 5, 6, 7, 8, 255 };
    unsigned char buf[4096];
    int accepted = 0, checked = 0;
    char why[128] = "";

    for (size_t n = 0; n < sizeof(nrs) / sizeof(nrs[0]); n++)
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
            for (size_t d = 0; d < 4; d++) {
                unsigned long cmd = _IOC(dirs[d], GDRDRV_IOCTL_MAGIC, nrs[n], sizes[s]);
                int known = 0, e;

                for (size_t c = 0; c < NCODES; c++)
                    known |= cmd == codes[c];
                if (known)
                    continue;
                memset(buf, 0, sizeof(buf));
                e = ioc(cmd, buf);
                checked++;
                if (e != ENOTTY && e != EINVAL) {
                    accepted++;
                    snprintf(why, sizeof(why), "0x%08lx -> %d", cmd, e);
                }
            }
    t_check(!accepted, "wrong_size_encodings", "%d of %d accepted, e.g. %s", accepted, checked, why);

    accepted = 0;
    for (unsigned nr = 0; nr < 256; nr++) {
        int e;

        if (nr >= 1 && nr <= 8)
            continue;
        if (nr == 255)
            continue;
        memset(buf, 0, sizeof(buf));
        e = ioc(_IOC(_IOC_READ | _IOC_WRITE, GDRDRV_IOCTL_MAGIC, nr, 8), buf);
        if (e != ENOTTY) {
            accepted++;
            snprintf(why, sizeof(why), "nr %u -> %d", nr, e);
        }
    }
    int other = ioc(_IOC(_IOC_READ | _IOC_WRITE, 0xDB, 1, 40), buf);
    int tcgets = ioc(0x5401, buf);
    t_check(!accepted && other == ENOTTY && tcgets == ENOTTY, "unknown_numbers",
            "%d unknown nrs answered otherwise (%s); other magic %d; TCGETS %d", accepted, why,
            other, tcgets);
}

/* mmap misuse on one valid pin. */
static void test_mmap_misuse(uint64_t va)
{
    struct gdrdrv_pin_buffer_v2 p = { .addr = va, .size = 2 * GPU_PAGE };
    void *m;
    int e[6];

    if (ioc(GDRDRV_IOC_PIN_BUFFER_V2, &p)) {
        t_fail("mmap_misuse", "pin failed");
        return;
    }
    off_t off = (off_t)(p.handle << GUEST_PAGE_SHIFT);
#define TRY(i, len, prot, flags, o) do { \
        m = mmap(NULL, (len), (prot), (flags), fd, (o)); \
        e[i] = m == MAP_FAILED ? errno : 0; \
        if (m != MAP_FAILED) munmap(m, (len)); } while (0)
    TRY(0, 3 * GPU_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, off);          /* longer than the pin */
    TRY(1, GPU_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, 0);                /* offset 0 */
    TRY(2, GPU_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, off + (256L << GUEST_PAGE_SHIFT));
    TRY(3, GPU_PAGE, PROT_READ, MAP_SHARED, (off_t)0x7fffffff000LL);       /* no such handle */
    TRY(4, GPU_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, off);              /* valid */
    TRY(5, GPU_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, off);             /* private */
#undef TRY
    t_check(e[0] && e[1] && e[2] && e[3] && !e[4], "mmap_misuse",
            "too long %d, offset 0 %d, beyond %d, no handle %d, valid %d", e[0], e[1], e[2], e[3], e[4]);
    printf("# MAP_PRIVATE of a pin -> %d\n", e[5]);

    /* A mapping may not grow (VM_DONTEXPAND), even into pinned pages. */
    m = mmap(NULL, GPU_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
    if (m != MAP_FAILED) {
        void *grown = mremap(m, GPU_PAGE, 2 * GPU_PAGE, MREMAP_MAYMOVE);
        t_check(grown == MAP_FAILED, "mremap_grow_refused", "a gdrdrv mapping grew");
        munmap(grown == MAP_FAILED ? m : grown, grown == MAP_FAILED ? GPU_PAGE : 2 * GPU_PAGE);
    } else {
        t_fail("mremap_grow_refused", "mmap: %s", strerror(errno));
    }
    unpin(p.handle);
}

/* ---- the fuzzer --------------------------------------------------------------------------- */
static uint64_t rng = 0x5eed5eed12345678ULL;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

#define MAX_LIVE 64

/* A mapping is touched only while its pin is known alive: unpin tears mappings down. */
struct mapping { void *p; size_t len; uint64_t handle; int touchable; };
static struct mapping maps[MAX_LIVE];

static void fuzz_unpin(uint64_t h)
{
    struct gdrdrv_unpin_buffer u = { .handle = h };

    if (ioc(GDRDRV_IOC_UNPIN_BUFFER, &u))
        return;
    for (int i = 0; i < MAX_LIVE; i++)
        if (maps[i].handle == h)
            maps[i].touchable = 0;
}

static uint64_t handles[MAX_LIVE];      /* the fuzzer's pins, by slot */
static int pins_ok, maps_ok;            /* calls that reached a real object */

/* Ops 0 and 1 pin with PIN_BUFFER_V2 into a slot, op 2 with PIN_BUFFER and unpins at once. */
static void fuzz_pin(unsigned op, int slot, uint64_t addr, uint64_t size)
{
    if (op != 2) {
        struct gdrdrv_pin_buffer_v2 p = { .addr = addr, .size = size,
                                          .flags = (rnd() % 8) ? 0 : rnd() };
        if (!ioc(GDRDRV_IOC_PIN_BUFFER_V2, &p)) {
            if (handles[slot])
                fuzz_unpin(handles[slot]);
            handles[slot] = p.handle;
            pins_ok++;
        }
        return;
    }
    struct gdrdrv_pin_buffer p = { .addr = addr, .size = size, .p2p_token = rnd() % 2 ? 0 : rnd(),
                                   .va_space = rnd() % 2 ? 0 : (uint32_t)rnd() };
    if (!ioc(GDRDRV_IOC_PIN_BUFFER, &p)) {
        fuzz_unpin(p.handle);
        pins_ok++;
    }
}

/* Op 3: unpin, possibly of a mapped or stale handle, and forget it. */
static void fuzz_forget(uint64_t h)
{
    fuzz_unpin(h);
    for (int i = 0; i < MAX_LIVE; i++)
        if (handles[i] == h)
            handles[i] = 0;
}

/* Ops 4, 5, 6: GET_INFO (either version), GET_CB_FLAG, REQ_MAPPING_TYPE of a handle. */
static void fuzz_query(unsigned op, uint64_t h)
{
    if (op == 4) {
        struct gdrdrv_get_info_v2 i = { .handle = h };
        ioc(rnd() % 2 ? GDRDRV_IOC_GET_INFO_V2 : GDRDRV_IOC_GET_INFO, &i);
    } else if (op == 5) {
        struct gdrdrv_get_cb_flag c = { .handle = h };
        ioc(GDRDRV_IOC_GET_CB_FLAG, &c);
    } else {
        struct gdrdrv_req_mapping_type r = { .handle = h, .mapping_type = rnd() % 6 };
        ioc(GDRDRV_IOC_REQ_MAPPING_TYPE, &r);
    }
}

/* Ops 7 and 8: mmap at a handle into a slot, sometimes with a bad length or offset. */
static void fuzz_mmap(int slot, uint64_t h)
{
    size_t len = (rnd() % 4) ? (rnd() % 4 + 1) * GPU_PAGE : (rnd() % 64 + 1) * 4096;
    uint64_t skew = (rnd() % 8) ? 0 : rnd() % 32;
    off_t off = (off_t)((h + skew) << GUEST_PAGE_SHIFT);
    void *m = mmap(NULL, len, PROT_READ | ((rnd() % 4) ? PROT_WRITE : 0),
                   (rnd() % 8) ? MAP_SHARED : MAP_PRIVATE, fd, off);
    if (m != MAP_FAILED) {
        if (maps[slot].p)
            munmap(maps[slot].p, maps[slot].len);
        maps[slot] = (struct mapping){ m, len, h, !skew };
        maps_ok++;
    }
}

/* Op 9: munmap a slot's mapping, whole or its first page (which splits the VMA). */
static void fuzz_munmap(int slot)
{
    if (maps[slot].p) {
        if (rnd() % 4 == 0 && maps[slot].len > 4096) {
            munmap(maps[slot].p, 4096);  /* split the VMA, keep the rest */
            maps[slot].p = (char *)maps[slot].p + 4096;
            maps[slot].len -= 4096;
        } else {
            munmap(maps[slot].p, maps[slot].len);
            maps[slot].p = NULL;
        }
    }
}

/* Op 10: a random command of our magic; op 11: a known command; random bytes for both. */
static void fuzz_garbage(unsigned op)
{
    unsigned char buf[128];

    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)rnd();
    if (op == 10) {
        ioc(_IOC(rnd() % 4, GDRDRV_IOCTL_MAGIC, rnd() % 12 == 0 ? 255 : rnd() % 10,
                 rnd() % 80), buf);
        return;
    }
    int e = ioc(codes[rnd() % NCODES], buf);
    if (e == 0) {
        /* It may have pinned, or unpinned a live handle: handle both. */
        uint64_t any;
        memcpy(&any, buf, 8);
        for (int i = 0; i < MAX_LIVE; i++)
            if (maps[i].handle == any)
                maps[i].touchable = 0;
    }
}

/* One step: the draws every step makes, in their order, then one of 12 operations. */
static void fuzz_step(uint64_t *vas, int nvas)
{
    unsigned op = rnd() % 12;
    int slot = rnd() % MAX_LIVE;
    uint64_t h = (rnd() % 4) ? handles[rnd() % MAX_LIVE] : rnd() % 4096;
    uint64_t va = vas[rnd() % nvas];
    uint64_t addr = va + (rnd() % 4) * GPU_PAGE + ((rnd() % 3) ? 0 : rnd() % GPU_PAGE);
    uint64_t size = (rnd() % 5) ? (rnd() % 4 + 1) * GPU_PAGE - ((rnd() % 3) ? 0 : rnd() % 4096)
                                : rnd();

    if (op <= 2)
        fuzz_pin(op, slot, addr, size);
    else if (op == 3)
        fuzz_forget(h);
    else if (op <= 6)
        fuzz_query(op, h);
    else if (op <= 8)
        fuzz_mmap(slot, h);
    else if (op == 9)
        fuzz_munmap(slot);
    else
        fuzz_garbage(op);
    if (op == 7 || op == 8 || op == 9) {
        /* Touch a live mapping: persistent pins keep the pages, so it must work. */
        if (maps[slot].p && maps[slot].touchable) {
            volatile unsigned char *q = maps[slot].p;
            (void)q[rnd() % maps[slot].len];
        }
    }
}

/* A bounded random walk of ioctl/mmap/munmap with a fixed seed: the same steps every run. */
static void fuzz(uint64_t *vas, int nvas)
{
    for (int step = 0; step < FUZZ_STEPS; step++)
        fuzz_step(vas, nvas);
    for (int i = 0; i < MAX_LIVE; i++)
        if (maps[i].p)
            munmap(maps[i].p, maps[i].len);
    printf("# fuzz: %d steps, %d pins, %d mappings succeeded\n", FUZZ_STEPS, pins_ok, maps_ok);
    t_check(pins_ok > 0 && maps_ok > 0, "fuzz_ran",
            "pins %d maps %d (the fuzzer must reach real objects)", pins_ok, maps_ok);
}

int main(void)
{
    uint64_t vas[3] = { 0 }, base;

    if (emu_fd() < 0) {
        t_fail("setup", "%s: %s", NVP2P_EMU_DEVICE, strerror(errno));
        return 1;
    }
    base = emu_live_pins();
    for (int k = 0; k < 3; k++)
        if (emu_alloc(8 * GPU_PAGE, k, 0, &vas[k])) {
            t_fail("setup", "ALLOC failed");
            return 1;
        }
    fd = open("/dev/gdrdrv", O_RDWR);
    if (fd < 0) {
        t_fail("open", "/dev/gdrdrv: %s", strerror(errno));
        return 1;
    }
    test_bad_pointers();
    test_misaligned_struct(vas[1]);
    test_bad_values(vas[1]);
    test_encodings();
    test_mmap_misuse(vas[1]);
    t_check(emu_live_pins() == base, "no_leak_before_fuzz", "live pins %llu (was %llu)",
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    fuzz(vas, 3);
    close(fd);
    t_check(emu_live_pins() == base, "fuzz_close_releases_all", "live pins %llu (was %llu)",
            (unsigned long long)emu_live_pins(), (unsigned long long)base);
    for (int k = 0; k < 3; k++)
        emu_free(vas[k]);
    return t_status();
}

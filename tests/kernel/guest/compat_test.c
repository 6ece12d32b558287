// SPDX-License-Identifier: MIT
/*
 * compat_test.c - a client written against the published gdrdrv 2.6 ABI alone
 * (docs/gdrdrv-abi.md): its own struct definitions and the numeric ioctl
 * codes, no driver/uapi/gdrdrv.h and no libgdrapi. It drives the module the way upstream's
 * library does (GET_VERSION, PIN_BUFFER v1, GET_INFO, GET_INFO_V2, GET_ATTR, PIN_BUFFER_V2,
 * REQ_MAPPING_TYPE, mmap at handle << PAGE_SHIFT, GET_CB_FLAG, UNPIN) and checks the data
 * through the emulated provider, so either side can be paired with upstream's counterpart.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "t.h"
#include "emu.h"

/* The ABI as published: codes and layouts, spelled out independently of our headers. */
#define ABI_PIN_BUFFER       0xC028DA01u
#define ABI_UNPIN_BUFFER     0xC008DA02u
#define ABI_GET_CB_FLAG      0xC008DA03u
#define ABI_GET_INFO         0xC008DA04u
#define ABI_GET_INFO_V2      0xC008DA05u
#define ABI_GET_ATTR         0xC008DA06u
#define ABI_PIN_BUFFER_V2    0xC020DA07u
#define ABI_REQ_MAPPING_TYPE 0xC008DA08u
#define ABI_GET_VERSION      0xC008DAFFu

struct abi_pin { uint64_t addr, size, p2p_token; uint32_t va_space, pad; uint64_t handle; };
struct abi_unpin { uint64_t handle; };
struct abi_cb_flag { uint64_t handle; uint32_t flag, pad; };
struct abi_info { uint64_t handle, va, mapped_size; uint32_t page_size, tsc_khz; uint64_t tm_cycles;
                  uint32_t mapped, wc_mapping; };
struct abi_info_v2 { uint64_t handle, va, mapped_size; uint32_t page_size, tsc_khz; uint64_t tm_cycles;
                     uint32_t mapping_type, pad; };
struct abi_attr { uint32_t attr, val; };
struct abi_pin_v2 { uint64_t addr, size; uint32_t flags, pad; uint64_t handle; };
struct abi_req_type { uint64_t handle; uint32_t mapping_type, pad; };
struct abi_version { uint32_t gdrdrv_version, minimum_gdr_api_version; };

_Static_assert(sizeof(struct abi_pin) == 40, "PIN_BUFFER is 40 bytes");
_Static_assert(sizeof(struct abi_cb_flag) == 16, "GET_CB_FLAG is 16 bytes");
_Static_assert(sizeof(struct abi_info) == 48 && sizeof(struct abi_info_v2) == 48, "GET_INFO is 48 bytes");
_Static_assert(offsetof(struct abi_info, mapped) == 40, "mapped at 40");
_Static_assert(sizeof(struct abi_pin_v2) == 32, "PIN_BUFFER_V2 is 32 bytes");
_Static_assert(sizeof(struct abi_req_type) == 16, "REQ_MAPPING_TYPE is 16 bytes");

#define GPU_PAGE 65536ULL

static int fd;

static int ioc(unsigned long cmd, void *arg)
{
    return ioctl(fd, cmd, arg) ? errno : 0;
}

/* Pin (v1 or v2), request WC, map at handle << PAGE_SHIFT, check data both ways, unpin. */
static void pin_map_check(const char *tag, uint64_t va, int v2)
{
    char name[96];
    uint64_t handle;
    int e;
    long pshift = __builtin_ctzl((unsigned long)sysconf(_SC_PAGESIZE));

    if (v2) {
        struct abi_pin_v2 p = { .addr = va, .size = 3 * GPU_PAGE };
        e = ioc(ABI_PIN_BUFFER_V2, &p);
        handle = p.handle;
    } else {
        struct abi_pin p = { .addr = va, .size = 3 * GPU_PAGE };
        e = ioc(ABI_PIN_BUFFER, &p);
        handle = p.handle;
    }
    snprintf(name, sizeof(name), "%s/pin", tag);
    if (!t_check(!e, name, "%s", strerror(e)))
        return;

    struct abi_info i1 = { .handle = handle };
    e = ioc(ABI_GET_INFO, &i1);
    snprintf(name, sizeof(name), "%s/get_info", tag);
    t_check(!e && i1.va == va && i1.mapped_size == 3 * GPU_PAGE && i1.page_size == 65536 && !i1.mapped,
            name, "ret %d va 0x%llx size %llu page %u mapped %u", e, (unsigned long long)i1.va,
            (unsigned long long)i1.mapped_size, i1.page_size, i1.mapped);

    struct abi_req_type r = { .handle = handle, .mapping_type = 1 /* WC */ };
    e = ioc(ABI_REQ_MAPPING_TYPE, &r);
    snprintf(name, sizeof(name), "%s/req_mapping_type_wc", tag);
    t_check(!e, name, "%s", strerror(e));

    unsigned char *m = mmap(NULL, 3 * GPU_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                            (off_t)(handle << pshift));
    snprintf(name, sizeof(name), "%s/mmap", tag);
    if (t_check(m != MAP_FAILED, name, "%s", strerror(errno))) {
        unsigned char want[512], got[512];

        emu_read(va + GPU_PAGE + 100, want, sizeof(want));
        memcpy(got, m + GPU_PAGE + 100, sizeof(got));
        snprintf(name, sizeof(name), "%s/read_through_mapping", tag);
        t_check(!memcmp(want, got, sizeof(got)), name, "mapping shows other bytes than the provider");
        t_pattern(got, sizeof(got), 31337);
        memcpy(m + 2 * GPU_PAGE + 5, got, sizeof(got));
        __sync_synchronize();
        emu_read(va + 2 * GPU_PAGE + 5, want, sizeof(want));
        snprintf(name, sizeof(name), "%s/write_through_mapping", tag);
        t_check(!memcmp(want, got, sizeof(got)), name, "provider does not see the stores");

        struct abi_info_v2 i2 = { .handle = handle };
        e = ioc(ABI_GET_INFO_V2, &i2);
        snprintf(name, sizeof(name), "%s/get_info_v2_mapped", tag);
        t_check(!e && i2.mapping_type == 1 && i2.va == va, name, "ret %d type %u", e, i2.mapping_type);
        struct abi_info i3 = { .handle = handle };
        e = ioc(ABI_GET_INFO, &i3);
        snprintf(name, sizeof(name), "%s/get_info_v1_mapped", tag);
        t_check(!e && i3.mapped == 1 && i3.wc_mapping == 1, name, "ret %d mapped %u wc %u", e,
                i3.mapped, i3.wc_mapping);

        r.mapping_type = 2;
        e = ioc(ABI_REQ_MAPPING_TYPE, &r);
        snprintf(name, sizeof(name), "%s/req_mapping_type_busy", tag);
        t_check(e == EBUSY, name, "REQ_MAPPING_TYPE once mapped -> %d (want EBUSY)", e);
        munmap(m, 3 * GPU_PAGE);
    }

    struct abi_cb_flag c = { .handle = handle, .flag = 7 };
    e = ioc(ABI_GET_CB_FLAG, &c);
    snprintf(name, sizeof(name), "%s/get_cb_flag", tag);
    t_check(!e && c.flag == 0, name, "ret %d flag %u", e, c.flag);

    struct abi_unpin u = { .handle = handle };
    e = ioc(ABI_UNPIN_BUFFER, &u);
    snprintf(name, sizeof(name), "%s/unpin", tag);
    t_check(!e, name, "%s", strerror(e));
}

int main(void)
{
    uint64_t va = 0;

    fd = open("/dev/gdrdrv", O_RDWR);
    if (fd < 0) {
        t_fail("open", "/dev/gdrdrv: %s", strerror(errno));
        return 1;
    }
    struct abi_version v = { 0 };
    int e = ioc(ABI_GET_VERSION, &v);
    t_check(!e && v.gdrdrv_version == ((2u << 16) | 6) && v.minimum_gdr_api_version >> 16 == 2,
            "get_version", "ret %d version 0x%x min api 0x%x", e, v.gdrdrv_version,
            v.minimum_gdr_api_version);

    struct abi_attr a = { .attr = 1 };
    e = ioc(ABI_GET_ATTR, &a);
    t_check(!e && a.val <= 1, "get_attr_persistent", "ret %d val %u", e, a.val);
    a = (struct abi_attr){ .attr = 2 };
    e = ioc(ABI_GET_ATTR, &a);
    t_check(!e && a.val <= 1, "get_attr_force_pcie", "ret %d val %u", e, a.val);

    if (emu_alloc(4 * GPU_PAGE, 1, 0, &va)) {
        t_fail("setup", "ALLOC failed");
        return 1;
    }
    unsigned char *fill = malloc(4 * GPU_PAGE);
    t_pattern(fill, 4 * GPU_PAGE, 2026);
    emu_write(va, fill, 4 * GPU_PAGE);
    free(fill);
    pin_map_check("v1", va, 0);
    pin_map_check("v2", va, 1);
    close(fd);
    emu_free(va);
    return t_status();
}

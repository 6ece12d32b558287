/* SPDX-License-Identifier: MIT */
/*
 * fake_gdrdrv.h - a stateful stand-in for /dev/gdrdrv (TEST ONLY), for the fuzz targets
 * (tests/fuzz/). The program is linked with libgdrapi.a and -Wl,--wrap=open,close,ioctl,mmap,
 * munmap (tests/fuzz/fuzz.mk): the gdrdrv backend's system calls reach fake_gdrdrv.c, which
 * answers as a module of the configured version would, from real state: per open file a table
 * of pins with handles, mappings of a shared "GPU window" (a memfd, so what a copy writes
 * through a mapping is seen at the pinned GPU address), the module's version gates and its
 * errors. Every other call goes on to libc unchanged.
 *
 * Besides answering, it checks what the library asks of a module, and aborts (a finding of the
 * fuzzer) where the library breaks the ABI's rules: an unpin of a pin that is still mapped
 * through this file, a partial munmap of a mapping, an mmap at an offset that names no pin, an
 * ioctl of a version the module did not announce, a handle that this file never gave out
 * (the module would answer EINVAL: a library that sends one has lost track of its pins).
 */
#ifndef VRAMIO_FAKE_GDRDRV_H
#define VRAMIO_FAKE_GDRDRV_H

#include <stddef.h>
#include <stdint.h>

/* How the next opens of /dev/gdrdrv behave (fgd_config). */
struct fgd_config {
    int open_errno;        /* 0: the open works; else open fails with it (ENOENT: no module) */
    uint32_t version;      /* GET_VERSION's gdrdrv_version (major << 16 | minor) */
    uint32_t min_api;      /* and its minimum_gdr_api_version */
    int version_errno;     /* GET_VERSION fails with it */
    int persistent;        /* GET_ATTR USE_PERSISTENT_MAPPING */
    int force_pcie;        /* GET_ATTR SUPPORT_PIN_FLAG_FORCE_PCIE, and PIN_BUFFER_V2's flag */
    int coherent;          /* default mappings are CACHING, CACHING can be asked for */
    int huge_handles;      /* handles above 2^40: no mmap offset of 4 KiB pages holds them */
};
void fgd_config(const struct fgd_config *c);

/* The next count ioctls of code cmd (0: any code) fail with err; count 0 clears. */
void fgd_fail_ioctl(unsigned long cmd, int err, int count);
/* The next count mmaps of an emulated file fail with err. */
void fgd_fail_mmap(int err, int count);
/* Every live pin reports its memory freed (GET_CB_FLAG 1), as after a free callback. */
void fgd_invalidate_all(void);

/* The GPU window: [*base, *base + *len) is memory the emulated module pins (a host mapping of
 * the memfd that its mappings map). */
void fgd_window(uintptr_t *base, size_t *len);

/* Live state, for the fuzz targets' leak checks: open files (including those kept by a
 * mapping after their close), pins and mappings. */
int fgd_live_files(void);
int fgd_live_pins(void);
int fgd_live_maps(void);

#endif /* VRAMIO_FAKE_GDRDRV_H */

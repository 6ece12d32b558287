/* SPDX-License-Identifier: MIT */
/*
 * fuzz_common.h - what the libFuzzer targets of tests/fuzz/ share: reading an input as a
 * stream of numbers and strings, starting the target with its stand-in drivers (re-executing
 * itself with the environment they need, so that "TARGET CRASH-FILE" reproduces a finding
 * with no setup), the process-wide counters that every input must leave as it found them
 * (descriptors, mappings of the stand-ins' memory), and reporting a finding.
 */
#ifndef VRAMIO_FUZZ_COMMON_H
#define VRAMIO_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* ---- the input --------------------------------------------------------------------------- */
struct fz_in {
    const uint8_t *p;
    size_t n;
};

/* The next bytes bytes (1..8) as a little-endian number; 0 once the input is used up. */
uint64_t fz_take(struct fz_in *in, int bytes);
static inline unsigned fz_u8(struct fz_in *in) { return (unsigned)fz_take(in, 1); }
static inline unsigned fz_u16(struct fz_in *in) { return (unsigned)fz_take(in, 2); }
static inline uint32_t fz_u32(struct fz_in *in) { return (uint32_t)fz_take(in, 4); }
static inline uint64_t fz_u64(struct fz_in *in) { return fz_take(in, 8); }
/* A string of the input: a length byte, then up to that many bytes (NUL bytes end it early);
 * written NUL-terminated into out (at most len - 1 bytes). */
void fz_str(struct fz_in *in, char *out, size_t len);
/* A size that is sometimes small, sometimes a whole number of unit, sometimes huge. */
uint64_t fz_size(struct fz_in *in, uint64_t unit);

/* ---- starting ---------------------------------------------------------------------------- */
/*
 * The stand-ins a target runs with, by directory under FUZZ_FAKE_DIR (the build's
 * tests/fake, compiled in): "cuda-dmabuf" (with its mmap preloaded) or "cuda-vmm" with
 * "vulkan". Unless the environment already says so, sets it up (LD_LIBRARY_PATH, LD_PRELOAD,
 * ASAN_OPTIONS, the variables of vars, NAME=VALUE strings, NULL-terminated; clears every
 * GDRCOPY_* and VRAMIO_* the user had set) and re-executes the program; returns once it runs
 * with them.
 */
void fz_start(int *argc, char ***argv, const char *standin, const char *const *vars);
/* Set (value non-NULL) or unset name, through buffer slot (0..FZ_ENV_SLOTS-1) of this file:
 * setenv keeps every value it was ever given, which a fuzzer's millions of values would
 * turn into gigabytes. */
#define FZ_ENV_SLOTS 24
void fz_setenv(int slot, const char *name, const char *value);
/* A function of the stand-in libcuda.so.1 by name (the one the library loads), or NULL. */
void *fz_cuda_sym(const char *name);

/* ---- what every input must give back ------------------------------------------------------ */
struct fz_counts {
    int fds;        /* open descriptors (/proc/self/fd) */
    int maps;       /* mappings of the stand-ins' memfds (/proc/self/maps) */
};
void fz_counts(struct fz_counts *c);
/* A finding when now differs from base (what in words). */
void fz_counts_same(const struct fz_counts *base, const struct fz_counts *now, const char *what);

/* A finding: the message on stderr, then abort() (libFuzzer saves the input). */
__attribute__((noreturn, format(printf, 1, 2))) void fz_finding(const char *fmt, ...);
/* A return code of the API must be 0 or a positive errno. */
void fz_errno_ok(int rc, const char *call);

#endif /* VRAMIO_FUZZ_COMMON_H */

/* SPDX-License-Identifier: MIT */
/*
 * util.h - small helpers shared by the tools: argument parsing, CPU binding and
 * the open-pin-map sequence that every benchmark starts with.
 */
#ifndef TOOLS_UTIL_H
#define TOOLS_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h"     /* util/: vr_now_ns, the one monotonic clock */
#include "gdrapi.h"

/* Parse "4096", "0x1000", "64K", "1M", "2G" into bytes; 0 or EINVAL. */
int parse_size(const char *s, size_t *out);
/* Parse a non-negative integer (decimal or 0x hex) up to max; 0 or EINVAL. */
int parse_uint(const char *s, unsigned long max, unsigned long *out);
/* Parse a mapping-type request: default, wc, cache (caching), device; 0 or EINVAL. */
int parse_map_flag(const char *s, int *flags);

/* Print "PROG: message" to stderr with a hint to --help, and exit 2 (usage error). */
__attribute__((noreturn, format(printf, 2, 3)))
void usage_error(const char *prog, const char *fmt, ...);
/* Print "PROG: ERROR: message" to stderr and exit 1. */
__attribute__((noreturn, format(printf, 2, 3)))
void die(const char *prog, const char *fmt, ...);

/* Bind the calling thread to one CPU (ignored when cpu < 0); 0 or an errno. */
int bind_cpu(int cpu);

/* Print the CUDA devices as upstream's tools do ("GPU id:0; name: ...; Bus id: ...") and
 * "selecting device N". Returns the number of devices (0 when CUDA is missing). */
int print_gpus(int selected);

/* An open, pinned and mapped buffer: what copylat, copybw, apiperf and pplat measure. */
struct tool_map {
    gdr_t g;
    gdr_mh_t mh;
    void *map;         /* what gdr_map returned (corresponds to info.va) */
    char *ptr;         /* the buffer's own start inside the mapping */
    size_t size;       /* mapped size */
    gdr_info_t info;
};
/* gdr_open + pin + map_v2 of [dptr, dptr+size), printing upstream's lines (map_d_ptr,
 * info.*, page offset, user-space pointer) unless quiet. Dies with the reason on failure. */
/* The tools exercise every backend, so they opt into the vulkan one (which gdr_open leaves
 * out for other programs: it pins only VMM memory with a POSIX-fd handle) unless the user
 * set VRAMIO_ENABLE_VULKAN already. Call first in main. */
void tool_enable_backends(void);

void tool_map_open(struct tool_map *m, const char *prog, uint64_t dptr, size_t size,
                   int map_flags, int quiet);
void tool_map_close(struct tool_map *m, const char *prog, int quiet);


struct gm_buf;
/* gm_init + device listing; dies with the reason when the kind cannot be used. */
void tool_gpu_setup(const char *prog, int kind, int gpu, int quiet);
/* gm_alloc or die; prints upstream's "device ptr" and "allocated size" lines unless quiet. */
void tool_alloc(const char *prog, int kind, size_t size, struct gm_buf *buf, int quiet);
/* Host memory for copies: pinned (cuMemAllocHost) where CUDA is up, else aligned malloc. */
void *tool_host_alloc(const char *prog, size_t size);
void tool_host_free(void *p);

/* The options the benchmarks share. */
struct common_opts {
    int gpu;        /* -d */
    int kind;       /* -a (pplat: -G), an enum gm_kind */
    int map_flags;  /* -M */
    int cpu;        /* -C, -1 = not bound */
    unsigned long count; /* scratch for count options */
};
/* Parse option letter c ('d', 'a', 'M' or 'C') into co; usage error on a bad value. */
void common_opt(const char *prog, int c, const char *arg, struct common_opts *co);
/* A positive count option (-w, -r, -n, ...) up to max; usage error otherwise. */
unsigned long count_opt(const char *prog, int c, const char *arg, unsigned long max);

#endif /* TOOLS_UTIL_H */

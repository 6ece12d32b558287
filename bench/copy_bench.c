// SPDX-License-Identifier: MIT
/*
 * copy_bench.c - CPU microbenchmark of the copy kernels (make bench-copy; not a test).
 *
 * Times every kernel this CPU runs, both directions of a WC-type copy, sizes 8 B to 1 MiB,
 * plus libc memcpy, on ORDINARY memory: the "mapping" here is cached RAM, so the numbers
 * show the cost of the engine's heads, tails and loops, not the speed of a write-combined
 * BAR (there, writes are bounded by PCIe and reads by uncached round trips: run the tools
 * on the GPU machine for that). Each sample times a batch of copies long enough to dwarf
 * the clock; min, median and 99th percentile are over the samples, per copy.
 *
 * By default every copy of a batch uses the same addresses, which flatters reads: the
 * data sits in the caches here, and on a WC BAR repeated streaming loads of one line can be
 * answered from the CPU's streaming-load buffer. -w walks the copies of a batch through a
 * window of that many MiB instead (each copy at the next 64-byte boundary, misalignment
 * kept), so each copy touches lines the previous ones did not.
 *
 * Each kernel is timed through the entry points the library calls (copy.h), in a process of
 * its own: the engine chooses its kernel once, before main, so this program runs itself again
 * with GDRCOPY_COPY_KERNEL=<name> per kernel. The kernel table comes from the engine's call
 * to its choice, which the link wraps (tests/unit/copy_table.h, bench/bench.mk).
 *
 *   copy_bench [-k kernel] [-s samples] [-m misalignment 0..63] [-w window MiB]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "copy.h"
#include "copy_kernels.h"
#include "copy_table.h"
#include "process/log.h"

#define MAX_SIZE ((size_t)1 << 20)

/* The kernel table (copy_table.h): no kernels of this program's own. */
static const struct vr_copy_kernel *copy_table_extra(const char *name)
{
    (void)name;
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static void libc_memcpy(gdr_mapping_type_t type, void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

static void to_mapping(gdr_mapping_type_t type, void *dst, const void *src, size_t n)
{
    vr_copy_to_mapping(type, dst, src, n);
}

static void from_mapping(gdr_mapping_type_t type, void *dst, const void *src, size_t n)
{
    vr_copy_from_mapping(type, dst, src, n);
}

typedef void (*bench_fn)(gdr_mapping_type_t type, void *dst, const void *src, size_t n);

static size_t window;    /* bytes the copies of a batch walk through; 0: same addresses */

/* One batch of 'reps' copies; returns nanoseconds. */
static double batch(bench_fn fn, unsigned char *dst,
                    const unsigned char *src, size_t n, unsigned reps)
{
    const size_t step = (n + 63) & ~(size_t)63;
    size_t off = 0;
    double start = (double)vr_now_ns();
    unsigned r;

    for (r = 0; r < reps; r++) {
        fn(GDR_MAPPING_TYPE_WC, dst + off, src + off, n);
        if (window) {
            off += step;
            if (off + n > window)
                off = 0;
        }
    }
    return (double)vr_now_ns() - start;
}

/* Per-copy times of 'samples' batches, sorted. */
static void time_copies(bench_fn fn, unsigned char *dst,
                        const unsigned char *src, size_t n, double *t, int samples)
{
    unsigned reps = 1;
    int i;

    /* Grow the batch until one takes 20 us, so clock reads are under 1% of a sample. */
    while (batch(fn, dst, src, n, reps) < 20000 && reps < (1u << 20))
        reps *= 2;
    for (i = 0; i < samples; i++)
        t[i] = batch(fn, dst, src, n, reps) / reps;
    qsort(t, (size_t)samples, sizeof(*t), by_value);
}

static void bench_row(const char *kernel, const char *dir, bench_fn fn, unsigned char *map,
                      unsigned char *host, int to_map, int samples, double *t)
{
    size_t n;

    for (n = 8; n <= MAX_SIZE; n *= 2) {
        double p50;

        if (to_map)
            time_copies(fn, map, host, n, t, samples);
        else
            time_copies(fn, host, map, n, t, samples);
        p50 = t[samples / 2];
        printf("%-9s %-12s %8zu %10.1f %10.1f %10.1f %8.2f\n", kernel, dir, n, t[0], p50,
               t[samples * 99 / 100], n / p50);
    }
}

/* This program again with GDRCOPY_COPY_KERNEL=name and "-k name -H" after its arguments;
 * its rows go to the same stdout. */
static void run_kernel(char **argv, int argc, const char *name)
{
    char **args = calloc((size_t)argc + 4, sizeof(*args));
    pid_t pid;
    int i;

    fflush(stdout);
    if (!args)
        return;
    for (i = 0; i < argc; i++)
        args[i] = argv[i];
    args[argc] = "-k";
    args[argc + 1] = (char *)name;
    args[argc + 2] = "-H";
    pid = fork();
    if (pid == 0) {
        setenv("GDRCOPY_COPY_KERNEL", name, 1);
        execv("/proc/self/exe", args);
        _exit(127);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
    free(args);
}

int main(int argc, char **argv)
{
    const char *only = NULL;
    int samples = 200, misalign = 0, header = 1, opt;
    size_t span, i;
    unsigned char *map, *host;
    double *t;

    while ((opt = getopt(argc, argv, "k:s:m:w:H")) != -1) {
        if (opt == 'k')
            only = optarg;
        else if (opt == 's')
            samples = atoi(optarg);
        else if (opt == 'm')
            misalign = atoi(optarg) & 63;
        else if (opt == 'w')
            window = (size_t)strtoul(optarg, NULL, 10) << 20;
        else if (opt == 'H')
            header = 0;         /* a run for one kernel, started by the run for all */
        else {
            fprintf(stderr, "usage: %s [-k kernel] [-s samples] [-m misalignment 0..63] "
                    "[-w window MiB]\n", argv[0]);
            return 2;
        }
    }
    if (samples < 1)
        samples = 1;
    if (header) {
        printf("# ordinary cached memory standing in for the mapping: not WC BAR speed\n");
        printf("# chosen kernel here: %s; mapping side misaligned by %d; %d samples; %s\n",
               vr_copy_kernel_name(), misalign, samples,
               window ? "copies walk through a window" : "same addresses every copy");
        printf("%-9s %-12s %8s %10s %10s %10s %8s\n", "kernel", "direction", "bytes", "min_ns",
               "p50_ns", "p99_ns", "GB/s@p50");
    }
    /* A kernel other than the one this process got: a process of its own for each. */
    if (!only || (strcmp(only, "memcpy") != 0 && strcmp(only, vr_copy_kernel_name()) != 0)) {
        for (i = 0; i < copy_table_len; i++) {
            if (!vr_copy_kernel_usable(&copy_table[i], vr_cpu_features()) ||
                (only && strcmp(only, copy_table[i].name) != 0))
                continue;
            if (header)
                run_kernel(argv, argc, copy_table[i].name);
            else            /* asked for a kernel this CPU cannot run: the choice fell back */
                return 1;
        }
        if (only)
            return 0;
    }
    span = (window > MAX_SIZE ? window : MAX_SIZE) + 64;
    t = calloc((size_t)samples, sizeof(*t));
    if (!t || posix_memalign((void **)&map, 4096, span) ||
        posix_memalign((void **)&host, 4096, span)) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    memset(map, 1, span);
    memset(host, 2, span);
    map += misalign;

    if (only && strcmp(only, "memcpy") != 0) {
        bench_row(only, "to_mapping", to_mapping, map, host, 1, samples, t);
        bench_row(only, "from_mapping", from_mapping, map, host, 0, samples, t);
    }
    if (!only || strcmp(only, "memcpy") == 0)
        bench_row("memcpy", "either", libc_memcpy, map, host, 1, samples, t);
    free(map - misalign);
    free(host);
    free(t);
    return 0;
}

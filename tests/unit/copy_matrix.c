// SPDX-License-Identifier: MIT
/*
 * copy_matrix.c - every copy kernel the CPU runs, both directions, every mapping type,
 * through the entry points the library calls (copy.h: the inline paths and the engine's table
 * of copies per mapping type): the bytes arrive, nothing around the destination range is written, the source
 * is left as it was. Sizes 0..4096 each, then sampled sizes up to 4 MiB; all 64x64 source and
 * destination misalignments for sizes up to 256 (every head, bulk and tail combination of a
 * 64-byte kernel), sampled ones above. Ordinary memory stands in for the mapping. One child
 * process per kernel (copy_test.h); one result line per kernel, direction and mapping type.
 *
 * Probe kernels (plain memcpy inside) check the promises of the shape every kernel copies in
 * (copy_kernels.h): to a bulk loop and a 16-byte step, the mapping side aligned and the length
 * a multiple of the block (vr_copy_shaped, blocks 64 and 32); to a small read 1 to 64 bytes,
 * and to the line loop whole aligned lines (vr_copy_read_lines). They run on
 * any CPU, so the shaping that the avx512 and movdir64b kernels receive is proven here even
 * where the CPU cannot run those kernels.
 */
#include <stdint.h>
#include <stdlib.h>

#include "copy_test.h"

/* Under AddressSanitizer the guard bytes are also poisoned during each copy, so an
 * instrumented access outside the ranges (scalar heads and tails, unaligned vector loads
 * of the host side) is reported even where it would not change a byte, e.g. a read before
 * a misaligned start (to the 8-byte granules of ASan's shadow). Streaming loads and NT
 * stores are builtins that ASan does not see; copy_guardpage.c covers those at page
 * boundaries. */
#if defined(__SANITIZE_ADDRESS__)
#define COPY_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COPY_TEST_ASAN 1
#endif
#endif
#ifdef COPY_TEST_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define GUARD     128               /* bytes checked on each side of the destination range */
#define MAX_SIZE  ((size_t)4 << 20)
#define SPAN      (MAX_SIZE + 64 + 2 * GUARD)
#define FILL      0x5a              /* destination filler; never a source byte value */
#define SMALL_ALL 256               /* sizes up to this get all misalignment pairs */

static unsigned char *src_buf, *src_ref, *dst_buf;
static unsigned char fill_ref[GUARD];

static unsigned long broken_promises, probe_calls;

/* n = 0 is a multiple of the block: a kernel's whole-block shortcut hands a copy of 0 bytes at
 * an aligned place to its loop as it is (copy_kernels.h allows it; the loops do nothing). */
static void probe_check(const void *aligned_side, size_t n, size_t block)
{
    probe_calls++;
    if (((uintptr_t)aligned_side & (block - 1)) || (n % block))
        broken_promises++;
}

#define PROBE(name, block, side)                                           \
    static void name(void *dst, const void *src, size_t n)                 \
    {                                                                      \
        probe_check(side, n, block);                                       \
        memcpy(dst, src, n);                                               \
    }
PROBE(probe64_store, 64, dst)
PROBE(probe64_load, 64, src)
PROBE(probe32_store, 32, dst)
PROBE(probe32_load, 32, src)
PROBE(probe16_store, 16, dst)
PROBE(probe16_load, 16, src)

/* A small read's promise: 1 to 64 bytes, at any place. */
static void probe_small_load(void *dst, const void *src, size_t n)
{
    probe_calls++;
    if (n == 0 || n > 64)
        broken_promises++;
    memcpy(dst, src, n);
}

static void probe64_to(void *dst, const void *src, size_t n)
{
    vr_copy_shaped(1, dst, src, n, 64, probe64_store, probe16_store);
}

static void probe64_from(void *dst, const void *src, size_t n)
{
    vr_copy_shaped(0, dst, src, n, 64, probe64_load, probe16_load);
}

static void probe32_to(void *dst, const void *src, size_t n)
{
    vr_copy_shaped(1, dst, src, n, 32, probe32_store, probe16_store);
}

static void probe32_from(void *dst, const void *src, size_t n)
{
    vr_copy_shaped(0, dst, src, n, 32, probe32_load, probe16_load);
}

/* Reads as the streaming-load kernels read (a small read up to 64 bytes, lines above). */
static void probe_lines_from(void *dst, const void *src, size_t n)
{
    if (n <= 64) {
        if (n)
            probe_small_load(dst, src, n);
        return;
    }
    vr_copy_read_lines(dst, src, n, probe_small_load, probe64_load);
}

static const struct vr_copy_kernel probes[] = {
    { "probe64", 0, probe64_to, probe64_from, VR_LINE_NONE },
    { "probe32", 0, probe32_to, probe32_from, VR_LINE_NONE },
    { "probelines", 0, probe64_to, probe_lines_from, VR_LINE_NONE },
};
static const char *const probe_names[] = { "probe64", "probe32", "probelines", NULL };

static const struct vr_copy_kernel *copy_table_extra(const char *name)
{
    size_t i;

    for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
        if (strcmp(probes[i].name, name) == 0)
            return &probes[i];
    return NULL;
}

struct result {
    unsigned long copies, failures;
    char first[200];
};

/* A pattern with period 251 (prime) in the low byte and a drift every 256 bytes, so a copy
 * shifted by any small amount, or taken from the wrong 256-byte block, shows. */
static unsigned char pattern(size_t i)
{
    unsigned v = (unsigned)((i + (i >> 8) * 7) % 251);

    return (unsigned char)(v >= FILL ? v + 1 : v);
}

static void copy_and_check(const struct copy_direction *dir,
                           gdr_mapping_type_t type, size_t n, unsigned so, unsigned dof,
                           struct result *r)
{
    unsigned char *s = src_buf + GUARD + so, *d = dst_buf + GUARD + dof;
    char wrong[64];
    const char *why = NULL;
    size_t i;

    unsigned long promises = broken_promises;

    POISON(s - GUARD, GUARD);
    POISON(s + n, GUARD);
    POISON(d - GUARD, GUARD);
    POISON(d + n, GUARD);
    dir->fn(type, d, s, n);
    UNPOISON(s - GUARD, n + 2 * GUARD);
    UNPOISON(d - GUARD, n + 2 * GUARD);
    r->copies++;
    if (broken_promises != promises) {
        why = "a bulk loop or 16-byte step got a misaligned or partial block";
    } else if (memcmp(d, s, n) != 0) {
        for (i = 0; i < n && d[i] == s[i]; i++)
            ;
        snprintf(wrong, sizeof(wrong), "wrong byte at offset %zu", i);
        why = wrong;
    } else if (memcmp(d - GUARD, fill_ref, GUARD) != 0) {
        why = "wrote before the destination range";
    } else if (memcmp(d + n, fill_ref, GUARD) != 0) {
        why = "wrote after the destination range";
    } else if (memcmp(s - GUARD, src_ref + (s - GUARD - src_buf), n + 2 * GUARD) != 0) {
        why = "changed the source";
    }
    if (why) {
        if (r->failures++ == 0)
            snprintf(r->first, sizeof(r->first), "n=%zu src+%u dst+%u: %s", n, so, dof, why);
        memcpy(src_buf, src_ref, SPAN);
    }
    memset(d - GUARD, FILL, n + 2 * GUARD);
}

/* full: all misalignment pairs up to SMALL_ALL and three sampled pairs per larger size;
 * otherwise every 9th pair up to SMALL_ALL and one sampled pair above (the paths that do not
 * depend on the kernel). */
static void run_matrix(const struct copy_direction *dir, gdr_mapping_type_t type, int full,
                       struct result *r)
{
    const unsigned step = full ? 1 : 9;
    size_t n;
    unsigned so, dof, j, e;

    for (n = 0; n <= SMALL_ALL; n++)
        for (so = 0; so < 64; so += step)
            for (dof = 0; dof < 64; dof += step)
                copy_and_check(dir, type, n, so, dof, r);
    for (; n <= 4096; n++) {
        copy_and_check(dir, type, n, 0, 0, r);
        for (j = 0; j < (full ? 3u : 1u); j++)
            copy_and_check(dir, type, n, copy_test_rand(64), copy_test_rand(64), r);
    }
    for (e = 13; e <= 22; e++)
        for (n = ((size_t)1 << e) - 1; n <= ((size_t)1 << e) + 1 && n <= MAX_SIZE; n++) {
            copy_and_check(dir, type, n, 0, 0, r);
            copy_and_check(dir, type, n, copy_test_rand(64), copy_test_rand(64), r);
            copy_and_check(dir, type, n, 63, 1, r);
        }
    for (j = 0; j < (full ? 6u : 2u); j++)
        copy_and_check(dir, type, 4097 + copy_test_rand((unsigned)MAX_SIZE - 4096),
                       copy_test_rand(64), copy_test_rand(64), r);
}

/* One result line: kernel, direction and mapping type. */
static void print_result(const char *kernel, const char *dir, const char *type,
                         const struct result *r)
{
    char name[128];

    snprintf(name, sizeof(name), "copy_matrix/%s/%s/%s", kernel, dir, type);
    t_check(!r->failures, name, "%lu of %lu copies wrong, first: %s", r->failures, r->copies,
            r->first);
}

/* The kernel this process got (own: a probe, else NULL). The full grid where the kernel's own
 * code runs (WC, NONE); CACHING and DEVICE take paths shared by all kernels, so a coarser
 * grid each. */
static void run_kernel(const struct vr_copy_kernel *own)
{
    size_t t, d;
    unsigned long calls;

    for (d = 0; d < COPY_N_DIRECTIONS; d++)
        for (t = 0; t < COPY_N_TYPES; t++) {
            const gdr_mapping_type_t type = copy_types[t].type;
            const int kernel_runs = type == GDR_MAPPING_TYPE_WC || type == GDR_MAPPING_TYPE_NONE;
            struct result r = { 0, 0, "" };

            calls = probe_calls;
            run_matrix(&copy_directions[d], type, kernel_runs, &r);
            /* A probe also shows which code ran: its own for WC and NONE, never for
             * CACHING (memcpy) or DEVICE (8-byte accesses only). */
            if (own && (probe_calls != calls) != kernel_runs && r.failures++ == 0)
                snprintf(r.first, sizeof(r.first), "the kernel's loops %s",
                         kernel_runs ? "never ran" : "ran for this mapping type");
            print_result(vr_copy_kernel_name(), copy_directions[d].name, copy_types[t].name, &r);
        }
}

int main(int argc, char **argv)
{
    size_t i;
    int rc;

    /* Page-aligned, so that an offset below 64 is the misalignment of the address. */
    if (posix_memalign((void **)&src_buf, 4096, SPAN) ||
        posix_memalign((void **)&src_ref, 4096, SPAN) ||
        posix_memalign((void **)&dst_buf, 4096, SPAN)) {
        t_fail("copy_matrix", "out of memory");
        return t_status();
    }
    for (i = 0; i < SPAN; i++)
        src_buf[i] = pattern(i);
    memcpy(src_ref, src_buf, SPAN);
    memset(dst_buf, FILL, SPAN);
    memset(fill_ref, FILL, GUARD);

    rc = copy_test_each_kernel("copy_matrix", argc, argv, probe_names, run_kernel);
    free(src_buf);
    free(src_ref);
    free(dst_buf);
    return rc >= 0 ? rc : t_status();
}

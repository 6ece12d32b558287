// SPDX-License-Identifier: MIT
/*
 * copy_matrix.c - every copy kernel the CPU runs, both directions, every mapping type:
 * the bytes arrive, nothing around the destination range is written, the source is left
 * as it was. Sizes 0..4096 each, then sampled sizes up to 4 MiB; all 64x64 source and
 * destination misalignments for sizes up to 256 (every head, bulk and tail combination of a
 * 64-byte kernel), sampled ones above. Ordinary memory stands in for the mapping.
 * One result line per kernel, direction and mapping type.
 */
#include <stdint.h>
#include <stdlib.h>

#include "copy_test.h"

#define GUARD     128               /* bytes checked on each side of the destination range */
#define MAX_SIZE  ((size_t)4 << 20)
#define SPAN      (MAX_SIZE + 64 + 2 * GUARD)
#define FILL      0x5a              /* destination filler; never a source byte value */
#define SMALL_ALL 256               /* sizes up to this get all misalignment pairs */

static unsigned char *src_buf, *src_ref, *dst_buf;
static unsigned char fill_ref[GUARD];

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

static void copy_and_check(const struct vr_copy_kernel *k, const struct copy_direction *dir,
                           gdr_mapping_type_t type, size_t n, unsigned so, unsigned dof,
                           struct result *r)
{
    unsigned char *s = src_buf + GUARD + so, *d = dst_buf + GUARD + dof;
    char wrong[64];
    const char *why = NULL;
    size_t i;

    dir->fn(k, type, d, s, n);
    r->copies++;
    if (memcmp(d, s, n) != 0) {
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
 * otherwise a coarser grid (the paths that do not depend on the kernel). */
static void run_matrix(const struct vr_copy_kernel *k, const struct copy_direction *dir,
                       gdr_mapping_type_t type, int full, struct result *r)
{
    const unsigned step = full ? 1 : 9;
    size_t n;
    unsigned so, dof, j, e;

    for (n = 0; n <= SMALL_ALL; n++)
        for (so = 0; so < 64; so += step)
            for (dof = 0; dof < 64; dof += step)
                copy_and_check(k, dir, type, n, so, dof, r);
    for (; n <= 4096; n += full ? 1 : 7) {
        copy_and_check(k, dir, type, n, 0, 0, r);
        for (j = 0; j < (full ? 3u : 1u); j++)
            copy_and_check(k, dir, type, n, copy_test_rand(64), copy_test_rand(64), r);
    }
    for (e = 13; e <= 22; e++)
        for (n = ((size_t)1 << e) - 1; n <= ((size_t)1 << e) + 1 && n <= MAX_SIZE; n++) {
            copy_and_check(k, dir, type, n, 0, 0, r);
            copy_and_check(k, dir, type, n, copy_test_rand(64), copy_test_rand(64), r);
            copy_and_check(k, dir, type, n, 63, 1, r);
        }
    for (j = 0; j < (full ? 6u : 2u); j++)
        copy_and_check(k, dir, type, 4097 + copy_test_rand((unsigned)MAX_SIZE - 4096),
                       copy_test_rand(64), copy_test_rand(64), r);
}

int main(void)
{
    size_t count, i, t, d;
    const struct vr_copy_kernel *ks = vr_copy_kernels(&count);

    /* Page-aligned, so that an offset below 64 is the misalignment of the address. */
    if (posix_memalign((void **)&src_buf, 4096, SPAN) ||
        posix_memalign((void **)&src_ref, 4096, SPAN) ||
        posix_memalign((void **)&dst_buf, 4096, SPAN)) {
        printf("not ok copy_matrix: out of memory\n");
        return 1;
    }
    for (i = 0; i < SPAN; i++)
        src_buf[i] = pattern(i);
    memcpy(src_ref, src_buf, SPAN);
    memset(dst_buf, FILL, SPAN);
    memset(fill_ref, FILL, GUARD);

    for (i = 0; i < count; i++) {
        if (!copy_test_usable(&ks[i], "copy_matrix"))
            continue;
        for (d = 0; d < COPY_N_DIRECTIONS; d++)
            for (t = 0; t < COPY_N_TYPES; t++) {
                struct result r = { 0, 0, "" };

                /* The full grid where the kernel's own code runs (WC); NONE, CACHING and
                 * DEVICE take paths shared by all kernels, so a coarser grid each. */
                run_matrix(&ks[i], &copy_directions[d], copy_types[t].type,
                           copy_types[t].type == GDR_MAPPING_TYPE_WC, &r);
                if (r.failures)
                    printf("not ok copy_matrix/%s/%s/%s: %lu of %lu copies wrong, first: %s\n",
                           ks[i].name, copy_directions[d].name, copy_types[t].name,
                           r.failures, r.copies, r.first);
                else
                    printf("ok copy_matrix/%s/%s/%s (%lu copies)\n", ks[i].name,
                           copy_directions[d].name, copy_types[t].name, r.copies);
                fflush(stdout);
            }
    }
    free(src_buf);
    free(src_ref);
    free(dst_buf);
    return 0;
}

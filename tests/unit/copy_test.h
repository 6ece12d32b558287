/* SPDX-License-Identifier: MIT */
/*
 * copy_test.h - shared by the copy engine's white-box tests (tests/unit/copy_*.c): the count
 * of warnings the copy objects log (these tests link those objects and log.c, not the
 * library), the skip of a kernel this CPU cannot run, and the list of mapping types and
 * directions. Result lines are the test kit's (tests/lib/t.h).
 */
#ifndef VRAMIO_COPY_TEST_H
#define VRAMIO_COPY_TEST_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "copy_kernels.h"
#include "log.h"
#include "t.h"

/* Warnings logged so far: the selection tests check that a fallback says why. */
static int copy_test_warnings __attribute__((unused));

/*
 * The copy objects log through the library's log.c, which these tests link. The link wraps
 * their calls (-Wl,--wrap=vr_log, tests/tests.mk) so that a warning is counted here before
 * log.c prints it as it always does.
 */
void __real_vr_log(enum vr_log_level level, const char *fmt, ...);
void __wrap_vr_log(enum vr_log_level level, const char *fmt, ...);

void __wrap_vr_log(enum vr_log_level level, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    if (level >= VR_LOG_WARN)
        copy_test_warnings++;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    __real_vr_log(level, "%s", line);
}

typedef void (*copy_fn)(const struct vr_copy_kernel *k, gdr_mapping_type_t type,
                        void *dst, const void *src, size_t n);

struct copy_direction {
    const char *name;
    copy_fn fn;
    int to_map;     /* the destination is the mapping (else the source is) */
};

static const struct copy_direction copy_directions[] __attribute__((unused)) = {
    { "to_mapping", vr_copy_to_mapping_with, 1 },
    { "from_mapping", vr_copy_from_mapping_with, 0 },
};

struct copy_type {
    gdr_mapping_type_t type;
    const char *name;
};

static const struct copy_type copy_types[] __attribute__((unused)) = {
    { GDR_MAPPING_TYPE_WC, "WC" },
    { GDR_MAPPING_TYPE_NONE, "NONE" },
    { GDR_MAPPING_TYPE_CACHING, "CACHING" },
    { GDR_MAPPING_TYPE_DEVICE, "DEVICE" },
};

#define COPY_N_DIRECTIONS (sizeof(copy_directions) / sizeof(copy_directions[0]))
#define COPY_N_TYPES (sizeof(copy_types) / sizeof(copy_types[0]))

/* Prints "skip NAME: why" for a kernel this CPU cannot run; returns whether it can. */
static inline int copy_test_usable(const struct vr_copy_kernel *k, const char *test)
{
    if (vr_copy_kernel_usable(k, vr_cpu_features()))
        return 1;
    char name[128];

    snprintf(name, sizeof(name), "%s/%s", test, k->name);
    t_skip(name, "this CPU lacks the instructions of the %s kernel", k->name);
    return 0;
}

/* Small deterministic generator: the sampled sizes and offsets are the same every run. */
static unsigned long long copy_test_rng __attribute__((unused)) = 0x9e3779b97f4a7c15ull;

static inline unsigned copy_test_rand(unsigned bound)
{
    copy_test_rng ^= copy_test_rng << 13;
    copy_test_rng ^= copy_test_rng >> 7;
    copy_test_rng ^= copy_test_rng << 17;
    return (unsigned)(copy_test_rng % bound);
}

#endif /* VRAMIO_COPY_TEST_H */

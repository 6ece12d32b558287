/* SPDX-License-Identifier: MIT */
/*
 * copy_test.h - shared by the copy engine's white-box tests (tests/unit/copy_*.c): the count
 * of warnings the copy objects log (these tests link those objects and log.c, not the
 * library), a run of a test once per
 * kernel (a child process each, the kernel chosen as the library chooses it), and the list
 * of mapping types and directions. Result lines are the test kit's (tests/lib/t.h).
 *
 * The engine chooses its kernel once, before main; so a test of one kernel is a process
 * started with GDRCOPY_COPY_KERNEL=<name>, and it copies through the entry points the library
 * itself calls (copy.h), with no entry point of the tests' own in the library.
 */
#ifndef VRAMIO_COPY_TEST_H
#define VRAMIO_COPY_TEST_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "copy.h"
#include "copy_kernels.h"
#include "copy_table.h"
#include "process/log.h"
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

typedef void (*copy_fn)(gdr_mapping_type_t type, void *dst, const void *src, size_t n);

/* The entry points copy.h gives the library, with the kernel this process got. */
static void copy_test_to(gdr_mapping_type_t type, void *dst, const void *src, size_t n)
{
    vr_copy_to_mapping(type, dst, src, n);
}

static void copy_test_from(gdr_mapping_type_t type, void *dst, const void *src, size_t n)
{
    vr_copy_from_mapping(type, dst, src, n);
}

struct copy_direction {
    const char *name;
    copy_fn fn;
    int to_map;     /* the destination is the mapping (else the source is) */
};

static const struct copy_direction copy_directions[] __attribute__((unused)) = {
    { "to_mapping", copy_test_to, 1 },
    { "from_mapping", copy_test_from, 0 },
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

/*
 * run(k) in a child process per kernel: each kernel of the table this CPU runs, then each of
 * names[] (the test's own kernels, NULL-terminated). The child is this program again with
 * GDRCOPY_COPY_KERNEL=<name>; its result lines are printed here, followed by one line of this
 * process for the child (test/kernel). In the child (argv asks for a child mode) this calls
 * run(own), own being the test's kernel it got or NULL for one of the library's, and returns
 * the exit status; in the parent it returns -1.
 */
static inline int copy_test_each_kernel(const char *test, int argc, char **argv,
                                 const char *const *names,
                                 void (*run)(const struct vr_copy_kernel *own))
{
    const char *mode = t_child_mode(argc, argv);
    const struct vr_copy_kernel *k;
    size_t i, n_names = 0;
    char name[128];

    snprintf(name, sizeof(name), "%s/%s", test, mode ? mode : "");
    if (mode) {
        k = copy_table_extra(mode);
        if (!t_check(strcmp(vr_copy_kernel_name(), mode) == 0, name,
                     "asked for kernel %s, got %s", mode, vr_copy_kernel_name()))
            return t_status();
        run(k);
        return t_status();
    }
    while (names && names[n_names])
        n_names++;
    for (i = 0; i < copy_table_len + n_names; i++) {
        static char out[1 << 16];
        char var[96];
        const char *env[] = { var, NULL };
        const char *kname;
        int rc, sig = 0;

        if (i < copy_table_len) {
            k = &copy_table[i];
            if (!copy_test_usable(k, test))
                continue;
            kname = k->name;
        } else {
            kname = names[i - copy_table_len];
        }
        snprintf(name, sizeof(name), "%s/%s", test, kname);
        snprintf(var, sizeof(var), "GDRCOPY_COPY_KERNEL=%s", kname);
        rc = t_run_self(kname, env, out, sizeof(out), &sig);
        fputs(out, stdout);
        if (rc == 127)
            t_skip(name, "cannot run /proc/self/exe again here");
        else
            t_check(rc == 0, name, "the child of this kernel %s %d", rc < 0 ? "got signal" :
                    "exited with", rc < 0 ? sig : rc);
    }
    return -1;
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

// SPDX-License-Identifier: MIT
/*
 * copy_choice.c - which copy kernel a process gets.
 *
 * The policy itself (vr_copy_choose_from, over the table the engine hands it, with made-up
 * CPU feature sets): the automatic order, a
 * name that forces a kernel, and the fallback with a warning for an unknown name or one the
 * CPU cannot run. Then the real path: this program runs itself again with
 * GDRCOPY_COPY_KERNEL set, and the child reports vr_copy_kernel_name() and its warnings.
 */
#include <stdlib.h>

#include "copy_test.h"
#include "t.h"

static const struct vr_copy_kernel *copy_table_extra(const char *name)
{
    return NULL;
}

/* The engine's choice over its own table. */
static const struct vr_copy_kernel *choose(unsigned features, const char *forced)
{
    return vr_copy_choose_from(copy_table, copy_table_len, features, forced);
}

static void result(int ok, const char *name, const char *why)
{
    char full[128];

    snprintf(full, sizeof(full), "copy_choice/%s", name);
    t_check(ok, full, "%s", why);
}

/* choose(features, forced) gives 'want', and logs a warning iff 'warns'. */
static void expect_choice(const char *name, unsigned features, const char *forced,
                          const char *want, int warns)
{
    int before = copy_test_warnings;
    const char *got = choose(features, forced)->name;
    int warned = copy_test_warnings != before;
    char why[160];

    snprintf(why, sizeof(why), "got %s (%s), want %s (%s)", got,
             warned ? "warned" : "no warning", want, warns ? "a warning" : "no warning");
    result(strcmp(got, want) == 0 && warned == warns, name, why);
}

static void policy(void)
{
#if defined(__x86_64__)
    const unsigned all = VR_CPU_SSE41 | VR_CPU_AVX2 | VR_CPU_AVX512F | VR_CPU_MOVDIR64B;

    expect_choice("auto/all-features", all, NULL, "avx512", 0);
    expect_choice("auto/no-avx512", all & ~VR_CPU_AVX512F, NULL, "avx2", 0);
    expect_choice("auto/sse41-and-movdir64b", VR_CPU_SSE41 | VR_CPU_MOVDIR64B, NULL, "sse41", 0);
    expect_choice("auto/movdir64b-only", VR_CPU_MOVDIR64B, NULL, "c", 0);
    expect_choice("auto/none", 0, NULL, "c", 0);
    expect_choice("auto/empty-name", all, "", "avx512", 0);
    expect_choice("force/movdir64b", all, "movdir64b", "movdir64b", 0);
    expect_choice("force/sse41", all, "sse41", "sse41", 0);
    expect_choice("force/c", all, "c", "c", 0);
    expect_choice("force/avx512-unsupported", VR_CPU_SSE41 | VR_CPU_AVX2, "avx512", "avx2", 1);
    expect_choice("force/neon-not-built", all, "neon", "avx512", 1);
    expect_choice("force/unknown", all, "avx1024", "avx512", 1);
    expect_choice("force/case-matters", all, "AVX2", "avx512", 1);
#elif defined(__aarch64__)
    expect_choice("auto/neon", VR_CPU_NEON, NULL, "neon", 0);
    expect_choice("auto/none", 0, NULL, "c", 0);
    expect_choice("force/c", VR_CPU_NEON, "c", "c", 0);
    expect_choice("force/avx2-not-built", VR_CPU_NEON, "avx2", "neon", 1);
    expect_choice("force/unknown", VR_CPU_NEON, "avx1024", "neon", 1);
#else
    expect_choice("auto/none", 0, NULL, "c", 0);
    expect_choice("force/unknown", 0, "avx1024", "c", 1);
#endif
}

#define CHILD_NO_EXEC 2   /* this program could not be run again (e.g. under qemu-user) */

/* Runs this program with GDRCOPY_COPY_KERNEL=value (unset if NULL); reads "NAME WARNINGS". */
static int child_choice(const char *value, char name[64], int *warnings)
{
    char var[128], out[4096];
    const char *env[] = { var, NULL };
    const char *line;
    int rc;

    snprintf(var, sizeof(var), "GDRCOPY_COPY_KERNEL=%s", value ? value : "");
    rc = t_run_self("report", value ? env : NULL, out, sizeof(out), NULL);
    if (rc == 127)
        return CHILD_NO_EXEC;
    /* The child's warnings share the pipe with its report: find the report line. */
    line = strstr(out, "copy_choice_report ");
    if (rc != 0 || !line)
        return -1;
    return sscanf(line, "copy_choice_report %63s %d", name, warnings) == 2 ? 0 : -1;
}

static void expect_env(const char *test, const char *value, const char *want, int warns)
{
    char name[64], why[200];
    int warnings = 0, rc = child_choice(value, name, &warnings);

    if (rc == CHILD_NO_EXEC) {
        char full[128];

        snprintf(full, sizeof(full), "copy_choice/%s", test);
        t_skip(full, "cannot run /proc/self/exe again here");
        return;
    }
    if (rc) {
        result(0, test, "the child did not report");
        return;
    }
    snprintf(why, sizeof(why), "GDRCOPY_COPY_KERNEL=%s gave %s with %d warnings, want %s%s",
             value ? value : "(unset)", name, warnings, want, warns ? " and a warning" : "");
    result(strcmp(name, want) == 0 && (warnings > 0) == warns, test, why);
}

static void environment(void)
{
    const unsigned features = vr_cpu_features();
    const char *automatic = choose(features, NULL)->name;
    const struct vr_copy_kernel *ks = copy_table;
    size_t count = copy_table_len, i;
    char test[80];

    result(strcmp(automatic, choose(features, NULL)->name) == 0, "auto/deterministic",
           "two choices on the same CPU differ");
    expect_env("env/unset", NULL, automatic, 0);
    expect_env("env/empty", "", automatic, 0);
    for (i = 0; i < count; i++) {
        int usable = vr_copy_kernel_usable(&ks[i], features);

        snprintf(test, sizeof(test), "env/%s%s", ks[i].name, usable ? "" : "-unsupported");
        expect_env(test, ks[i].name, usable ? ks[i].name : automatic, !usable);
    }
    expect_env("env/unknown", "fastest", automatic, 1);
}

int main(int argc, char **argv)
{
    const char *mode = t_child_mode(argc, argv);

    if (mode && strcmp(mode, "report") == 0) {
        printf("copy_choice_report %s %d\n", vr_copy_kernel_name(), copy_test_warnings);
        return 0;
    }
    policy();
    environment();
    return t_status();
}

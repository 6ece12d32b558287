/* SPDX-License-Identifier: MIT */
/*
 * test_logging.c - the log: errors reach stderr by default and nothing else does;
 * GDRCOPY_ENABLE_LOGGING (any value) adds the levels from GDRCOPY_LOG_LEVEL (1 debug .. 4 error,
 * default 2); every line starts "gdrapi: <level>: "; lines written by many threads at once
 * stay whole. Each case runs in a fresh process because the environment is read once.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t.h"
#include "vramio.h"

#define NTHREADS 8
#define PER_THREAD 200

/* A debug-level message: gdr_close of NULL. */
static void *debug_lines(void *arg)
{
    int i;

    for (i = 0; i < PER_THREAD; i++)
        gdr_close(NULL);
    return NULL;
}

static int child(const char *mode)
{
    pthread_t t[NTHREADS];
    int i;

    if (strcmp(mode, "threads") == 0) {
        for (i = 0; i < NTHREADS; i++)
            pthread_create(&t[i], NULL, debug_lines, NULL);
        for (i = 0; i < NTHREADS; i++)
            pthread_join(t[i], NULL);
        return 0;
    }
    /* "levels": one debug message, then an error (an unknown GDRCOPY_BACKEND is set by the
     * parent, so gdr_open fails the same way on every machine). */
    gdr_close(NULL);
    if (gdr_open() != NULL)
        return 3;
    return 0;
}

static int count_lines(const char *out, const char *prefix, int *other)
{
    const char *p = out;
    int n = 0;

    *other = 0;
    while (*p) {
        if (strncmp(p, prefix, strlen(prefix)) == 0)
            n++;
        else if (strncmp(p, "gdrapi: ", 8) != 0)
            (*other)++;
        p = strchr(p, '\n');
        if (!p)
            break;
        p++;
    }
    return n;
}

struct level_case {
    const char *name;
    const char *env[4];
    int want_debug, want_error;
};

int main(int argc, char **argv)
{
    static const struct level_case cases[] = {
        { "default_errors_only", { "GDRCOPY_BACKEND=nosuch", NULL }, 0, 1 },
        { "enabled_default_level_2", { "GDRCOPY_BACKEND=nosuch", "GDRCOPY_ENABLE_LOGGING=1", NULL }, 0, 1 },
        { "enabled_any_value", { "GDRCOPY_BACKEND=nosuch", "GDRCOPY_ENABLE_LOGGING=", "GDRCOPY_LOG_LEVEL=1", NULL }, 1, 1 },
        { "level_1_debug", { "GDRCOPY_BACKEND=nosuch", "GDRCOPY_ENABLE_LOGGING=yes", "GDRCOPY_LOG_LEVEL=1", NULL }, 1, 1 },
        { "level_3_no_debug", { "GDRCOPY_BACKEND=nosuch", "GDRCOPY_ENABLE_LOGGING=1", "GDRCOPY_LOG_LEVEL=3", NULL }, 0, 1 },
        { "level_4_errors", { "GDRCOPY_BACKEND=nosuch", "GDRCOPY_ENABLE_LOGGING=1", "GDRCOPY_LOG_LEVEL=4", NULL }, 0, 1 },
        { "level_without_enable_ignored", { "GDRCOPY_BACKEND=nosuch", "GDRCOPY_LOG_LEVEL=1", NULL }, 0, 1 },
    };
    const char *mode = t_child_mode(argc, argv);
    const char *thr_env[] = { "GDRCOPY_ENABLE_LOGGING=1", "GDRCOPY_LOG_LEVEL=1", NULL };
    char *out;
    size_t i;
    int rc, sig = 0, dbg, err, other;

    if (mode)
        return child(mode);
    out = malloc(1 << 20);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rc = t_run_self("levels", cases[i].env, out, 1 << 20, &sig);
        dbg = count_lines(out, "gdrapi: debug: ", &other);
        err = count_lines(out, "gdrapi: error: ", &other);
        t_check(rc == 0 && (dbg > 0) == cases[i].want_debug && (err > 0) == cases[i].want_error &&
                other == 0, cases[i].name,
                "exit %d, %d debug and %d error lines, %d lines without the prefix:\n%s", rc, dbg,
                err, other, out);
    }
    rc = t_run_self("levels", cases[0].env, out, 1 << 20, &sig);
    t_check(strstr(out, "gdrapi: error: ") && strstr(out, "nosuch"), "error_line_explains",
            "output:\n%s", out);

    rc = t_run_self("threads", thr_env, out, 1 << 20, &sig);
    dbg = count_lines(out, "gdrapi: debug: gdr_close: ", &other);
    t_check(rc == 0 && dbg == NTHREADS * PER_THREAD && other == 0, "lines_whole_under_threads",
            "exit %d, %d whole lines of %d, %d broken", rc, dbg, NTHREADS * PER_THREAD, other);
    free(out);
    return t_status();
}

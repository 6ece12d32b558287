/* SPDX-License-Identifier: MIT */
/*
 * log.c - the library's one logging function (see log.h).
 *
 * The environment is read once, on the first message, under pthread_once: getenv is not safe
 * against a concurrent setenv, and a level that changed halfway through a run would make logs
 * hard to trust. Each line is formatted into a local buffer and written with one write(2) so
 * that lines from several threads do not interleave.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "log.h"
#include "reason.h"            /* util/: VR_LINE_LEN, vr_reason_v */

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static int log_threshold = VR_LOG_ERROR;

static void log_read_env(void)
{
    const char *level;
    char *end;
    long v;

    if (!getenv("GDRCOPY_ENABLE_LOGGING"))
        return; /* errors only */
    log_threshold = VR_LOG_INFO;
    level = getenv("GDRCOPY_LOG_LEVEL");
    if (level && *level) {
        v = strtol(level, &end, 10);
        if (*end == '\0' && v >= VR_LOG_DEBUG && v <= VR_LOG_ERROR)
            log_threshold = (int)v;
    }
}

static int log_enabled(enum vr_log_level level)
{
    pthread_once(&log_once, log_read_env);
    return (int)level >= log_threshold;
}

static const char *level_name(enum vr_log_level level)
{
    switch (level) {
    case VR_LOG_DEBUG: return "debug";
    case VR_LOG_INFO:  return "info";
    case VR_LOG_WARN:  return "warning";
    case VR_LOG_ERROR: return "error";
    }
    return "?";
}

void vr_log(enum vr_log_level level, const char *fmt, ...)
{
    char line[32 + VR_LINE_LEN];   /* the level, and the longest line: a failed call's */
    va_list ap;
    int n;

    if (!log_enabled(level))
        return;
    n = snprintf(line, sizeof(line), "gdrapi: %s: ", level_name(level));
    /* A byte left for the newline; a message too long for the rest loses its middle, never
     * its end (reason.h). */
    va_start(ap, fmt);
    vr_reason_v(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    n = (int)strlen(line);
    while (n > 0 && line[n - 1] == '\n')
        n--;
    line[n++] = '\n';
    /* One write(2) per line: atomic for a pipe up to PIPE_BUF bytes, whole in a terminal. */
    if (write(STDERR_FILENO, line, (size_t)n) < 0)
        return; /* nowhere left to report it */
}

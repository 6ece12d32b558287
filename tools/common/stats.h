/* SPDX-License-Identifier: MIT */
/*
 * stats.h - latency statistics (min, p50, p99) and a tiny JSON writer for --json FILE.
 */
#ifndef TOOLS_STATS_H
#define TOOLS_STATS_H

#include <stddef.h>
#include <stdio.h>

struct stats {
    size_t n;
    double min, p50, p99, max, avg;
};

/* Sorts samples in place and fills st (all zero when n == 0). */
void stats_compute(double *samples, size_t n, struct stats *st);

/* JSON output: every call is a no-op while the writer is closed (no --json given). Keys are
 * ignored inside arrays. Nesting is limited to 16 levels. */
struct json {
    FILE *f;
    int depth;
    int first[16];   /* nothing written yet at this depth (no comma needed) */
    char close[16];  /* the bracket that closes this depth */
};
/* Opens path ("-" for stdout, and then the report goes to stderr) and starts the top-level
 * object; 0 or an errno. */
int json_open(struct json *j, const char *path);
/* Ends the top-level object and closes the file; 0 or an errno (write error). */
int json_close(struct json *j);
void json_obj(struct json *j, const char *key);
void json_arr(struct json *j, const char *key);
void json_end(struct json *j);   /* closes the innermost object or array */
void json_num(struct json *j, const char *key, double v);
void json_int(struct json *j, const char *key, long long v);
void json_str(struct json *j, const char *key, const char *v);
/* {"min":..,"p50":..,"p99":..,"max":..,"avg":..,"n":..} under key. */
void json_stats(struct json *j, const char *key, const struct stats *st);

#endif /* TOOLS_STATS_H */

/* SPDX-License-Identifier: MIT */
/* stats.c - percentiles and the JSON writer used by the benchmark tools. */
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Nearest-rank percentile: the smallest sample with at least p% of samples at or below it. */
static double percentile(const double *sorted, size_t n, double p)
{
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);

    if (rank < 1)
        rank = 1;
    return sorted[rank - 1];
}

void stats_compute(double *samples, size_t n, struct stats *st)
{
    double sum = 0;

    memset(st, 0, sizeof(*st));
    if (n == 0)
        return;
    qsort(samples, n, sizeof(*samples), cmp_double);
    for (size_t i = 0; i < n; i++)
        sum += samples[i];
    st->n = n;
    st->min = samples[0];
    st->max = samples[n - 1];
    st->p50 = percentile(samples, n, 50);
    st->p99 = percentile(samples, n, 99);
    st->avg = sum / (double)n;
}

int json_open(struct json *j, const char *path)
{
    memset(j, 0, sizeof(*j));
    if (!path)
        return 0;
    if (strcmp(path, "-") == 0) {
        /* '-': the JSON alone on standard output, for a parser at the other end of a pipe; the
         * report, printed to stdout, moves to standard error (mixed in, neither would parse). */
        int fd;

        fflush(stdout);
        fd = dup(STDOUT_FILENO);
        if (fd < 0)
            return errno;
        j->f = fdopen(fd, "w");
        if (!j->f || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
            int e = errno;

            if (j->f)
                fclose(j->f);
            else
                close(fd);
            j->f = NULL;
            return e;
        }
    } else {
        j->f = fopen(path, "w");
    }
    if (!j->f)
        return errno;
    fputc('{', j->f);
    j->first[0] = 1;
    return 0;
}

int json_close(struct json *j)
{
    int rc = 0;

    if (!j->f)
        return 0;
    fputs("}\n", j->f);
    rc = fclose(j->f) ? errno : 0;
    j->f = NULL;
    return rc;
}

static void put_string(FILE *f, const char *v)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* The comma before a member and, inside an object, its key. */
static void json_key(struct json *j, const char *key)
{
    if (!j->first[j->depth])
        fputc(',', j->f);
    j->first[j->depth] = 0;
    if (key && j->close[j->depth] != ']') {
        put_string(j->f, key);
        fputc(':', j->f);
    }
}

void json_str(struct json *j, const char *key, const char *v)
{
    if (!j->f)
        return;
    json_key(j, key);
    put_string(j->f, v);
}

static void json_open_nested(struct json *j, const char *key, char c)
{
    if (!j->f || j->depth + 1 >= (int)(sizeof(j->first) / sizeof(j->first[0])))
        return;
    json_key(j, key);
    fputc(c, j->f);
    j->first[++j->depth] = 1;
    j->close[j->depth] = c == '[' ? ']' : '}';
}

void json_obj(struct json *j, const char *key)
{
    json_open_nested(j, key, '{');
}

void json_arr(struct json *j, const char *key)
{
    json_open_nested(j, key, '[');
}

void json_end(struct json *j)
{
    if (!j->f || j->depth == 0)
        return;
    fputc(j->close[j->depth], j->f);
    j->depth--;
}

void json_num(struct json *j, const char *key, double v)
{
    if (!j->f)
        return;
    json_key(j, key);
    if (isfinite(v))
        fprintf(j->f, "%.6g", v);
    else
        fputs("null", j->f);
}

void json_int(struct json *j, const char *key, long long v)
{
    if (!j->f)
        return;
    json_key(j, key);
    fprintf(j->f, "%lld", v);
}

void json_stats(struct json *j, const char *key, const struct stats *st)
{
    json_obj(j, key);
    json_num(j, "min", st->min);
    json_num(j, "p50", st->p50);
    json_num(j, "p99", st->p99);
    json_num(j, "max", st->max);
    json_num(j, "avg", st->avg);
    json_int(j, "n", (long long)st->n);
    json_end(j);
}

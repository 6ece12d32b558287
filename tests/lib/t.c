/* SPDX-License-Identifier: MIT */
/* t.c - result lines and the pattern generator of the test kit (see t.h). */
#include <stdarg.h>
#include <stdio.h>

#include "t.h"

static int t_failures;

static void t_line(const char *prefix, const char *name, const char *fmt, va_list ap)
{
    printf("%s %s", prefix, name);
    if (fmt) {
        fputs(": ", stdout);
        vprintf(fmt, ap);
    }
    putchar('\n');
    /* A child that dies next, or a runner that kills a hung program, still sees the line. */
    fflush(stdout);
}

void t_ok(const char *name)
{
    printf("ok %s\n", name);
    fflush(stdout);
}

void t_fail(const char *name, const char *why_fmt, ...)
{
    va_list ap;

    va_start(ap, why_fmt);
    t_line("not ok", name, why_fmt, ap);
    va_end(ap);
    t_failures++;
}

void t_skip(const char *name, const char *why_fmt, ...)
{
    va_list ap;

    va_start(ap, why_fmt);
    t_line("skip", name, why_fmt, ap);
    va_end(ap);
}

int t_check(int cond, const char *name, const char *why_fmt, ...)
{
    va_list ap;

    if (cond) {
        t_ok(name);
        return 1;
    }
    va_start(ap, why_fmt);
    t_line("not ok", name, why_fmt, ap);
    va_end(ap);
    t_failures++;
    return 0;
}

int t_status(void)
{
    return t_failures ? T_FAIL : T_PASS;
}

void t_pattern(void *buf, size_t len, uint64_t seed)
{
    unsigned char *p = buf;
    /* xorshift64 from a seed spread by the golden-ratio constant (0 would stay 0). */
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    size_t i;

    for (i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (unsigned char)(x >> 24);
    }
}

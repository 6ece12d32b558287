/* SPDX-License-Identifier: MIT */
/* dma_policy.c - the copy-engine crossover (see dma_policy.h). */
#include "dma_policy.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const size_t vr_dma_engine_sizes[VR_DMA_ENGINE_POINTS] = {
    4096, 8192, 16384, 65536, 262144, VR_DMA_ENGINE_LARGEST,
};

static int positive(double x)
{
    return isfinite(x) && x > 0;
}

size_t vr_dma_bar_write_unit(size_t n)
{
    return n >= 16 * 65536u ? 65536u : n >= 16 * 16384u ? 16384u : 4096u;
}

static void sort_doubles(double *v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];

            v[j] = v[j - 1];
            v[j - 1] = t;
        }
}

/* The median of the times of size n among s (count of them), sorted in tmp. */
static double median_of(const struct vr_dma_sample *s, size_t count, size_t n, double *tmp)
{
    size_t k = 0;

    for (size_t i = 0; i < count; i++)
        if (s[i].n == n)
            tmp[k++] = s[i].ns;
    sort_doubles(tmp, k);
    return k & 1 ? tmp[k / 2] : (tmp[k / 2 - 1] + tmp[k / 2]) / 2;
}

int vr_dma_curve(const struct vr_dma_sample *s, size_t count, struct vr_dma_curve *c)
{
    double tmp[VR_DMA_MAX_SAMPLES];

    c->count = 0;
    if (count > VR_DMA_MAX_SAMPLES)
        return EINVAL;
    for (size_t i = 0; i < count; i++) {
        size_t at = 0;

        if (!s[i].n || !positive(s[i].ns))
            return EINVAL;
        while (at < c->count && c->p[at].n < s[i].n)
            at++;
        if (at < c->count && c->p[at].n == s[i].n)
            continue;
        if (c->count == VR_DMA_MAX_POINTS)
            return EINVAL;
        memmove(&c->p[at + 1], &c->p[at], (c->count - at) * sizeof(c->p[0]));
        c->p[at].n = s[i].n;
        c->count++;
    }
    if (c->count < 2)
        return EINVAL;
    for (size_t i = 0; i < c->count; i++)
        c->p[i].ns = median_of(s, count, c->p[i].n, tmp);
    return 0;
}

void vr_dma_curve_lower(struct vr_dma_curve *c, const struct vr_dma_curve *o)
{
    for (size_t i = 0; i < c->count; i++)
        for (size_t j = 0; j < o->count; j++)
            if (o->p[j].n == c->p[i].n && o->p[j].ns < c->p[i].ns)
                c->p[i].ns = o->p[j].ns;
}

double vr_dma_curve_at(const struct vr_dma_curve *c, size_t n)
{
    size_t i = 0;
    const struct vr_dma_sample *a, *b;

    while (i + 2 < c->count && n > c->p[i + 1].n)
        i++;
    a = &c->p[i];
    b = &c->p[i + 1];
    return a->ns + (b->ns - a->ns) * ((double)n - (double)a->n) / (double)(b->n - a->n);
}

/* The copy engine's time less the BAR's at n: negative where the engine wins. */
static double lead(const struct vr_dma_curve *bar, const struct vr_dma_curve *dma, size_t n)
{
    return vr_dma_curve_at(dma, n) - vr_dma_curve_at(bar, n);
}

static size_t round_up(double x)
{
    size_t r;

    if (!(x < (double)(SIZE_MAX / 2)))
        return VR_DMA_NEVER;
    r = (size_t)x;
    r += (double)r < x;
    return r < VR_DMA_FLOOR ? VR_DMA_FLOOR : r;
}

size_t vr_dma_crossover(const struct vr_dma_curve *bar, const struct vr_dma_curve *dma)
{
    size_t b[2 * VR_DMA_MAX_POINTS + 1], nb = 0, i, j;
    double d_hi, slope;

    if (bar->count < 2 || dma->count < 2 || bar->count > VR_DMA_MAX_POINTS ||
        dma->count > VR_DMA_MAX_POINTS)
        return VR_DMA_NEVER;
    /* Between consecutive breakpoints (every measured size of either curve, and the floor)
     * both curves are straight, so their difference is too. */
    b[nb++] = VR_DMA_FLOOR;
    for (i = 0; i < bar->count + dma->count; i++) {
        size_t n = i < bar->count ? bar->p[i].n : dma->p[i - bar->count].n;

        if (n <= VR_DMA_FLOOR)
            continue;
        for (j = 0; j < nb && b[j] != n; j++)
            ;
        if (j < nb)
            continue;                           /* already a breakpoint */
        for (j = nb; j > 0 && b[j - 1] > n; j--)
            b[j] = b[j - 1];
        b[j] = n;
        nb++;
    }
    d_hi = lead(bar, dma, b[nb - 1]);
    if (d_hi >= 0) {
        /* The BAR wins at the largest size: past it both are their end segments. */
        slope = (lead(bar, dma, 2 * b[nb - 1]) - d_hi) / (double)b[nb - 1];
        if (!(slope < 0))
            return VR_DMA_NEVER;
        return round_up((double)b[nb - 1] + d_hi / -slope);
    }
    /* The engine wins at the largest size (past it nothing is known, and no bus has been seen
     * where a copy engine that won at 1 MiB lost again further up); it stays ahead down to
     * the last breakpoint where it did not. */
    for (i = nb - 1; i > 0; i--) {
        double d_lo = lead(bar, dma, b[i - 1]), d_up = lead(bar, dma, b[i]);

        if (d_lo >= 0)
            return round_up((double)b[i - 1] +
                            d_lo / (d_lo - d_up) * (double)(b[i] - b[i - 1]));
    }
    return VR_DMA_FLOOR;
}

int vr_dma_parse_crossover(const char *s, size_t *out)
{
    unsigned long long v;
    char *end;
    unsigned shift = 0;

    if (!s || !*s)
        return EINVAL;
    if (!strcasecmp(s, "never") || !strcasecmp(s, "off")) {
        *out = VR_DMA_NEVER;
        return 0;
    }
    if (*s < '0' || *s > '9')
        return EINVAL;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno)
        return EINVAL;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end || (shift && v > (SIZE_MAX >> shift)) || v > SIZE_MAX)
        return EINVAL;
    v <<= shift;
    *out = v < VR_DMA_FLOOR ? VR_DMA_FLOOR : (size_t)v;
    return 0;
}

/* SPDX-License-Identifier: MIT */
/* dma_policy.c - the copy-engine crossover (see dma_policy.h). */
#include "dma_policy.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int positive(double x)
{
    return isfinite(x) && x > 0;
}

size_t vr_dma_crossover(const struct vr_dma_costs *c)
{
    double gain, n, ahead;
    size_t r;

    /* BAR time g + n*b against copy-engine time f + n*d: the engine wins from
     * (f - g) / (b - d), and from the floor on when its fixed cost is not the larger. */
    if (!positive(c->dma_ns_per_byte) || !positive(c->bar_ns_per_byte) ||
        !(isfinite(c->dma_fixed_ns) && c->dma_fixed_ns >= 0) ||
        !(isfinite(c->bar_fixed_ns) && c->bar_fixed_ns >= 0))
        return VR_DMA_NEVER;
    gain = c->bar_ns_per_byte - c->dma_ns_per_byte;
    if (gain <= 0)
        return VR_DMA_NEVER;
    ahead = c->dma_fixed_ns - c->bar_fixed_ns;
    n = ahead > 0 ? ahead / gain : 0;
    if (n >= (double)(SIZE_MAX / 2))
        return VR_DMA_NEVER;
    r = (size_t)n;
    r += (double)r < n;             /* round up, without libm */
    return r < VR_DMA_FLOOR ? VR_DMA_FLOOR : r;
}

int vr_dma_fit(size_t n1, double t1, size_t n2, double t2, double *fixed_ns, double *per_byte_ns)
{
    double slope, fixed;

    if (n2 <= n1 || !positive(t1) || !positive(t2))
        return EINVAL;
    slope = (t2 - t1) / (double)(n2 - n1);
    if (!positive(slope))
        return EINVAL;
    fixed = t1 - slope * (double)n1;
    *fixed_ns = fixed > 0 ? fixed : 0;
    *per_byte_ns = slope;
    return 0;
}

int vr_dma_fit_best(const struct vr_dma_sample *s, size_t count, double *fixed_ns,
                    double *per_byte_ns)
{
    size_t lo = SIZE_MAX, hi = 0, i;
    double t_lo = 0, t_hi = 0;

    for (i = 1; i < count; i++) {          /* s[0]: the warm-up */
        if (s[i].n < lo)
            lo = s[i].n;
        if (s[i].n > hi)
            hi = s[i].n;
    }
    for (i = 1; i < count; i++) {
        if (!positive(s[i].ns))
            return EINVAL;
        if (s[i].n == lo && (t_lo == 0 || s[i].ns < t_lo))
            t_lo = s[i].ns;
        if (s[i].n == hi && (t_hi == 0 || s[i].ns < t_hi))
            t_hi = s[i].ns;
    }
    if (count < 3 || hi <= lo)
        return EINVAL;
    return vr_dma_fit(lo, t_lo, hi, t_hi, fixed_ns, per_byte_ns);
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

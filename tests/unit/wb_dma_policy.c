// SPDX-License-Identifier: MIT
/*
 * wb_dma_policy.c - the crossover of the _auto copies (src/dma/dma_policy.c), without a GPU.
 * Each way's cost is a table of times (the H200's measured figures among them); the test
 * times them as dma_calibrate.c does (the same sizes, a cold first copy, noise, one slow
 * outlier per size), and the crossover the library derives must be where the tables really
 * cross, found here by walking the sizes 256 bytes at a time. Then the curve's own rules and
 * the VRAMIO_DMA_CROSSOVER_READ/_WRITE syntax.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "dma/dma_policy.h"
#include "t.h"

#define KiB 1024u

/* One way's cost: times in us at sizes, straight between them and past the ends. */
struct table {
    int count;
    struct { double kib, us; } p[8];
};

static double cost_ns(const struct table *t, size_t n)
{
    double k = (double)n / KiB;
    int i = 0;

    while (i + 2 < t->count && k > t->p[i + 1].kib)
        i++;
    return 1000 * (t->p[i].us + (t->p[i + 1].us - t->p[i].us) * (k - t->p[i].kib) /
                                    (t->p[i + 1].kib - t->p[i].kib));
}

/* Where the engine's table goes below the BAR's for good, up to 64 MiB (0: nowhere). */
static size_t true_crossover(const struct table *bar, const struct table *eng)
{
    size_t x = 0;

    for (size_t n = VR_DMA_FLOOR; n <= (64u << 20); n += 256)
        if (cost_ns(eng, n) >= cost_ns(bar, n))
            x = 0;
        else if (!x)
            x = n;
    return x;
}

/* A little noise that differs per sample (deterministic): up to 2%. */
static double jitter(unsigned k)
{
    return 1 + ((k * 2654435761u) >> 24) % 21 / 1000.0;
}

/*
 * The calibration's samples of both ways (dma_calibrate.c): the BAR by its plan (a warm-up 40x
 * slower than the rest, then the small and the large size three times each: reads 1 and
 * 16 KiB, writes unit and 4 units of a first write of first_write bytes) in two passes, the
 * first with every time multiplied by first_pass, the faster pass kept per size; the engine
 * at each of vr_dma_engine_sizes five times, one of the five 3x slower. The crossover from
 * them.
 */
static size_t calibrated_passes(const struct table *bar, const struct table *eng, int write,
                                size_t first_write, double first_pass)
{
    struct vr_dma_sample b[2][7], e[5 * VR_DMA_ENGINE_POINTS];
    struct vr_dma_curve bc[2], ec;
    size_t unit = vr_dma_bar_write_unit(first_write);
    unsigned k = 0;

    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < 7; i++) {
            size_t small = write ? unit : KiB, large = write ? 4 * unit : 16 * KiB;

            b[pass][i].n = i == 0 ? (write ? unit : large) : (i & 1 ? small : large);
            b[pass][i].ns = cost_ns(bar, b[pass][i].n) * jitter(k++) * (i == 0 ? 40 : 1) *
                            (pass ? 1 : first_pass);
        }
    for (int r = 0; r < 5; r++)
        for (int i = 0; i < VR_DMA_ENGINE_POINTS; i++) {
            struct vr_dma_sample *s = &e[r * VR_DMA_ENGINE_POINTS + i];

            s->n = vr_dma_engine_sizes[i];
            s->ns = cost_ns(eng, s->n) * jitter(k++) * (r == (i % 5) ? 3 : 1);
        }
    if (vr_dma_curve(b[0] + 1, 6, &bc[0]) || vr_dma_curve(b[1] + 1, 6, &bc[1]) ||
        vr_dma_curve(e, 5 * VR_DMA_ENGINE_POINTS, &ec))
        return 0;
    vr_dma_curve_lower(&bc[0], &bc[1]);
    return vr_dma_crossover(&bc[0], &ec);
}

static size_t calibrated(const struct table *bar, const struct table *eng, int write,
                         size_t first_write)
{
    return calibrated_passes(bar, eng, write, first_write, 1);
}

/* The calibrated crossover within 15% of the true one (or both "never"). */
static void expect(const char *name, const struct table *bar, const struct table *eng,
                   int write, size_t first_write)
{
    size_t t = true_crossover(bar, eng), x = calibrated(bar, eng, write, first_write);
    int ok = t ? x != VR_DMA_NEVER && x >= t * 0.85 && x <= t * 1.15 : x == VR_DMA_NEVER;

    t_check(ok, name, "calibrated %zu bytes, true %zu", x, t);
}

/* H200, vulkan backend, writes: the BAR at 19.5 GB/s (64 KiB 3.35 us, 128 KiB 6.8, 256 KiB
 * 13.6); cuMemcpyHtoD from pinned memory 64 KiB 9.9 us, 128 KiB 10.6, 256 KiB 13.5, 1 MiB
 * 27.9. The two cross just below 256 KiB. Below 64 KiB the engine was not timed: either a flat
 * fixed cost, or cheap small copies (a driver may send those inline with the command); with
 * the latter, a line through 4 KiB and 1 MiB puts the crossover at 30-40 KiB, as the library
 * once measured there. */
static const struct table h200_bar_write = { 2, { { 0, 0.15 }, { 256, 0.15 + 256 * 1.024 / 19.5 } } };
static const struct table h200_eng_write_flat = {
    7, { { 4, 8.6 }, { 8, 8.7 }, { 16, 8.9 }, { 64, 9.9 }, { 128, 10.6 }, { 256, 13.5 },
         { 1024, 27.9 } }
};
static const struct table h200_eng_write_cheap_small = {
    7, { { 4, 1.0 }, { 8, 1.6 }, { 16, 2.6 }, { 64, 9.9 }, { 128, 10.6 }, { 256, 13.5 },
         { 1024, 27.9 } }
};
/* Reads: the BAR one uncached round trip per line, 1 GB/s after 0.5 us; the engine crossing it
 * at 8 KiB (4 KiB 5.5 us, 8 KiB 8.6, then slowly up to 26 us at 1 MiB): a line through 4 KiB
 * and 1 MiB puts that at 5 KiB, as the library once measured. */
static const struct table h200_bar_read = { 2, { { 0, 0.5 }, { 16, 0.5 + 16 * 1.024 } } };
static const struct table h200_eng_read = {
    6, { { 4, 5.5 }, { 8, 8.6 }, { 16, 9.0 }, { 64, 10.0 }, { 256, 14.0 }, { 1024, 26.0 } }
};

static void calibrated_crossovers(void)
{
    /* The engine ahead at 4 KiB (an inline copy), behind from 8 to 128 KiB, ahead from
     * 256 KiB on: the crossover is the last crossing, not the first. */
    static const struct table dip = {
        6, { { 4, 0.1 }, { 8, 8.7 }, { 16, 8.9 }, { 64, 9.9 }, { 256, 13.5 }, { 1024, 27.9 } }
    };
    static const struct table slow = { 2, { { 4, 8.0 }, { 1024, 8.0 + 1024 * 1.024 / 10 } } };
    static const struct table fast = { 2, { { 4, 0.2 }, { 1024, 0.2 + 1024 * 1.024 / 50 } } };
    static const struct table pcie3_eng = { 2, { { 4, 20.0 }, { 1024, 20 + 1024 * 1.024 / 6.5 } } };
    static const struct table pcie3_bar = { 2, { { 0, 0.2 }, { 64, 0.2 + 64 * 1.024 / 6 } } };

    expect("wb_dma/h200_write_cheap_small_engine", &h200_bar_write, &h200_eng_write_cheap_small,
           1, 1u << 20);
    expect("wb_dma/h200_write_flat_engine", &h200_bar_write, &h200_eng_write_flat, 1, 1u << 20);
    /* A first write of 64 KiB times the BAR in 4 and 16 KiB chunks, of 256 KiB in 16 and 64. */
    expect("wb_dma/h200_write_first_64k", &h200_bar_write, &h200_eng_write_cheap_small, 1,
           64 * KiB);
    expect("wb_dma/h200_write_first_256k", &h200_bar_write, &h200_eng_write_cheap_small, 1,
           256 * KiB);
    expect("wb_dma/h200_read_crosses_at_8k", &h200_bar_read, &h200_eng_read, 0, 0);
    expect("wb_dma/last_crossing_not_first", &h200_bar_write, &dip, 1, 1u << 20);
    /* BAR writes at 6 GB/s, a slow engine at 20 us + 6.5 GB/s: they meet at about 1.5 MiB,
     * past the largest timed size, where the end segments decide. */
    expect("wb_dma/crossover_past_largest_size", &pcie3_bar, &pcie3_eng, 1, 1u << 20);
    expect("wb_dma/engine_slower_never", &h200_bar_write, &slow, 1, 1u << 20);
    /* H200, gpu_auto_test's first _auto write of 1 MiB in a fresh process: the BAR timed at
     * 64 KiB 8.18 us and 256 KiB 34.9 us before the engine, 3.74 and 15.5 us when timed
     * directly later; from the first pass alone the crossover came out at 85 KB, where the
     * BAR wins up to about 256 KiB. */
    {
        size_t t = true_crossover(&h200_bar_write, &h200_eng_write_flat);
        size_t x = calibrated_passes(&h200_bar_write, &h200_eng_write_flat, 1, 1u << 20, 2.2);

        t_check(x != VR_DMA_NEVER && x >= t * 0.85 && x <= t * 1.15,
                "wb_dma/h200_write_slow_first_pass_dropped", "calibrated %zu bytes, true %zu", x,
                t);
    }
    t_check(calibrated(&h200_bar_read, &fast, 0, 0) == VR_DMA_FLOOR, "wb_dma/engine_ahead_floor",
          "%zu", calibrated(&h200_bar_read, &fast, 0, 0));
}

static void curve_rules(void)
{
    struct vr_dma_sample s[5] = { { 16384, 900 }, { 4096, 300 }, { 16384, 800 },
                                  { 4096, 200 }, { 16384, 5000 } };
    struct vr_dma_sample bad[2] = { { 4096, 100 }, { 8192, 0 } };
    struct vr_dma_sample one[3] = { { 4096, 100 }, { 4096, 120 }, { 4096, 90 } };
    struct vr_dma_sample many[VR_DMA_MAX_POINTS + 1];
    struct vr_dma_curve c = { 0 }, two = { 2, { { 4096, 1000 }, { 8192, 2000 } } };

    for (int i = 0; i <= VR_DMA_MAX_POINTS; i++)
        many[i] = (struct vr_dma_sample){ 4096u * (unsigned)(i + 1), 100.0 * (i + 1) };
    t_check(vr_dma_curve(s, 5, &c) == 0 && c.count == 2 && c.p[0].n == 4096 && c.p[0].ns == 250 &&
              c.p[1].n == 16384 && c.p[1].ns == 900,
          "wb_dma/curve_median_by_ascending_size", "%zu points, %zu:%.0f %zu:%.0f", c.count,
          c.p[0].n, c.p[0].ns, c.p[1].n, c.p[1].ns);
    t_check(vr_dma_curve(bad, 2, &c) == EINVAL && vr_dma_curve(one, 3, &c) == EINVAL &&
              vr_dma_curve(many, VR_DMA_MAX_POINTS + 1, &c) == EINVAL &&
              vr_dma_curve(many, VR_DMA_MAX_SAMPLES + 1, &c) == EINVAL,
          "wb_dma/curve_refuses_bad_input", "accepted");
    t_check(vr_dma_curve_at(&two, 6144) == 1500 && vr_dma_curve_at(&two, 16384) == 4000 &&
              vr_dma_curve_at(&two, 2048) == 500,
          "wb_dma/curve_straight_between_and_past_the_ends", "%.0f %.0f %.0f",
          vr_dma_curve_at(&two, 6144), vr_dma_curve_at(&two, 16384), vr_dma_curve_at(&two, 2048));
    {
        struct vr_dma_curve a = { 3, { { 4096, 900 }, { 8192, 1000 }, { 16384, 3000 } } };
        const struct vr_dma_curve b = { 3, { { 4096, 1200 }, { 16384, 2000 }, { 65536, 10 } } };

        vr_dma_curve_lower(&a, &b);
        t_check(a.count == 3 && a.p[0].ns == 900 && a.p[1].ns == 1000 && a.p[2].ns == 2000 &&
                    a.p[2].n == 16384,
                "wb_dma/curve_lower_per_size", "%zu points, %.0f %.0f %.0f", a.count,
                a.p[0].ns, a.p[1].ns, a.p[2].ns);
    }
    c.count = 1;
    t_check(vr_dma_crossover(&two, &c) == VR_DMA_NEVER && vr_dma_crossover(&c, &two) == VR_DMA_NEVER,
          "wb_dma/crossover_needs_two_points", "accepted");
    t_check(vr_dma_bar_write_unit(64 * KiB) == 4 * KiB && vr_dma_bar_write_unit(255 * KiB) == 4 * KiB &&
              vr_dma_bar_write_unit(256 * KiB) == 16 * KiB &&
              vr_dma_bar_write_unit(1u << 20) == 64 * KiB &&
              vr_dma_bar_write_unit(64u << 20) == 64 * KiB && 16 * 4 * KiB == VR_DMA_BAR_WRITE_MIN,
          "wb_dma/bar_write_unit", "%zu", vr_dma_bar_write_unit(256 * KiB));
}

int main(void)
{
    size_t x = 0;

    calibrated_crossovers();
    curve_rules();
    t_check(vr_dma_parse_crossover("65536", &x) == 0 && x == 65536, "wb_dma/parse_bytes", "%zu", x);
    t_check(vr_dma_parse_crossover("8K", &x) == 0 && x == 8192 &&
              vr_dma_parse_crossover("2m", &x) == 0 && x == (2u << 20) &&
              vr_dma_parse_crossover("1G", &x) == 0 && x == (1u << 30),
          "wb_dma/parse_suffixes", "%zu", x);
    t_check(vr_dma_parse_crossover("never", &x) == 0 && x == VR_DMA_NEVER &&
              vr_dma_parse_crossover("OFF", &x) == 0 && x == VR_DMA_NEVER,
          "wb_dma/parse_never", "%zu", x);
    t_check(vr_dma_parse_crossover("100", &x) == 0 && x == VR_DMA_FLOOR,
          "wb_dma/parse_raised_to_floor", "%zu", x);
    x = 12345;
    t_check(vr_dma_parse_crossover("", &x) == EINVAL && vr_dma_parse_crossover("-5", &x) == EINVAL &&
              vr_dma_parse_crossover("8KB", &x) == EINVAL &&
              vr_dma_parse_crossover("lots", &x) == EINVAL &&
              vr_dma_parse_crossover("99999999999999999999999", &x) == EINVAL &&
              vr_dma_parse_crossover("17179869184G", &x) == EINVAL && x == 12345,
          "wb_dma/parse_garbage_refused", "%zu", x);
    return t_status();
}

// SPDX-License-Identifier: MIT
/*
 * wb_dma_policy.c - the crossover of the _auto copies (src/dma_policy.c), without a GPU: the
 * size from which the copy engine wins given measured costs (the H200's figures among them),
 * the fit of two timed sizes, and the VRAMIO_DMA_CROSSOVER_READ/_WRITE syntax.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "dma_policy.h"
#include "t.h"

int main(void)
{
    /* H200 reads: BAR 1 GB/s (1 ns/B), cuMemcpyDtoH 7 us + 41 GB/s: the engine wins from
     * 7000 / (1 - 0.0244) = 7175 bytes, where the benchmark saw it between 4 and 8 KiB. */
    struct vr_dma_costs rd = { 7000, 1.0 / 41, 1.0, 0 };
    struct vr_dma_costs wr = { 8000, 1.0 / 40, 1.0 / 16.5, 0 };    /* writes: BAR 16.5 GB/s */
    struct vr_dma_costs slow = { 8000, 1.0 / 10, 1.0 / 16.5, 0 };  /* engine slower per byte */
    struct vr_dma_costs tiny = { 10, 1.0 / 41, 1.0, 0 };           /* below the floor */
    struct vr_dma_costs bad = { 7000, 0, 1.0, 0 };
    double f = 0, b = 0;
    size_t x = 0;

    x = vr_dma_crossover(&rd);
    t_check(x == 7176 || x == 7175, "wb_dma/h200_read_crossover", "%zu", x);
    x = vr_dma_crossover(&wr);
    t_check(x > 200000 && x < 250000, "wb_dma/h200_write_crossover", "%zu", x);
    t_check(vr_dma_crossover(&slow) == VR_DMA_NEVER, "wb_dma/engine_slower_never", "%zu",
            vr_dma_crossover(&slow));
    t_check(vr_dma_crossover(&tiny) == VR_DMA_FLOOR, "wb_dma/floor", "%zu", vr_dma_crossover(&tiny));
    t_check(vr_dma_crossover(&bad) == VR_DMA_NEVER, "wb_dma/bad_figures_never", "%zu",
            vr_dma_crossover(&bad));

    /* Both lines with their fixed costs (H200, 2026-12-03 benchmark): writes BAR 150 ns + size
     * at 21 GB/s, engine 8.5 us + size at 50 GB/s: they meet at 8350 / (1/21 - 1/50) = 302330
     * bytes (the benchmark: between 256 and 512 KiB, cuMemcpy level with the BAR at 256 KiB);
     * reads BAR 1 us + 1 GB/s, engine 6.3 us + 50 GB/s: 5300 / 0.98 = 5409 bytes (4-8 KiB). */
    {
        struct vr_dma_costs w2 = { 8500, 1.0 / 50, 1.0 / 21, 150 };
        struct vr_dma_costs r2 = { 6300, 1.0 / 50, 1.0, 1000 };
        struct vr_dma_costs cheap = { 500, 1.0 / 50, 1.0, 1000 };   /* engine's fixed below */

        x = vr_dma_crossover(&w2);
        t_check(x >= 256 * 1024 && x <= 300 * 1024, "wb_dma/h200_write_lines_meet", "%zu", x);
        x = vr_dma_crossover(&r2);
        t_check(x >= 5400 && x <= 5420, "wb_dma/h200_read_lines_meet", "%zu", x);
        t_check(vr_dma_crossover(&cheap) == VR_DMA_FLOOR, "wb_dma/engine_fixed_below_bar_floor",
                "%zu", vr_dma_crossover(&cheap));
    }

    /* The BAR's line from the calibration's samples (copy_dma.c's write plan: 4 KiB warm-up,
     * then 4 and 16 KiB in turn), with noise, and a first copy 40x slower than the rest, as
     * the first write through a mapping was on the H200. The line must be the warm one, and
     * the crossover against the engine where the warm lines meet (a fit that kept the cold
     * sample, or that averaged, or one long first pass like the 64 KiB one this replaced, puts
     * it at 30-40 KiB, as measured on the H200 then). */
    {
        const double s4 = 150 + 4096 / 21.0, s16 = 150 + 16384 / 21.0;
        struct vr_dma_sample w[7] = { { 4096, 40 * s4 }, { 4096, s4 + 9 }, { 16384, s16 + 20 },
                                      { 4096, s4 },      { 16384, s16 },    { 4096, s4 + 30 },
                                      { 16384, s16 + 4 } };
        struct vr_dma_sample onepass[7] = { { 65536, 17000 }, { 4096, s4 }, { 16384, s16 },
                                            { 4096, s4 },     { 16384, s16 }, { 4096, s4 },
                                            { 16384, s16 } };
        struct vr_dma_sample one_size[7] = { { 4096, s4 }, { 4096, s4 }, { 4096, s4 },
                                             { 4096, s4 }, { 4096, s4 }, { 4096, s4 },
                                             { 4096, s4 } };
        struct vr_dma_costs c = { 8500, 1.0 / 50, 0, 0 };

        t_check(vr_dma_fit_best(w, 7, &c.bar_fixed_ns, &c.bar_ns_per_byte) == 0 &&
                    c.bar_fixed_ns > 140 && c.bar_fixed_ns < 160 &&
                    c.bar_ns_per_byte > 1 / 21.2 && c.bar_ns_per_byte < 1 / 20.8,
                "wb_dma/fit_best_drops_cold_first", "fixed %.1f per byte %.5f", c.bar_fixed_ns,
                c.bar_ns_per_byte);
        x = vr_dma_crossover(&c);
        t_check(x >= 256 * 1024 && x <= 300 * 1024, "wb_dma/fit_best_write_crossover", "%zu", x);
        t_check(vr_dma_fit_best(onepass, 7, &f, &b) == 0 && b > 1 / 21.2 && b < 1 / 20.8,
                "wb_dma/fit_best_ignores_first_size", "per byte %.5f", b);
        t_check(vr_dma_fit_best(one_size, 7, &f, &b) == EINVAL && vr_dma_fit_best(w, 2, &f, &b) ==
                    EINVAL, "wb_dma/fit_best_needs_two_sizes", "accepted");
    }

    t_check(vr_dma_fit(4096, 7100, 1 << 20, 7000 + (1 << 20) / 41.0, &f, &b) == 0 &&
                b > 0.0243 && b < 0.0245 && f > 6990 && f < 7010,
            "wb_dma/fit_line", "fixed %.1f per byte %.5f", f, b);
    t_check(vr_dma_fit(4096, 9000, 1 << 20, 8000, &f, &b) == EINVAL, "wb_dma/fit_falling_refused",
            "accepted");
    t_check(vr_dma_fit(4096, 0, 1 << 20, 8000, &f, &b) == EINVAL, "wb_dma/fit_zero_refused",
            "accepted");

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

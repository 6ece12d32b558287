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
#include "helpers/check.h"

int main(void)
{
    /* H200 reads: BAR 1 GB/s (1 ns/B), cuMemcpyDtoH 7 us + 41 GB/s: the engine wins from
     * 7000 / (1 - 0.0244) = 7175 bytes, where the benchmark saw it between 4 and 8 KiB. */
    struct vr_dma_costs rd = { 7000, 1.0 / 41, 1.0 };
    struct vr_dma_costs wr = { 8000, 1.0 / 40, 1.0 / 16.5 };    /* writes: BAR 16.5 GB/s */
    struct vr_dma_costs slow = { 8000, 1.0 / 10, 1.0 / 16.5 };  /* engine slower per byte */
    struct vr_dma_costs tiny = { 10, 1.0 / 41, 1.0 };           /* below the floor */
    struct vr_dma_costs bad = { 7000, 0, 1.0 };
    double f = 0, b = 0;
    size_t x = 0;

    x = vr_dma_crossover(&rd);
    check(x == 7176 || x == 7175, "wb_dma/h200_read_crossover", "%zu", x);
    x = vr_dma_crossover(&wr);
    check(x > 200000 && x < 250000, "wb_dma/h200_write_crossover", "%zu", x);
    check(vr_dma_crossover(&slow) == VR_DMA_NEVER, "wb_dma/engine_slower_never", "%zu",
          vr_dma_crossover(&slow));
    check(vr_dma_crossover(&tiny) == VR_DMA_FLOOR, "wb_dma/floor", "%zu", vr_dma_crossover(&tiny));
    check(vr_dma_crossover(&bad) == VR_DMA_NEVER, "wb_dma/bad_figures_never", "%zu",
          vr_dma_crossover(&bad));

    check(vr_dma_fit(4096, 7100, 1 << 20, 7000 + (1 << 20) / 41.0, &f, &b) == 0 &&
              b > 0.0243 && b < 0.0245 && f > 6990 && f < 7010,
          "wb_dma/fit_line", "fixed %.1f per byte %.5f", f, b);
    check(vr_dma_fit(4096, 9000, 1 << 20, 8000, &f, &b) == EINVAL, "wb_dma/fit_falling_refused",
          "accepted");
    check(vr_dma_fit(4096, 0, 1 << 20, 8000, &f, &b) == EINVAL, "wb_dma/fit_zero_refused",
          "accepted");

    check(vr_dma_parse_crossover("65536", &x) == 0 && x == 65536, "wb_dma/parse_bytes", "%zu", x);
    check(vr_dma_parse_crossover("8K", &x) == 0 && x == 8192 &&
              vr_dma_parse_crossover("2m", &x) == 0 && x == (2u << 20) &&
              vr_dma_parse_crossover("1G", &x) == 0 && x == (1u << 30),
          "wb_dma/parse_suffixes", "%zu", x);
    check(vr_dma_parse_crossover("never", &x) == 0 && x == VR_DMA_NEVER &&
              vr_dma_parse_crossover("OFF", &x) == 0 && x == VR_DMA_NEVER,
          "wb_dma/parse_never", "%zu", x);
    check(vr_dma_parse_crossover("100", &x) == 0 && x == VR_DMA_FLOOR,
          "wb_dma/parse_raised_to_floor", "%zu", x);
    x = 12345;
    check(vr_dma_parse_crossover("", &x) == EINVAL && vr_dma_parse_crossover("-5", &x) == EINVAL &&
              vr_dma_parse_crossover("8KB", &x) == EINVAL &&
              vr_dma_parse_crossover("lots", &x) == EINVAL &&
              vr_dma_parse_crossover("99999999999999999999999", &x) == EINVAL &&
              vr_dma_parse_crossover("17179869184G", &x) == EINVAL && x == 12345,
          "wb_dma/parse_garbage_refused", "%zu", x);
    return check_status();
}

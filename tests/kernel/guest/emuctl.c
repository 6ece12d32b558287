// SPDX-License-Identifier: MIT
/*
 * emuctl.c - the guest's command line to the emulated provider, for /init:
 *   emuctl stats                    prints live_allocs=N live_pins=N callbacks_fired=N total_pins=N
 *   emuctl live_pins                prints the leak counter alone
 *   emuctl alloc SIZE KIND FLAGS    prints the new allocation's address (decimal)
 *   emuctl free VA                  frees it (fires the free callbacks of its pins)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "emu.h"

int main(int argc, char **argv)
{
    struct nvp2p_emu_stats st;
    int ret;

    if (argc == 5 && !strcmp(argv[1], "alloc")) {
        uint64_t va;

        ret = emu_alloc(strtoull(argv[2], NULL, 0), (unsigned)strtoul(argv[3], NULL, 0),
                        (unsigned)strtoul(argv[4], NULL, 0), &va);
        if (ret) {
            fprintf(stderr, "emuctl: ALLOC: %s\n", strerror(ret));
            return 1;
        }
        printf("%llu\n", (unsigned long long)va);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "free")) {
        ret = emu_free(strtoull(argv[2], NULL, 0));
        if (ret)
            fprintf(stderr, "emuctl: FREE: %s\n", strerror(ret));
        return ret ? 1 : 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: emuctl stats|live_pins|alloc SIZE KIND FLAGS|free VA\n");
        return 2;
    }
    ret = emu_stats(&st);
    if (ret) {
        fprintf(stderr, "emuctl: STATS: %s\n", strerror(ret));
        return 1;
    }
    if (!strcmp(argv[1], "live_pins"))
        printf("%llu\n", (unsigned long long)st.live_pins);
    else
        printf("live_allocs=%llu live_pins=%llu callbacks_fired=%llu total_pins=%llu\n",
               (unsigned long long)st.live_allocs, (unsigned long long)st.live_pins,
               (unsigned long long)st.callbacks_fired, (unsigned long long)st.total_pins);
    return 0;
}

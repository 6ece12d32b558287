/* SPDX-License-Identifier: MIT */
/*
 * emu.h - wrappers of the emulated p2p provider's control device (tests/kernel/emu/nvp2p_emu.h,
 * the module in tests/kernel/emu/provider/), for the programs that run in the QEMU guest: the
 * guest tests, the core's and the module's guest checks, and the tools' "emu" memory kind.
 * Each returns 0 or a positive errno. TEST ONLY: nothing installed links this.
 */
#ifndef VRAMIO_TEST_EMU_H
#define VRAMIO_TEST_EMU_H

#include <stddef.h>
#include <stdint.h>

#include "nvp2p_emu.h"

/* The control device, opened once (close-on-exec); -1 with errno when it is missing. */
int emu_fd(void);
int emu_alloc(uint64_t size, unsigned int page_kind, unsigned int flags, uint64_t *va);
int emu_free(uint64_t va);
int emu_write(uint64_t va, const void *buf, size_t len);
int emu_read(uint64_t va, void *buf, size_t len);
int emu_stats(struct nvp2p_emu_stats *st);
int emu_inject(unsigned int what, unsigned int count, int errno_value);
int emu_cb_delay(unsigned int ms);
int emu_phys(uint64_t va, uint64_t *phys);    /* physical address behind va */
int emu_pte(const void *addr, uint64_t *pfn, uint32_t *cache_mode); /* our PTE of addr */
int emu_hold(uint64_t va, uint64_t len, unsigned mode); /* another owner's PAT entry */
int emu_release(uint64_t va);

/* Whether the provider is in its coherent mode (NVP2P_EMU_COHERENT_PARAM says Y). */
int emu_coherent(void);

/*
 * The gates (NVP2P_EMU_GATE_PARAM): close the places in mask, open the others; 0 or an errno.
 * emu_stopped: how many tasks are stopped now at place (one NVP2P_EMU_GATE_* bit), -1 when
 * the provider cannot tell.
 */
int emu_gate(unsigned int mask);
int emu_stopped(unsigned int place);

/* The leak counter and the number of free callbacks fired so far; UINT64_MAX when the
 * provider cannot be asked, which no leak check takes for a count it expected. */
uint64_t emu_live_pins(void);
uint64_t emu_callbacks_fired(void);

#endif /* VRAMIO_TEST_EMU_H */

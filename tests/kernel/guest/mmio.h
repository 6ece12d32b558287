/* SPDX-License-Identifier: MIT */
/*
 * mmio.h - helpers of the guest tests that run gdrdrv on MMIO pages (bar_test.c,
 * bar_life_test.c): allocations of the emulated provider in the memory BAR of QEMU's ivshmem
 * device (NVP2P_EMU_ALLOC_BAR), the x86 PAT memory-type list, and the kernel log.
 *
 * PAT: while a pin is mapped WC every page of it must lie in a write-combining entry of
 * /sys/kernel/debug/x86/pat_memtype_list (BAR pages nobody reserved are mapped UC-), and
 * once the pin is gone no entry may be left on its pages (a leaked reservation forces its
 * type on every later mapping of them).
 */
#ifndef VRAMIO_GUEST_MMIO_H
#define VRAMIO_GUEST_MMIO_H

#include <stddef.h>
#include <stdint.h>

#include "t.h"
#include "emu.h"

#define GPU_PAGE  65536ULL
#define HOST_PAGE 4096ULL
#define BAR_FLAG  NVP2P_EMU_ALLOC_BAR
#define REVERSED  NVP2P_EMU_ALLOC_BAR_REVERSED

extern uint64_t bar_lo, bar_hi;         /* the ivshmem BAR, [lo, hi) */

/*
 * Start of a test program: note where the kernel log ends, check that BAR allocations work
 * and find the BAR, mount debugfs for the PAT list. Returns 1 to go on; 0 when the program
 * should stop with t_status() (a "skip" line was printed when the guest has no ivshmem
 * device, a "not ok" line on any other failure).
 */
int mmio_begin(struct nvp2p_emu_stats *st0);
/* End: the provider's counters are back to st0, no PAT entry is left in the BAR, and the
 * kernel log written since mmio_begin holds no WARNING/BUG/PAT/memtype complaint. */
void mmio_end(const struct nvp2p_emu_stats *st0);
/* A kernel-log record containing `what` is what the test provoked, not a complaint. */
void kmsg_expect(const char *what);

/* Physical address of each host page of [va, va + len), all inside the BAR; NULL if not. */
uint64_t *bar_capture(uint64_t va, uint64_t len, size_t *n);
/* Result lines (nothing without a PAT list): every page under a WC entry / no page in any. */
void check_wc(const char *name, const uint64_t *p, size_t n);
void check_released(const char *name, const uint64_t *p, size_t n);
/* Pages wholly under a WC entry, and pages touching an entry of any type; -1: no PAT list. */
int memtype_cover(const uint64_t *p, size_t n, size_t *wc, size_t *any);
/* PAT entries (of any type) that touch [lo, hi); -1: no PAT list. */
int memtype_entries(uint64_t lo, uint64_t hi);
/*
 * The PTEs of n host pages mapped at map: page i must map p[i] with a cache mode in
 * `modes` (a mask of 1 << NVP2P_EMU_CACHE_*), after one read of the page (PTEs may be made at
 * the first access), or, with modes 0 and without any access, be absent (zapped).
 */
void check_ptes(const char *name, const void *map, const uint64_t *p, size_t n, unsigned modes);
#define MODE(m) (1u << NVP2P_EMU_CACHE_##m)

#endif /* VRAMIO_GUEST_MMIO_H */

// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gdrdrv_wc.c - the bus addresses of a pin's pages, and the WC memory-type reservations of its
 * BAR runs: made by gdrdrv_mmap.c for a WC mapping, released by it when the last mapping
 * goes, or by gdrdrv_pin.c when the pages go first. Calls nothing else of the module.
 */
#include <linux/bitmap.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "gdrdrv_internal.h"

/* Bus address of byte `off` of the pinned range. */
u64 gdrdrv_phys_at(const struct gdrdrv_pin *pin, u64 off)
{
	u64 psize = pin->gpu_page_size;
	u64 pos = (pin->va & (psize - 1)) + off;

	return pin->table->pages[pos / psize]->physical_address + pos % psize;
}

/* The physically contiguous run that starts at byte `off` of the pin, at most len - off long. */
static u64 gdrdrv_run_at(const struct gdrdrv_pin *pin, u64 off, u64 len, u64 *phys)
{
	u64 psize = pin->gpu_page_size;
	u64 run = min(psize - ((pin->va + off) & (psize - 1)), len - off);

	*phys = gdrdrv_phys_at(pin, off);
	while (off + run < len && gdrdrv_phys_at(pin, off + run) == *phys + run)
		run += min(psize, len - off - run);
	return run;
}

/*
 * x86 PAT: each PTE takes the cache mode recorded for its page, and BAR pages that nobody
 * reserved read as UC-, which would make a "WC" mapping uncached. Reserve WC for every run of
 * the pin's BAR pages (pages with no struct page: RAM, as the emulated provider's, keeps its
 * own type). A run that PAT refuses (another owner holds conflicting types on it) keeps what
 * they hold, and is not released later either: PAT finds entries by range, so releasing a run
 * we never reserved would erase or cut another owner's entry. Other architectures have no
 * memory-type tracking: there linux/io.h makes the reserve and free calls no-ops.
 *
 * PAT keeps one kernel allocation per reservation, and any number of pins may cover the same
 * BAR run (one page pinned many times), so a run's reservation is shared by every pin that
 * maps it: the first reserves it, the others take a reference, the last one frees it. Shares
 * are keyed by the run's first page frame; a run of another length that starts there gets a
 * reservation of its own. wc_runs holds two bits per run (run i is the i-th that
 * gdrdrv_run_at gives; at most one per page-table entry): 2i reserved, 2i + 1 shared.
 */
struct gdrdrv_wc_share {
	u64 len;
	unsigned int refs;
};

static DEFINE_MUTEX(gdrdrv_wc_lock);            /* taken under pin->lock */
static DEFINE_XARRAY(gdrdrv_wc_shares);         /* page frame -> struct gdrdrv_wc_share */

/* Under gdrdrv_wc_lock: share run i's new reservation; without memory it stays the pin's own. */
static void gdrdrv_wc_share_new(struct gdrdrv_pin *pin, unsigned long i, u64 phys, u64 len)
{
	struct gdrdrv_wc_share *sh = kmalloc(sizeof(*sh), GFP_KERNEL_ACCOUNT);

	if (!sh)
		return;
	sh->len = len;
	sh->refs = 1;
	if (xa_err(xa_store(&gdrdrv_wc_shares, phys >> PAGE_SHIFT, sh, GFP_KERNEL_ACCOUNT)))
		kfree(sh);
	else
		__set_bit(2 * i + 1, pin->wc_runs);
}

static void gdrdrv_wc_get(struct gdrdrv_pin *pin, unsigned long i, u64 phys, u64 len)
{
	struct gdrdrv_wc_share *sh;

	mutex_lock(&gdrdrv_wc_lock);
	sh = xa_load(&gdrdrv_wc_shares, phys >> PAGE_SHIFT);
	if (sh && sh->len == len) {
		sh->refs++;
		__set_bit(2 * i, pin->wc_runs);
		__set_bit(2 * i + 1, pin->wc_runs);
	} else if (arch_io_reserve_memtype_wc(phys, len)) {
		gdr_info("no WC memory type for [0x%llx, +0x%llx): PAT keeps the existing one\n",
			 phys, len);
	} else {
		__set_bit(2 * i, pin->wc_runs);
		if (!sh)        /* one of another length stays: this reservation is the pin's own */
			gdrdrv_wc_share_new(pin, i, phys, len);
	}
	mutex_unlock(&gdrdrv_wc_lock);
}

static void gdrdrv_wc_put(struct gdrdrv_pin *pin, unsigned long i, u64 phys, u64 len)
{
	struct gdrdrv_wc_share *sh;

	if (!test_bit(2 * i, pin->wc_runs))
		return;
	if (!test_bit(2 * i + 1, pin->wc_runs)) {
		arch_io_free_memtype_wc(phys, len);
		return;
	}
	mutex_lock(&gdrdrv_wc_lock);
	sh = xa_load(&gdrdrv_wc_shares, phys >> PAGE_SHIFT);
	if (sh && !--sh->refs) {
		xa_erase(&gdrdrv_wc_shares, phys >> PAGE_SHIFT);
		kfree(sh);
		arch_io_free_memtype_wc(phys, len);
	}
	mutex_unlock(&gdrdrv_wc_lock);
}

static void gdrdrv_wc_walk(struct gdrdrv_pin *pin, bool reserve)
{
	u64 len = pin->mapped_size, off = 0, phys, run;
	unsigned long i;

	for (i = 0; off < len; i++, off += run) {
		run = gdrdrv_run_at(pin, off, len, &phys);
		if (!reserve)
			gdrdrv_wc_put(pin, i, phys, run);
		else if (!pfn_valid(phys >> PAGE_SHIFT))
			gdrdrv_wc_get(pin, i, phys, run);
	}
}

/* Under pin->lock, while the page table is valid. 0, or -ENOMEM with nothing reserved. */
int gdrdrv_wc_reserve(struct gdrdrv_pin *pin)
{
	u64 psize = pin->gpu_page_size;

	if (pin->wc_runs)
		return 0;               /* reserved for an earlier mapping that is still there */
	pin->wc_runs = bitmap_zalloc(2 * DIV_ROUND_UP_ULL((pin->va & (psize - 1)) +
							  pin->mapped_size, psize),
				     GFP_KERNEL_ACCOUNT);
	if (!pin->wc_runs)
		return -ENOMEM;
	gdrdrv_wc_walk(pin, true);
	return 0;
}

/* Under pin->lock, while the page table is still valid: exactly what was reserved goes. */
void gdrdrv_wc_release(struct gdrdrv_pin *pin)
{
	if (!pin->wc_runs)
		return;
	gdrdrv_wc_walk(pin, false);
	bitmap_free(pin->wc_runs);
	pin->wc_runs = NULL;
}

// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * nvp2p_probe.c - calls the emulated provider's nvidia_p2p_* exports directly (TEST ONLY), to
 * prove the contract gdrdrv relies on without going through gdrdrv, which validates its own
 * input first: page table layout and flags, 64 KiB alignment and range checks with -EINVAL,
 * persistent and non-persistent put rules, and a free callback fired by a FREE from user
 * space. /init makes the allocations, passes their addresses as parameters, and reads the
 * results from the kernel log: "nvp2p_probe: ok NAME" / "nvp2p_probe: not ok NAME: why".
 *   va           4 x 64 KiB allocation, page kind 1, not cacheable
 *   va_cacheable 4 x 128 KiB allocation, page kind 2, CPU_CACHEABLE
 *   va_free      64 KiB allocation pinned with a callback at load; /init FREEs it; the
 *                verdict on the callback is printed at unload
 */
#include <linux/atomic.h>
#include <linux/mm.h>
#include <linux/module.h>

#include "nv_p2p.h"

#define SZ64K (64ULL * 1024)

static unsigned long va, va_cacheable, va_free;
module_param(va, ulong, 0444);
module_param(va_cacheable, ulong, 0444);
module_param(va_free, ulong, 0444);

static atomic_t cb_count = ATOMIC_INIT(0);
static int cb_free_ret = -1;
static struct nvidia_p2p_page_table *held;

static void report(bool ok, const char *name, const char *why, long a, long b)
{
	if (ok)
		pr_info("nvp2p_probe: ok %s\n", name);
	else
		pr_info("nvp2p_probe: not ok %s: %s (%ld, %ld)\n", name, why, a, b);
}

static void never_called(void *data)
{
	pr_info("nvp2p_probe: not ok unexpected_callback: data %p\n", data);
}

static void on_free(void *data)
{
	atomic_inc(&cb_count);
	cb_free_ret = nvidia_p2p_free_page_table(held);
}

/* Every physical address is RAM aligned to the table's page size. */
static bool table_pages_sane(struct nvidia_p2p_page_table *t, u64 page_bytes)
{
	u32 i;

	for (i = 0; i < t->entries; i++) {
		u64 pa = t->pages[i]->physical_address;

		if (!pa || (pa & (page_bytes - 1)) || !pfn_valid(PHYS_PFN(pa)))
			return false;
	}
	return true;
}

static void probe_layout(void)
{
	struct nvidia_p2p_page_table *t = NULL;
	int ret = nvidia_p2p_get_pages(0, 0, va, 4 * SZ64K, &t, never_called, NULL);

	report(!ret && t, "get_pages", "ret", ret, 0);
	if (ret || !t)
		return;
	report(t->version == NVIDIA_P2P_PAGE_TABLE_VERSION && t->page_size == NVIDIA_P2P_PAGE_SIZE_64KB &&
	       t->entries == 4 && t->gpu_uuid && !t->flags, "table_fields", "version/page_size",
	       t->version, t->page_size);
	report(table_pages_sane(t, SZ64K), "table_pages", "bad physical address", t->entries, 0);
	ret = nvidia_p2p_put_pages(0, 0, va + SZ64K, t);
	report(ret == -EINVAL, "put_pages_wrong_va", "ret", ret, 0);
	ret = nvidia_p2p_put_pages_persistent(va, t, 0);
	report(ret == -EINVAL, "put_persistent_on_plain_pin", "ret", ret, 0);
	ret = nvidia_p2p_put_pages(0, 0, va, t);
	report(!ret, "put_pages", "ret", ret, 0);
	ret = nvidia_p2p_put_pages(0, 0, va, t);
	report(ret == -EINVAL, "put_pages_twice", "ret", ret, 0);
}

static void probe_validation(void)
{
	static const struct { u64 off, len; const char *name; } bad[] = {
		{ 4096, SZ64K, "unaligned_address" },
		{ 0, SZ64K + 4096, "unaligned_length" },
		{ 0, 0, "zero_length" },
		{ 3 * SZ64K, 2 * SZ64K, "past_allocation_end" },
		{ 4 * SZ64K, SZ64K, "after_allocation" },
	};
	struct nvidia_p2p_page_table *t = NULL;
	char name[64];
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		ret = nvidia_p2p_get_pages(0, 0, va + bad[i].off, bad[i].len, &t, never_called, NULL);
		snprintf(name, sizeof(name), "reject_%s", bad[i].name);
		report(ret == -EINVAL, name, "ret", ret, 0);
		if (!ret)
			nvidia_p2p_put_pages(0, 0, va + bad[i].off, t);
	}
	ret = nvidia_p2p_get_pages(0, 0, 0x1000000, SZ64K, &t, never_called, NULL);
	report(ret == -EINVAL, "reject_unknown_address", "ret", ret, 0);
	ret = nvidia_p2p_get_pages(0, 0, va, SZ64K, &t, NULL, NULL);
	report(ret == -EINVAL, "reject_null_callback", "ret", ret, 0);
	ret = nvidia_p2p_get_pages(0, 0, va, SZ64K, NULL, never_called, NULL);
	report(ret == -EINVAL, "reject_null_table", "ret", ret, 0);
	ret = nvidia_p2p_get_pages_persistent(va, SZ64K, &t, 0x2);
	report(ret == -EINVAL, "reject_unknown_persistent_flag", "ret", ret, 0);
	/* Not a coherent platform (the provider's default): BAR1 on request is refused, as
	 * NVIDIA's driver refuses it on a GPU without a coherent link. */
	ret = nvidia_p2p_get_pages_persistent(va, SZ64K, &t, NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING);
	report(ret == -ENOTSUPP, "reject_force_bar1_without_coherent_link", "ret", ret, 0);
}

/* 128 KiB pages, CPU_CACHEABLE: a pin at a 64 KiB boundary starts inside entry 0. */
static void probe_cacheable(void)
{
	struct nvidia_p2p_page_table *t = NULL;
	int ret = nvidia_p2p_get_pages_persistent(va_cacheable + SZ64K, 2 * SZ64K, &t, 0);

	report(!ret, "get_pages_persistent_128k", "ret", ret, 0);
	if (ret)
		return;
	report(t->page_size == NVIDIA_P2P_PAGE_SIZE_128KB && t->entries == 2 &&
	       t->flags == NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE && table_pages_sane(t, 2 * SZ64K),
	       "table_128k_cacheable", "page_size/entries", t->page_size, t->entries);
	ret = nvidia_p2p_put_pages(0, 0, va_cacheable + SZ64K, t);
	report(ret == -EINVAL, "plain_put_on_persistent_pin", "ret", ret, 0);
	ret = nvidia_p2p_put_pages_persistent(va_cacheable, t, 0);
	report(ret == -EINVAL, "put_persistent_wrong_va", "ret", ret, 0);
	ret = nvidia_p2p_put_pages_persistent(va_cacheable + SZ64K, t, 0);
	report(!ret, "put_pages_persistent", "ret", ret, 0);
}

static int __init probe_init(void)
{
	int ret;

	if (!va || !va_cacheable || !va_free) {
		pr_info("nvp2p_probe: not ok params: va, va_cacheable and va_free are required\n");
		return 0;
	}
	probe_layout();
	probe_validation();
	probe_cacheable();
	ret = nvidia_p2p_get_pages(0, 0, va_free, SZ64K, &held, on_free, NULL);
	report(!ret, "pin_for_callback", "ret", ret, 0);
	if (ret)
		held = NULL;
	return 0;
}

static void __exit probe_exit(void)
{
	if (!held)
		return;
	report(atomic_read(&cb_count) == 1 && cb_free_ret == 0, "callback_on_free",
	       "callbacks/free_page_table", atomic_read(&cb_count), cb_free_ret);
	if (!atomic_read(&cb_count))
		nvidia_p2p_put_pages(0, 0, va_free, held);
}

module_init(probe_init);
module_exit(probe_exit);
MODULE_DESCRIPTION("Direct test of the emulated NVIDIA p2p provider (test only)");
MODULE_LICENSE("Dual MIT/GPL");

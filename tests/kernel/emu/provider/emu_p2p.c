// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * emu_p2p.c - the nvidia_p2p_* exports of the emulated provider (TEST ONLY). Semantics follow
 * docs/nv-p2p.md: 64 KiB aligned address and length inside one allocation, negative
 * errnos, a free callback per non-persistent pin that fires when the allocation is freed,
 * put_pages waiting for a callback that is running (in the orders below that wait), and
 * persistent pins that keep the RAM valid until put.
 *
 * A page table lists the whole GPU pages that intersect [va, va + length): with 128 KiB pages
 * a pin at a 64 KiB boundary starts in the middle of entry 0, as on the real driver.
 */
#include <linux/io.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/sched.h>

#include "emu.h"
#include "nvp2p_emu.h"

#define EMU_P2P_ALIGN (64ULL * 1024)

static const u8 emu_uuid[16] = { 'v', 'r', 'a', 'm', 'i', 'o', '-', 'e',
				 'm', 'u', '-', 'g', 'p', 'u', 0x00, 0x01 };

/*
 * coherent=1: the provider acts as NVIDIA's driver does on a CPU-coherent platform (Grace in
 * CDMM mode): the page tables of RAM allocations say CPU_CACHEABLE, except those of pins made
 * with FORCE_BAR1_MAPPING, which reach the memory through BAR1 and are not coherent. With
 * coherent=0 (a GPU without a coherent link, as every PCIe GPU) FORCE_BAR1_MAPPING is refused
 * with the kernel's ENOTSUPP, as NVIDIA's driver refuses it there (NV_ERR_NOT_SUPPORTED). Writable
 * at run time (/sys/module/nvp2p_emu/parameters/coherent): the guest switches platforms
 * without reloading the provider, which gdrdrv depends on. Read when a pin is made.
 */
static bool emu_coherent;
module_param_named(coherent, emu_coherent, bool, 0644);
MODULE_PARM_DESC(coherent, "page tables of RAM allocations say CPU_CACHEABLE, except FORCE_BAR1 pins");

/*
 * put_unlinked_ok=1: nvidia_p2p_put_pages returns 0, as NVIDIA's driver does, for a table
 * that its free callback has already unlinked (NVIDIA maps "not found" to success there);
 * 0 (default): -EINVAL, as for any unknown table. Either way it does not wait for a callback
 * whose table is unlinked. put_delay_ms and unlink_delay_ms widen the window in which that
 * matters: put_pages sleeps before it looks the table up, free_page_table (called from inside
 * the consumer's callback) sleeps after it unlinked the table. Writable at run time
 * (/sys/module/nvp2p_emu/parameters/). The same places have gates that hold a task there
 * until a test lets it go (emu_gate.c), which the race tests use instead.
 */
static bool emu_put_unlinked_ok;
module_param_named(put_unlinked_ok, emu_put_unlinked_ok, bool, 0644);
MODULE_PARM_DESC(put_unlinked_ok, "put_pages of a table its free callback unlinked returns 0 (NVIDIA's way), not -EINVAL");
static unsigned int emu_put_delay_ms;
module_param_named(put_delay_ms, emu_put_delay_ms, uint, 0644);
MODULE_PARM_DESC(put_delay_ms, "put_pages sleeps this long before it looks the table up (at most 1000)");
static unsigned int emu_unlink_delay_ms;
module_param_named(unlink_delay_ms, emu_unlink_delay_ms, uint, 0644);
MODULE_PARM_DESC(unlink_delay_ms, "free_page_table sleeps this long after unlinking the table (at most 1000)");

/*
 * order: which teardown order FREE and put_pages follow for non-persistent pins (writable at
 * run time; read when FREE starts, and by put_pages and free_page_table when called):
 *   0 (EMU_ORDER_CONSUMER_FREES, default): the consumer's callback calls
 *     nvidia_p2p_free_page_table, which unlinks the table (older NVIDIA drivers); put_pages
 *     waits for a running callback while the table is listed, then fails (see
 *     put_unlinked_ok) once the callback has unlinked it.
 *   1 (EMU_ORDER_NVIDIA): NVIDIA's open driver as published. FREE holds the provider's
 *     big lock (emu_api_lock, in the place of the resource manager's API lock) across
 *     calling the callback with the table still listed and then unlinking and freeing the
 *     table itself; free_page_table does nothing; put_pages takes the same lock, so it
 *     either unlinks first (no callback ever comes) or returns 0 after the callback has
 *     returned and the table is gone ("not found" is success).
 *   2 (EMU_ORDER_UNLINK_FIRST): the window NVIDIA's lock closes, for the consumer's sake:
 *     FREE unlinks the table, then calls the callback holding nothing put_pages waits for,
 *     and frees the table after it; put_pages of the unlinked table returns 0 at once, so a
 *     consumer can be told "put" before its callback is entered. cb_delay (NVP2P_EMU_IOC_
 *     CB_DELAY) widens that window.
 */
static unsigned int emu_order;
module_param_named(order, emu_order, uint, 0644);
MODULE_PARM_DESC(order, "teardown order: 0 consumer frees the table, 1 NVIDIA's, 2 unlink before the callback");
enum { EMU_ORDER_CONSUMER_FREES, EMU_ORDER_NVIDIA, EMU_ORDER_UNLINK_FIRST };
static DEFINE_MUTEX(emu_api_lock);

static unsigned int emu_get_order(void)
{
	unsigned int o = READ_ONCE(emu_order);

	return o <= EMU_ORDER_UNLINK_FIRST ? o : EMU_ORDER_CONSUMER_FREES;
}

/* Stop at place for its gate, else for the delay that *ms says (at most 1 s). */
static void emu_stop_param(unsigned int place, unsigned int *ms)
{
	emu_stop_at(place, min(READ_ONCE(*ms), 1000U));
}

static void emu_pin_free_struct(struct emu_pin *p)
{
	kfree(p->page_ptrs);
	kfree(p->page_array);
	kfree(p);
}

/* Build a pin of [va, va + len); caller holds emu_lock. bar1: FORCE_BAR1_MAPPING was asked. */
static int emu_make_pin(u64 va, u64 len, bool persistent, bool bar1, struct emu_pin **out)
{
	struct emu_alloc *a;
	struct emu_pin *p;
	unsigned long first, last, i;

	if (!len || (va & (EMU_P2P_ALIGN - 1)) || (len & (EMU_P2P_ALIGN - 1)) || va + len < va)
		return -EINVAL;
	a = emu_find_alloc(va, len);
	if (!a)
		return -EINVAL;

	first = (va - a->va) / a->chunk;
	last = (va + len - 1 - a->va) / a->chunk;
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->page_array = kcalloc(last - first + 1, sizeof(*p->page_array), GFP_KERNEL);
	p->page_ptrs = kcalloc(last - first + 1, sizeof(*p->page_ptrs), GFP_KERNEL);
	if (!p->page_array || !p->page_ptrs) {
		emu_pin_free_struct(p);
		return -ENOMEM;
	}
	for (i = first; i <= last; i++) {
		p->page_array[i - first].physical_address = emu_chunk_phys(a, i);
		p->page_ptrs[i - first] = &p->page_array[i - first];
	}
	memcpy(p->uuid, emu_uuid, sizeof(p->uuid));
	p->table.version = NVIDIA_P2P_PAGE_TABLE_VERSION;
	p->table.page_size = a->page_kind;
	p->table.pages = p->page_ptrs;
	p->table.entries = last - first + 1;
	p->table.gpu_uuid = p->uuid;
	p->table.flags = ((a->flags & NVP2P_EMU_ALLOC_CPU_CACHEABLE) ||
			  (READ_ONCE(emu_coherent) && !a->bar && !bar1)) ?
			 NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE : 0;
	p->alloc = a;
	p->va = va;
	p->persistent = persistent;
	p->listed = true;
	list_add_tail(&p->node, &emu_pins);
	if (persistent)
		a->persistent_pins++;
	emu_live_pins++;
	emu_total_pins++;
	*out = p;
	return 0;
}

static struct emu_pin *emu_find_pin(struct nvidia_p2p_page_table *table)
{
	struct emu_pin *p;

	list_for_each_entry(p, &emu_pins, node)
		if (&p->table == table)
			return p;
	return NULL;
}

/* Take a pin's table out of circulation; caller holds emu_lock. */
static void emu_unlist_pin(struct emu_pin *p)
{
	list_del(&p->node);
	p->listed = false;
	emu_live_pins--;
}

int nvidia_p2p_get_pages(u64 p2p_token, u32 va_space, u64 virtual_address, u64 length,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data)
{
	struct emu_pin *p;
	int ret;

	bool api = emu_get_order() == EMU_ORDER_NVIDIA;

	if (!page_table || !free_callback)
		return -EINVAL;
	if (api)
		mutex_lock(&emu_api_lock);
	mutex_lock(&emu_lock);
	ret = emu_take_injected(NVP2P_EMU_FAIL_GET_PAGES);
	if (!ret)
		ret = emu_make_pin(virtual_address, length, false, false, &p);
	if (!ret) {
		p->free_callback = free_callback;
		p->data = data;
		*page_table = &p->table;
	}
	mutex_unlock(&emu_lock);
	if (api)
		mutex_unlock(&emu_api_lock);
	return ret;
}
EXPORT_SYMBOL(nvidia_p2p_get_pages);

int nvidia_p2p_get_pages_persistent(u64 virtual_address, u64 length,
				    struct nvidia_p2p_page_table **page_table, u32 flags)
{
	struct emu_pin *p;
	int ret;

	if (!page_table || (flags & ~NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING))
		return -EINVAL;
	if ((flags & NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING) && !READ_ONCE(emu_coherent))
		return -ENOTSUPP;
	mutex_lock(&emu_lock);
	ret = emu_take_injected(NVP2P_EMU_FAIL_GET_PAGES_PERSISTENT);
	if (!ret)
		ret = emu_make_pin(virtual_address, length, true,
				   flags & NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING, &p);
	if (!ret)
		*page_table = &p->table;
	mutex_unlock(&emu_lock);
	return ret;
}
EXPORT_SYMBOL(nvidia_p2p_get_pages_persistent);

/*
 * put_pages in orders 1 and 2: a listed table is unlinked and freed (no callback comes for it
 * any more); one not listed is taken to be one FREE unlinked, and "not found" is success.
 */
static int emu_put_listed(u64 virtual_address, struct nvidia_p2p_page_table *page_table)
{
	struct emu_pin *p;
	int ret;

	mutex_lock(&emu_lock);
	p = emu_find_pin(page_table);
	if (!p) {
		mutex_unlock(&emu_lock);
		return 0;
	}
	if (p->persistent || p->va != virtual_address || p->cb_state != EMU_CB_NONE) {
		mutex_unlock(&emu_lock);
		return -EINVAL;
	}
	ret = emu_take_injected(NVP2P_EMU_FAIL_PUT_PAGES);
	if (!ret)
		emu_unlist_pin(p);
	mutex_unlock(&emu_lock);
	if (!ret)
		emu_pin_free_struct(p);
	return ret;
}

/* Bumped under emu_lock each time a free callback finishes; put_pages waits on it. */
static unsigned long emu_cb_seq;

int nvidia_p2p_put_pages(u64 p2p_token, u32 va_space, u64 virtual_address,
			 struct nvidia_p2p_page_table *page_table)
{
	unsigned int order = emu_get_order();
	struct emu_pin *p;
	unsigned long seq;
	int ret;

	if (!page_table)
		return -EINVAL;
	emu_stop_param(NVP2P_EMU_GATE_PUT, &emu_put_delay_ms);
	if (order == EMU_ORDER_NVIDIA) {
		/* Waits out a FREE in progress: its callback and the unlink after it. */
		mutex_lock(&emu_api_lock);
		ret = emu_put_listed(virtual_address, page_table);
		mutex_unlock(&emu_api_lock);
		return ret;
	}
	if (order == EMU_ORDER_UNLINK_FIRST)
		return emu_put_listed(virtual_address, page_table);
	mutex_lock(&emu_lock);
	/*
	 * Like the real driver: wait for a free callback running on this table. The wait
	 * condition reads only the sequence number, so nothing blocks inside it.
	 */
	while ((p = emu_find_pin(page_table)) && p->cb_state == EMU_CB_RUNNING) {
		if (p->cb_task == current) {
			/* The consumer broke the contract; waiting here would hang the test. */
			mutex_unlock(&emu_lock);
			pr_err("nvp2p_emu: put_pages called from inside its own free callback\n");
			return -EDEADLK;
		}
		seq = emu_cb_seq;
		mutex_unlock(&emu_lock);
		wait_event(emu_cb_wq, READ_ONCE(emu_cb_seq) != seq);
		mutex_lock(&emu_lock);
	}
	if (!p) {
		/* Unknown, or unlinked by its free callback (which may still be running). */
		mutex_unlock(&emu_lock);
		return READ_ONCE(emu_put_unlinked_ok) ? 0 : -EINVAL;
	}
	if (p->persistent || p->va != virtual_address) {
		mutex_unlock(&emu_lock);
		return -EINVAL;
	}
	if (p->cb_state == EMU_CB_DONE) {
		/* The callback ran and the consumer kept the table: a consumer bug. */
		mutex_unlock(&emu_lock);
		pr_err("nvp2p_emu: put_pages on a table whose free callback already ran\n");
		return -EINVAL;
	}
	ret = emu_take_injected(NVP2P_EMU_FAIL_PUT_PAGES);
	if (ret) {
		/* Injected: the table and its callback stay registered. */
		mutex_unlock(&emu_lock);
		emu_hold_put_failed();
		return ret;
	}
	emu_unlist_pin(p);
	mutex_unlock(&emu_lock);
	emu_pin_free_struct(p);
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_put_pages);

int nvidia_p2p_put_pages_persistent(u64 virtual_address,
				    struct nvidia_p2p_page_table *page_table, u32 flags)
{
	struct emu_pin *p;
	struct emu_alloc *a;

	if (!page_table || (flags & ~NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING))
		return -EINVAL;
	mutex_lock(&emu_lock);
	p = emu_find_pin(page_table);
	if (!p || !p->persistent || p->va != virtual_address) {
		mutex_unlock(&emu_lock);
		return -EINVAL;
	}
	a = p->alloc;
	emu_unlist_pin(p);
	a->persistent_pins--;
	emu_alloc_maybe_release(a);
	mutex_unlock(&emu_lock);
	emu_pin_free_struct(p);
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_put_pages_persistent);

int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table)
{
	struct emu_pin *p;
	bool free_now;

	if (!page_table)
		return -EINVAL;
	if (emu_get_order() != EMU_ORDER_CONSUMER_FREES)
		return 0;               /* the provider frees the table after the callback */
	mutex_lock(&emu_lock);
	p = emu_find_pin(page_table);
	if (!p || p->cb_state == EMU_CB_NONE) {
		/* Only valid for a table whose free callback fired. */
		mutex_unlock(&emu_lock);
		pr_err("nvp2p_emu: free_page_table on a table with no free callback\n");
		return -EINVAL;
	}
	emu_unlist_pin(p);
	/* While the callback runs, FREE still holds the pin; it frees it afterwards. */
	free_now = p->cb_state == EMU_CB_DONE;
	mutex_unlock(&emu_lock);
	if (free_now)
		emu_pin_free_struct(p);
	else
		/* inside the consumer's callback */
		emu_stop_param(NVP2P_EMU_GATE_UNLINK, &emu_unlink_delay_ms);
	return 0;
}
EXPORT_SYMBOL(nvidia_p2p_free_page_table);

/*
 * The FREE ioctl: unlist the allocation, then run the free callback of every non-persistent
 * pin outside emu_lock (in order 0 the callback calls nvidia_p2p_free_page_table, and the
 * consumer's callback may take locks that its own put_pages path holds), in the order that
 * emu_order says. The RAM lives on while persistent pins hold it.
 */
int emu_free_allocation(u64 va)
{
	struct emu_alloc *a = NULL, *it;
	unsigned int order = emu_get_order();
	struct emu_pin *p, *tmp;
	LIST_HEAD(fire);
	unsigned int delay;

	if (order == EMU_ORDER_NVIDIA)
		mutex_lock(&emu_api_lock);      /* to the end: callbacks, then the unlinks */
	mutex_lock(&emu_lock);
	list_for_each_entry(it, &emu_allocs, node)
		if (it->va == va) {
			a = it;
			break;
		}
	if (!a) {
		mutex_unlock(&emu_lock);
		if (order == EMU_ORDER_NVIDIA)
			mutex_unlock(&emu_api_lock);
		return -EINVAL;
	}
	list_del(&a->node);
	a->freed = true;
	/*
	 * Ours until the end: between here and the release below emu_lock is dropped, and the
	 * put of the last persistent pin (or the end of a READ) may come then. Without this hold
	 * that put released the allocation and FREE's own release used it after the free.
	 */
	a->freeing = true;
	emu_live_allocs--;
	list_for_each_entry_safe(p, tmp, &emu_pins, node) {
		if (p->alloc != a || p->persistent || p->cb_state != EMU_CB_NONE)
			continue;
		p->cb_state = EMU_CB_RUNNING;
		list_add_tail(&p->fire_node, &fire);
		a->running_cbs++;
		if (order == EMU_ORDER_UNLINK_FIRST)
			emu_unlist_pin(p);      /* put_pages now says 0 without waiting */
	}
	delay = emu_cb_delay_ms;
	mutex_unlock(&emu_lock);

	/* A test may widen (cb_delay) or hold open (its gate) the window in which put_pages
	 * must wait for the callback. */
	if (!list_empty(&fire))
		emu_stop_at(NVP2P_EMU_GATE_CB, delay);

	/* The pins on `fire` stay allocated while RUNNING, whatever free_page_table does. */
	list_for_each_entry_safe(p, tmp, &fire, fire_node) {
		bool free_now;

		WRITE_ONCE(p->cb_task, current);
		emu_hold_cb_begin();
		p->free_callback(p->data);
		emu_hold_cb_end();
		mutex_lock(&emu_lock);
		list_del(&p->fire_node);
		if (order == EMU_ORDER_NVIDIA && p->listed)
			emu_unlist_pin(p);      /* after the callback, still under emu_api_lock */
		p->cb_state = EMU_CB_DONE;
		WRITE_ONCE(emu_cb_seq, emu_cb_seq + 1);
		emu_callbacks_fired++;
		a->running_cbs--;
		free_now = !p->listed;
		mutex_unlock(&emu_lock);
		if (free_now)
			emu_pin_free_struct(p);
		wake_up_all(&emu_cb_wq);
	}

	mutex_lock(&emu_lock);
	a->freeing = false;
	emu_alloc_maybe_release(a);
	mutex_unlock(&emu_lock);
	if (order == EMU_ORDER_NVIDIA)
		mutex_unlock(&emu_api_lock);
	return 0;
}

/* Module exit: the consumers are gone (they depend on us), so any table left is a leak. */
void emu_drop_all_pins(void)
{
	struct emu_pin *p, *tmp;

	mutex_lock(&emu_lock);
	list_for_each_entry_safe(p, tmp, &emu_pins, node) {
		pr_err("nvp2p_emu: leaked page table of va 0x%llx at unload\n", p->va);
		emu_unlist_pin(p);
		/* Only a persistent pin keeps its allocation alive; others may outlive it. */
		if (p->persistent) {
			p->alloc->persistent_pins--;
			emu_alloc_maybe_release(p->alloc);
		}
		emu_pin_free_struct(p);
	}
	mutex_unlock(&emu_lock);
}

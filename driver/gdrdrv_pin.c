// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gdrdrv_pin.c - pins of GPU memory: the NVIDIA p2p calls, the free callback of
 * non-persistent pins, and the handle table.
 *
 * A handle is the mmap page offset of its pin, so the handle table is also an offset
 * allocator: each pin reserves [handle, handle + npages) and no two live pins of a file
 * overlap. Tables are per open file, as the address_space in which the file's mappings are
 * linked and zapped by offset range (gdrdrv_main.c): one file's pins can neither take another
 * file's offsets nor zap its mappings, and one file fragmenting its space blocks nobody else.
 * Handles stay below 2^32 because upstream's library keeps them in 32 bits. Allocation moves
 * a cursor forward and wraps to the start when the space runs out, skipping live pins; it
 * fails (ENOSPC) only when no gap is large enough.
 *
 * A pin's GPU pages are given back when it leaves the table (UNPIN, release of the file),
 * after its mappings are zapped: the fault handler answers SIGBUS from then on, so no PTE can
 * come back, and nvidia_p2p_put_pages* never runs from munmap (under mmap_lock). The struct
 * lives on while VMAs point at it.
 */
#include <linux/completion.h>
#include <linux/errno.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/timex.h>
#include <linux/xarray.h>

#include "gdrdrv_internal.h"

/* End of the handle space: 2^32 unless offset_space_log2 shrinks it (tests of the wrap). */
#define GDRDRV_HANDLE_LIMIT BIT_ULL(gdrdrv_offset_space_log2)

static atomic_long_t gdrdrv_npins;        /* pin structs alive, for the params file */

/*
 * Before 2.5 a library cannot ask (GET_ATTR) and takes every pin for a callback pin, as those
 * modules made them: so does an older ABI presented here.
 */
bool gdrdrv_persistent_supported(void)
{
	return GDRDRV_HAVE_PERSISTENT && READ_ONCE(gdrdrv_use_persistent_mapping) &&
	       gdrdrv_abi >= GDRDRV_VERSION_WITH_GET_ATTR;
}

bool gdrdrv_force_pcie_supported(void)
{
	return GDRDRV_HAVE_FORCE_BAR1 && gdrdrv_persistent_supported();
}

unsigned long gdrdrv_pin_count(void)
{
	return atomic_long_read(&gdrdrv_npins);
}

/* Find room for pin->npages in the file's table and insert the pin there. Under gf->lock. */
GDRDRV_TESTED int gdrdrv_handle_insert(struct gdrdrv_file *gf, struct gdrdrv_pin *pin)
{
	u64 start = gf->cursor, first = gf->cursor;
	bool wrapped = false;
	int ret;

	for (;;) {
		unsigned long idx = start;
		struct gdrdrv_pin *other;

		if (start + pin->npages > GDRDRV_HANDLE_LIMIT) {
			if (wrapped)
				return -ENOSPC;
			wrapped = true;
			start = 1;
			continue;
		}
		if (wrapped && start >= first)
			return -ENOSPC;         /* every start was tried */
		other = xa_find(&gf->handles, &idx, start + pin->npages - 1, XA_PRESENT);
		if (!other)
			break;
		start = idx + other->npages;    /* skip past the live range */
	}
	pin->handle = start;
	ret = xa_insert(&gf->handles, start, pin, GFP_KERNEL_ACCOUNT);
	if (ret) {
		pin->handle = 0;
		return ret;
	}
	gf->cursor = start + pin->npages;
	return 0;
}

/* Zap every CPU mapping of the pin; the next access faults, and the fault handler decides. */
void gdrdrv_pin_zap(struct gdrdrv_pin *pin)
{
	if (!pin->handle)
		return;
	unmap_mapping_range(&pin->owner->mapping, (loff_t)pin->handle << PAGE_SHIFT,
			    (loff_t)pin->npages << PAGE_SHIFT, 1);
}

/*
 * The free callback's data is not the pin's address but a number that names it in
 * gdrdrv_cb_pins, never reused (64 bits): a callback that comes after its pin was freed finds
 * nothing and touches nothing. The pin leaves gdrdrv_cb_pins when its last reference goes,
 * and the callback takes a reference of its own under the same lock, so a callback that
 * found its pin keeps it alive until it has finished with it, whatever the freeing side
 * waits for. Which orders of callback, unlink and put_pages a provider may produce, and
 * which of them NVIDIA's own locking excludes, is in driver/README.md ("Teardown orders").
 */
static DEFINE_XARRAY(gdrdrv_cb_pins);
static atomic64_t gdrdrv_cb_seq;

/*
 * Free callbacks that have been entered and not yet left. Module exit waits for it to be
 * zero, so a callback's last steps (an orphan's module reference dropped first) never run
 * in freed module text; the decrement is the callback's last access to module data.
 */
static atomic_t gdrdrv_cb_active = ATOMIC_INIT(0);

static int gdrdrv_cb_register(struct gdrdrv_pin *pin)
{
	unsigned long id = (unsigned long)atomic64_inc_return(&gdrdrv_cb_seq);
	int ret = xa_insert(&gdrdrv_cb_pins, id, pin, GFP_KERNEL_ACCOUNT);

	if (!ret)
		pin->cb_id = id;
	return ret;
}

/* The pin that callback data names, with a reference for the callback; NULL if it is gone. */
static struct gdrdrv_pin *gdrdrv_cb_pin_get(void *data)
{
	struct gdrdrv_pin *pin;

	xa_lock(&gdrdrv_cb_pins);
	pin = xa_load(&gdrdrv_cb_pins, (unsigned long)data);
	if (pin && !kref_get_unless_zero(&pin->ref))
		pin = NULL;             /* being freed: its put_pages saw no callback */
	xa_unlock(&gdrdrv_cb_pins);
	return pin;
}

/*
 * Called by the NVIDIA driver when the memory under a non-persistent pin goes away. Does its
 * work under pin->lock and then completes cb_done, for a freeing side that must not give the
 * pages back before the callback has done so; the pin itself is kept by the callback's own
 * reference, not by the lock or the completion (mutex_unlock may touch the mutex after a
 * waiter has taken it).
 *
 * An orphan (put_pages failed before this callback ran, see gdrdrv_put_pages) has nobody
 * waiting for it: the callback drops the table's reference, and the module reference the
 * orphan held as soon as it has counted itself in gdrdrv_cb_active: from there on module
 * exit waits for it to leave instead, which a module reference could not do (its last put
 * would come before the callback's return through this module's text).
 */
static void gdrdrv_free_callback(void *data)
{
	struct gdrdrv_pin *pin;
	bool orphan;

	atomic_inc(&gdrdrv_cb_active);
	pin = gdrdrv_cb_pin_get(data);
	if (!pin) {
		gdr_info("free callback for a pin already freed (id %lu)\n",
			 (unsigned long)data);
		goto out;
	}
	mutex_lock(&pin->lock);
	pin->cb_fired = true;
	orphan = pin->orphan;
	if (orphan)
		module_put(THIS_MODULE);
	gdr_info("free callback for va 0x%llx handle 0x%llx\n", pin->va, pin->handle);
	if (!pin->unpinned)
		gdrdrv_pin_zap(pin);    /* a detached one was zapped; its offsets may be reused */
	gdrdrv_wc_release(pin);         /* needs the page table: before it goes */
	nvidia_p2p_free_page_table(pin->table);
	mutex_unlock(&pin->lock);
	complete_all(&pin->cb_done);
	if (orphan)
		gdrdrv_pin_put(pin);    /* the table's */
	gdrdrv_pin_put(pin);            /* the callback's */
out:
	/*
	 * Last: after this, module exit may go on (gdrdrv_pin_module_exit). Exit looks for zero
	 * instead of being woken: a wake-up here would be module code run after the decrement,
	 * and waking the exiting task on this CPU would let it preempt this one right there.
	 */
	atomic_dec_return(&gdrdrv_cb_active);   /* fully ordered after the pin's last use */
}

/*
 * Give the GPU pages back: once, when the pin leaves the table or is never entered. Returns
 * false when the pin must be kept: put_pages failed and the free callback has not run, so
 * the NVIDIA driver may still call it (the pin is then an orphan). Otherwise the
 * callback will not run again, and has finished if it ran. The caller holds a reference
 * (the table's, or the creator's) that gdrdrv_put_pages may hand to the callback.
 */
static bool gdrdrv_give_pages_back(struct gdrdrv_pin *pin)
{
	bool fired;
	int ret = 0;

	mutex_lock(&pin->lock);
	fired = pin->cb_fired;
	if (!fired)
		gdrdrv_wc_release(pin); /* needs the page table: before it goes */
	mutex_unlock(&pin->lock);

	if (pin->persistent) {
#if GDRDRV_HAVE_PERSISTENT
		ret = nvidia_p2p_put_pages_persistent(pin->va, pin->table, 0);
#endif
		if (ret)
			gdr_err("put_pages_persistent va 0x%llx: %d\n", pin->va, ret);
		return true;            /* no callback exists for it */
	}
	/*
	 * If the callback starts now, put_pages waits for it while the provider still lists
	 * the table (NVIDIA's driver runs the callback before it unlinks the table, both under
	 * the lock its put_pages takes). A provider that unlinks first may return 0 or an
	 * error while the callback is still due or running: so cb_fired is looked at again
	 * below, under pin->lock (which a running callback holds), after success as after
	 * failure. A callback that comes even later finds its pin gone (gdrdrv_cb_pin_get).
	 */
	if (!fired)
		ret = nvidia_p2p_put_pages(pin->p2p_token, pin->va_space, pin->va, pin->table);
	/*
	 * Failed: if the callback has not run, the NVIDIA driver may still call it, so the pin
	 * stays, and the module with it: freeing either would leave the driver a callback into
	 * freed memory or code. Such an orphan goes when its callback comes.
	 */
	mutex_lock(&pin->lock);
	fired = pin->cb_fired;
	if (!fired && ret) {
		pin->orphan = true;
		pin->unpinned = true;   /* its file may go first: the callback must not zap */
		__module_get(THIS_MODULE);
	}
	mutex_unlock(&pin->lock);
	if (!fired && ret) {
		gdr_err("put_pages va 0x%llx: %d before its free callback ran; keeping the pin (and the module) for the callback\n",
			pin->va, ret);
		return false;
	}
	if (fired)
		wait_for_completion(&pin->cb_done);
	return true;
}

/*
 * gdrdrv_give_pages_back under a reference of its own: once the pin is an orphan, the
 * reference its caller passed belongs to the free callback, which may run at once on
 * another CPU and drop it, while this task still leaves pin->lock (an unlock touches the
 * mutex after another task may have taken it) and reports the failure from the pin.
 */
static bool gdrdrv_put_pages(struct gdrdrv_pin *pin)
{
	bool done;

	kref_get(&pin->ref);
	done = gdrdrv_give_pages_back(pin);
	gdrdrv_pin_put(pin);
	return done;
}

static void gdrdrv_pin_free(struct kref *ref)
{
	struct gdrdrv_pin *pin = container_of(ref, struct gdrdrv_pin, ref);

	if (pin->cb_id)
		xa_erase(&gdrdrv_cb_pins, pin->cb_id);  /* a late callback finds nothing */
	if (pin->charged)
		gdrdrv_user_uncharge(pin->uid, pin->mapped_size);
	mutex_destroy(&pin->lock);
	kfree(pin);
	atomic_long_dec(&gdrdrv_npins);
}

void gdrdrv_pin_put(struct gdrdrv_pin *pin)
{
	kref_put(&pin->ref, gdrdrv_pin_free);
}

/* A reference on the caller's own pin with this handle, or NULL. */
struct gdrdrv_pin *gdrdrv_pin_get(struct gdrdrv_file *gf, u64 handle)
{
	struct gdrdrv_pin *pin;

	if (!handle || handle >= GDRDRV_HANDLE_LIMIT)
		return NULL;
	xa_lock(&gf->handles);
	pin = xa_load(&gf->handles, handle);
	if (pin)
		kref_get(&pin->ref);
	xa_unlock(&gf->handles);
	return pin;
}

static u64 gdrdrv_page_size_bytes(u32 kind)
{
	switch (kind) {
	case NVIDIA_P2P_PAGE_SIZE_4KB:   return 4ULL << 10;
	case NVIDIA_P2P_PAGE_SIZE_64KB:  return 64ULL << 10;
	case NVIDIA_P2P_PAGE_SIZE_128KB: return 128ULL << 10;
	default:                         return 0;
	}
}

/*
 * Check the page table before trusting it. Entry i describes the GPU page of
 * gpu_page_size bytes that starts at (va rounded down to that size) + i * gpu_page_size.
 */
static int gdrdrv_check_table(struct gdrdrv_pin *pin)
{
	const struct nvidia_p2p_page_table *t = pin->table;
	u32 major;
	u64 psize, skip, need;
	u32 i;

	if (!t || !t->pages)
		return -EPROTO;
	major = t->version >> 16;
	if (major != 1 && major != 2) {
		gdr_err("unsupported p2p page table version 0x%x\n", t->version);
		return -EPROTO;
	}
	psize = gdrdrv_page_size_bytes(t->page_size);
	if (!psize) {
		gdr_err("unsupported GPU page size kind %u\n", t->page_size);
		return -EPROTO;
	}
	skip = pin->va & (psize - 1);
	need = DIV_ROUND_UP_ULL(skip + pin->mapped_size, psize);
	if (t->entries < need) {
		gdr_err("page table has %u entries, %llu needed\n", t->entries, need);
		return -EPROTO;
	}
	for (i = 0; i < need; i++)
		if (!t->pages[i])
			return -EPROTO;
	pin->gpu_page_size = psize;
#ifdef GDRDRV_HAVE_P2P_TABLE_FLAGS
	pin->cacheable = major >= 2 && (t->flags & NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE);
#else
	pin->cacheable = false; /* a header without the flags word: a 1.x table, never cacheable */
#endif
	return 0;
}

static int gdrdrv_get_pages(struct gdrdrv_pin *pin, u32 flags)
{
	cycles_t t0 = gdrdrv_cycles();
	int ret;

	if (pin->persistent) {
#if GDRDRV_HAVE_PERSISTENT
		u32 nvflags = 0;

#if GDRDRV_HAVE_FORCE_BAR1
		if (flags & GDRDRV_PIN_FLAG_FORCE_PCIE)
			nvflags |= NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING;
#endif
		ret = nvidia_p2p_get_pages_persistent(pin->va, pin->mapped_size, &pin->table,
						      nvflags);
#else
		ret = -EOPNOTSUPP;
#endif
	} else {
		ret = gdrdrv_cb_register(pin);
		if (!ret)
			ret = nvidia_p2p_get_pages(pin->p2p_token, pin->va_space, pin->va,
						   pin->mapped_size, &pin->table,
						   gdrdrv_free_callback,
						   (void *)(unsigned long)pin->cb_id);
	}
	pin->tm_cycles = gdrdrv_cycles() - t0;
	return ret;
}

/*
 * The caller's range as a pin holds it: [addr rounded down, end) in whole GPU pages, *endp
 * the end. -EINVAL for an empty range, an unknown flag, a range past the top of the address
 * space (or one whose last GPU page is), and one of more pages than a handle's offset range
 * can hold. Reads only gdrdrv_offset_space_log2: the KUnit suite checks it alone.
 */
GDRDRV_TESTED int gdrdrv_pin_check_args(u64 addr, u64 size, u32 flags, u64 *endp)
{
	u64 end;

	if (!size || flags & ~GDRDRV_PIN_FLAG_FORCE_PCIE)
		return -EINVAL;
	if (check_add_overflow(addr, size, &end) || end > U64_MAX - GDRDRV_GPU_PAGE_SIZE)
		return -EINVAL;
	end = (end + GDRDRV_GPU_PAGE_SIZE - 1) & GDRDRV_GPU_PAGE_MASK;
	if (((end - (addr & GDRDRV_GPU_PAGE_MASK)) >> PAGE_SHIFT) >= GDRDRV_HANDLE_LIMIT)
		return -EINVAL;                 /* larger than any offset range we can give */
	*endp = end;
	return 0;
}

/* A pin of [addr rounded down, end) for the file, counted, with the table's reference. */
static struct gdrdrv_pin *gdrdrv_pin_alloc(struct gdrdrv_file *gf, u64 addr, u64 end,
					   u64 p2p_token, u32 va_space)
{
	struct gdrdrv_pin *pin = kzalloc(sizeof(*pin), GFP_KERNEL_ACCOUNT);

	if (!pin)
		return NULL;
	atomic_long_inc(&gdrdrv_npins);
	kref_init(&pin->ref);
	mutex_init(&pin->lock);
	init_completion(&pin->cb_done);
	INIT_LIST_HEAD(&pin->node);
	pin->owner = gf;
	pin->addr = addr;
	pin->va = addr & GDRDRV_GPU_PAGE_MASK;
	pin->mapped_size = end - pin->va;
	pin->npages = pin->mapped_size >> PAGE_SHIFT;
	pin->p2p_token = p2p_token;
	pin->va_space = va_space;
	pin->persistent = gdrdrv_persistent_supported();
	pin->req_type = GDRDRV_MAPPING_TYPE_NONE;
	pin->map_type = GDRDRV_MAPPING_TYPE_NONE;
	return pin;
}

/*
 * Charge the pin to its user, then take its GPU pages. On failure nothing is held but what
 * the pin's last put undoes (the charge, the callback's id).
 */
static int gdrdrv_pin_acquire(struct gdrdrv_pin *pin, u32 flags)
{
	int ret;

	if ((flags & GDRDRV_PIN_FLAG_FORCE_PCIE) && !gdrdrv_force_pcie_supported())
		return -EOPNOTSUPP;
	ret = gdrdrv_user_charge(&pin->uid, pin->mapped_size);
	if (ret)
		return ret;
	pin->charged = true;
	ret = gdrdrv_get_pages(pin, flags);
	if (ret)
		gdr_dbg("get_pages va 0x%llx size 0x%llx: %d\n", pin->va, pin->mapped_size, ret);
	return ret;
}

/* The pages just taken, checked; from get_pages on the callback may fire and take pin->lock. */
static int gdrdrv_pin_check_pages(struct gdrdrv_pin *pin)
{
	int ret;

	mutex_lock(&pin->lock);
	ret = pin->cb_fired ? -EFAULT : gdrdrv_check_table(pin);
	mutex_unlock(&pin->lock);
	return ret;
}

/*
 * List the pin in its file, within max_pins_per_file. Once listed the pin is the caller's to
 * UNPIN (from another thread too: handles are predictable), so the caller's reference is
 * taken before gf->lock lets anyone reach it.
 */
static int gdrdrv_pin_publish(struct gdrdrv_file *gf, struct gdrdrv_pin *pin,
			      struct gdrdrv_pin **pinp)
{
	unsigned int cap;
	int ret;

	mutex_lock(&gf->lock);
	cap = READ_ONCE(gdrdrv_max_pins_per_file);
	if (cap && gf->npins + atomic_read(&gf->ndetached) >= cap) {
		gdr_err("an open file holds max_pins_per_file=%u pins: EDQUOT\n", cap);
		ret = -EDQUOT;
	} else {
		ret = gdrdrv_handle_insert(gf, pin);
	}
	if (ret) {
		mutex_unlock(&gf->lock);
		return ret;
	}
	gf->npins++;
	kref_get(&pin->ref);
	*pinp = pin;
	gdr_dbg("pinned va 0x%llx size 0x%llx handle 0x%llx%s\n", pin->va, pin->mapped_size,
		pin->handle, pin->persistent ? " (persistent)" : "");
	list_add_tail(&pin->node, &gf->pins);
	mutex_unlock(&gf->lock);
	return 0;
}

/* A new pin in the file's table; *pinp gets a reference of its own for the caller. */
int gdrdrv_pin_create(struct gdrdrv_file *gf, u64 addr, u64 size, u64 p2p_token,
		      u32 va_space, u32 flags, struct gdrdrv_pin **pinp)
{
	struct gdrdrv_pin *pin;
	u64 end;
	int ret;

	ret = gdrdrv_pin_check_args(addr, size, flags, &end);
	if (ret)
		return ret;
	pin = gdrdrv_pin_alloc(gf, addr, end, p2p_token, va_space);
	if (!pin)
		return -ENOMEM;
	ret = gdrdrv_pin_acquire(pin, flags);
	if (ret)
		goto out_free;
	ret = gdrdrv_pin_check_pages(pin);
	if (ret)
		goto out_put;
	ret = gdrdrv_pin_publish(gf, pin, pinp);
	if (ret)
		goto out_put;
	return 0;

out_put:
	if (!gdrdrv_put_pages(pin))
		return ret;             /* an orphan now: its callback frees it */
out_free:
	gdrdrv_pin_put(pin);
	return ret;
}

/*
 * Take the pin out of its file: mark it, zap its mappings while it still owns its offsets
 * (after the erase another pin of the file may get them, and a zap then would hit its
 * mappings), give the pages back; the struct goes with the last reference.
 */
static void gdrdrv_pin_detach(struct gdrdrv_pin *pin)
{
	struct gdrdrv_file *gf = pin->owner;

	mutex_lock(&pin->lock);
	pin->unpinned = true;           /* from now on a fault answers SIGBUS */
	gdrdrv_pin_zap(pin);
	if (pin->map_count) {           /* lives on with its VMAs: still the file's to bound */
		pin->detached = true;
		atomic_inc(&gf->ndetached);
	}
	mutex_unlock(&pin->lock);
	mutex_lock(&gf->lock);
	xa_erase(&gf->handles, pin->handle);
	gf->npins--;
	mutex_unlock(&gf->lock);
	if (gdrdrv_put_pages(pin))
		gdrdrv_pin_put(pin);    /* the table's reference; an orphan keeps it */
}

/* Take this pin out of its file, if it is still in; -EINVAL when someone else did. */
int gdrdrv_pin_remove(struct gdrdrv_file *gf, struct gdrdrv_pin *pin)
{
	bool listed;

	mutex_lock(&gf->lock);
	listed = !list_empty(&pin->node);
	list_del_init(&pin->node);
	mutex_unlock(&gf->lock);
	if (!listed)                    /* a concurrent UNPIN of the same pin won */
		return -EINVAL;
	gdrdrv_pin_detach(pin);
	return 0;
}

int gdrdrv_pin_unpin(struct gdrdrv_file *gf, u64 handle)
{
	struct gdrdrv_pin *pin = gdrdrv_pin_get(gf, handle);
	int ret;

	if (!pin)
		return -EINVAL;
	ret = gdrdrv_pin_remove(gf, pin);
	gdrdrv_pin_put(pin);
	return ret;
}

/* On release of the file: no VMA can exist any more (each holds the file). */
void gdrdrv_pin_release_all(struct gdrdrv_file *gf)
{
	struct gdrdrv_pin *pin;

	for (;;) {
		mutex_lock(&gf->lock);
		pin = list_first_entry_or_null(&gf->pins, struct gdrdrv_pin, node);
		if (pin)
			list_del_init(&pin->node);
		mutex_unlock(&gf->lock);
		if (!pin)
			break;
		gdrdrv_pin_detach(pin);
	}
}

/*
 * Module exit: open files and orphans hold the module, so no pin is left; say so if one is.
 * A callback may still be on its way out (an orphan's drops the module reference before it
 * leaves): wait for it, as it returns into the provider through this module's text.
 */
void gdrdrv_pin_module_exit(void)
{
	unsigned long n;

	while (atomic_read_acquire(&gdrdrv_cb_active))
		schedule_timeout_uninterruptible(1);    /* a tick: callbacks are short */
	n = gdrdrv_pin_count();

	if (n)
		gdr_err("%lu pins still alive at exit; leaving them\n", n);
}

// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gdrdrv_pin.c - pins of GPU memory: the NVIDIA p2p calls, the free callback of
 * non-persistent pins, and the handle table.
 *
 * A handle is the mmap page offset of its pin, so the handle table is also an offset
 * allocator: each pin reserves [handle, handle + npages) and no two live pins overlap. The
 * table is global rather than per file because every file opened through the same device
 * node shares one address_space, and the free callback zaps mappings by offset range in it
 * (unmap_mapping_range): per-file offsets would let one process's callback zap another's
 * mapping. Handles stay below 2^32 because upstream's library keeps them in 32 bits.
 * Allocation moves a cursor forward and wraps to the start when the space runs out,
 * skipping live pins; it fails (ENOSPC) only when no gap is large enough.
 */
#include <linux/errno.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/timex.h>
#include <linux/xarray.h>

#include "gdrdrv.h"

/* End of the handle space: 2^32 unless offset_space_log2 shrinks it (tests of the wrap). */
#define GDRDRV_HANDLE_LIMIT (1ULL << gdrdrv_offset_space_log2)

static DEFINE_XARRAY(gdrdrv_handles);     /* handle -> pin, stored at the range's start */
static DEFINE_MUTEX(gdrdrv_alloc_lock);   /* serialises insertion and removal */
static u64 gdrdrv_cursor = 1;             /* no live range straddles it */

bool gdrdrv_persistent_supported(void)
{
	return GDRDRV_HAVE_PERSISTENT && READ_ONCE(gdrdrv_use_persistent_mapping);
}

bool gdrdrv_force_pcie_supported(void)
{
	return GDRDRV_HAVE_FORCE_BAR1 && gdrdrv_persistent_supported();
}

unsigned long gdrdrv_pin_count(void)
{
	unsigned long idx, n = 0;
	struct gdrdrv_pin *pin;

	mutex_lock(&gdrdrv_alloc_lock);
	xa_for_each(&gdrdrv_handles, idx, pin)
		n++;
	mutex_unlock(&gdrdrv_alloc_lock);
	return n;
}

/* Find room for pin->npages and insert the pin there. Under gdrdrv_alloc_lock. */
static int gdrdrv_handle_insert(struct gdrdrv_pin *pin)
{
	u64 start = gdrdrv_cursor, first = gdrdrv_cursor;
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
		other = xa_find(&gdrdrv_handles, &idx, start + pin->npages - 1, XA_PRESENT);
		if (!other)
			break;
		start = idx + other->npages;    /* skip past the live range */
	}
	pin->handle = start;
	ret = xa_insert(&gdrdrv_handles, start, pin, GFP_KERNEL);
	if (ret) {
		pin->handle = 0;
		return ret;
	}
	gdrdrv_cursor = start + pin->npages;
	return 0;
}

static void gdrdrv_handle_remove(struct gdrdrv_pin *pin)
{
	mutex_lock(&gdrdrv_alloc_lock);
	xa_erase(&gdrdrv_handles, pin->handle);
	mutex_unlock(&gdrdrv_alloc_lock);
}

/* Zap every CPU mapping of the pin: later accesses fault, and with no fault handler
 * for these VMAs they raise SIGBUS. */
void gdrdrv_pin_zap(struct gdrdrv_pin *pin)
{
	if (!pin->handle)
		return;
	unmap_mapping_range(pin->owner->mapping, (loff_t)pin->handle << PAGE_SHIFT,
			    (loff_t)pin->npages << PAGE_SHIFT, 1);
}

/*
 * Called by the NVIDIA driver when the memory under a non-persistent pin goes away. Runs
 * entirely under pin->lock so that the release path, which takes that lock to read
 * cb_fired, never frees the pin while the callback still uses it.
 */
static void gdrdrv_free_callback(void *data)
{
	struct gdrdrv_pin *pin = data;

	mutex_lock(&pin->lock);
	pin->cb_fired = true;
	gdr_info("free callback for va 0x%llx handle 0x%llx\n", pin->va, pin->handle);
	gdrdrv_pin_zap(pin);
	gdrdrv_wc_release(pin);         /* needs the page table: before it goes */
	nvidia_p2p_free_page_table(pin->table);
	mutex_unlock(&pin->lock);
}

static void gdrdrv_pin_free(struct kref *ref)
{
	struct gdrdrv_pin *pin = container_of(ref, struct gdrdrv_pin, ref);
	bool fired;
	int ret;

	mutex_lock(&pin->lock);
	fired = pin->cb_fired;
	if (!fired)
		gdrdrv_wc_release(pin); /* no VMA is left: they hold references */
	mutex_unlock(&pin->lock);

	if (pin->persistent) {
#if GDRDRV_HAVE_PERSISTENT
		ret = nvidia_p2p_put_pages_persistent(pin->va, pin->table, 0);
#else
		ret = -EINVAL;
#endif
	} else if (!fired) {
		/* If the callback starts now, put_pages waits for it and then fails: the
		 * callback has freed the table, which is fine. */
		ret = nvidia_p2p_put_pages(pin->p2p_token, pin->va_space, pin->va, pin->table);
	} else {
		ret = 0;
	}
	if (ret)
		gdr_dbg("put_pages va 0x%llx: %d\n", pin->va, ret);
	mutex_destroy(&pin->lock);
	kfree(pin);
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
	xa_lock(&gdrdrv_handles);
	pin = xa_load(&gdrdrv_handles, handle);
	if (pin && pin->owner == gf)
		kref_get(&pin->ref);
	else
		pin = NULL;
	xa_unlock(&gdrdrv_handles);
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
	pin->cacheable = major >= 2 && (t->flags & NVIDIA_P2P_PAGE_TABLE_FLAGS_CPU_CACHEABLE);
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
		ret = nvidia_p2p_get_pages_persistent(pin->va, pin->mapped_size, &pin->table, nvflags);
#else
		ret = -EOPNOTSUPP;
#endif
	} else {
		ret = nvidia_p2p_get_pages(pin->p2p_token, pin->va_space, pin->va, pin->mapped_size,
					   &pin->table, gdrdrv_free_callback, pin);
	}
	pin->tm_cycles = gdrdrv_cycles() - t0;
	return ret;
}

int gdrdrv_pin_create(struct gdrdrv_file *gf, u64 addr, u64 size, u64 p2p_token,
		      u32 va_space, u32 flags, u64 *handle)
{
	struct gdrdrv_pin *pin;
	u64 end;
	int ret;

	if (!size || flags & ~GDRDRV_PIN_FLAG_FORCE_PCIE)
		return -EINVAL;
	if (check_add_overflow(addr, size, &end) || end > U64_MAX - GDRDRV_GPU_PAGE_SIZE)
		return -EINVAL;
	end = (end + GDRDRV_GPU_PAGE_SIZE - 1) & GDRDRV_GPU_PAGE_MASK;
	if (((end - (addr & GDRDRV_GPU_PAGE_MASK)) >> PAGE_SHIFT) >= GDRDRV_HANDLE_LIMIT)
		return -EINVAL;                 /* larger than any offset range we can give */

	pin = kzalloc(sizeof(*pin), GFP_KERNEL);
	if (!pin)
		return -ENOMEM;
	kref_init(&pin->ref);
	mutex_init(&pin->lock);
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

	if ((flags & GDRDRV_PIN_FLAG_FORCE_PCIE) && !gdrdrv_force_pcie_supported()) {
		ret = -EOPNOTSUPP;
		goto out_free;
	}
	ret = gdrdrv_get_pages(pin, flags);
	if (ret) {
		gdr_dbg("get_pages va 0x%llx size 0x%llx: %d\n", pin->va, pin->mapped_size, ret);
		goto out_free;
	}

	/* From here the callback may fire; it takes pin->lock before touching the table. */
	mutex_lock(&pin->lock);
	ret = pin->cb_fired ? -EFAULT : gdrdrv_check_table(pin);
	mutex_unlock(&pin->lock);
	if (ret)
		goto out_put;

	mutex_lock(&gdrdrv_alloc_lock);
	ret = gdrdrv_handle_insert(pin);
	mutex_unlock(&gdrdrv_alloc_lock);
	if (ret)
		goto out_put;

	mutex_lock(&gf->lock);
	list_add_tail(&pin->node, &gf->pins);
	mutex_unlock(&gf->lock);
	*handle = pin->handle;
	gdr_dbg("pinned va 0x%llx size 0x%llx handle 0x%llx%s\n", pin->va, pin->mapped_size,
		pin->handle, pin->persistent ? " (persistent)" : "");
	return 0;

out_put:
	gdrdrv_pin_put(pin);            /* releases the pages */
	return ret;
out_free:
	mutex_destroy(&pin->lock);
	kfree(pin);
	return ret;
}

/* Take the pin out of the table and zap its mappings; pages go with the last reference. */
static void gdrdrv_pin_detach(struct gdrdrv_pin *pin)
{
	gdrdrv_handle_remove(pin);
	mutex_lock(&pin->lock);
	pin->unpinned = true;
	if (pin->map_count)
		gdrdrv_pin_zap(pin);
	mutex_unlock(&pin->lock);
	gdrdrv_pin_put(pin);            /* the table's reference */
}

int gdrdrv_pin_unpin(struct gdrdrv_file *gf, u64 handle)
{
	struct gdrdrv_pin *pin = gdrdrv_pin_get(gf, handle);
	bool listed;

	if (!pin)
		return -EINVAL;
	mutex_lock(&gf->lock);
	listed = !list_empty(&pin->node);
	list_del_init(&pin->node);
	mutex_unlock(&gf->lock);
	if (listed)                     /* a concurrent UNPIN of the same handle lost */
		gdrdrv_pin_detach(pin);
	gdrdrv_pin_put(pin);
	return listed ? 0 : -EINVAL;
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

/* Module exit: open files hold the module, so the table is empty; say so if it is not. */
void gdrdrv_pin_module_exit(void)
{
	unsigned long n = gdrdrv_pin_count();

	if (n)
		gdr_err("%lu pins still in the table at exit; leaving them\n", n);
	xa_destroy(&gdrdrv_handles);
}

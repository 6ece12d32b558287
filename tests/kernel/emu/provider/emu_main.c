// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * emu_main.c - the emulated NVIDIA p2p provider (TEST ONLY, never installed or packaged):
 * module setup and the control device /dev/nvp2p_emu (tests/kernel/emu/nvp2p_emu.h). User space
 * creates "GPU allocations" at fake device addresses backed by RAM, fills and reads them,
 * frees them, injects failures and reads the leak counters. The exports are in emu_p2p.c.
 *
 * Fake device addresses start at 0x7e0000000000, 2 MiB aligned, with a 2 MiB hole between
 * allocations so that a range can never span two. Each GPU page is one physically contiguous
 * alloc_pages() block, so every physical_address in a page table is real RAM that a consumer
 * can remap. With NVP2P_EMU_ALLOC_BAR the pages are MMIO instead: a range of an ivshmem
 * device's memory BAR (emu_bar.c), the kind of address a real GPU hands out.
 */
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "emu.h"
#include "nvp2p_emu.h"

#define EMU_VA_BASE      0x7e0000000000ULL
#define EMU_VA_STRIDE    (2ULL << 20)
#define EMU_MAX_ALLOC    (64ULL << 20)   /* one allocation */
#define EMU_MAX_TOTAL    (192ULL << 20)  /* all allocations: the guest has 512 MiB */
#define EMU_MAX_DELAY_MS 10000

DEFINE_MUTEX(emu_lock);
LIST_HEAD(emu_allocs);
LIST_HEAD(emu_pins);
DECLARE_WAIT_QUEUE_HEAD(emu_cb_wq);
u64 emu_live_allocs, emu_live_pins, emu_callbacks_fired, emu_total_pins;
u32 emu_fail_count[EMU_FAIL_KINDS];
int emu_fail_errno[EMU_FAIL_KINDS];
unsigned int emu_cb_delay_ms;

static u64 emu_next_va = EMU_VA_BASE;
static u64 emu_total_bytes;

int emu_take_injected(unsigned int what)
{
	if (what >= EMU_FAIL_KINDS || !emu_fail_count[what])
		return 0;
	emu_fail_count[what]--;
	return -emu_fail_errno[what];
}

struct emu_alloc *emu_find_alloc(u64 va, u64 len)
{
	struct emu_alloc *a;

	if (!len || va + len < va)
		return NULL;
	list_for_each_entry(a, &emu_allocs, node)
		if (!a->freed && va >= a->va && va + len <= a->va + a->size)
			return a;
	return NULL;
}

/* Physical address of GPU page i. BAR_REVERSED puts page 0 at the end of the range. */
phys_addr_t emu_chunk_phys(const struct emu_alloc *a, unsigned long i)
{
	if (!a->bar)
		return page_to_phys(a->chunks[i]);
	if (a->flags & NVP2P_EMU_ALLOC_BAR_REVERSED)
		i = a->nchunks - 1 - i;
	return emu_bar_phys(a->bar_off + i * a->chunk);
}

void emu_release_alloc_ram(struct emu_alloc *a)
{
	unsigned long i;

	if (a->bar)
		emu_bar_free(a->bar_off, a->size);   /* only now may another alloc reuse it */
	for (i = 0; a->chunks && i < a->nchunks; i++)
		if (a->chunks[i])
			__free_pages(a->chunks[i], a->order);
	kvfree(a->chunks);
	kfree(a);
}

/* Caller holds emu_lock. The RAM goes once FREE is done and no pin or callback needs it. */
void emu_alloc_maybe_release(struct emu_alloc *a)
{
	if (!a->freed || a->freeing || a->persistent_pins || a->running_cbs || a->rw_users)
		return;
	emu_total_bytes -= a->size;
	emu_release_alloc_ram(a);
}

static u64 emu_chunk_bytes(u32 page_kind)
{
	switch (page_kind) {
	case NVIDIA_P2P_PAGE_SIZE_4KB:
		return 4096;
	case NVIDIA_P2P_PAGE_SIZE_64KB:
		return 64 * 1024;
	case NVIDIA_P2P_PAGE_SIZE_128KB:
		return 128 * 1024;
	}
	return 0;
}

/* Back a new allocation with RAM chunks or with BAR space; 0 or a negative errno. */
static int emu_alloc_backing(struct emu_alloc *a)
{
	unsigned long i;

	if (a->bar)
		return emu_bar_alloc(a->size, a->chunk, &a->bar_off);
	a->chunks = kvcalloc(a->nchunks, sizeof(*a->chunks), GFP_KERNEL);
	if (!a->chunks)
		return -ENOMEM;
	for (i = 0; i < a->nchunks; i++) {
		a->chunks[i] = alloc_pages(GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN |
					   __GFP_RETRY_MAYFAIL, a->order);
		if (!a->chunks[i])
			return -ENOMEM;
	}
	return 0;
}

#define EMU_ALLOC_FLAGS (NVP2P_EMU_ALLOC_CPU_CACHEABLE | NVP2P_EMU_ALLOC_BAR | \
			 NVP2P_EMU_ALLOC_BAR_REVERSED)

static long emu_ioc_alloc(void __user *uarg)
{
	struct nvp2p_emu_alloc req;
	struct emu_alloc *a;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (!req.size || req.size > EMU_MAX_ALLOC || !emu_chunk_bytes(req.page_kind) ||
	    (req.flags & ~EMU_ALLOC_FLAGS))
		return -EINVAL;
	/* A BAR is not coherent memory, and only BAR pages can be reordered. */
	if ((req.flags & NVP2P_EMU_ALLOC_BAR) ?
	    (req.flags & NVP2P_EMU_ALLOC_CPU_CACHEABLE) : (req.flags & NVP2P_EMU_ALLOC_BAR_REVERSED))
		return -EINVAL;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	a->page_kind = req.page_kind;
	a->flags = req.flags;
	a->chunk = emu_chunk_bytes(req.page_kind);
	a->order = get_order(a->chunk);
	/* Pins are made of 64 KiB units, so an allocation is at least that. */
	a->size = round_up(round_up(req.size, a->chunk), 64 * 1024);
	a->nchunks = a->size / a->chunk;
	a->bar = req.flags & NVP2P_EMU_ALLOC_BAR;

	mutex_lock(&emu_lock);
	ret = emu_take_injected(NVP2P_EMU_FAIL_ALLOC);
	if (!ret && emu_total_bytes + a->size > EMU_MAX_TOTAL)
		ret = -ENOMEM;
	if (!ret)
		emu_total_bytes += a->size;
	mutex_unlock(&emu_lock);
	if (ret) {
		kfree(a);
		return ret;
	}

	ret = emu_alloc_backing(a);
	if (ret)
		goto fail;

	mutex_lock(&emu_lock);
	a->va = emu_next_va;
	req.va = a->va;
	emu_next_va += round_up(a->size, EMU_VA_STRIDE) + EMU_VA_STRIDE;
	list_add_tail(&a->node, &emu_allocs);
	emu_live_allocs++;
	mutex_unlock(&emu_lock);

	/* req.va, not a->va: a FREE guessing the address may take the allocation from now */
	if (copy_to_user(uarg, &req, sizeof(req))) {
		emu_free_allocation(req.va);
		return -EFAULT;
	}
	return 0;

fail:
	mutex_lock(&emu_lock);
	emu_total_bytes -= a->size;
	mutex_unlock(&emu_lock);
	a->bar = false;                 /* a failed BAR allocation holds no BAR space */
	emu_release_alloc_ram(a);
	return ret;
}

static long emu_ioc_free(void __user *uarg)
{
	struct nvp2p_emu_free req;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	return emu_free_allocation(req.va);
}

/* READ and WRITE: copy a GPU page at a time; the allocation cannot go away meanwhile. */
static long emu_ioc_rw(void __user *uarg, bool to_user)
{
	struct nvp2p_emu_rw req;
	struct emu_alloc *a;
	u64 off, done = 0;
	long ret = 0;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	/*
	 * The copy runs without emu_lock, under a hold on the allocation: a user copy may fault
	 * and take mmap_lock, under which gdrdrv's mmap takes pin->lock, under which its free
	 * callback calls into us (emu_lock): lockdep's circular dependency on the debug kernel.
	 */
	mutex_lock(&emu_lock);
	a = emu_find_alloc(req.va, req.len);
	if (a)
		a->rw_users++;
	mutex_unlock(&emu_lock);
	if (!a)
		return -EINVAL;
	off = req.va - a->va;
	while (done < req.len) {
		u64 in = (off + done) % a->chunk;
		u64 n = min(a->chunk - in, req.len - done);
		unsigned long i = (off + done) / a->chunk;
		void __user *u = u64_to_user_ptr(req.user_ptr + done);

		if (a->bar) {
			/* MMIO: no struct page, no kernel mapping; emu_bar_copy maps it. */
			ret = emu_bar_copy(emu_chunk_phys(a, i) + in, u, n, to_user);
		} else {
			char *kaddr = page_address(a->chunks[i]) + in;

			if (to_user ? copy_to_user(u, kaddr, n) : copy_from_user(kaddr, u, n))
				ret = -EFAULT;
		}
		if (ret)
			break;
		done += n;
	}
	mutex_lock(&emu_lock);
	a->rw_users--;
	emu_alloc_maybe_release(a);
	mutex_unlock(&emu_lock);
	return ret;
}

static long emu_ioc_inject(void __user *uarg)
{
	struct nvp2p_emu_inject req;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.what < NVP2P_EMU_FAIL_GET_PAGES || req.what >= EMU_FAIL_KINDS ||
	    req.errno_value <= 0 || req.errno_value >= MAX_ERRNO)
		return -EINVAL;
	mutex_lock(&emu_lock);
	emu_fail_count[req.what] = req.count;
	emu_fail_errno[req.what] = req.errno_value;
	mutex_unlock(&emu_lock);
	return 0;
}

static long emu_ioc_stats(void __user *uarg)
{
	struct nvp2p_emu_stats st;

	mutex_lock(&emu_lock);
	st.live_allocs = emu_live_allocs;
	st.live_pins = emu_live_pins;
	st.callbacks_fired = emu_callbacks_fired;
	st.total_pins = emu_total_pins;
	mutex_unlock(&emu_lock);
	return copy_to_user(uarg, &st, sizeof(st)) ? -EFAULT : 0;
}

static long emu_ioc_cb_delay(void __user *uarg)
{
	struct nvp2p_emu_cb_delay req;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.ms > EMU_MAX_DELAY_MS || req.pad)
		return -EINVAL;
	mutex_lock(&emu_lock);
	emu_cb_delay_ms = req.ms;
	mutex_unlock(&emu_lock);
	return 0;
}

static long emu_ioc_phys(void __user *uarg)
{
	struct nvp2p_emu_phys req;
	struct emu_alloc *a;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	mutex_lock(&emu_lock);
	a = emu_find_alloc(req.va, 1);
	if (a)
		req.phys = emu_chunk_phys(a, (req.va - a->va) / a->chunk) + (req.va - a->va) % a->chunk;
	mutex_unlock(&emu_lock);
	if (!a)
		return -EINVAL;
	return copy_to_user(uarg, &req, sizeof(req)) ? -EFAULT : 0;
}

static long emu_ioc_hold(void __user *uarg, bool hold)
{
	struct nvp2p_emu_hold req;
	struct emu_alloc *a;
	u64 off;
	long ret = -EINVAL;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (!hold)
		return emu_bar_release(req.va);
	if (!req.len || !PAGE_ALIGNED(req.va) || !PAGE_ALIGNED(req.len) || req.pad)
		return -EINVAL;
	mutex_lock(&emu_lock);
	a = emu_find_alloc(req.va, req.len);
	off = a ? req.va - a->va : 0;
	if (a && a->bar && off / a->chunk == (off + req.len - 1) / a->chunk)
		ret = emu_bar_hold(emu_chunk_phys(a, off / a->chunk) + off % a->chunk, req.len,
				   req.mode, req.va);
	mutex_unlock(&emu_lock);
	return ret;
}

static long emu_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case NVP2P_EMU_IOC_ALLOC:
		return emu_ioc_alloc(uarg);
	case NVP2P_EMU_IOC_FREE:
		return emu_ioc_free(uarg);
	case NVP2P_EMU_IOC_WRITE:
		return emu_ioc_rw(uarg, false);
	case NVP2P_EMU_IOC_READ:
		return emu_ioc_rw(uarg, true);
	case NVP2P_EMU_IOC_INJECT:
		return emu_ioc_inject(uarg);
	case NVP2P_EMU_IOC_STATS:
		return emu_ioc_stats(uarg);
	case NVP2P_EMU_IOC_CB_DELAY:
		return emu_ioc_cb_delay(uarg);
	case NVP2P_EMU_IOC_PHYS:
		return emu_ioc_phys(uarg);
	case NVP2P_EMU_IOC_PTE:
		return emu_ioc_pte(uarg);
	case NVP2P_EMU_IOC_HOLD:
		return emu_ioc_hold(uarg, true);
	case NVP2P_EMU_IOC_RELEASE:
		return emu_ioc_hold(uarg, false);
	}
	return -ENOTTY;
}

static const struct file_operations emu_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = emu_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice emu_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "nvp2p_emu",
	.fops = &emu_fops,
	.mode = 0666,
};

static int __init emu_init(void)
{
	/* Binds the ivshmem device if the guest has one; without it only ALLOC_BAR fails. */
	int ret = emu_bar_register();

	if (ret)
		return ret;
	ret = misc_register(&emu_misc);
	if (ret) {
		emu_bar_unregister();
		return ret;
	}
	pr_info("nvp2p_emu: emulated NVIDIA p2p provider loaded (test only)\n");
	return 0;
}

static void __exit emu_exit(void)
{
	struct emu_alloc *a, *tmp;

	misc_deregister(&emu_misc);
	emu_hold_exit();
	emu_gate_exit();
	emu_bar_release_all_holds();
	emu_drop_all_pins();
	mutex_lock(&emu_lock);
	list_for_each_entry_safe(a, tmp, &emu_allocs, node) {
		list_del(&a->node);
		emu_release_alloc_ram(a);
	}
	mutex_unlock(&emu_lock);
	emu_bar_unregister();           /* after every allocation gave its BAR space back */
}

module_init(emu_init);
module_exit(emu_exit);
MODULE_DESCRIPTION("Emulated NVIDIA p2p provider for vramio's QEMU tests (test only)");
MODULE_LICENSE("Dual MIT/GPL");

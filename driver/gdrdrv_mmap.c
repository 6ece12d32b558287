// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gdrdrv_mmap.c - CPU mappings of pinned GPU memory.
 *
 * mmap(fd, offset = handle << PAGE_SHIFT, len <= pinned pages) maps the pin from its start.
 * ->mmap installs nothing: the PTEs are made by the fault handler, under pin->lock, which
 * answers SIGBUS once the pin is unpinned or its memory freed. The kernel links a new VMA into
 * the file's address_space only after ->mmap returns, so PTEs made in ->mmap could escape a
 * free callback's zap that ran in between and outlive the memory (tests/kernel mmap_race_test);
 * a fault can only come once the VMA is linked, so the zap of a callback that ran before it
 * sees the VMA, and a fault after the callback sees cb_fired.
 *
 * The PTEs go in one host page at a time (vmf_insert_pfn_prot, a window around the faulting
 * address per fault), never with a remap over the whole VMA: on x86 such a remap makes PAT
 * track the VMA (VM_PAT), and munmap racing the callback's zap then WARNs in untrack_pfn()
 * (seen on Debian 6.1 and 6.12; tests/kernel zap_test --race). Each insert takes the cache mode
 * recorded for the page, which is why BAR (non-RAM) pages mapped WC get a WC reservation of
 * their own (gdrdrv_wc_reserve, gdrdrv_wc.c), held while the pin has mappings.
 *
 * Memory types: WC is write-combined (non-coherent, the BAR's natural type); CACHING is
 * allowed only when the page table says the pages are CPU_CACHEABLE (coherent platforms);
 * DEVICE is the strongly ordered device type (arm64 pgprot_device, uncached elsewhere).
 */
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/mutex.h>

#include "gdrdrv_internal.h"

#ifdef CONFIG_X86
#include <asm/mem_encrypt.h>
#include <asm/tsc.h>
/*
 * pgprot_writecombine() is a GPL-only export on x86, and a module that imports from the
 * proprietary NVIDIA driver may not use GPL-only symbols. cachemode2protval() is a plain
 * export and gives the same PAT encoding.
 */
static pgprot_t gdrdrv_prot_wc(pgprot_t prot)
{
	return __pgprot((pgprot_val(prot) & ~_PAGE_CACHE_MASK) |
			cachemode2protval(_PAGE_CACHE_MODE_WC));
}

u32 gdrdrv_tsc_khz(void)
{
	return tsc_khz;
}
#else
static pgprot_t gdrdrv_prot_wc(pgprot_t prot)
{
	return pgprot_writecombine(prot);
}

/* get_cycles() has no exported frequency here: report 0, "unknown". */
u32 gdrdrv_tsc_khz(void)
{
	return 0;
}
#endif

#if defined(CONFIG_X86) && defined(GDRDRV_FLAVOUR_PROPRIETARY)
/*
 * I/O memory must be mapped without the memory-encryption bit; pgprot_decrypted() clears it
 * with cc_mkdec(), a GPL-only export. For a device seen by an AMD SME/SEV host, the case where
 * there is a bit to clear, that bit is sme_me_mask, a plain export. (Intel TDX guests need
 * the open flavour.)
 */
static pgprot_t gdrdrv_io_prot(pgprot_t prot)
{
	return __pgprot(pgprot_val(prot) & ~sme_me_mask);
}
#else
static pgprot_t gdrdrv_io_prot(pgprot_t prot)
{
	return pgprot_decrypted(prot);
}
#endif

static pgprot_t gdrdrv_prot(pgprot_t prot, u32 type)
{
	switch (type) {
	case GDRDRV_MAPPING_TYPE_CACHING:
		return prot;
	case GDRDRV_MAPPING_TYPE_DEVICE:
		return pgprot_device(prot);
	default:
		return gdrdrv_prot_wc(prot);
	}
}

bool gdrdrv_mapping_type_allowed(const struct gdrdrv_pin *pin, u32 type)
{
	switch (type) {
	case GDRDRV_MAPPING_TYPE_NONE:
	case GDRDRV_MAPPING_TYPE_WC:
	case GDRDRV_MAPPING_TYPE_DEVICE:
		return true;
	case GDRDRV_MAPPING_TYPE_CACHING:
		return pin->cacheable;
	default:
		return false;
	}
}

/* The requested type, else CACHING where the pages allow it, else WC. */
static u32 gdrdrv_choose_type(const struct gdrdrv_pin *pin)
{
	if (pin->map_count)
		return pin->map_type;   /* all mappings of a pin share one memory type */
	if (pin->req_type != GDRDRV_MAPPING_TYPE_NONE)
		return pin->req_type;
	return pin->cacheable ? GDRDRV_MAPPING_TYPE_CACHING : GDRDRV_MAPPING_TYPE_WC;
}

/* Bytes of PTEs one fault fills around the faulting address (aligned, inside the VMA). */
#define GDRDRV_FAULT_WINDOW (2UL << 20)

/* The PTE of user address `addr` of the pin's VMA. Under pin->lock, pages still valid. */
static vm_fault_t gdrdrv_insert(struct gdrdrv_pin *pin, struct vm_area_struct *vma,
				unsigned long addr)
{
	u64 idx = vma->vm_pgoff + ((addr - vma->vm_start) >> PAGE_SHIFT) - pin->handle;
	u64 phys;

	if (idx >= pin->npages)
		return VM_FAULT_SIGBUS;
	phys = gdrdrv_phys_at(pin, idx << PAGE_SHIFT);
	if (!PAGE_ALIGNED(phys)) {
		gdr_err("GPU page at 0x%llx is not host-page aligned\n", phys);
		return VM_FAULT_SIGBUS;
	}
	return vmf_insert_pfn_prot(vma, addr, phys >> PAGE_SHIFT, vma->vm_page_prot);
}

static vm_fault_t gdrdrv_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct gdrdrv_pin *pin = vma->vm_private_data;
	unsigned long addr = vmf->address & PAGE_MASK;
	unsigned long base = ALIGN_DOWN(addr, GDRDRV_FAULT_WINDOW);
	unsigned long a, start = max(vma->vm_start, base);
	unsigned long end = min(vma->vm_end, base + GDRDRV_FAULT_WINDOW);
	vm_fault_t ret = VM_FAULT_SIGBUS;

	mutex_lock(&pin->lock);
	if (pin->cb_fired || pin->unpinned)
		goto out;               /* the pages are gone or going */
	ret = gdrdrv_insert(pin, vma, addr);
	/* The rest of the window is a courtesy: stop at the first page that does not go in. */
	for (a = start; ret == VM_FAULT_NOPAGE && a < end; a += PAGE_SIZE)
		if (a != addr && gdrdrv_insert(pin, vma, a) != VM_FAULT_NOPAGE)
			break;
out:
	mutex_unlock(&pin->lock);
	return ret;
}

static void gdrdrv_vma_open(struct vm_area_struct *vma)
{
	struct gdrdrv_pin *pin = vma->vm_private_data;

	kref_get(&pin->ref);
	mutex_lock(&pin->lock);
	pin->map_count++;
	mutex_unlock(&pin->lock);
}

static void gdrdrv_vma_close(struct vm_area_struct *vma)
{
	struct gdrdrv_pin *pin = vma->vm_private_data;

	mutex_lock(&pin->lock);
	if (pin->map_count && !--pin->map_count) {
		pin->map_type = GDRDRV_MAPPING_TYPE_NONE;
		/*
		 * The last mapping is gone (munmap removed its PTEs before calling us). Drop the
		 * WC reservation now, not when the pin goes: a later mapping of this pin may ask
		 * for DEVICE, and PAT would give it the WC type still reserved for the pages
		 * (tests/kernel bar_test device_after_wc). After a free callback there is nothing
		 * left to release: the callback did it.
		 */
		gdrdrv_wc_release(pin);
		if (pin->detached) {    /* the VMA holds the file: owner is still there */
			pin->detached = false;
			atomic_dec(&pin->owner->ndetached);
		}
	}
	mutex_unlock(&pin->lock);
	gdrdrv_pin_put(pin);
}

static const struct vm_operations_struct gdrdrv_vm_ops = {
	.open = gdrdrv_vma_open,
	.close = gdrdrv_vma_close,
	.fault = gdrdrv_vm_fault,
};

static void gdrdrv_set_vma_flags(struct vm_area_struct *vma)
{
	/* Not inherited by fork, never grown by mremap, not in core dumps, raw PFNs. */
	const vm_flags_t flags = VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP | VM_IO | VM_PFNMAP;

	/* ...and never executable, not even later by mprotect (which then fails EACCES). */
#ifdef GDRDRV_HAVE_VM_FLAGS_SET
	vm_flags_mod(vma, flags, VM_MAYEXEC);
#else
	vma->vm_flags = (vma->vm_flags | flags) & ~VM_MAYEXEC;
#endif
}

int gdrdrv_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct gdrdrv_file *gf = filp->private_data;
	u64 len = vma->vm_end - vma->vm_start;
	struct gdrdrv_pin *pin;
	u32 type;
	int ret;

	if (!gdrdrv_same_process(gf))
		return -EACCES;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;         /* a private copy-on-write view of a BAR makes no sense */
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;          /* GPU memory is data: no instruction fetch from a BAR */
	pin = gdrdrv_pin_get(gf, vma->vm_pgoff);
	if (!pin)
		return -EINVAL;

	mutex_lock(&pin->lock);
	if (pin->cb_fired || pin->unpinned) {
		ret = -EINVAL;
		goto out;
	}
	if (pin->addr != pin->va) {
		gdr_dbg("mmap of handle 0x%llx: pinned address 0x%llx is not 64 KiB aligned\n",
			pin->handle, pin->addr);
		ret = -EINVAL;
		goto out;
	}
	if (len > pin->npages << PAGE_SHIFT) {
		ret = -EINVAL;
		goto out;
	}
	type = gdrdrv_choose_type(pin);
	if (!gdrdrv_mapping_type_allowed(pin, type)) {
		ret = -EINVAL;
		goto out;
	}
	/* The last step that can fail, and it fails having reserved nothing: no undo needed. */
	ret = type == GDRDRV_MAPPING_TYPE_WC ? gdrdrv_wc_reserve(pin) : 0;
	if (ret)
		goto out;
	gdrdrv_set_vma_flags(vma);
	vma->vm_page_prot = gdrdrv_io_prot(gdrdrv_prot(vma->vm_page_prot, type));
	vma->vm_ops = &gdrdrv_vm_ops;
	vma->vm_private_data = pin;     /* takes over our reference */
	pin->map_count++;
	pin->map_type = type;
	mutex_unlock(&pin->lock);
	return 0;
out:
	mutex_unlock(&pin->lock);
	gdrdrv_pin_put(pin);
	return ret;
}

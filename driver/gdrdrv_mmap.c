// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gdrdrv_mmap.c - CPU mappings of pinned GPU memory.
 *
 * mmap(fd, offset = handle << PAGE_SHIFT, len <= pinned pages) maps the pin from its start.
 * The PTEs are installed at mmap time with io_remap_pfn_range over physically contiguous
 * runs (BAR ranges are usually one run, which on x86 lets PAT reserve the memory type for
 * the whole VMA). The VMAs have no fault handler: once a pin is unpinned or its memory
 * freed, its PTEs are zapped and any later access raises SIGBUS.
 *
 * Memory types: WC is write-combined (non-coherent, the BAR's natural type); CACHING is
 * allowed only when the page table says the pages are CPU_CACHEABLE (coherent platforms);
 * DEVICE is the strongly ordered device type (arm64 pgprot_device, uncached elsewhere).
 */
#include <linux/mm.h>

#include "gdrdrv.h"

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
 * io_remap_pfn_range() clears the memory-encryption bit with cc_mkdec(), a GPL-only export.
 * For a device seen by an AMD SME/SEV host, the case where there is a bit to clear, that
 * bit is sme_me_mask, a plain export. (Intel TDX guests need the open flavour.)
 */
static int gdrdrv_io_remap(struct vm_area_struct *vma, unsigned long addr, unsigned long pfn,
			   unsigned long size, pgprot_t prot)
{
	return remap_pfn_range(vma, addr, pfn, size, __pgprot(pgprot_val(prot) & ~sme_me_mask));
}
#else
#define gdrdrv_io_remap io_remap_pfn_range
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

/* Bus address of byte `off` of the pinned range. */
static u64 gdrdrv_phys_at(const struct gdrdrv_pin *pin, u64 off)
{
	u64 psize = pin->gpu_page_size;
	u64 pos = (pin->va & (psize - 1)) + off;

	return pin->table->pages[pos / psize]->physical_address + pos % psize;
}

/* Install the PTEs for the first len bytes, one io_remap_pfn_range per contiguous run. */
static int gdrdrv_remap(struct gdrdrv_pin *pin, struct vm_area_struct *vma, u64 len)
{
	u64 psize = pin->gpu_page_size;
	u64 off = 0;

	while (off < len) {
		u64 phys = gdrdrv_phys_at(pin, off);
		u64 run = min(psize - ((pin->va + off) & (psize - 1)), len - off);
		int ret;

		while (off + run < len && gdrdrv_phys_at(pin, off + run) == phys + run)
			run += min(psize, len - off - run);
		if (!PAGE_ALIGNED(phys) || !PAGE_ALIGNED(run)) {
			gdr_err("GPU pages at 0x%llx are not host-page aligned\n", phys);
			return -EINVAL;
		}
		ret = gdrdrv_io_remap(vma, vma->vm_start + off, phys >> PAGE_SHIFT, run,
				      vma->vm_page_prot);
		if (ret)
			return ret;
		off += run;
	}
	return 0;
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
	if (pin->map_count && !--pin->map_count)
		pin->map_type = GDRDRV_MAPPING_TYPE_NONE;
	mutex_unlock(&pin->lock);
	gdrdrv_pin_put(pin);
}

static const struct vm_operations_struct gdrdrv_vm_ops = {
	.open = gdrdrv_vma_open,
	.close = gdrdrv_vma_close,
};

static void gdrdrv_set_vma_flags(struct vm_area_struct *vma)
{
	/* Not inherited by fork, never grown by mremap, not in core dumps, raw PFNs. */
	const vm_flags_t flags = VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP | VM_IO | VM_PFNMAP;

#ifdef GDRDRV_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
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
	gdrdrv_set_vma_flags(vma);
	vma->vm_page_prot = gdrdrv_prot(vma->vm_page_prot, type);
	ret = gdrdrv_remap(pin, vma, len);
	if (ret)
		goto out;               /* the core unmaps what was installed */

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

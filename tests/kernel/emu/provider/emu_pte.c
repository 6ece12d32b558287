// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * emu_pte.c - the PTE ioctl of the emulated provider (TEST ONLY): the PFN and cache mode that
 * the caller's page table holds for one address of a VM_IO/VM_PFNMAP mapping. The guest tests
 * use it to see what gdrdrv really installed on BAR pages: the right page at each offset, and
 * WC bits where gdr_get_info says WC (x86 PAT silently turns an unreserved "WC" request into
 * UC-). The page walk helper differs between the two kernel series the harness runs; x86 and
 * arm64 guests (the cache-mode decoding is per architecture).
 */
#include <linux/mm.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "emu.h"
#include "nvp2p_emu.h"

#if defined(CONFIG_X86)
/* The cache mode whose PTE encoding the bits are (cachemode2protval is the one export). */
static u32 emu_cache_mode(pgprot_t prot)
{
	unsigned long bits = pgprot_val(prot) & _PAGE_CACHE_MASK;
	enum page_cache_mode m;

	for (m = _PAGE_CACHE_MODE_WB; m <= _PAGE_CACHE_MODE_WP; m++)
		if (cachemode2protval(m) == bits)
			return m;
	return NVP2P_EMU_CACHE_UNKNOWN;
}
#define EMU_HAVE_PTE 1
#elif defined(CONFIG_ARM64)
/*
 * arm64 has memory attribute indexes instead of cache modes; they are reported as the x86
 * mode of the same use (nvp2p_emu.h): Normal (cacheable) as WB, Normal-NC (what
 * pgprot_writecombine gives) as WC, Device-nGnRE/nGnRnE (pgprot_device, pgprot_noncached) as UC.
 */
static u32 emu_cache_mode(pgprot_t prot)
{
	switch (pgprot_val(prot) & PTE_ATTRINDX_MASK) {
	case PTE_ATTRINDX(MT_NORMAL):
	case PTE_ATTRINDX(MT_NORMAL_TAGGED):
		return NVP2P_EMU_CACHE_WB;
	case PTE_ATTRINDX(MT_NORMAL_NC):
		return NVP2P_EMU_CACHE_WC;
	case PTE_ATTRINDX(MT_DEVICE_nGnRE):
	case PTE_ATTRINDX(MT_DEVICE_nGnRnE):
		return NVP2P_EMU_CACHE_UC;
	}
	return NVP2P_EMU_CACHE_UNKNOWN;
}
#define EMU_HAVE_PTE 1
#endif

#ifdef EMU_HAVE_PTE

/* Caller holds the mmap lock. */
static int emu_read_pte(struct vm_area_struct *vma, unsigned long addr, u64 *pfn, u32 *mode)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
	struct follow_pfnmap_args args = { .vma = vma, .address = addr };
	int ret = follow_pfnmap_start(&args);

	if (ret)
		return ret;
	*pfn = args.pfn;
	*mode = emu_cache_mode(args.pgprot);
	follow_pfnmap_end(&args);
#else
	spinlock_t *ptl;
	pte_t *ptep, pte;
	int ret = follow_pte(vma->vm_mm, addr, &ptep, &ptl);

	if (ret)
		return ret;
	pte = *ptep;
	pte_unmap_unlock(ptep, ptl);
	*pfn = pte_pfn(pte);
	*mode = emu_cache_mode(pte_pgprot(pte));
#endif
	return 0;
}

long emu_ioc_pte(void __user *uarg)
{
	struct nvp2p_emu_pte req;
	struct vm_area_struct *vma;
	struct mm_struct *mm = current->mm;
	int ret = -ENOENT;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	mmap_read_lock(mm);
	vma = vma_lookup(mm, req.uaddr);
	if (vma && (vma->vm_flags & (VM_IO | VM_PFNMAP)) &&
	    emu_read_pte(vma, req.uaddr, &req.pfn, &req.cache_mode) == 0)
		ret = 0;
	mmap_read_unlock(mm);
	if (ret)
		return ret;
	return copy_to_user(uarg, &req, sizeof(req)) ? -EFAULT : 0;
}
#else
long emu_ioc_pte(void __user *uarg)
{
	return -EOPNOTSUPP;
}
#endif

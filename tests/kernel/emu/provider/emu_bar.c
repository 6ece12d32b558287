// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * emu_bar.c - GPU pages in a PCI memory BAR for the emulated provider (TEST ONLY). A real
 * GPU's pages are BAR1 addresses: not RAM, no struct page, mapped by consumers with
 * io_remap and a memory-type (PAT) reservation. QEMU's ivshmem-plain device gives the guest
 * such a BAR (BAR 2, 64-bit prefetchable memory); this file claims it as a PCI driver and
 * hands out 64 KiB units of it with a bitmap, so NVP2P_EMU_ALLOC_BAR allocations put real
 * MMIO addresses in their page tables.
 *
 * The provider's own accesses (zeroing, READ, WRITE) go through a short-lived ioremap_wc of
 * the bytes concerned, never phys_to_virt (there is no kernel mapping of a BAR). Short-lived
 * so that the only lasting memory-type reservation of an allocation's pages while a test
 * looks at /sys/kernel/debug/x86/pat_memtype_list is the consumer's; WC so that it agrees
 * with the WC reservation the consumer holds (PAT refuses conflicting types).
 */
#include <linux/bitmap.h>
#include <linux/io.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "emu.h"
#include "nvp2p_emu.h"

#define EMU_BAR_VENDOR 0x1af4   /* Red Hat / QEMU */
#define EMU_BAR_DEVICE 0x1110   /* ivshmem (inter-VM shared memory) */
#define EMU_BAR_INDEX  2        /* its shared-memory BAR */
#define EMU_BAR_UNIT   (64ULL * 1024)
#define EMU_BAR_BOUNCE 4096     /* bytes copied per step between user space and the BAR */

static DEFINE_MUTEX(emu_bar_lock);      /* guards everything below; taken after emu_lock */
static struct pci_dev *emu_bar_pdev;    /* NULL: no BAR, ALLOC_BAR fails with ENODEV */
static phys_addr_t emu_bar_start;
static unsigned long emu_bar_units;
static unsigned long *emu_bar_used;     /* one bit per 64 KiB unit */

/* Reserve `size` bytes (a 64 KiB multiple) aligned to `align`; zero them. */
int emu_bar_alloc(u64 size, u64 align, u64 *off)
{
	unsigned long n = size / EMU_BAR_UNIT, start;
	void __iomem *p;
	int ret = 0;

	mutex_lock(&emu_bar_lock);
	if (!emu_bar_pdev) {
		ret = -ENODEV;
	} else {
		start = bitmap_find_next_zero_area(emu_bar_used, emu_bar_units, 0, n,
						   max_t(u64, align / EMU_BAR_UNIT, 1) - 1);
		if (start >= emu_bar_units)
			ret = -ENOMEM;
		else
			bitmap_set(emu_bar_used, start, n);
	}
	mutex_unlock(&emu_bar_lock);
	if (ret)
		return ret;
	*off = (u64)start * EMU_BAR_UNIT;

	/* Like the RAM allocations, a new one reads as zeros (the BAR keeps old tests' bytes). */
	p = ioremap_wc(emu_bar_start + *off, size);
	if (!p) {
		emu_bar_free(*off, size);
		return -ENOMEM;
	}
	memset_io(p, 0, size);
	iounmap(p);
	return 0;
}

void emu_bar_free(u64 off, u64 size)
{
	mutex_lock(&emu_bar_lock);
	bitmap_clear(emu_bar_used, off / EMU_BAR_UNIT, size / EMU_BAR_UNIT);
	mutex_unlock(&emu_bar_lock);
}

phys_addr_t emu_bar_phys(u64 off)
{
	return emu_bar_start + off;
}

/* Copy len bytes between user space and the BAR at `phys`, through a bounce buffer. */
int emu_bar_copy(phys_addr_t phys, void __user *u, u64 len, bool to_user)
{
	void __iomem *io = ioremap_wc(phys, len);
	void *bounce = kmalloc(EMU_BAR_BOUNCE, GFP_KERNEL);
	u64 done = 0, n;
	int ret = 0;

	if (!io || !bounce) {
		ret = -ENOMEM;
		goto out;
	}
	for (; done < len; done += n) {
		n = min_t(u64, len - done, EMU_BAR_BOUNCE);
		if (to_user) {
			memcpy_fromio(bounce, io + done, n);
			if (copy_to_user(u + done, bounce, n))
				ret = -EFAULT;
		} else if (copy_from_user(bounce, u + done, n)) {
			ret = -EFAULT;
		} else {
			memcpy_toio(io + done, bounce, n);
		}
		if (ret)
			break;
	}
out:
	kfree(bounce);
	if (io)
		iounmap(io);
	return ret;
}

/* NVP2P_EMU_IOC_HOLD: mappings kept only for the memory-type reservation they hold. */
#define EMU_BAR_HOLDS 4
static struct { u64 va; void __iomem *io; } emu_bar_holds[EMU_BAR_HOLDS];

int emu_bar_hold(phys_addr_t phys, u64 len, u32 mode, u64 va)
{
	int i, ret = -EBUSY;

	if (mode != NVP2P_EMU_CACHE_WC && mode != NVP2P_EMU_CACHE_UC_MINUS && mode != NVP2P_EMU_CACHE_WB)
		return -EINVAL;

	mutex_lock(&emu_bar_lock);
	for (i = 0; i < EMU_BAR_HOLDS; i++)
		if (emu_bar_holds[i].io && emu_bar_holds[i].va == va)
			goto out;
	for (i = 0; i < EMU_BAR_HOLDS && emu_bar_holds[i].io; i++)
		;
	if (i < EMU_BAR_HOLDS) {
		emu_bar_holds[i].io = mode == NVP2P_EMU_CACHE_WC ? ioremap_wc(phys, len) :
				      mode == NVP2P_EMU_CACHE_WB ? ioremap_cache(phys, len) :
				      ioremap(phys, len);
		emu_bar_holds[i].va = va;
		ret = emu_bar_holds[i].io ? 0 : -ENOMEM;
	}
out:
	mutex_unlock(&emu_bar_lock);
	return ret;
}

int emu_bar_release(u64 va)
{
	int i, ret = -EINVAL;

	mutex_lock(&emu_bar_lock);
	for (i = 0; i < EMU_BAR_HOLDS; i++)
		if (emu_bar_holds[i].io && emu_bar_holds[i].va == va) {
			iounmap(emu_bar_holds[i].io);
			emu_bar_holds[i].io = NULL;
			ret = 0;
		}
	mutex_unlock(&emu_bar_lock);
	return ret;
}

void emu_bar_release_all_holds(void)
{
	int i;

	mutex_lock(&emu_bar_lock);
	for (i = 0; i < EMU_BAR_HOLDS; i++)
		if (emu_bar_holds[i].io) {
			iounmap(emu_bar_holds[i].io);
			emu_bar_holds[i].io = NULL;
		}
	mutex_unlock(&emu_bar_lock);
}

static int emu_bar_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	resource_size_t len = pci_resource_len(pdev, EMU_BAR_INDEX);
	unsigned long *used;
	int ret;

	if (READ_ONCE(emu_bar_pdev))
		return -EBUSY;          /* one BAR is enough */
	if (!(pci_resource_flags(pdev, EMU_BAR_INDEX) & IORESOURCE_MEM) || len < EMU_BAR_UNIT)
		return -ENODEV;
	ret = pci_enable_device_mem(pdev);
	if (ret)
		return ret;
	/* Claimed, so /proc/iomem names us and nothing else maps it meanwhile. */
	ret = pci_request_region(pdev, EMU_BAR_INDEX, "nvp2p_emu");
	if (ret)
		goto out_disable;
	used = bitmap_zalloc(len / EMU_BAR_UNIT, GFP_KERNEL);
	if (!used) {
		ret = -ENOMEM;
		goto out_release;
	}
	mutex_lock(&emu_bar_lock);
	emu_bar_start = pci_resource_start(pdev, EMU_BAR_INDEX);
	emu_bar_units = len / EMU_BAR_UNIT;
	emu_bar_used = used;
	emu_bar_pdev = pdev;
	mutex_unlock(&emu_bar_lock);
	pr_info("nvp2p_emu: GPU memory in BAR %d of %s: %pR\n", EMU_BAR_INDEX, pci_name(pdev),
		&pdev->resource[EMU_BAR_INDEX]);
	return 0;

out_release:
	pci_release_region(pdev, EMU_BAR_INDEX);
out_disable:
	pci_disable_device(pdev);
	return ret;
}

/* Only at module exit (no sysfs unbind): every allocation was released before. */
static void emu_bar_remove(struct pci_dev *pdev)
{
	mutex_lock(&emu_bar_lock);
	if (!bitmap_empty(emu_bar_used, emu_bar_units))
		pr_err("nvp2p_emu: BAR units still allocated at unload\n");
	bitmap_free(emu_bar_used);
	emu_bar_used = NULL;
	emu_bar_pdev = NULL;
	mutex_unlock(&emu_bar_lock);
	pci_release_region(pdev, EMU_BAR_INDEX);
	pci_disable_device(pdev);
}

static const struct pci_device_id emu_bar_ids[] = {
	{ PCI_DEVICE(EMU_BAR_VENDOR, EMU_BAR_DEVICE) },
	{ }
};

static struct pci_driver emu_bar_driver = {
	.name = "nvp2p_emu",
	.id_table = emu_bar_ids,
	.probe = emu_bar_probe,
	.remove = emu_bar_remove,
	.driver.suppress_bind_attrs = true,
};

int emu_bar_register(void)
{
	return pci_register_driver(&emu_bar_driver);
}

void emu_bar_unregister(void)
{
	pci_unregister_driver(&emu_bar_driver);
}

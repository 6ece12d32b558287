/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * gdrdrv_internal.h - internal declarations of the gdrdrv module, shared by its five files:
 * gdrdrv_main.c (module, device node, params, proc), gdrdrv_ioctl.c, gdrdrv_mmap.c,
 * gdrdrv_pin.c (NVIDIA p2p calls, handle table) and gdrdrv_wc.c (bus addresses, WC
 * reservations). Calls go one way, in that order: a file calls only those after it
 * (driver/README.md).
 *
 * Object lifetimes:
 *  - struct gdrdrv_file lives from open() to release(). A mapping holds a reference on the
 *    struct file, so no pin mapping outlives its gdrdrv_file. Each file has its own
 *    address_space (its VMAs, zapped by offset) and its own handle table.
 *  - struct gdrdrv_pin is reference counted: the file's handle table holds one reference until
 *    UNPIN (or release of the file), every VMA holds one. The GPU pages are given back when
 *    the pin leaves the table, after its mappings are zapped: the fault handler, the only
 *    place PTEs are made, answers SIGBUS from then on. The struct goes with the last reference.
 *
 * Locking order: gf->lock -> xa_lock(gf->handles); mmap_lock -> pin->lock -> i_mmap_rwsem
 * (zap); pin->lock -> the WC reservation shares' lock (gdrdrv_wc.c). Never hold pin->lock
 * while calling nvidia_p2p_put_pages*(): put_pages waits for a running free callback, and
 * the callback takes pin->lock.
 */
#ifndef GDRDRV_INTERNAL_H
#define GDRDRV_INTERNAL_H

#include <linux/completion.h>
#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/printk.h>
#include <linux/sched.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/xarray.h>

#include "gdrdrv_conftest.h"
#include "uapi/gdrdrv.h"

#ifdef NV_P2P_HEADER
#include NV_P2P_HEADER          /* the installed NVIDIA driver's nv-p2p.h */
#else
#include "nv_p2p.h"             /* our layout-identical declarations */
#define GDRDRV_OWN_NV_P2P 1
#endif

/* The persistent API exists in every header that advertises it, and in ours. */
#if defined(GDRDRV_OWN_NV_P2P) || defined(NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API)
#define GDRDRV_HAVE_PERSISTENT 1
#else
#define GDRDRV_HAVE_PERSISTENT 0
#endif
#ifdef NVIDIA_P2P_FLAGS_FORCE_BAR1_MAPPING
#define GDRDRV_HAVE_FORCE_BAR1 1
#else
#define GDRDRV_HAVE_FORCE_BAR1 0
#endif

/* Pins are made in 64 KiB GPU pages, whatever page size the page table reports. */
#define GDRDRV_GPU_PAGE_SHIFT 16
#define GDRDRV_GPU_PAGE_SIZE  BIT_ULL(GDRDRV_GPU_PAGE_SHIFT)
#define GDRDRV_GPU_PAGE_MASK  (~(GDRDRV_GPU_PAGE_SIZE - 1))

/* Module parameters (gdrdrv_main.c). */
extern int gdrdrv_dbg_enabled;
extern int gdrdrv_info_enabled;
extern int gdrdrv_use_persistent_mapping;
extern unsigned int gdrdrv_offset_space_log2;
extern unsigned int gdrdrv_max_pins_per_file;
extern unsigned int gdrdrv_max_pins_per_user;
extern unsigned int gdrdrv_max_pinned_mib_per_user;
extern u32 gdrdrv_abi;                   /* the ABI presented: major << 16 | minor */

/* Logs are rate limited: a misbehaving client must not flood the kernel log. */
#define gdr_err(fmt, ...)  pr_err_ratelimited("gdrdrv: " fmt, ##__VA_ARGS__)
#define gdr_info(fmt, ...)						\
	do {								\
		if (READ_ONCE(gdrdrv_info_enabled))			\
			pr_info_ratelimited("gdrdrv: " fmt, ##__VA_ARGS__); \
	} while (0)
#define gdr_dbg(fmt, ...)						\
	do {								\
		if (READ_ONCE(gdrdrv_dbg_enabled))			\
			pr_info_ratelimited("gdrdrv: " fmt, ##__VA_ARGS__); \
	} while (0)

/* One open file of /dev/gdrdrv. */
struct gdrdrv_file {
	struct mm_struct *mm;            /* the opener's address space (identity only) */
	pid_t tgid;                      /* the opener's process */
	u64 start_time;                  /* its thread group's start (task_struct start_time) */
	struct address_space mapping;    /* this file's own (f_mapping): VMAs, zapped by offset */
	struct mutex lock;               /* protects the four below */
	struct list_head pins;           /* pins still in the handle table */
	struct xarray handles;           /* handle -> pin, stored at the range's start */
	u64 cursor;                      /* where the next handle search starts */
	unsigned int npins;              /* pins in the table */
	/*
	 * Pins unpinned while mapped, whose structs live on with their VMAs: with npins, at
	 * most max_pins_per_file. Changed under the pin's lock.
	 */
	atomic_t ndetached;
};

struct gdrdrv_pin {
	struct kref ref;
	struct gdrdrv_file *owner;
	struct list_head node;           /* in owner->pins, under owner->lock */

	/* Fixed once the pin is made. */
	u64 handle;                      /* mmap page offset; 0 until inserted in the table */
	u64 npages;                      /* host pages of offset space: mapped_size >> PAGE_SHIFT */
	u64 addr;                        /* as the caller gave it */
	u64 va;                          /* addr rounded down to 64 KiB */
	u64 mapped_size;                 /* 64 KiB multiple */
	u64 p2p_token;
	u32 va_space;
	bool persistent;
	bool cacheable;                  /* page table flag CPU_CACHEABLE */
	u64 gpu_page_size;               /* from the page table: 4, 64 or 128 KiB */
	u64 tm_cycles;                   /* time spent in get_pages */
	struct nvidia_p2p_page_table *table;
	unsigned long cb_id;             /* names it to its free callback; 0: persistent */
	kuid_t uid;                      /* charged to this user (gdrdrv_user.c) ... */
	bool charged;                    /* ... once this is set */

	/* Under lock. */
	struct mutex lock;
	bool cb_fired;                   /* the free callback ran: pages are gone */
	bool orphan;                     /* put_pages failed before the callback: kept for it */
	struct completion cb_done;       /* the free callback's last touch of the pin */
	bool unpinned;                   /* removed from the handle table */
	bool detached;                   /* unpinned while mapped: counted in owner->ndetached */
	unsigned int map_count;          /* live VMAs */
	u32 req_type;                    /* REQ_MAPPING_TYPE, NONE = module's choice */
	u32 map_type;                    /* type of the live VMAs, NONE when unmapped */
	/*
	 * x86: the runs of BAR pages whose WC memory type is reserved (or shared) while the
	 * pin has mappings; NULL: none.
	 */
	unsigned long *wc_runs;
};

/*
 * The opener is known by its mm pointer, tgid and the start time of its thread group, held
 * without references (mmdrop and put_pid are GPL-only exports). The start time is what makes
 * it an identity: after the opener exits, a process that holds its file could fork until a
 * child gets both its recycled pid and (slab reuse) its mm_struct's address, but that child
 * starts later.
 */
static inline bool gdrdrv_same_process(const struct gdrdrv_file *gf)
{
	return current->mm == gf->mm && current->tgid == gf->tgid &&
	       current->group_leader->start_time == gf->start_time;
}

/* gdrdrv_pin.c */
int gdrdrv_pin_create(struct gdrdrv_file *gf, u64 addr, u64 size, u64 p2p_token,
		      u32 va_space, u32 flags, struct gdrdrv_pin **pinp);
struct gdrdrv_pin *gdrdrv_pin_get(struct gdrdrv_file *gf, u64 handle);
void gdrdrv_pin_put(struct gdrdrv_pin *pin);
int gdrdrv_pin_unpin(struct gdrdrv_file *gf, u64 handle);
int gdrdrv_pin_remove(struct gdrdrv_file *gf, struct gdrdrv_pin *pin);
void gdrdrv_pin_release_all(struct gdrdrv_file *gf);
void gdrdrv_pin_zap(struct gdrdrv_pin *pin);
bool gdrdrv_persistent_supported(void);
bool gdrdrv_force_pcie_supported(void);
unsigned long gdrdrv_pin_count(void);
void gdrdrv_pin_module_exit(void);

/* gdrdrv_ioctl.c */
long gdrdrv_ioctl(struct file *filp, unsigned int cmd, unsigned long arg);

/* gdrdrv_mmap.c */
int gdrdrv_mmap(struct file *filp, struct vm_area_struct *vma);
bool gdrdrv_mapping_type_allowed(const struct gdrdrv_pin *pin, u32 type);
u32 gdrdrv_tsc_khz(void);

#ifdef GDRDRV_KUNIT             /* reached by gdrdrv_kunit.c */
#define GDRDRV_TESTED
int gdrdrv_handle_insert(struct gdrdrv_file *gf, struct gdrdrv_pin *pin);
int gdrdrv_pin_check_args(u64 addr, u64 size, u32 flags, u64 *endp);
#else
#define GDRDRV_TESTED static
#endif

/* gdrdrv_user.c */
int gdrdrv_user_charge(kuid_t *uid, u64 bytes);
void gdrdrv_user_uncharge(kuid_t uid, u64 bytes);

/* gdrdrv_wc.c: under pin->lock, while the page table is valid. */
u64 gdrdrv_phys_at(const struct gdrdrv_pin *pin, u64 off);
int gdrdrv_wc_reserve(struct gdrdrv_pin *pin);
void gdrdrv_wc_release(struct gdrdrv_pin *pin);

/*
 * The cycle counter behind tm_cycles. On arm64 get_cycles() calls arch_timer_read_counter, a
 * GPL-only export, and the kernel refuses a module that uses one and imports from the
 * proprietary nvidia.ko (driver/tests/test_driver_builds.sh checks the arm64 build): that
 * flavour reads the virtual counter, which get_cycles() reads on an erratum-free CPU, itself.
 */
#include <linux/timex.h>
#if defined(CONFIG_ARM64) && defined(GDRDRV_FLAVOUR_PROPRIETARY)
#include <asm/barrier.h>
#include <asm/sysreg.h>
static inline cycles_t gdrdrv_cycles(void)
{
	isb();
	return read_sysreg(cntvct_el0);
}
#else
static inline cycles_t gdrdrv_cycles(void)
{
	return get_cycles();
}
#endif

#endif /* GDRDRV_INTERNAL_H */

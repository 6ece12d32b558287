/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * nvp2p_emu.h - control interface of the emulated NVIDIA p2p provider (TEST ONLY, never
 * installed). The provider exports the nvidia_p2p_* functions backed by ordinary RAM (or,
 * on request, by a PCI memory BAR); user space creates "GPU allocations" at fake device
 * addresses through /dev/nvp2p_emu, fills and reads them, frees them (which fires the free
 * callback of non-persistent pins), and injects failures. The tools' memory helper uses it
 * so gdrcopy_sanity runs inside the QEMU guest.
 */
#ifndef NVP2P_EMU_H
#define NVP2P_EMU_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define NVP2P_EMU_DEVICE "/dev/nvp2p_emu"
#define NVP2P_EMU_MAGIC 0xE7

/* Page size kinds, as the NVIDIA page-size enum: 0 = 4 KiB, 1 = 64 KiB, 2 = 128 KiB. */
struct nvp2p_emu_alloc {
    __u64 size;        /* in: bytes, rounded up to the page size */
    __u32 page_kind;   /* in: 0, 1 or 2 */
    __u32 flags;       /* in: NVP2P_EMU_ALLOC_* */
    __u64 va;          /* out: fake device address, aligned to 64 KiB at least */
};
#define NVP2P_EMU_ALLOC_CPU_CACHEABLE (1U << 0) /* page table says CPU_CACHEABLE */
/*
 * Added for the coherent-platform tests: the module parameter coherent (NVP2P_EMU_COHERENT_PARAM,
 * writable at run time) makes every RAM allocation's page tables say CPU_CACHEABLE, as NVIDIA's
 * driver does on Grace in CDMM mode, except those of pins made with FORCE_BAR1_MAPPING; off,
 * FORCE_BAR1_MAPPING is refused (ENOTSUPP), as NVIDIA's driver refuses it on a GPU without a
 * coherent link.
 */
#define NVP2P_EMU_COHERENT_PARAM "/sys/module/nvp2p_emu/parameters/coherent"
/*
 * Added for the MMIO tests: the GPU pages come from the memory BAR of a QEMU ivshmem-plain
 * device (PCI 1af4:1110, BAR 2) instead of RAM, so the page table holds non-RAM physical
 * addresses as a real GPU's BAR1 does. ENODEV when the guest has no such device, ENOMEM when
 * the BAR is full; not with CPU_CACHEABLE (EINVAL). BAR_REVERSED (only with BAR) places the
 * GPU pages in descending physical order, so no two consecutive pages are contiguous.
 * Bits 1-7 stay unused: older tests pass them as "unknown flag" and expect EINVAL.
 */
#define NVP2P_EMU_ALLOC_BAR           (1U << 8)
#define NVP2P_EMU_ALLOC_BAR_REVERSED  (1U << 9)

struct nvp2p_emu_free {
    __u64 va;          /* in: an address returned by ALLOC */
};

/* Copy between a user buffer and the RAM behind [va, va+len) (inside one allocation). */
struct nvp2p_emu_rw {
    __u64 va;
    __u64 len;
    __u64 user_ptr;
};

/* Make the next `count` calls of `what` fail with -errno_value. */
struct nvp2p_emu_inject {
    __u32 what;        /* NVP2P_EMU_FAIL_* */
    __u32 count;
    __s32 errno_value; /* positive errno, e.g. 12 for ENOMEM */
    __u32 pad;
};
#define NVP2P_EMU_FAIL_GET_PAGES            1
#define NVP2P_EMU_FAIL_GET_PAGES_PERSISTENT 2
#define NVP2P_EMU_FAIL_ALLOC                3
/* Added for the lifetime tests: nvidia_p2p_put_pages fails and keeps the table and its free
 * callback registered, as a driver that still holds the callback would. */
#define NVP2P_EMU_FAIL_PUT_PAGES            4

struct nvp2p_emu_stats {
    __u64 live_allocs;     /* allocations not yet freed */
    __u64 live_pins;       /* page tables handed out and not yet put/freed: the leak counter */
    __u64 callbacks_fired; /* free callbacks run so far */
    __u64 total_pins;      /* page tables handed out since load */
};

#define NVP2P_EMU_IOC_ALLOC  _IOWR(NVP2P_EMU_MAGIC, 1, struct nvp2p_emu_alloc)
#define NVP2P_EMU_IOC_FREE   _IOW(NVP2P_EMU_MAGIC, 2, struct nvp2p_emu_free)
#define NVP2P_EMU_IOC_WRITE  _IOW(NVP2P_EMU_MAGIC, 3, struct nvp2p_emu_rw)
#define NVP2P_EMU_IOC_READ   _IOW(NVP2P_EMU_MAGIC, 4, struct nvp2p_emu_rw)
#define NVP2P_EMU_IOC_INJECT _IOW(NVP2P_EMU_MAGIC, 5, struct nvp2p_emu_inject)
#define NVP2P_EMU_IOC_STATS  _IOR(NVP2P_EMU_MAGIC, 6, struct nvp2p_emu_stats)

/*
 * Added for the QEMU tests: FREE sleeps `ms` milliseconds after marking the callbacks of its
 * pins as running and before calling them, which widens the window in which a consumer's
 * put_pages must wait for the callback (0 = no delay, at most 10000).
 */
struct nvp2p_emu_cb_delay {
    __u32 ms;
    __u32 pad;
};
#define NVP2P_EMU_IOC_CB_DELAY _IOW(NVP2P_EMU_MAGIC, 7, struct nvp2p_emu_cb_delay)

/*
 * Added for the race tests (issue 43: no race test may rest on a sleep): gates. The module
 * parameter gate (NVP2P_EMU_GATE_PARAM, writable at run time) is a mask of the places below;
 * while a place's bit is set, a task that reaches it waits there until the bit is cleared
 * (30 s at most); a place whose bit is clear stops for its delay, if any (cb_delay above,
 * parameters put_delay_ms and unlink_delay_ms). The read-only parameter stopped
 * (NVP2P_EMU_STOPPED_PARAM) reads "CB PUT UNLINK": how many tasks are stopped at each place
 * now, by gate or delay.
 */
#define NVP2P_EMU_GATE_PARAM    "/sys/module/nvp2p_emu/parameters/gate"
#define NVP2P_EMU_STOPPED_PARAM "/sys/module/nvp2p_emu/parameters/stopped"
#define NVP2P_EMU_GATE_CB     (1U << 0) /* FREE, its callbacks due (marked running; in order 2
                                           unlinked), before it calls them: where cb_delay is */
#define NVP2P_EMU_GATE_PUT    (1U << 1) /* nvidia_p2p_put_pages, before it looks the table up */
#define NVP2P_EMU_GATE_UNLINK (1U << 2) /* nvidia_p2p_free_page_table, called from the
                                           consumer's running callback, after the unlink */

/* Added for the MMIO tests: the physical address behind byte `va` of a live allocation. */
struct nvp2p_emu_phys {
    __u64 va;          /* in */
    __u64 phys;        /* out */
};
#define NVP2P_EMU_IOC_PHYS _IOWR(NVP2P_EMU_MAGIC, 8, struct nvp2p_emu_phys)

/*
 * Added for the MMIO tests (x86 and arm64 guests; EOPNOTSUPP elsewhere): what the calling
 * process's page table holds for the user address `uaddr` of a VM_IO/VM_PFNMAP mapping (a
 * gdrdrv mapping): the PFN and the cache mode that the PTE's PAT bits select. On arm64 the
 * memory attribute reads as the mode of the same use: Normal as WB, Normal-NC as WC, Device as
 * UC. ENOENT when no PTE is there.
 */
struct nvp2p_emu_pte {
    __u64 uaddr;       /* in */
    __u64 pfn;         /* out */
    __u32 cache_mode;  /* out: NVP2P_EMU_CACHE_*, or NVP2P_EMU_CACHE_UNKNOWN */
    __u32 pad;
};
/* x86's enum page_cache_mode, numbered as the kernel numbers it. */
#define NVP2P_EMU_CACHE_WB       0
#define NVP2P_EMU_CACHE_WC       1
#define NVP2P_EMU_CACHE_UC_MINUS 2
#define NVP2P_EMU_CACHE_UC       3
#define NVP2P_EMU_CACHE_WT       4
#define NVP2P_EMU_CACHE_WP       5
#define NVP2P_EMU_CACHE_UNKNOWN  0xffffffffU
#define NVP2P_EMU_IOC_PTE _IOWR(NVP2P_EMU_MAGIC, 9, struct nvp2p_emu_pte)

/*
 * Added for the PAT tests (x86 guests): another owner's memory-type reservation on BAR pages.
 * HOLD maps [va, va + len) of a live BAR allocation with the cache mode `mode` (WC: ioremap_wc,
 * UC_MINUS: ioremap, WB: ioremap_cache, which the MTRRs of a PCI hole make UC- too), which
 * reserves that type in PAT until RELEASE of the same va; len a multiple of 4 KiB inside one
 * GPU page. At most 4 holds (EBUSY beyond). The allocation may not be read, written or freed
 * while it is held (its own WC accesses could conflict).
 */
struct nvp2p_emu_hold {
    __u64 va;          /* in */
    __u64 len;         /* in: HOLD only */
    __u32 mode;        /* in: HOLD only, NVP2P_EMU_CACHE_WC, _UC_MINUS or _WB */
    __u32 pad;
};
#define NVP2P_EMU_IOC_HOLD    _IOW(NVP2P_EMU_MAGIC, 10, struct nvp2p_emu_hold)
#define NVP2P_EMU_IOC_RELEASE _IOW(NVP2P_EMU_MAGIC, 11, struct nvp2p_emu_hold)

#endif /* NVP2P_EMU_H */

/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * emu.h - shared state of the emulated NVIDIA p2p provider (TEST ONLY). An allocation is a
 * fake device address range backed by RAM chunks of the chosen GPU page size, or by a range
 * of a PCI memory BAR (emu_bar.c); a pin is one
 * page table handed out by the nvidia_p2p_* exports. One mutex guards everything: the
 * provider is test code, and simple locking makes its own behaviour easy to trust.
 */
#ifndef NVP2P_EMU_INTERNAL_H
#define NVP2P_EMU_INTERNAL_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/wait.h>

#include "nv_p2p.h"

struct page;
struct task_struct;

struct emu_alloc {
	struct list_head node;      /* in emu_allocs while not freed */
	u64 va;                     /* fake device address, 2 MiB aligned */
	u64 size;                   /* rounded to the chunk size and to 64 KiB */
	u32 page_kind;              /* enum nvidia_p2p_page_size_type */
	u32 flags;                  /* NVP2P_EMU_ALLOC_* */
	unsigned int order;         /* alloc_pages order of one chunk */
	u64 chunk;                  /* bytes per chunk = GPU page size */
	unsigned long nchunks;
	struct page **chunks;       /* RAM allocations only */
	bool bar;                   /* NVP2P_EMU_ALLOC_BAR: the pages are BAR bytes at bar_off */
	u64 bar_off;
	bool freed;                 /* FREE ran: no new pins, no READ/WRITE */
	bool freeing;               /* FREE still runs and uses it (it drops emu_lock midway) */
	unsigned int persistent_pins; /* RAM stays until these are put */
	unsigned int running_cbs;   /* free callbacks still running for it */
	unsigned int rw_users;      /* READ/WRITE copies in progress (run without emu_lock) */
};

enum emu_cb_state { EMU_CB_NONE, EMU_CB_RUNNING, EMU_CB_DONE };

struct emu_pin {
	struct list_head node;      /* in emu_pins while the table is handed out */
	struct list_head fire_node; /* on FREE's local list while its callback is due */
	struct nvidia_p2p_page_table table;
	struct emu_alloc *alloc;
	u64 va;                     /* the virtual_address given to get_pages */
	bool persistent;
	bool listed;                /* still in emu_pins (table not put/freed) */
	enum emu_cb_state cb_state;
	struct task_struct *cb_task; /* the task running the free callback */
	void (*free_callback)(void *data);
	void *data;
	struct nvidia_p2p_page *page_array;
	struct nvidia_p2p_page **page_ptrs;
	u8 uuid[16];
};

extern struct mutex emu_lock;
extern struct list_head emu_allocs;
extern struct list_head emu_pins;
extern wait_queue_head_t emu_cb_wq;

/* Counters reported by STATS (under emu_lock). */
extern u64 emu_live_allocs, emu_live_pins, emu_callbacks_fired, emu_total_pins;

/* Injected failures, indexed by NVP2P_EMU_FAIL_* (under emu_lock). */
#define EMU_FAIL_KINDS 5
extern u32 emu_fail_count[EMU_FAIL_KINDS];
extern int emu_fail_errno[EMU_FAIL_KINDS];
int emu_take_injected(unsigned int what);      /* 0 or the -errno to fail with */

/* Milliseconds that FREE waits between marking a callback running and running it. */
extern unsigned int emu_cb_delay_ms;

struct emu_alloc *emu_find_alloc(u64 va, u64 len); /* the live alloc holding the range */
void emu_release_alloc_ram(struct emu_alloc *a);    /* free chunks + struct */
void emu_alloc_maybe_release(struct emu_alloc *a);  /* if freed and nothing uses it */
int emu_free_allocation(u64 va);                    /* the FREE ioctl: fires callbacks */
void emu_drop_all_pins(void);                       /* module exit */
phys_addr_t emu_chunk_phys(const struct emu_alloc *a, unsigned long i); /* GPU page i */

/* emu_bar.c: GPU pages in the memory BAR of an ivshmem device, when the guest has one. */
int emu_bar_register(void);
void emu_bar_unregister(void);
int emu_bar_alloc(u64 size, u64 align, u64 *off);  /* -ENODEV without a BAR */
void emu_bar_free(u64 off, u64 size);
phys_addr_t emu_bar_phys(u64 off);
int emu_bar_copy(phys_addr_t phys, void __user *u, u64 len, bool to_user);
int emu_bar_hold(phys_addr_t phys, u64 len, u32 mode, u64 va); /* a PAT entry, keyed by va */
int emu_bar_release(u64 va);
void emu_bar_release_all_holds(void);

/* emu_hold.c: holding a free callback inside its mutex_unlock (the unlock_hold parameter). */
void emu_hold_cb_begin(void);   /* FREE is about to run a callback in this task */
void emu_hold_cb_end(void);
void emu_hold_put_failed(void); /* put_pages failed by injection; emu_lock dropped */
void emu_hold_exit(void);

/*
 * emu_gate.c: the places where a task stops (place: one NVP2P_EMU_GATE_* bit): until the
 * place's gate opens while it is closed, else for delay_ms (0: not at all).
 */
void emu_stop_at(unsigned int place, unsigned int delay_ms);
void emu_gate_exit(void);

/* emu_pte.c: the PTE ioctl (x86 and arm64; EOPNOTSUPP elsewhere). */
long emu_ioc_pte(void __user *uarg);

#endif /* NVP2P_EMU_INTERNAL_H */

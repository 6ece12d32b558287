// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * emu_hold.c - the unlock hold of the emulated provider (TEST ONLY): holds a consumer's free
 * callback inside the slow path of its mutex_unlock, between the release of the owner word
 * and the spinlock the slow path takes next (lock->wait_lock, to wake the first waiter).
 * Another task may take the mutex in that window, and if that lets the pin be freed, the
 * resumed unlock touches freed memory. tests/kernel/guest/unlock_hold_test.c opens the window
 * every time with this hold (driver/README.md, the L2 test).
 *
 * The point is found by lockdep's lock tracepoints, so only where lockdep exists (the rig's
 * debug kernel, which also has KASAN, the check that sees a resumed unlock touch a freed pin):
 * the callback's task releases a mutex (lock_release) and then acquires that mutex's wait_lock
 * (lock_acquire). A module cannot name those tracepoints (not exported), so it finds them by
 * name (for_each_kernel_tracepoint). Elsewhere arming fails with EOPNOTSUPP and the test
 * skips. The stock kernels used to get a kprobe on _raw_spin_lock called from
 * __mutex_unlock_slowpath, armed for each round: a loaded 2-CPU guest of Debian's 6.1 kernel
 * died once as it was armed, both CPUs calling address 0 from spin_lock's callers (the
 * vmalloc free worker, the console), while the debug kernel's run of the same tree passed
 * under KASAN; a stock kernel has no KASAN to see what the test looks for anyway. The probes
 * are registered only while armed, and look only at the task that FREE is running a callback
 * in (emu_hold_cb_begin/end).
 *
 * The second hold (armed by writing 2) is for the other side of a failed put: the task whose
 * nvidia_p2p_put_pages the provider failed by injection (emu_hold_put_failed) is held at the
 * first lock it takes after the next mutex it releases. In gdrdrv that mutex is pin->lock,
 * released once the pin is an orphan whose table reference its free callback may drop at
 * once; the lock after it is the rate limit of the error message that reads the pin. A FREE
 * run meanwhile frees the pin if gdrdrv keeps no reference of its own across that window.
 *
 * unlock_hold (/sys/module/nvp2p_emu/parameters/unlock_hold): write 1 or 2 to arm, 0 to end a
 * hold and disarm; reads 0 off, 1 armed, 2 holding, 3 held and let go. A hold lasts until the
 * write of 0, or EMU_HOLD_MAX_MS at most (a test that dies must not leave a CPU spinning).
 */
#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#include "emu.h"

/*
 * The bound of a hold the test does not end (it ends each as soon as it has seen what it
 * needs): long enough for a slow, loaded machine, under the hard-lockup watchdog's 10 s (in
 * a tracepoint the hold may spin with interrupts off) and the soft-lockup and RCU-stall 20 s.
 */
#define EMU_HOLD_MAX_MS 8000

enum { EMU_HOLD_OFF, EMU_HOLD_ARMED, EMU_HOLD_HOLDING, EMU_HOLD_DONE };
enum { EMU_HOLD_IN_CB_UNLOCK = 1, EMU_HOLD_AFTER_PUT = 2 };    /* what a write arms */

static atomic_t emu_hold_state = ATOMIC_INIT(EMU_HOLD_OFF);
static bool emu_hold_release;                   /* the test's "let go" */
static struct task_struct *emu_hold_task;       /* the task to hold, while armed */
static int emu_hold_mode;                       /* EMU_HOLD_IN_CB_UNLOCK or _AFTER_PUT */
static DEFINE_MUTEX(emu_hold_lock);             /* arming and disarming */

void emu_hold_cb_begin(void)
{
	if (atomic_read(&emu_hold_state) == EMU_HOLD_ARMED &&
	    READ_ONCE(emu_hold_mode) == EMU_HOLD_IN_CB_UNLOCK)
		WRITE_ONCE(emu_hold_task, current);
}

void emu_hold_cb_end(void)
{
	if (READ_ONCE(emu_hold_mode) == EMU_HOLD_IN_CB_UNLOCK)
		WRITE_ONCE(emu_hold_task, NULL);
}

/* Called with emu_lock already dropped, so that the next release is the consumer's. */
void emu_hold_put_failed(void)
{
	if (atomic_read(&emu_hold_state) == EMU_HOLD_ARMED &&
	    READ_ONCE(emu_hold_mode) == EMU_HOLD_AFTER_PUT)
		WRITE_ONCE(emu_hold_task, current);
}

/*
 * The callback's task is at the point: hold it there (once per arming), spinning, as it is
 * inside raw_spin_lock with preemption off (interrupts too maybe), until let go.
 */
static void __maybe_unused emu_hold_now(void)
{
	unsigned int ms;

	if (atomic_cmpxchg(&emu_hold_state, EMU_HOLD_ARMED, EMU_HOLD_HOLDING) != EMU_HOLD_ARMED)
		return;
	for (ms = 0; ms < EMU_HOLD_MAX_MS && !READ_ONCE(emu_hold_release); ms++)
		mdelay(1);
	if (READ_ONCE(emu_hold_mode) == EMU_HOLD_AFTER_PUT)
		WRITE_ONCE(emu_hold_task, NULL);        /* no callback_end clears it */
	atomic_set(&emu_hold_state, EMU_HOLD_DONE);
}

#if defined(CONFIG_DEBUG_LOCK_ALLOC) && defined(CONFIG_TRACEPOINTS)

static struct tracepoint *emu_tp_acquire, *emu_tp_release;
static bool emu_hold_registered;

/*
 * The wait_lock of the mutex that the callback's task released last: what its unlock's slow
 * path takes next, if it goes on (waiters queued); after a failed put, any lock (ANY). Only
 * that task writes it.
 */
static struct lockdep_map *emu_hold_next;
#define EMU_HOLD_ANY ((struct lockdep_map *)1)

static bool emu_hold_mine(void)
{
	return current == READ_ONCE(emu_hold_task) && in_task();
}

/*
 * The map may be any lock's, the mutex around it computed blindly: the address is only
 * compared with the one acquire that follows, never followed itself.
 */
static void emu_hold_on_release(void *data, struct lockdep_map *map, unsigned long ip)
{
	if (!emu_hold_mine())
		return;
	if (READ_ONCE(emu_hold_mode) == EMU_HOLD_AFTER_PUT)
		emu_hold_next = EMU_HOLD_ANY;
	else
		emu_hold_next = &container_of(map, struct mutex, dep_map)->wait_lock.dep_map;
}

static void emu_hold_on_acquire(void *data, struct lockdep_map *map, unsigned int subclass,
				int trylock, int read, int check, struct lockdep_map *next_lock,
				unsigned long ip)
{
	struct lockdep_map *want;

	if (!emu_hold_mine())
		return;
	want = emu_hold_next;
	emu_hold_next = NULL;           /* only the acquire right after the release counts */
	if (want && (want == EMU_HOLD_ANY || map == want))
		emu_hold_now();
}

static void emu_hold_find_tp(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "lock_acquire"))
		emu_tp_acquire = tp;
	else if (!strcmp(tp->name, "lock_release"))
		emu_tp_release = tp;
}

/* Under emu_hold_lock. */
static int emu_hold_register(void)
{
	int ret;

	if (emu_hold_registered)
		return 0;
	if (!emu_tp_acquire || !emu_tp_release)
		for_each_kernel_tracepoint(emu_hold_find_tp, NULL);
	if (!emu_tp_acquire || !emu_tp_release)
		return -EOPNOTSUPP;
	ret = tracepoint_probe_register(emu_tp_release, emu_hold_on_release, NULL);
	if (ret)
		return ret;
	ret = tracepoint_probe_register(emu_tp_acquire, emu_hold_on_acquire, NULL);
	if (ret) {
		tracepoint_probe_unregister(emu_tp_release, emu_hold_on_release, NULL);
		tracepoint_synchronize_unregister();
		return ret;
	}
	emu_hold_registered = true;
	return 0;
}

/* Under emu_hold_lock; returns once no probe is running (a hold included). */
static void emu_hold_unregister(void)
{
	if (!emu_hold_registered)
		return;
	tracepoint_probe_unregister(emu_tp_acquire, emu_hold_on_acquire, NULL);
	tracepoint_probe_unregister(emu_tp_release, emu_hold_on_release, NULL);
	tracepoint_synchronize_unregister();
	emu_hold_registered = false;
}

#else /* no lockdep tracepoints: no hold (see the top of this file) */

static int emu_hold_register(void)
{
	return -EOPNOTSUPP;
}

static void emu_hold_unregister(void)
{
}

#endif

static int emu_hold_arm(int mode)
{
	int ret;

	WRITE_ONCE(emu_hold_release, false);
	WRITE_ONCE(emu_hold_task, NULL);
	WRITE_ONCE(emu_hold_mode, mode);
	ret = emu_hold_register();
	if (!ret)
		atomic_set(&emu_hold_state, EMU_HOLD_ARMED);
	return ret;
}

/* Lets a hold go, and waits until it has. */
static void emu_hold_disarm(void)
{
	WRITE_ONCE(emu_hold_release, true);
	emu_hold_unregister();
	WRITE_ONCE(emu_hold_task, NULL);
	atomic_set(&emu_hold_state, EMU_HOLD_OFF);
}

static int emu_hold_set(const char *val, const struct kernel_param *kp)
{
	unsigned int mode;
	int ret = kstrtouint(val, 10, &mode);

	if (ret)
		return ret;
	if (mode > EMU_HOLD_AFTER_PUT)
		return -EINVAL;
	mutex_lock(&emu_hold_lock);
	if (mode)
		ret = emu_hold_arm(mode);
	else
		emu_hold_disarm();
	mutex_unlock(&emu_hold_lock);
	return ret;
}

static int emu_hold_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&emu_hold_state));
}

static const struct kernel_param_ops emu_hold_ops = {
	.set = emu_hold_set,
	.get = emu_hold_get,
};
module_param_cb(unlock_hold, &emu_hold_ops, NULL, 0644);
MODULE_PARM_DESC(unlock_hold, "1 arms the hold of the next free callback inside its mutex_unlock, 2 of the task of a failed put_pages at its first lock after its next unlock, 0 lets go; reads 0 off, 1 armed, 2 holding, 3 held");

/* Module exit: no probe may outlive the module's text. */
void emu_hold_exit(void)
{
	mutex_lock(&emu_hold_lock);
	emu_hold_disarm();
	mutex_unlock(&emu_hold_lock);
}

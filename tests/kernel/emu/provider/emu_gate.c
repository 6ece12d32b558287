// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * emu_gate.c - the places where the emulated provider can stop a task (TEST ONLY): FREE
 * before it calls the free callbacks it has marked running, put_pages before it looks the
 * table up, free_page_table inside the consumer's callback after it has unlinked the table.
 * A race test needs another task to arrive while one is stopped there. A stop of a fixed
 * time (cb_delay, put_delay_ms, unlink_delay_ms) only makes that likely: on a slow or loaded
 * machine the stop may be over before the other task comes, or the stopped task may not have
 * got there yet when the test looks. A gate makes it certain, and a test can see it:
 *
 *   gate (/sys/module/nvp2p_emu/parameters/gate, NVP2P_EMU_GATE_*): while a place's bit is
 *     set, a task that reaches the place waits there until the bit is cleared, or
 *     EMU_GATE_MAX_MS at most (a test that dies must not leave the guest stuck); a place
 *     whose bit is clear stops for its delay as before.
 *   stopped (read only): how many tasks are stopped at each place now, by its gate or its
 *     delay, as "CB PUT UNLINK".
 *
 * So a test closes a gate, starts the task that is to stop, waits until `stopped` shows it,
 * brings the other task until it is blocked where the race needs it, and opens the gate.
 */
#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/wait.h>

#include "emu.h"
#include "nvp2p_emu.h"

/* Below the debug kernel's hung-task bound (60 s): a stuck gate is reported by the test. */
#define EMU_GATE_MAX_MS 30000
#define EMU_GATE_ALL (NVP2P_EMU_GATE_CB | NVP2P_EMU_GATE_PUT | NVP2P_EMU_GATE_UNLINK)

static unsigned int emu_gate_mask;
static atomic_t emu_stopped[3];                 /* by ilog2 of the place's bit */
static DECLARE_WAIT_QUEUE_HEAD(emu_gate_wq);

void emu_stop_at(unsigned int place, unsigned int delay_ms)
{
	atomic_t *count = &emu_stopped[ilog2(place)];

	atomic_inc(count);
	if (READ_ONCE(emu_gate_mask) & place) {
		/* TASK_IDLE: a closed gate is no hung task and adds nothing to the load. */
		if (!wait_event_idle_timeout(emu_gate_wq, !(READ_ONCE(emu_gate_mask) & place),
					     msecs_to_jiffies(EMU_GATE_MAX_MS)))
			pr_err("nvp2p_emu: gate %u still closed after %d ms: letting the task go\n",
			       place, EMU_GATE_MAX_MS);
	} else if (delay_ms) {
		msleep(delay_ms);
	}
	atomic_dec(count);
}

static int emu_gate_set(const char *val, const struct kernel_param *kp)
{
	unsigned int mask;
	int ret = kstrtouint(val, 0, &mask);

	if (ret)
		return ret;
	if (mask & ~EMU_GATE_ALL)
		return -EINVAL;
	WRITE_ONCE(emu_gate_mask, mask);
	wake_up_all(&emu_gate_wq);      /* the places whose bit went: their tasks go on */
	return 0;
}

static int emu_gate_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(emu_gate_mask));
}

static const struct kernel_param_ops emu_gate_ops = {
	.set = emu_gate_set,
	.get = emu_gate_get,
};
module_param_cb(gate, &emu_gate_ops, NULL, 0644);
MODULE_PARM_DESC(gate, "places where a task waits until its bit is cleared: 1 FREE before the callbacks, 2 put_pages before the lookup, 4 free_page_table after the unlink");

static int emu_stopped_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d %d %d\n", atomic_read(&emu_stopped[0]),
			  atomic_read(&emu_stopped[1]), atomic_read(&emu_stopped[2]));
}

static const struct kernel_param_ops emu_stopped_ops = {
	.get = emu_stopped_get,
};
module_param_cb(stopped, &emu_stopped_ops, NULL, 0444);
MODULE_PARM_DESC(stopped, "tasks stopped now at each place (gate or delay): FREE put_pages free_page_table");

/* Module exit: nobody can be stopped (every place runs inside a call that holds the module). */
void emu_gate_exit(void)
{
	WRITE_ONCE(emu_gate_mask, 0);
	wake_up_all(&emu_gate_wq);
}

// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gdrdrv_user.c - what each user (real uid of the pinning task) holds: pin structs alive
 * (detached and orphaned ones too) and bytes pinned, bounded by max_pins_per_user and
 * max_pinned_mib_per_user. Our own allocations are charged to the caller's memory cgroup,
 * but the NVIDIA driver's are not: each pin costs it a page table of an entry per GPU page,
 * and one GPU allocation can be pinned again and again. These bounds are what keeps one
 * user from making the kernel hold unaccounted memory without limit (driver/README.md, "What
 * one user can make the kernel hold"). A record per user with pins, in an xarray by uid.
 */
#include <linux/cred.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "gdrdrv_internal.h"

struct gdrdrv_user {
	u64 pins;
	u64 bytes;
};

static DEFINE_XARRAY(gdrdrv_users);      /* uid -> struct gdrdrv_user; counts under its lock */

/* Count a pin of `bytes` for the current user: 0, -EDQUOT past a bound, or -ENOMEM. */
int gdrdrv_user_charge(kuid_t *uid, u64 bytes)
{
	struct gdrdrv_user *u, *fresh = kzalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);
	u64 max_pins = READ_ONCE(gdrdrv_max_pins_per_user);
	u64 max_bytes = (u64)READ_ONCE(gdrdrv_max_pinned_mib_per_user) << 20;
	int ret = 0;

	*uid = current_uid();
	xa_lock(&gdrdrv_users);
	u = xa_load(&gdrdrv_users, __kuid_val(*uid));
	if (!u) {
		ret = -ENOMEM;
		if (fresh)
			ret = xa_err(__xa_store(&gdrdrv_users, __kuid_val(*uid), fresh,
						GFP_ATOMIC));
		if (ret)
			goto out;
		u = fresh;
		fresh = NULL;
	}
	if ((max_pins && u->pins >= max_pins) || (max_bytes && u->bytes + bytes > max_bytes)) {
		ret = -EDQUOT;
		if (!u->pins) {         /* the record just made: no pin of this user */
			__xa_erase(&gdrdrv_users, __kuid_val(*uid));
			fresh = u;
		}
	} else {
		u->pins++;
		u->bytes += bytes;
	}
out:
	xa_unlock(&gdrdrv_users);
	kfree(fresh);
	if (ret == -EDQUOT)
		gdr_err("uid %u holds max_pins_per_user=%llu pins or max_pinned_mib_per_user=%llu MiB: EDQUOT\n",
			__kuid_val(*uid), max_pins, max_bytes >> 20);
	return ret;
}

/* The pin of `bytes` charged to uid is gone. */
void gdrdrv_user_uncharge(kuid_t uid, u64 bytes)
{
	struct gdrdrv_user *u, *gone = NULL;

	xa_lock(&gdrdrv_users);
	u = xa_load(&gdrdrv_users, __kuid_val(uid));
	if (!WARN_ON_ONCE(!u || !u->pins || u->bytes < bytes)) {
		u->pins--;
		u->bytes -= bytes;
		if (!u->pins) {
			__xa_erase(&gdrdrv_users, __kuid_val(uid));
			gone = u;
		}
	}
	xa_unlock(&gdrdrv_users);
	kfree(gone);
}

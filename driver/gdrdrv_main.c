// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gdrdrv_main.c - module init/exit, the /dev/gdrdrv node, open/release, parameters and
 * /proc/driver/gdrdrv/params.
 *
 * The device node is made by the kernel (devtmpfs, then udev), with the mode and group of
 * the dev_mode and dev_gid parameters. Two ways, chosen at build time by the NVIDIA driver
 * flavour (GDRDRV_FLAVOUR, see README.md):
 *  - open (default): a class device whose device_type sets mode and group;
 *  - proprietary: a misc device (mode only). A module that imports symbols from the
 *    proprietary nvidia.ko must not use GPL-only kernel exports, and the class-device
 *    calls are GPL-only. dev_gid is then left to a udev rule.
 * Every file holds the module (fops.owner), so the module cannot go while a pin exists.
 */
#include <linux/capability.h>
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "gdrdrv_internal.h"

int gdrdrv_dbg_enabled;
int gdrdrv_info_enabled;
int gdrdrv_use_persistent_mapping = 1;
unsigned int gdrdrv_offset_space_log2 = 32;
unsigned int gdrdrv_max_pins_per_file = 65536;
unsigned int gdrdrv_max_pins_per_user = 1048576;
unsigned int gdrdrv_max_pinned_mib_per_user = 4194304;     /* 4 TiB */
static unsigned int gdrdrv_dev_mode = 0666;
static unsigned int gdrdrv_dev_gid;
static char *gdrdrv_abi_param = "2.6";
u32 gdrdrv_abi = GDRDRV_VERSION;

module_param_named(dbg_enabled, gdrdrv_dbg_enabled, int, 0644);
MODULE_PARM_DESC(dbg_enabled, "log debug messages (rate limited)");
module_param_named(info_enabled, gdrdrv_info_enabled, int, 0644);
MODULE_PARM_DESC(info_enabled, "log informational messages (rate limited)");
module_param_named(use_persistent_mapping, gdrdrv_use_persistent_mapping, int, 0644);
MODULE_PARM_DESC(use_persistent_mapping,
		 "1 (default): persistent pins; 0: legacy pins invalidated by a free callback");
module_param_named(dev_mode, gdrdrv_dev_mode, uint, 0444);
MODULE_PARM_DESC(dev_mode, "permission bits of /dev/gdrdrv (default 0666)");
module_param_named(dev_gid, gdrdrv_dev_gid, uint, 0444);
MODULE_PARM_DESC(dev_gid, "group of /dev/gdrdrv (default 0; open flavour only)");
module_param_named(offset_space_log2, gdrdrv_offset_space_log2, uint, 0444);
MODULE_PARM_DESC(offset_space_log2,
		 "size of the handle/mmap offset space of an open file in pages, log2, 16..32 (default 32; smaller only to test its wrap)");
module_param_named(max_pins_per_file, gdrdrv_max_pins_per_file, uint, 0644);
MODULE_PARM_DESC(max_pins_per_file,
		 "pins an open file may hold; more fail with EDQUOT (default 65536, 0: no limit)");
module_param_named(max_pins_per_user, gdrdrv_max_pins_per_user, uint, 0644);
MODULE_PARM_DESC(max_pins_per_user,
		 "pins one user (real uid) may hold in all; more fail with EDQUOT (default 1048576, 0: no limit)");
module_param_named(max_pinned_mib_per_user, gdrdrv_max_pinned_mib_per_user, uint, 0644);
MODULE_PARM_DESC(max_pinned_mib_per_user,
		 "MiB of GPU memory one user may hold pinned in all, counted per pin (default 4194304 = 4 TiB, 0: no limit)");
module_param_named(abi, gdrdrv_abi_param, charp, 0444);
MODULE_PARM_DESC(abi,
		 "ioctl ABI presented, 2.0..2.6 (default 2.6; older ones exist to test libraries against them)");

/* abi=2.N: that module's version numbers and ioctls (gdrdrv_ioctl.c), and its callback pins. */
static int gdrdrv_parse_abi(void)
{
	unsigned int major, minor;
	char tail;

	if (sscanf(gdrdrv_abi_param, "%u.%u%c", &major, &minor, &tail) != 2 || major != 2 ||
	    minor > GDRDRV_MINOR_VERSION)
		return -EINVAL;
	gdrdrv_abi = major << 16 | minor;
	return 0;
}

#ifdef GDRDRV_FLAVOUR_PROPRIETARY
#define GDRDRV_FLAVOUR_NAME "proprietary"
#else
#define GDRDRV_FLAVOUR_NAME "open"
#endif
#ifdef GDRDRV_OWN_NV_P2P
#define GDRDRV_P2P_SOURCE "vramio declarations (driver/nv_p2p.h)"
#else
#define GDRDRV_P2P_SOURCE "NVIDIA nv-p2p.h"
#endif

static int gdrdrv_open(struct inode *inode, struct file *filp)
{
	struct gdrdrv_file *gf;

	if (!current->mm)
		return -EACCES;         /* kernel threads have nothing to map */
	gf = kzalloc(sizeof(*gf), GFP_KERNEL_ACCOUNT);
	if (!gf)
		return -ENOMEM;
	gf->mm = current->mm;           /* identity only: see gdrdrv_same_process */
	gf->tgid = current->tgid;
	gf->start_time = current->group_leader->start_time;
	/*
	 * A private address_space: offsets (handles) are per file, and so are the zaps by offset
	 * range of UNPIN and the free callback. With the inode's shared one, a pin of one file
	 * would zap another file's mappings of the same offsets.
	 */
	address_space_init_once(&gf->mapping);
	gf->mapping.host = inode;
	gf->mapping.a_ops = inode->i_mapping->a_ops;
	filp->f_mapping = &gf->mapping;
	mutex_init(&gf->lock);
	INIT_LIST_HEAD(&gf->pins);
	xa_init(&gf->handles);
	gf->cursor = 1;
	filp->private_data = gf;
	return 0;
}

static int gdrdrv_release(struct inode *inode, struct file *filp)
{
	struct gdrdrv_file *gf = filp->private_data;

	gdrdrv_pin_release_all(gf);
	xa_destroy(&gf->handles);
	mutex_destroy(&gf->lock);
	kfree(gf);
	return 0;
}

static const struct file_operations gdrdrv_fops = {
	.owner = THIS_MODULE,
	.open = gdrdrv_open,
	.release = gdrdrv_release,
	.unlocked_ioctl = gdrdrv_ioctl,
	.compat_ioctl = compat_ptr_ioctl,   /* fixed-width structs: same layout for 32-bit */
	.mmap = gdrdrv_mmap,
	.llseek = noop_llseek,
};

#ifdef GDRDRV_FLAVOUR_PROPRIETARY
static struct miscdevice gdrdrv_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "gdrdrv",
	.fops = &gdrdrv_fops,
};

static int gdrdrv_node_create(void)
{
	if (gdrdrv_dev_gid)
		pr_warn("gdrdrv: dev_gid needs the open flavour build; use a udev rule\n");
	gdrdrv_misc.mode = gdrdrv_dev_mode & 0777;
	return misc_register(&gdrdrv_misc);
}

static void gdrdrv_node_destroy(void)
{
	misc_deregister(&gdrdrv_misc);
}
#else
static dev_t gdrdrv_devt;
static struct cdev gdrdrv_cdev;
static struct device *gdrdrv_device;
static struct class gdrdrv_class = { .name = "gdrdrv" };

static char *gdrdrv_devnode(GDRDRV_DEVNODE_CONST struct device *dev, umode_t *mode,
			    kuid_t *uid, kgid_t *gid)
{
	if (mode)
		*mode = gdrdrv_dev_mode & 0777;
	if (gid)
		*gid = KGIDT_INIT(gdrdrv_dev_gid);
	return NULL;                    /* the node is named after the device */
}

static const struct device_type gdrdrv_device_type = {
	.name = "gdrdrv",
	.devnode = gdrdrv_devnode,
};

static void gdrdrv_device_free(struct device *dev)
{
	kfree(dev);
}

static int gdrdrv_node_create(void)
{
	int ret;

	ret = alloc_chrdev_region(&gdrdrv_devt, 0, 1, "gdrdrv");
	if (ret)
		return ret;
	cdev_init(&gdrdrv_cdev, &gdrdrv_fops);
	gdrdrv_cdev.owner = THIS_MODULE;
	ret = cdev_add(&gdrdrv_cdev, gdrdrv_devt, 1);
	if (ret)
		goto out_region;
	ret = class_register(&gdrdrv_class);
	if (ret)
		goto out_cdev;
	gdrdrv_device = kzalloc(sizeof(*gdrdrv_device), GFP_KERNEL);
	if (!gdrdrv_device) {
		ret = -ENOMEM;
		goto out_class;
	}
	device_initialize(gdrdrv_device);
	gdrdrv_device->devt = gdrdrv_devt;
	gdrdrv_device->class = &gdrdrv_class;
	gdrdrv_device->type = &gdrdrv_device_type;
	gdrdrv_device->release = gdrdrv_device_free;
	ret = dev_set_name(gdrdrv_device, "gdrdrv");
	if (!ret)
		ret = device_add(gdrdrv_device);
	if (ret) {
		put_device(gdrdrv_device);
		goto out_class;
	}
	return 0;
out_class:
	class_unregister(&gdrdrv_class);
out_cdev:
	cdev_del(&gdrdrv_cdev);
out_region:
	unregister_chrdev_region(gdrdrv_devt, 1);
	return ret;
}

static void gdrdrv_node_destroy(void)
{
	device_unregister(gdrdrv_device);
	class_unregister(&gdrdrv_class);
	cdev_del(&gdrdrv_cdev);
	unregister_chrdev_region(gdrdrv_devt, 1);
}
#endif

static struct proc_dir_entry *gdrdrv_proc_dir;

static int gdrdrv_params_show(struct seq_file *m, void *v)
{
	seq_printf(m, "version: %d.%d\n", GDRDRV_MAJOR_VERSION, GDRDRV_MINOR_VERSION);
	seq_printf(m, "abi: %u.%u\n", gdrdrv_abi >> 16, gdrdrv_abi & 0xffff);
	seq_printf(m, "flavour: %s\n", GDRDRV_FLAVOUR_NAME);
	seq_printf(m, "p2p_interface: %s\n", GDRDRV_P2P_SOURCE);
	seq_printf(m, "persistent_api: %d\n", GDRDRV_HAVE_PERSISTENT);
	seq_printf(m, "force_bar1_flag: %d\n", GDRDRV_HAVE_FORCE_BAR1);
	seq_printf(m, "use_persistent_mapping: %d\n", READ_ONCE(gdrdrv_use_persistent_mapping));
	seq_printf(m, "dbg_enabled: %d\n", READ_ONCE(gdrdrv_dbg_enabled));
	seq_printf(m, "info_enabled: %d\n", READ_ONCE(gdrdrv_info_enabled));
	seq_printf(m, "dev_mode: 0%o\n", gdrdrv_dev_mode & 0777);
	seq_printf(m, "dev_gid: %u\n", gdrdrv_dev_gid);
	seq_printf(m, "offset_space_log2: %u\n", gdrdrv_offset_space_log2);
	seq_printf(m, "max_pins_per_file: %u\n", READ_ONCE(gdrdrv_max_pins_per_file));
	seq_printf(m, "max_pins_per_user: %u\n", READ_ONCE(gdrdrv_max_pins_per_user));
	seq_printf(m, "max_pinned_mib_per_user: %u\n", READ_ONCE(gdrdrv_max_pinned_mib_per_user));
	if (m->private)                 /* opened with CAP_SYS_ADMIN: gdrdrv_params_open */
		seq_printf(m, "pins: %lu\n", gdrdrv_pin_count());
	return 0;
}

/*
 * The file is world-readable; the system-wide pin count would let any user watch other users'
 * pinning, so only an opener with CAP_SYS_ADMIN sees it. Judged at open, by who opened the
 * file, not by who reads it later; with capable(), as file_ns_capable() would need
 * init_user_ns, a GPL-only export.
 */
static int gdrdrv_params_open(struct inode *inode, struct file *file)
{
	static const bool privileged = true;     /* the seq_file's private: non-NULL */

	return single_open(file, gdrdrv_params_show,
			   capable(CAP_SYS_ADMIN) ? (void *)&privileged : NULL);
}

static const struct proc_ops gdrdrv_params_ops = {
	.proc_open = gdrdrv_params_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
};

static int __init gdrdrv_init(void)
{
	int ret;

	if (gdrdrv_offset_space_log2 < 16 || gdrdrv_offset_space_log2 > 32) {
		pr_err("gdrdrv: offset_space_log2 must be 16..32\n");
		return -EINVAL;
	}
	if (gdrdrv_parse_abi()) {
		pr_err("gdrdrv: abi=%s: must be 2.0..%d.%d\n", gdrdrv_abi_param,
		       GDRDRV_MAJOR_VERSION, GDRDRV_MINOR_VERSION);
		return -EINVAL;
	}
	ret = gdrdrv_node_create();
	if (ret) {
		pr_err("gdrdrv: cannot create /dev/gdrdrv: %d\n", ret);
		return ret;
	}
	gdrdrv_proc_dir = proc_mkdir("driver/gdrdrv", NULL);
	if (gdrdrv_proc_dir)
		proc_create("params", 0444, gdrdrv_proc_dir, &gdrdrv_params_ops);
	else
		pr_warn("gdrdrv: cannot create /proc/driver/gdrdrv\n");
	pr_info("gdrdrv: version %d.%d, ABI %u.%u (%s flavour, %s pins by default)\n",
		GDRDRV_MAJOR_VERSION, GDRDRV_MINOR_VERSION, gdrdrv_abi >> 16, gdrdrv_abi & 0xffff,
		GDRDRV_FLAVOUR_NAME,
		gdrdrv_persistent_supported() ? "persistent" : "callback");
	return 0;
}

static void __exit gdrdrv_exit(void)
{
	proc_remove(gdrdrv_proc_dir);
	gdrdrv_node_destroy();
	gdrdrv_pin_module_exit();
}

module_init(gdrdrv_init);
module_exit(gdrdrv_exit);

MODULE_AUTHOR("vramio");
MODULE_DESCRIPTION("gdrdrv: CPU mappings of GPU memory through NVIDIA GPUDirect RDMA (gdrdrv 2.6 ABI)");
MODULE_LICENSE("Dual MIT/GPL");
MODULE_VERSION(__stringify(GDRDRV_MAJOR_VERSION) "." __stringify(GDRDRV_MINOR_VERSION));

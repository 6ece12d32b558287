// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gdrdrv_ioctl.c - the ioctls of /dev/gdrdrv, one small function each.
 *
 * The codes are those of gdrdrv 2.6 (uapi/gdrdrv.h). Several encode a size of 8 while their
 * struct is larger, so the size copied is always the struct's, never _IOC_SIZE(cmd). Every
 * struct is copied in whole, answered, and copied out whole; an unknown code is -ENOTTY, and
 * so is a code newer than the ABI the abi parameter presents (as the older module answered).
 */
#include <linux/uaccess.h>

#include "gdrdrv_internal.h"

/*
 * Hand a new pin's struct back. A pin the caller cannot learn about is undone: this pin, not
 * whatever holds its handle now (another thread may have unpinned it and a new pin taken the
 * handle meanwhile). Drops the caller's reference from gdrdrv_pin_create.
 */
static int gdrdrv_pin_reply(struct gdrdrv_file *gf, void __user *uarg, const void *p,
			    size_t size, struct gdrdrv_pin *pin)
{
	int ret = 0;

	if (copy_to_user(uarg, p, size)) {
		gdrdrv_pin_remove(gf, pin);
		ret = -EFAULT;
	}
	gdrdrv_pin_put(pin);
	return ret;
}

static int gdrdrv_ioc_pin_v1(struct gdrdrv_file *gf, void __user *uarg)
{
	struct gdrdrv_pin_buffer p;
	struct gdrdrv_pin *pin;
	int ret;

	if (copy_from_user(&p, uarg, sizeof(p)))
		return -EFAULT;
	ret = gdrdrv_pin_create(gf, p.addr, p.size, p.p2p_token, p.va_space, 0, &pin);
	if (ret)
		return ret;
	p.handle = pin->handle;
	return gdrdrv_pin_reply(gf, uarg, &p, sizeof(p), pin);
}

static int gdrdrv_ioc_pin_v2(struct gdrdrv_file *gf, void __user *uarg)
{
	struct gdrdrv_pin_buffer_v2 p;
	struct gdrdrv_pin *pin;
	int ret;

	if (copy_from_user(&p, uarg, sizeof(p)))
		return -EFAULT;
	ret = gdrdrv_pin_create(gf, p.addr, p.size, 0, 0, p.flags, &pin);
	if (ret)
		return ret;
	p.handle = pin->handle;
	return gdrdrv_pin_reply(gf, uarg, &p, sizeof(p), pin);
}

static int gdrdrv_ioc_unpin(struct gdrdrv_file *gf, void __user *uarg)
{
	struct gdrdrv_unpin_buffer p;

	if (copy_from_user(&p, uarg, sizeof(p)))
		return -EFAULT;
	return gdrdrv_pin_unpin(gf, p.handle);
}

static int gdrdrv_ioc_get_cb_flag(struct gdrdrv_file *gf, void __user *uarg)
{
	struct gdrdrv_get_cb_flag p;
	struct gdrdrv_pin *pin;

	if (copy_from_user(&p, uarg, sizeof(p)))
		return -EFAULT;
	pin = gdrdrv_pin_get(gf, p.handle);
	if (!pin)
		return -EINVAL;
	mutex_lock(&pin->lock);
	p.flag = pin->cb_fired;
	mutex_unlock(&pin->lock);
	gdrdrv_pin_put(pin);
	return copy_to_user(uarg, &p, sizeof(p)) ? -EFAULT : 0;
}

/* The fields GET_INFO and GET_INFO_V2 share; returns the current mapping type. */
static int gdrdrv_fill_info(struct gdrdrv_file *gf, u64 handle, u64 *va, u64 *mapped_size,
			    u32 *page_size, u32 *tsc_khz, u64 *tm_cycles, u32 *type)
{
	struct gdrdrv_pin *pin = gdrdrv_pin_get(gf, handle);

	if (!pin)
		return -EINVAL;
	*va = pin->va;
	*mapped_size = pin->mapped_size;
	*page_size = GDRDRV_GPU_PAGE_SIZE;
	*tsc_khz = gdrdrv_tsc_khz();
	*tm_cycles = pin->tm_cycles;
	mutex_lock(&pin->lock);
	*type = pin->map_count ? pin->map_type : GDRDRV_MAPPING_TYPE_NONE;
	mutex_unlock(&pin->lock);
	gdrdrv_pin_put(pin);
	return 0;
}

static int gdrdrv_ioc_get_info_v1(struct gdrdrv_file *gf, void __user *uarg)
{
	struct gdrdrv_get_info p;
	u32 type;
	int ret;

	if (copy_from_user(&p, uarg, sizeof(p)))
		return -EFAULT;
	ret = gdrdrv_fill_info(gf, p.handle, &p.va, &p.mapped_size, &p.page_size, &p.tsc_khz,
			       &p.tm_cycles, &type);
	if (ret)
		return ret;
	p.mapped = type != GDRDRV_MAPPING_TYPE_NONE;
	p.wc_mapping = type == GDRDRV_MAPPING_TYPE_WC;
	return copy_to_user(uarg, &p, sizeof(p)) ? -EFAULT : 0;
}

static int gdrdrv_ioc_get_info_v2(struct gdrdrv_file *gf, void __user *uarg)
{
	struct gdrdrv_get_info_v2 p;
	int ret;

	if (copy_from_user(&p, uarg, sizeof(p)))
		return -EFAULT;
	ret = gdrdrv_fill_info(gf, p.handle, &p.va, &p.mapped_size, &p.page_size, &p.tsc_khz,
			       &p.tm_cycles, &p.mapping_type);
	if (ret)
		return ret;
	p.pad = 0;
	return copy_to_user(uarg, &p, sizeof(p)) ? -EFAULT : 0;
}

static int gdrdrv_ioc_get_attr(void __user *uarg)
{
	struct gdrdrv_get_attr p;

	if (copy_from_user(&p, uarg, sizeof(p)))
		return -EFAULT;
	switch (p.attr) {
	case GDRDRV_ATTR_USE_PERSISTENT_MAPPING:
		p.val = gdrdrv_persistent_supported();
		break;
	case GDRDRV_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE:
		p.val = gdrdrv_force_pcie_supported();
		break;
	default:
		return -EINVAL;
	}
	return copy_to_user(uarg, &p, sizeof(p)) ? -EFAULT : 0;
}

static int gdrdrv_ioc_req_mapping_type(struct gdrdrv_file *gf, void __user *uarg)
{
	struct gdrdrv_req_mapping_type p;
	struct gdrdrv_pin *pin;
	int ret = 0;

	if (copy_from_user(&p, uarg, sizeof(p)))
		return -EFAULT;
	pin = gdrdrv_pin_get(gf, p.handle);
	if (!pin)
		return -EINVAL;
	mutex_lock(&pin->lock);
	if (pin->map_count)
		ret = -EBUSY;           /* the type of a live mapping cannot change */
	else if (!gdrdrv_mapping_type_allowed(pin, p.mapping_type))
		ret = -EINVAL;
	else
		pin->req_type = p.mapping_type;
	mutex_unlock(&pin->lock);
	gdrdrv_pin_put(pin);
	return ret;
}

static int gdrdrv_ioc_get_version(void __user *uarg)
{
	struct gdrdrv_get_version p = {
		.gdrdrv_version = gdrdrv_abi,
		.minimum_gdr_api_version = GDRDRV_MINIMUM_GDR_API_VERSION,
	};

	return copy_to_user(uarg, &p, sizeof(p)) ? -EFAULT : 0;
}

/* The module version that brought the code; 0 for those of every 2.x module. */
static u32 gdrdrv_ioctl_since(unsigned int cmd)
{
	switch (cmd) {
	case GDRDRV_IOC_GET_INFO_V2:      return GDRDRV_VERSION_WITH_GET_INFO_V2;
	case GDRDRV_IOC_GET_ATTR:         return GDRDRV_VERSION_WITH_GET_ATTR;
	case GDRDRV_IOC_PIN_BUFFER_V2:    return GDRDRV_VERSION_WITH_PIN_BUFFER_V2;
	case GDRDRV_IOC_REQ_MAPPING_TYPE: return GDRDRV_VERSION_WITH_REQ_MAPPING_TYPE;
	default:                          return 0;
	}
}

long gdrdrv_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct gdrdrv_file *gf = filp->private_data;
	void __user *uarg = (void __user *)arg;

	/* fds inherited by fork or passed over a socket are not the opener's */
	if (!gdrdrv_same_process(gf))
		return -EACCES;
	if (gdrdrv_ioctl_since(cmd) > gdrdrv_abi) {
		gdr_dbg("ioctl 0x%x is not in the %u.%u ABI\n", cmd, gdrdrv_abi >> 16,
			gdrdrv_abi & 0xffff);
		return -ENOTTY;
	}

	switch (cmd) {
	case GDRDRV_IOC_PIN_BUFFER:       return gdrdrv_ioc_pin_v1(gf, uarg);
	case GDRDRV_IOC_UNPIN_BUFFER:     return gdrdrv_ioc_unpin(gf, uarg);
	case GDRDRV_IOC_GET_CB_FLAG:      return gdrdrv_ioc_get_cb_flag(gf, uarg);
	case GDRDRV_IOC_GET_INFO:         return gdrdrv_ioc_get_info_v1(gf, uarg);
	case GDRDRV_IOC_GET_INFO_V2:      return gdrdrv_ioc_get_info_v2(gf, uarg);
	case GDRDRV_IOC_GET_ATTR:         return gdrdrv_ioc_get_attr(uarg);
	case GDRDRV_IOC_PIN_BUFFER_V2:    return gdrdrv_ioc_pin_v2(gf, uarg);
	case GDRDRV_IOC_REQ_MAPPING_TYPE: return gdrdrv_ioc_req_mapping_type(gf, uarg);
	case GDRDRV_IOC_GET_VERSION:      return gdrdrv_ioc_get_version(uarg);
	default:
		gdr_dbg("unknown ioctl 0x%x\n", cmd);
		return -ENOTTY;
	}
}

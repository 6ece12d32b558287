// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gdrdrv_kunit.c - KUnit suite of the module's pure logic: the handle allocator of
 * gdrdrv_pin.c (an offset allocator over a file's xarray: disjoint ranges, the cursor's wrap,
 * ENOSPC only when no gap fits), the pin's argument checks (gdrdrv_pin_check_args) and the
 * per-user accounting of gdrdrv_user.c. Built in only with GDRDRV_KUNIT=1 against a kernel
 * with KUnit, in the open flavour (KUnit's exports are GPL-only): the QEMU rig's debug kernel
 * does that, and KUnit runs the suite at each load of the module, printing its results (KTAP)
 * to the kernel log, where the guest looks for them.
 */
#include <kunit/test.h>
#include <linux/sizes.h>
#include <linux/slab.h>

#include "gdrdrv_internal.h"

struct gdrdrv_kunit_ctx {
	struct gdrdrv_file gf;
	unsigned int saved_log2;
};

static int gdrdrv_kunit_init(struct kunit *test)
{
	struct gdrdrv_kunit_ctx *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);

	if (!c)
		return -ENOMEM;
	xa_init(&c->gf.handles);
	c->gf.cursor = 1;
	c->saved_log2 = gdrdrv_offset_space_log2;
	test->priv = c;
	return 0;
}

static void gdrdrv_kunit_exit(struct kunit *test)
{
	struct gdrdrv_kunit_ctx *c = test->priv;

	xa_destroy(&c->gf.handles);
	gdrdrv_offset_space_log2 = c->saved_log2;
}

static struct gdrdrv_pin *gdrdrv_kunit_pin(struct kunit *test, u64 npages)
{
	struct gdrdrv_pin *pin = kunit_kzalloc(test, sizeof(*pin), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, pin);
	pin->npages = npages;
	return pin;
}

/* Ranges follow each other from 1, and none overlaps another. */
static void gdrdrv_kunit_handles_disjoint(struct kunit *test)
{
	struct gdrdrv_kunit_ctx *c = test->priv;
	struct gdrdrv_pin *a = gdrdrv_kunit_pin(test, 16), *b = gdrdrv_kunit_pin(test, 3);

	KUNIT_ASSERT_EQ(test, gdrdrv_handle_insert(&c->gf, a), 0);
	KUNIT_ASSERT_EQ(test, gdrdrv_handle_insert(&c->gf, b), 0);
	KUNIT_EXPECT_EQ(test, a->handle, 1ULL);
	KUNIT_EXPECT_EQ(test, b->handle, 17ULL);
	KUNIT_EXPECT_EQ(test, c->gf.cursor, 20ULL);
}

/* At the end of the space the cursor wraps to the start and skips the live ranges there. */
static void gdrdrv_kunit_handles_wrap(struct kunit *test)
{
	struct gdrdrv_kunit_ctx *c = test->priv;
	struct gdrdrv_pin *first = gdrdrv_kunit_pin(test, 4), *mid, *next;

	gdrdrv_offset_space_log2 = 16;
	KUNIT_ASSERT_EQ(test, gdrdrv_handle_insert(&c->gf, first), 0);  /* [1, 5) */
	mid = gdrdrv_kunit_pin(test, 8);
	c->gf.cursor = (1ULL << 16) - 4;                                  /* 4 pages left */
	KUNIT_ASSERT_EQ(test, gdrdrv_handle_insert(&c->gf, mid), 0);
	KUNIT_EXPECT_EQ(test, mid->handle, 5ULL);         /* wrapped, past [1, 5) */
	next = gdrdrv_kunit_pin(test, 4);
	c->gf.cursor = (1ULL << 16) - 4;
	KUNIT_ASSERT_EQ(test, gdrdrv_handle_insert(&c->gf, next), 0);
	KUNIT_EXPECT_EQ(test, next->handle, (1ULL << 16) - 4);  /* fits exactly at the end */
}

/* ENOSPC only when no gap of the size is left anywhere. */
static void gdrdrv_kunit_handles_enospc(struct kunit *test)
{
	struct gdrdrv_kunit_ctx *c = test->priv;
	struct gdrdrv_pin *big, *small;
	u64 start;

	gdrdrv_offset_space_log2 = 16;
	/* Pins of 2 pages every 4: gaps of 2 everywhere. */
	for (start = 1; start + 2 <= (1ULL << 16); start += 4) {
		small = gdrdrv_kunit_pin(test, 2);
		c->gf.cursor = start;
		KUNIT_ASSERT_EQ(test, gdrdrv_handle_insert(&c->gf, small), 0);
		KUNIT_ASSERT_EQ(test, small->handle, start);
	}
	big = gdrdrv_kunit_pin(test, 3);
	KUNIT_EXPECT_EQ(test, gdrdrv_handle_insert(&c->gf, big), -ENOSPC);
	KUNIT_EXPECT_EQ(test, big->handle, 0ULL);
	small = gdrdrv_kunit_pin(test, 2);
	KUNIT_EXPECT_EQ(test, gdrdrv_handle_insert(&c->gf, small), 0);
}

/* The per-user bounds: pins and bytes, and the record gone with the user's last pin. */
static void gdrdrv_kunit_user_bounds(struct kunit *test)
{
	unsigned int saved_pins = gdrdrv_max_pins_per_user;
	unsigned int saved_mib = gdrdrv_max_pinned_mib_per_user;
	kuid_t uid;

	gdrdrv_max_pins_per_user = 2;
	gdrdrv_max_pinned_mib_per_user = 1;
	KUNIT_EXPECT_EQ(test, gdrdrv_user_charge(&uid, SZ_64K), 0);
	KUNIT_EXPECT_EQ(test, gdrdrv_user_charge(&uid, SZ_64K), 0);
	KUNIT_EXPECT_EQ(test, gdrdrv_user_charge(&uid, SZ_64K), -EDQUOT);
	gdrdrv_user_uncharge(uid, SZ_64K);
	KUNIT_EXPECT_EQ(test, gdrdrv_user_charge(&uid, SZ_1M), -EDQUOT);  /* 64 KiB + 1 MiB */
	KUNIT_EXPECT_EQ(test, gdrdrv_user_charge(&uid, SZ_1M - SZ_64K), 0);
	gdrdrv_user_uncharge(uid, SZ_1M - SZ_64K);
	gdrdrv_user_uncharge(uid, SZ_64K);
	KUNIT_EXPECT_EQ(test, gdrdrv_user_charge(&uid, SZ_2M), -EDQUOT);  /* alone, too big */
	gdrdrv_max_pins_per_user = 0;
	gdrdrv_max_pinned_mib_per_user = 0;
	KUNIT_EXPECT_EQ(test, gdrdrv_user_charge(&uid, SZ_2M), 0);        /* 0: no limit */
	gdrdrv_user_uncharge(uid, SZ_2M);
	gdrdrv_max_pins_per_user = saved_pins;
	gdrdrv_max_pinned_mib_per_user = saved_mib;
}

/*
 * The pin's argument checks, before anything is allocated: the range rounds out to whole GPU
 * pages; empty ranges, unknown flags, ranges over the top of the address space and ranges of
 * more pages than an offset range can hold are refused, each at its boundary.
 */
static void gdrdrv_kunit_pin_args(struct kunit *test)
{
	const u32 pcie = GDRDRV_PIN_FLAG_FORCE_PCIE;    /* the one known flag */
	const u64 gp = GDRDRV_GPU_PAGE_SIZE;
	u64 end = 0, space;

	KUNIT_EXPECT_EQ(test, gdrdrv_pin_check_args(gp + 5, 10, 0, &end), 0);
	KUNIT_EXPECT_EQ(test, end, 2 * gp);
	/* [gp - 1, gp + 1): the start rounds down to 0, the end up to 2 GPU pages. */
	KUNIT_EXPECT_EQ(test, gdrdrv_pin_check_args(gp - 1, 2, pcie, &end), 0);
	KUNIT_EXPECT_EQ(test, end, 2 * gp);
	KUNIT_EXPECT_EQ(test, gdrdrv_pin_check_args(gp, 0, 0, &end), -EINVAL);
	KUNIT_EXPECT_EQ(test, gdrdrv_pin_check_args(gp, gp, 0x2, &end), -EINVAL);
	KUNIT_EXPECT_EQ(test, gdrdrv_pin_check_args(gp, gp, 0x80000000u, &end), -EINVAL);

	/* addr + size wraps; the last accepted end rounds up to the top GPU page's start. */
	KUNIT_EXPECT_EQ(test, gdrdrv_pin_check_args(U64_MAX - gp, 2 * gp, 0, &end), -EINVAL);
	KUNIT_EXPECT_EQ(test, gdrdrv_pin_check_args(0 - 2 * gp, gp - 1, 0, &end), 0);
	KUNIT_EXPECT_EQ(test, end, 0 - gp);
	KUNIT_EXPECT_EQ(test, gdrdrv_pin_check_args(0 - 2 * gp, gp, 0, &end), -EINVAL);

	/* A pin takes fewer pages than the offset space has: 2^16 pages here. */
	gdrdrv_offset_space_log2 = 16;
	space = BIT_ULL(16) << PAGE_SHIFT;
	KUNIT_EXPECT_EQ(test, gdrdrv_pin_check_args(0, space - gp, 0, &end), 0);
	KUNIT_EXPECT_EQ(test, end, space - gp);
	KUNIT_EXPECT_EQ(test, gdrdrv_pin_check_args(0, space, 0, &end), -EINVAL);
	KUNIT_EXPECT_EQ(test, gdrdrv_pin_check_args(1, space - gp, 0, &end), -EINVAL);
}

static struct kunit_case gdrdrv_kunit_cases[] = {
	KUNIT_CASE(gdrdrv_kunit_handles_disjoint),
	KUNIT_CASE(gdrdrv_kunit_handles_wrap),
	KUNIT_CASE(gdrdrv_kunit_handles_enospc),
	KUNIT_CASE(gdrdrv_kunit_user_bounds),
	KUNIT_CASE(gdrdrv_kunit_pin_args),
	{}
};

static struct kunit_suite gdrdrv_kunit_suite = {
	.name = "gdrdrv",
	.init = gdrdrv_kunit_init,
	.exit = gdrdrv_kunit_exit,
	.test_cases = gdrdrv_kunit_cases,
};

kunit_test_suite(gdrdrv_kunit_suite);

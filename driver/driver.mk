# SPDX-License-Identifier: GPL-2.0 OR MIT
# driver/driver.mk - the kernel module from the top Makefile (included by it).
#
#   make module KDIR=/usr/lib/modules/<release>/build    gdrdrv.ko in $(BUILD)/driver/
#   make module KDIR=... KBUILD_EXTRA_SYMBOLS=...         (passed through, as NVIDIA_SRC,
#                                                         GDRDRV_FLAVOUR and W are)
#   make dkms-source   $(BUILD)/dkms/gdrdrv-$(VERSION)/: the tree DKMS takes from /usr/src
#
# The module is built in a copy of driver/ so the source tree stays clean. Its version is
# the top Makefile's VERSION; the uapi header must agree (checked here).

DRIVER_FILES := $(wildcard driver/*.c driver/*.h) driver/uapi/gdrdrv.h driver/Kbuild \
                driver/Makefile driver/conftest.sh driver/README.md
DRIVER_UAPI_VERSION := $(shell sed -n 's/^\#define GDRDRV_MAJOR_VERSION \([0-9]*\)/\1/p' driver/uapi/gdrdrv.h).$(shell \
                         sed -n 's/^\#define GDRDRV_MINOR_VERSION \([0-9]*\)/\1/p' driver/uapi/gdrdrv.h)

.PHONY: module dkms-source driver-version-check
driver-version-check:
	@test "$(DRIVER_UAPI_VERSION)" = "$(VERSION)" || \
	    { echo "driver: uapi/gdrdrv.h says $(DRIVER_UAPI_VERSION), Makefile VERSION is $(VERSION)"; exit 1; }

# Copy driver/ into $(1), keeping timestamps so kbuild rebuilds only what changed.
define driver-copy
	@mkdir -p $(1)/uapi
	@for f in $(DRIVER_FILES); do cp -p $$f $(1)/$${f#driver/}; done
endef

module: driver-version-check
	$(call driver-copy,$(BUILD)/driver)
	$(MAKE) -C $(BUILD)/driver $(if $(KDIR),KDIR=$(KDIR)) modules

dkms-source: driver-version-check
	$(call driver-copy,$(BUILD)/dkms/gdrdrv-$(VERSION))
	sed 's/@VERSION@/$(VERSION)/' driver/dkms.conf > $(BUILD)/dkms/gdrdrv-$(VERSION)/dkms.conf

# The module's own checks in the QEMU guest are a guest program like the others
# (tests/kernel/guest/gdrdrv_test.c, built by tests/kernel/guest.mk).

# Host-side check of the module builds (both flavours, every installed header tree).
TEST_PROGS += driver/tests/test_driver_builds.sh
# The syzkaller description (driver/syzkaller/gdrdrv.txt) agrees with uapi/gdrdrv.h.
TEST_PROGS += driver/tests/test_syzkaller_desc.sh

# SPDX-License-Identifier: MIT
# tests/kernel/guest.mk - every static program of the QEMU guest, built one way (guest-link of
# the top Makefile) with the test kit (tests/lib), the emulated provider's wrappers
# (tests/kernel/emu/emu.c) and libgdrapi.a. Included by tests/tests.mk; tests/kernel/run-qemu.sh runs "make guest-progs"
# (for arm64 with the cross compiler and its own BUILD) and packs the results:
#   $(BUILD)/guest/tests/NAME   tests/kernel/guest/NAME.c, run by the guest's /init by name
# (the other areas' guest programs are make targets of their own areas, run through
# tests/kernel/guest-extra.list, the one list of extras).
# Built by 'make check' too (not by the sanitizer passes: a static program cannot use them),
# so a guest program that does not compile fails there even where QEMU is missing.

GUEST_BIN      := $(BUILD)/guest
GUEST_KIT_SRCS := $(TEST_KIT_SRCS) tests/kernel/emu/emu.c tests/kernel/guest/mmio.c
GUEST_KIT_HDRS := $(TEST_KIT_HDRS) tests/kernel/emu/nvp2p_emu.h \
                  tests/kernel/emu/emu.h tests/kernel/guest/mmio.h tests/kernel/guest/race.h \
                  driver/uapi/gdrdrv.h
GUEST_TESTS    := $(patsubst tests/kernel/guest/%.c,$(GUEST_BIN)/tests/%,\
                  $(filter-out tests/kernel/guest/mmio.c,$(wildcard tests/kernel/guest/*.c)))

guest-prog = $(call guest-link,$(GUEST_CPPFLAGS),$< $(GUEST_KIT_SRCS) $(LIB_STATIC) -ldl)

$(GUEST_BIN)/tests/%: tests/kernel/guest/%.c $(GUEST_KIT_SRCS) $(GUEST_KIT_HDRS) $(LIB_STATIC)
	@mkdir -p $(dir $@)
	$(guest-prog)

# The guest's ioctl fuzzer makes its calls from the syzkaller descriptions of driver/syzkaller/:
# their call table, made by syz_table.awk (which fails on a description it cannot read).
SYZ_TABLE := $(GUEST_BIN)/gen/syz_table.h
$(SYZ_TABLE): tests/kernel/guest/syz_table.awk driver/syzkaller/gdrdrv.txt \
        driver/syzkaller/gdrdrv_emu.txt
	@mkdir -p $(dir $@)
	awk -f $< $(filter %.txt,$^) >$@.tmp && mv $@.tmp $@
$(GUEST_BIN)/tests/fuzz_ioctl_test: $(SYZ_TABLE) tests/kernel/guest/syz_types.h
$(GUEST_BIN)/tests/fuzz_ioctl_test: GUEST_CPPFLAGS += -I$(GUEST_BIN)/gen

.PHONY: guest-progs
guest-progs: $(GUEST_TESTS)
check: guest-progs

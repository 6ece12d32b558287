# SPDX-License-Identifier: MIT
# tests/unit/guest.mk - the core's test program for the QEMU guest (tests/unit/guest_core.c),
# linked statically with libgdrapi.a and the guest helpers of tests/kernel/guest/; run there
# through tests/kernel/guest-extra.list. Included by tests/tests.mk; built before 'make check'
# runs the kernel tests (not by the sanitizer passes: a static program cannot use them).

GUEST_CORE := $(BUILD)/tests/guest_core_static

check: $(GUEST_CORE)

$(GUEST_CORE): tests/unit/guest_core.c tests/kernel/guest/common.c $(TEST_HELPER_SRCS) $(LIB_STATIC)
	@mkdir -p $(dir $@)
	$(call guest-link,$(GUEST_CPPFLAGS) -Itests/unit,$(filter %.c,$^) $(LIB_STATIC) -ldl)

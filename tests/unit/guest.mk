# SPDX-License-Identifier: MIT
# tests/unit/guest.mk - the core's test program for the QEMU guest (tests/unit/guest_core.c),
# linked statically with libgdrapi.a and the guest helpers of tests/kernel/guest/; run there
# through tests/kernel/guest-extra.list. Included by tests/tests.mk; built before 'make check'
# runs the kernel tests (not by the sanitizer passes: a static program cannot use them).

GUEST_CORE := $(BUILD)/tests/guest_core_static

check: $(GUEST_CORE)

# glibc warns that dlopen in a static program needs the shared libraries at run time: true,
# and harmless in the guest, where only the gdrdrv backend is usable.
$(GUEST_CORE): tests/unit/guest_core.c tests/kernel/guest/common.c $(TEST_HELPER_SRCS) $(LIB_STATIC)
	@mkdir -p $(dir $@)
	rm -f $@; $(CC) -static -std=gnu11 $(WARNINGS) -pthread -Iinclude -Itests/unit -Itests/kernel \
	    -Itests/kernel/guest -D_GNU_SOURCE $(CFLAGS) -o $@ $(filter %.c,$^) $(LIB_STATIC) -ldl 2>&1 | \
	    { grep -v -e "statically linked applications requires at runtime" -e ": in function" || true; }
	@test -x $@

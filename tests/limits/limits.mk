# SPDX-License-Identifier: MIT
# tests/limits/limits.mk - the client that tests/limits/test_limits.sh runs against the stand-in
# drivers (tests/fake/fake.mk) at the machine's limits, in this build and in the ASan one.
# 'make limits-progs' builds it with the stand-ins. Included by tests/tests.mk.

LIMITS_CLIENT := $(BUILD)/tests/limits/limits_client

$(LIMITS_CLIENT): $(BUILD)/tests/limits/%: tests/limits/%.c $(SCRIPT_CLIENT_DEPS)
	@mkdir -p $(dir $@)
	$(call script-client)

.PHONY: limits-progs
limits-progs: $(LIMITS_CLIENT) $(FAKE_LIBS)
SCRIPT_PROGS      += $(LIMITS_CLIENT)
SCRIPT_ASAN_PROGS += $(LIMITS_CLIENT)

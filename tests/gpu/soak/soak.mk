# SPDX-License-Identifier: MIT
# tests/gpu/soak/soak.mk - the GPU soak (tests/gpu/soak/soak.c): built by every build, 'make
# check' included (it needs no CUDA toolkit: the driver is loaded with dlopen, declared by the
# toolkit's cuda.h or the project's own), so that CI compiles it and runs it briefly against
# the stand-in drivers (tests/gpu/test_soak_standins.sh); tests/gpu/run_soak_on_gpu.sh runs it
# on a GPU. Included by tests/tests.mk.

SOAK := $(BUILD)/gpu/soak
SOAK_SRCS := $(wildcard tests/gpu/soak/*.c)

$(SOAK): $(SOAK_SRCS) tests/gpu/soak/soak.h $(SCRIPT_CLIENT_DEPS)
	@mkdir -p $(dir $@)
	$(call prog-link,$(TEST_CPPFLAGS) $(TEST_CUDA_CPPFLAGS),$(SOAK_SRCS) $(TEST_KIT_SRCS) \
	    $(LINK_LIBGDRAPI) -ldl)

.PHONY: soak
soak: $(SOAK)
SCRIPT_PROGS += $(SOAK)

# SPDX-License-Identifier: MIT
# tests/vulkan/vulkan.mk - the client that tests/vulkan/test_vulkan_unpinnable.sh runs against
# the VMM stand-in driver and the stand-in Vulkan loader (tests/fake/fake.mk), and the bridge's
# client it runs under vramio-run (tests/bridge/bridge.mk). 'make vulkan-progs' builds them.
# Included by tests/tests.mk.

VULKAN_CLIENT := $(BUILD)/tests/vulkan/unpinnable_client

$(VULKAN_CLIENT): $(BUILD)/tests/vulkan/%: tests/vulkan/%.c $(SCRIPT_CLIENT_DEPS) \
        $(FAKE_DIR)/cuda-vmm/libcuda.so
	@mkdir -p $(dir $@)
	$(call script-client,,$(FAKE_CUDA_VMM_LINK))

.PHONY: vulkan-progs
vulkan-progs: $(VULKAN_CLIENT) $(FAKE_CUDA_VMM) $(FAKE_VULKAN) bridge-progs
SCRIPT_PROGS      += $(VULKAN_CLIENT)
SCRIPT_ASAN_PROGS += $(VULKAN_CLIENT)

# The spanning pins' client: the static library (it asks what the pool asks, core/pins.h) and
# the VMM stand-in, run by test_vulkan_span.sh.
VULKAN_WB_SPAN_CLIENT := $(BUILD)/tests/vulkan/wb_span_client
$(VULKAN_WB_SPAN_CLIENT): tests/vulkan/wb_span_client.c $(TEST_KIT_SRCS) $(TEST_KIT_HDRS) \
        $(LIB_STATIC) $(FAKE_DIR)/cuda-vmm/libcuda.so
	@mkdir -p $(dir $@)
	$(call prog-link,$(TEST_CPPFLAGS) $(TEST_CUDA_CPPFLAGS) -Isrc,$< $(TEST_KIT_SRCS) \
	    $(LIB_STATIC) $(FAKE_CUDA_VMM_LINK) -ldl)

.PHONY: vulkan-span-progs
vulkan-span-progs: $(VULKAN_WB_SPAN_CLIENT) $(FAKE_CUDA_VMM) $(FAKE_VULKAN)
SCRIPT_PROGS      += $(VULKAN_WB_SPAN_CLIENT)
SCRIPT_ASAN_PROGS += $(VULKAN_WB_SPAN_CLIENT)

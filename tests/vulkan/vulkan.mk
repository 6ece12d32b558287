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

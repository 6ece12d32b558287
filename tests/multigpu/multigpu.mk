# SPDX-License-Identifier: MIT
# tests/multigpu/multigpu.mk - the clients that tests/multigpu/test_multigpu.sh runs against
# the VMM stand-in driver and the stand-in Vulkan loader (tests/fake/fake.mk): multigpu_client
# in this build and in the ASan one, freed_pin_client and chunk_pin_client in this build. 'make multigpu-progs'
# builds them with the stand-ins. Included by tests/tests.mk.

MULTIGPU_CLIENT  := $(BUILD)/tests/multigpu/multigpu_client
MULTIGPU_FREED   := $(BUILD)/tests/multigpu/freed_pin_client
MULTIGPU_CHUNKS  := $(BUILD)/tests/multigpu/chunk_pin_client

$(MULTIGPU_CLIENT) $(MULTIGPU_FREED) $(MULTIGPU_CHUNKS): $(BUILD)/tests/multigpu/%: tests/multigpu/%.c \
        $(SCRIPT_CLIENT_DEPS) $(FAKE_DIR)/cuda-vmm/libcuda.so
	@mkdir -p $(dir $@)
	$(call script-client,,$(FAKE_CUDA_VMM_LINK))

.PHONY: multigpu-progs
multigpu-progs: $(MULTIGPU_CLIENT) $(MULTIGPU_FREED) $(MULTIGPU_CHUNKS) $(FAKE_CUDA_VMM) \
    $(FAKE_VULKAN)
SCRIPT_PROGS      += $(MULTIGPU_CLIENT) $(MULTIGPU_FREED) $(MULTIGPU_CHUNKS)
SCRIPT_ASAN_PROGS += $(MULTIGPU_CLIENT)

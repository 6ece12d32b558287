# SPDX-License-Identifier: MIT
# tests/dmabuf/dmabuf.mk - the clients that tests/dmabuf/test_dmabuf_emulated.sh runs against
# the dma-buf stand-in driver (tests/fake/fake.mk), in this build and in the ASan one; under
# tests/cross/cross_user.sh, built by the cross compiler. 'make dmabuf-emu-progs' builds them
# with the stand-ins. Included by tests/tests.mk.

DMABUF_EMU_CLIENTS := $(patsubst %,$(BUILD)/tests/dmabuf/%,dmabuf_client dmabuf_upstream_client \
                      dma_auto_client)

$(DMABUF_EMU_CLIENTS): $(BUILD)/tests/dmabuf/%: tests/dmabuf/%.c $(SCRIPT_CLIENT_DEPS)
	@mkdir -p $(dir $@)
	$(call script-client)

.PHONY: dmabuf-emu-progs
dmabuf-emu-progs: $(DMABUF_EMU_CLIENTS) $(FAKE_CUDA_DMABUF) $(FAKE_MMAP)
SCRIPT_PROGS      += $(DMABUF_EMU_CLIENTS)
SCRIPT_ASAN_PROGS += $(DMABUF_EMU_CLIENTS)

# SPDX-License-Identifier: MIT
# tests/gpu/gpu.mk - the GPU test programs (need a GPU: not part of 'make check').
#
#   make gpu-tests          build $(BUILD)/gpu/gpu_backend_test, fork_test and gpu_auto_test,
#                           multigpu_client (run_multigpu_on_gpu.sh runs it) and
#                           bridge_fork_client (run_bridge_fork_on_gpu.sh runs it)
#   tests/gpu/run_on_gpu.sh build and run the test on a GPU machine (as root and as a user),
#                           then the benchmark that shares its helpers (bench/gpu_bench.c)
#
# They use the public headers and libgdrapi.so, plus the CUDA driver API to allocate and to
# check copies: linked against the toolkit's stub libcuda (the real one is found at run time).
# GPU_COMMON and CUDA_STUBS serve bench/bench.mk's gpu_bench too.

GPU_BINS := $(BUILD)/gpu/gpu_backend_test $(BUILD)/gpu/fork_test $(BUILD)/gpu/gpu_auto_test \
            $(BUILD)/gpu/multigpu_client $(BUILD)/gpu/bridge_fork_client
CUDA_STUBS ?= $(CUDA_HOME)/lib64/stubs

GPU_COMMON := tests/gpu/gpu_common.c $(TEST_KIT_SRCS)

$(BUILD)/gpu/%: tests/gpu/%.c $(GPU_COMMON) tests/gpu/gpu_common.h $(LIB_REAL) $(BUILD)/lib/libgdrapi.so
	@mkdir -p $(dir $@)
	$(call prog-link,$(TEST_CPPFLAGS) -I$(CUDA_HOME)/include,$< $(GPU_COMMON) $(LINK_LIBGDRAPI) \
	    -L$(CUDA_STUBS) -lcuda)

# The two-GPU program of tests/multigpu, against the real driver ("MODE real").
$(BUILD)/gpu/multigpu_client: tests/multigpu/multigpu_client.c $(TEST_KIT_SRCS) $(LIB_REAL) $(BUILD)/lib/libgdrapi.so
	@mkdir -p $(dir $@)
	$(call prog-link,$(TEST_CPPFLAGS) -I$(CUDA_HOME)/include,$< $(TEST_KIT_SRCS) \
	    $(LINK_LIBGDRAPI) -L$(CUDA_STUBS) -lcuda -ldl)

# The bridge's fork program of tests/bridge, against the real driver: -rdynamic, as in
# tests/bridge/bridge.mk (its poll, sendmsg and listen hold a thread inside the bridge);
# tests/fake for the stand-in's memfd names, which it knows when it runs against the stand-in.
$(BUILD)/gpu/bridge_fork_client: tests/bridge/fork_client.c tests/lib/hex.h $(TEST_KIT_SRCS) \
        $(TEST_KIT_HDRS) tests/fake/fake_gpu.h $(LIB_REAL) $(BUILD)/lib/libgdrapi.so
	@mkdir -p $(dir $@)
	$(call prog-link,$(TEST_CPPFLAGS) -I$(CUDA_HOME)/include -Itests/fake -rdynamic,$< $(TEST_KIT_SRCS) \
	    $(LINK_LIBGDRAPI) -L$(CUDA_STUBS) -lcuda -ldl -lpthread)

# What only an R610 driver can settle about the dmabuf backend (run_dmabuf_r610_checks.sh):
# cuda.h only, libcuda is loaded at run time (by the library and by the program).
$(BUILD)/gpu/dmabuf_r610_checks: tests/gpu/dmabuf_r610_checks.c $(TEST_KIT_SRCS) $(TEST_KIT_HDRS) \
        $(LIB_REAL) $(BUILD)/lib/libgdrapi.so
	@mkdir -p $(dir $@)
	$(call prog-link,$(TEST_CPPFLAGS) -I$(CUDA_HOME)/include,$< $(TEST_KIT_SRCS) \
	    $(LINK_LIBGDRAPI) -ldl)

.PHONY: gpu-tests
gpu-tests: $(GPU_BINS)

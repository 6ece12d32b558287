# SPDX-License-Identifier: MIT
# tests/abi/abi.mk - the programs of the ABI script tests. Their compiling is part of what
# those tests check (a size that differs from the 2.6 ABI, a declaration that conflicts with
# cuda.h, stops the compile), so 'make check' does not build them beforehand: each script asks
# make for its own (t_make) and reports a failed build as its first result. Included by
# tests/tests.mk.
#   $(BUILD)/tests/abi_layout            tests/abi/layout.c (test_abi_layout.sh)
#   $(BUILD)/tests/abi_dlopen_client     tests/abi/dlopen_client.c (test_dlopen.sh)
#   $(BUILD)/tests/cuda_api/{ours,toolkit}  tests/abi/cuda_api_check.c against our
#                                        declarations and against cuda.h (test_cuda_api.sh)

$(BUILD)/tests/abi_layout: tests/abi/layout.c include/gdrapi.h driver/uapi/gdrdrv.h \
        tests/lib/legacy_info.h
	@mkdir -p $(dir $@)
	$(call prog-link,-Iinclude -Idriver -Itests/lib,$<)

# No libgdrapi on the link line: the client finds it by name at run time.
$(BUILD)/tests/abi_dlopen_client: tests/abi/dlopen_client.c
	@mkdir -p $(dir $@)
	$(call prog-link,,$< -ldl)

# Every constant util/cuda_types.h defines, enumerators and macros alike.
CUDA_API_DIR := $(BUILD)/tests/cuda_api
$(CUDA_API_DIR)/consts.h: util/cuda_types.h
	@mkdir -p $(dir $@)
	sed -n -e 's/^ *\(CU[A-Z0-9_]*\) *=.*/CONST(\1)/p' \
	    -e 's/^#define \(CU_[A-Z0-9_]*\) .*/CONST(\1)/p' $< > $@
$(CUDA_API_DIR)/toolkit: CUDA_API_FLAGS = -DVR_CUDA_TOOLKIT_TYPES -I$(CUDA_HOME)/include
$(CUDA_API_DIR)/ours $(CUDA_API_DIR)/toolkit: tests/abi/cuda_api_check.c $(CUDA_API_DIR)/consts.h \
        util/cuda_types.h util/cuda_api.h
	$(call prog-link,-Iutil -DCONSTS_FILE='"$(abspath $(CUDA_API_DIR)/consts.h)"' \
	    $(CUDA_API_FLAGS),$<)

# SPDX-License-Identifier: MIT
# tools/tools.mk - the gdrcopy_* tools. Included by the top Makefile.
#
#   $(BUILD)/bin/gdrcopy_{sanity,copybw,copylat,apiperf,pplat,info}   linked with libgdrapi.so
#   $(BUILD)/bin/gdrcopy_sanity_static   the same sanity suite, static, for the QEMU guest
#
# A new sanity test is one T_CASE in a tools/sanity/t_*.c file (tools/sanity/harness.h); a new
# test file is found by the wildcard below.
#
# CUDA is reached only through dlopen (util/cuda_loader.c, linked from util's archive), so every tool starts
# on a machine without a GPU and says what is missing. pplat's GPU kernel is built with nvcc
# when nvcc is found; otherwise pplat is still built and says why its kernel is missing.

TOOL_NAMES  := $(basename $(notdir $(wildcard tools/*.c)))
TOOL_BINS   := $(patsubst %,$(BUILD)/bin/gdrcopy_%,$(TOOL_NAMES))
TOOL_STATIC := $(BUILD)/bin/gdrcopy_sanity_static
TOOL_COMMON_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tools/common/*.c))
SANITY_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tools/sanity/*.c))
# The emulated provider's memory kind (TEST ONLY): linked into the guest's static sanity alone,
# with the wrappers of the provider (both in tests/kernel/emu/).
GM_EMU_OBJ  := $(BUILD)/obj/tests/kernel/emu/gpumem_emu.o $(BUILD)/obj/tests/kernel/emu/emu.o
$(BUILD)/obj/tests/kernel/emu/%.o: AREA_CPPFLAGS = $(TOOL_CPPFLAGS) -Itests/lib -Itests/kernel/emu
TOOL_LIBS   := -ldl -lpthread -lm
NVCC        ?= $(shell command -v nvcc 2>/dev/null || { test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc; })
PPLAT_GEN   := $(BUILD)/gen/pplat_kernel.c

.SECONDARY: $(patsubst tools/%.c,$(BUILD)/obj/tools/%.o,$(wildcard tools/*.c))
tools: $(TOOL_BINS) $(TOOL_STATIC)

# The tools find the library beside them in the build tree and in installs ($ORIGIN/../lib),
# and in installs whose libdir is PREFIX/lib64 (GDRCopy's own build scripts pass that one);
# a libdir anywhere else is the loader's business (ldconfig, as for upstream's tools).
$(BUILD)/bin/gdrcopy_%: $(BUILD)/obj/tools/%.o $(TOOL_COMMON_OBJS) $(UTIL_LIB) $(LIB_REAL) $(BUILD)/lib/libgdrapi.so \
                       tools/tools.mk
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(UTIL_LIB) -L$(BUILD)/lib -lgdrapi \
	    -Wl,-rpath,'$$ORIGIN/../lib:$$ORIGIN/../lib64' $(TOOL_LIBS)

$(BUILD)/bin/gdrcopy_sanity: $(SANITY_OBJS)
$(BUILD)/bin/gdrcopy_pplat: $(BUILD)/obj/gen/pplat_kernel.o

# The guest has no libcuda: the CUDA kinds are skipped there.
$(TOOL_STATIC): $(BUILD)/obj/tools/sanity.o $(SANITY_OBJS) $(TOOL_COMMON_OBJS) $(GM_EMU_OBJ) $(UTIL_LIB) $(LIB_STATIC)
	@mkdir -p $(dir $@)
	$(call guest-link,,$(filter %.o,$^) $(UTIL_LIB) $(LIB_STATIC) $(TOOL_LIBS))

# pplat's kernel: a fatbin embedded as bytes, or the reason it is missing.
$(PPLAT_GEN): tools/pplat_kernel.cu tools/gen_fatbin.sh
	@mkdir -p $(dir $@)
	NVCC="$(NVCC)" sh tools/gen_fatbin.sh $< $@

$(BUILD)/obj/gen/pplat_kernel.o: $(PPLAT_GEN)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# The tools' own helpers, tested without a GPU by 'make check'.
$(BUILD)/tests/tools_selftest: tests/tools/tools_selftest.c $(TEST_KIT_SRCS) $(TOOL_COMMON_OBJS) $(UTIL_LIB) $(LIB_REAL) $(BUILD)/lib/libgdrapi.so
	@mkdir -p $(dir $@)
	$(call prog-link,-Iinclude $(TOOL_CPPFLAGS) -Itests/lib,$< $(TEST_KIT_SRCS) $(TOOL_COMMON_OBJS) $(UTIL_LIB) \
	    $(LINK_LIBGDRAPI) $(TOOL_LIBS))
TEST_PROGS += $(BUILD)/tests/tools_selftest

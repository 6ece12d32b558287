# SPDX-License-Identifier: MIT
# tests/tests.mk - unit tests and 'make check'. Included by the top Makefile.
#
#   tests/unit/test_*.c   black-box tests: public headers only, linked with libgdrapi.so
#   tests/unit/copy_*.c   white-box tests of the copy engine, linked with its objects
#   tests/unit/wb_*.c     white-box tests of library internals (backend logic), linked with
#                         the static libgdrapi.a and allowed to include src/ headers
#   tests/*/test_*.sh     script tests (get BUILD in the environment); the programs they run
#                         are make targets too (SCRIPT_PROGS, below), which they ask make for
#   tests/unit/stress_*.c many-thread tests, also run under ThreadSanitizer; those that need a
#                         backend to pin with (WB_STRESS_SRCS) bring a fake one and are built
#                         as the wb_ tests are
#   tests/lib/            the one test kit every C program links (TEST_KIT_SRCS, top Makefile)
#                         and tests/lib/t.sh for the shell tests
#   tests/kernel/guest.mk the static programs of the QEMU guest
# 'make check' runs them all, again under ASan+UBSan and TSan, then the QEMU kernel tests.

WB_STRESS_SRCS := tests/unit/stress_same_handle.c
UNIT_API_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(filter-out $(WB_STRESS_SRCS),\
                    $(wildcard tests/unit/test_*.c tests/unit/stress_*.c)))
UNIT_COPY_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/copy_*.c tests/unit/wb_*.c) \
                    $(WB_STRESS_SRCS))
COPY_OBJS = $(patsubst %.c,$(BUILD)/obj/%.o,$(COPY_SRCS) $(ARCH_SRCS))

TEST_CFLAGS = $(PROG_CFLAGS) $(TEST_CPPFLAGS)

$(UNIT_API_BINS): $(BUILD)/tests/%: tests/unit/%.c $(TEST_KIT_SRCS) $(TEST_KIT_HDRS) $(LIB_REAL) $(BUILD)/lib/libgdrapi.so
	@mkdir -p $(dir $@)
	$(call prog-link,$(TEST_CPPFLAGS),$< $(TEST_KIT_SRCS) $(LINK_LIBGDRAPI) -ldl)

# White-box: may include src/ headers (the one deliberate exception).
# The copy engine's objects and the library's log.c; copy_test.h counts the warnings, sees the
# kernel table as the engine hands it to its choice and adds kernels of its own there.
COPY_TEST_LOG := $(BUILD)/obj/src/process/log.o -Wl,--wrap=vr_log -Wl,--wrap=vr_copy_choose_from
$(BUILD)/tests/copy_%: tests/unit/copy_%.c tests/unit/copy_test.h tests/unit/copy_table.h $(TEST_KIT_SRCS) $(TEST_KIT_HDRS) $(COPY_OBJS) $(BUILD)/obj/src/process/log.o
	@mkdir -p $(dir $@)
	$(call prog-link,$(TEST_CPPFLAGS) -Isrc -Isrc/copy,$< $(TEST_KIT_SRCS) $(COPY_OBJS) $(COPY_TEST_LOG))

# tests/unit/wb/: hooks on the library's internals, built into these programs only.
WB_HOOK_SRCS := $(wildcard tests/unit/wb/*.c)
WB_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/wb_*.c) $(WB_STRESS_SRCS))
$(WB_BINS): $(BUILD)/tests/%: tests/unit/%.c $(TEST_KIT_SRCS) $(TEST_KIT_HDRS) $(WB_HOOK_SRCS) $(wildcard tests/unit/wb/*.h) $(LIB_STATIC)
	@mkdir -p $(dir $@)
	$(call prog-link,$(WB_CPPFLAGS),$< $(TEST_KIT_SRCS) $(WB_HOOK_SRCS) $(LIB_STATIC) -ldl $(WB_WRAP))
# The gdrdrv backend's tests stand in for the module: the system calls of the backend's object
# reach the test's __wrap_ functions (which pass every other call on to libc).
$(BUILD)/tests/wb_gdrdrv_gates: WB_WRAP = -Wl,--wrap=open,--wrap=close,--wrap=ioctl,--wrap=mmap,--wrap=munmap
$(BUILD)/tests/wb_gdrdrv_probe: WB_WRAP = -Wl,--wrap=open
# The fork test holds a thread in the library's calls: the handle tables' allocation, a fork
# registration, and the copy engine's CUDA (a fake driver of the test's own).
$(BUILD)/tests/wb_fork_first_use: WB_WRAP = -Wl,--wrap=posix_memalign,--wrap=vr_fork_on_child,--wrap=vr_cuda_init
# The import cache's race test holds a thread that has just left the cache's lock in a release.
$(BUILD)/tests/wb_vulkan_cache: WB_WRAP = -Wl,--wrap=pthread_mutex_unlock

TEST_PROGS += $(UNIT_API_BINS) $(UNIT_COPY_BINS)

# The programs of the script tests: stand-in drivers (tests/fake/fake.mk) and clients, one
# fragment per area. A script asks make for its own (t_make, tests/lib/t.sh); 'make check'
# builds them all before it runs the scripts, and those that run again against the ASan
# library (SCRIPT_ASAN_PROGS) in the ASan build too.
SCRIPT_PROGS      :=
SCRIPT_ASAN_PROGS :=
# A client: its source (the first prerequisite) and the test kit, against this build's
# libgdrapi.so; $(1) more flags, $(2) more inputs.
SCRIPT_CLIENT_DEPS = $(TEST_KIT_SRCS) $(TEST_KIT_HDRS) $(LIB_REAL) $(BUILD)/lib/libgdrapi.so
script-client = $(call prog-link,$(TEST_CPPFLAGS) $(TEST_CUDA_CPPFLAGS) $(1),$< $(TEST_KIT_SRCS) \
    $(2) $(LINK_LIBGDRAPI) -ldl)
-include tests/fake/fake.mk tests/dmabuf/dmabuf.mk tests/multigpu/multigpu.mk tests/bridge/bridge.mk \
    tests/vulkan/vulkan.mk
# The fence test's _auto cases run the copy engine's side against the stand-in driver.
$(BUILD)/tests/wb_copy_fences: | $(FAKE_CUDA_DMABUF)
# The pool's chunks against the VMM stand-in; the backends' answer to whether a pin may span
# chunks is the test's (vr_pins_can_span wrapped).
$(BUILD)/tests/wb_alloc_chunks: WB_WRAP = -Wl,--wrap=vr_pins_can_span
$(BUILD)/tests/wb_alloc_chunks: | $(FAKE_CUDA_VMM)
# The reasons against both stand-ins; a pin across the pool's chunks is the first to ask
# whether the backend can span them (vr_pins_can_span wrapped: not asked at the allocation).
$(BUILD)/tests/wb_reasons: WB_WRAP = -Wl,--wrap=vr_pins_can_span
$(BUILD)/tests/wb_reasons: | $(FAKE_CUDA_VMM) $(FAKE_VULKAN)
-include tests/fuzz/fuzz.mk tests/limits/limits.mk tests/gpu/soak/soak.mk
-include tests/abi/abi.mk
.PHONY: script-progs script-progs-asan
script-progs: $(SCRIPT_PROGS)
script-progs-asan: $(SCRIPT_ASAN_PROGS)
# Run again under TSan: the many-thread tests, the white-box tests of the core and the vulkan
# backend's import cache.
TSAN_BINS = $(filter $(BUILD)/tests/stress_% $(BUILD)/tests/wb_handles $(BUILD)/tests/wb_core $(BUILD)/tests/wb_slab_pool $(BUILD)/tests/wb_mixed_mappings $(BUILD)/tests/wb_lazy_probe $(BUILD)/tests/wb_fork_first_use $(BUILD)/tests/wb_vulkan_cache,$(UNIT_API_BINS) $(UNIT_COPY_BINS))
SCRIPT_TESTS := $(wildcard tests/*/test_*.sh)
KERNEL_TESTS := $(wildcard tests/kernel/run-qemu.sh tests/kernel/run-qemu-debug.sh \
                  tests/kernel/run-qemu-debug-proprietary.sh tests/kernel/run-qemu-arm64.sh)

.PHONY: check check-unit check-asan check-tsan
check: all tests script-progs
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/asan SANITIZE=asan lib tests \
	    script-progs-asan >/dev/null
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/tsan SANITIZE=tsan lib \
	    $(patsubst $(BUILD)/tests/%,$(BUILD)/tsan/tests/%,$(TSAN_BINS)) >/dev/null
	@BUILD=$(BUILD) CC=$(CC) tests/run.sh $(TEST_PROGS) $(SCRIPT_TESTS) \
	    $(patsubst $(BUILD)/%,$(BUILD)/asan/%,$(UNIT_API_BINS) $(UNIT_COPY_BINS)) \
	    $(patsubst $(BUILD)/tests/%,$(BUILD)/tsan/tests/%,$(TSAN_BINS)) \
	    $(KERNEL_TESTS)

# The fast loop while developing: normal build only.
check-unit: all tests script-progs
	@BUILD=$(BUILD) tests/run.sh $(TEST_PROGS) $(SCRIPT_TESTS)

# GPU-only programs (tests/gpu): built by "make gpu-tests", never run by "make check".
-include tests/gpu/gpu.mk
-include tests/kernel/guest.mk

# SPDX-License-Identifier: MIT
# vramio: a drop-in libgdrapi.so.2 (GDRCopy 2.6 API/ABI), its tools, tests and kernel module.
#
#   make                 library and tools into $(BUILD)/
#   make check           every test; ends with "N passed, N failed, N skipped"
#   make install         see packaging/install.mk (PREFIX, DESTDIR, libdir)
#
# Sources are found by wildcard, so adding a file needs no edit here. Each area may add its own
# rules in a fragment included below (src/copy/copy.mk, tools/tools.mk, bridge/bridge.mk,
# tests/tests.mk, driver/driver.mk, packaging/install.mk, bench/bench.mk).

.DEFAULT_GOAL := all

VERSION_MAJOR := 2
VERSION_MINOR := 6
VERSION       := $(VERSION_MAJOR).$(VERSION_MINOR)

CC        ?= cc
CXX       ?= c++
CUDA_HOME ?= /usr/local/cuda
BUILD     ?= build
SANITIZE  ?=

CFLAGS   ?= -O2 -g
# An op or callback that ignores some of its contract's arguments needs no (void) for each
# (liburing and rdma-core build the same way).
WARNINGS := -Wall -Wextra -Wno-unused-parameter -Werror
# The flags every C file gets, here and nowhere else; the fragments add include paths only.
C_FLAGS  := -std=gnu11 $(WARNINGS) -pthread -D_GNU_SOURCE
BASE_CFLAGS := $(C_FLAGS) -fPIC -fvisibility=hidden
CPPFLAGS_ALL := -Iinclude -DVRAMIO_VERSION_STRING='"$(VERSION)"'

# Include paths per area: each area sees the installed headers, its own and those of the
# layers below it, so a private header included outside its area does not compile.
# "uapi/gdrdrv.h" (the ioctl ABI) is found through -Idriver, its path written out.
# The directories of src/ (one per layer: src/README.md) share the library's path and name
# each other's headers by directory ("core/pins.h"); that alloc/ and dma/ keep theirs to
# themselves is checked by tests/abi/test_include_areas.sh.
UTIL_CPPFLAGS := -Iutil
LIB_CPPFLAGS  := -Isrc -Iutil -Idriver
TOOL_CPPFLAGS := -Itools -Iutil -Idriver
# Black-box tests see the public headers and the test kit (tests/lib) only; white-box tests
# of src/ see the library's too.
TEST_CPPFLAGS := -Iinclude -Itests/lib
WB_CPPFLAGS   := $(TEST_CPPFLAGS) -Itests/unit -Isrc -Iutil -Idriver
# The test kit every test program links (tests/lib/t.h): result lines, exit codes, the
# pattern, process helpers. The emulated provider's wrappers (tests/kernel/emu/emu.c) are
# linked into the QEMU guest's programs only (tests/kernel/guest.mk).
TEST_KIT_SRCS := tests/lib/t.c tests/lib/t_proc.c
TEST_KIT_HDRS := $(wildcard tests/lib/*.h)
$(BUILD)/obj/util/%.o:  AREA_CPPFLAGS = $(UTIL_CPPFLAGS)
$(BUILD)/obj/src/%.o:   AREA_CPPFLAGS = $(LIB_CPPFLAGS)
$(BUILD)/obj/tools/%.o: AREA_CPPFLAGS = $(TOOL_CPPFLAGS)
$(BUILD)/obj/bridge/%.o: AREA_CPPFLAGS = -Ibridge -Iutil

ifeq ($(SANITIZE),asan)
  SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
else ifeq ($(SANITIZE),tsan)
  SAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer
else ifeq ($(SANITIZE),fuzz)
  # The fuzz targets' build (CC=clang, tests/fuzz/fuzz.mk): ASan, UBSan and libFuzzer's
  # coverage; the targets add libFuzzer itself at their link.
  SAN_FLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
               -fno-sanitize-recover=all
else
  SAN_FLAGS :=
endif

ALL_CFLAGS  = $(BASE_CFLAGS) $(CPPFLAGS_ALL) $(AREA_CPPFLAGS) $(SAN_FLAGS) $(CFLAGS)
ALL_LDFLAGS = $(SAN_FLAGS) $(LDFLAGS)

# ---- link recipes of programs: one per kind, used by every fragment ---------------------
# Test and benchmark programs, built from sources in one step: $(call prog-link,CPPFLAGS,INPUTS).
PROG_CFLAGS = $(C_FLAGS) $(SAN_FLAGS) $(CFLAGS)
prog-link   = $(CC) $(PROG_CFLAGS) $(1) -o $@ $(2) $(ALL_LDFLAGS)
# Linking against the library of this build tree, found there at run time.
LINK_LIBGDRAPI = -L$(BUILD)/lib -lgdrapi -Wl,-rpath,$(abspath $(BUILD)/lib)
# Static programs for the QEMU guest (no sanitizers: a static program cannot use them).
# glibc warns that dlopen in a static program needs the shared libraries at run time: true,
# and harmless there (the guest has no libcuda). Every guest program is linked by guest-link
# (tests/kernel/guest.mk lists them; tests/kernel/run-qemu.sh asks make for them).
GUEST_CFLAGS   = -static $(C_FLAGS) $(CFLAGS)
GUEST_CPPFLAGS = -Iinclude -Idriver -Itests/kernel/emu -Itests/lib -Itests/kernel/guest
guest-link = rm -f $@; $(CC) $(GUEST_CFLAGS) $(1) -o $@ $(2) 2>&1 | \
    { grep -v -e "statically linked applications requires at runtime" -e ": in function" || true; }; \
    test -x $@

ARCH := $(shell $(CC) -dumpmachine | cut -d- -f1)

# ---- util: internal helpers of the library and the tools (the CUDA loader, the context
# helper). Linked into both, exported by neither: the library's map file hides them, and the
# tools link the archive.
UTIL_SRCS := $(wildcard util/*.c)
UTIL_OBJS  = $(patsubst %.c,$(BUILD)/obj/%.o,$(UTIL_SRCS))
UTIL_LIB   = $(BUILD)/obj/util/libvrutil.a

$(UTIL_LIB): $(UTIL_OBJS)
	rm -f $@ && $(AR) rcs $@ $^

# ---- the library -----------------------------------------------------------------------
# src/arch/: CPU features, the cycle clock (the copy engine's tests link them too).
ARCH_SRCS := $(wildcard src/arch/*.c)
LIB_SRCS  := $(wildcard src/core/*.c src/process/*.c src/backends/*.c src/dma/*.c src/alloc/*.c) \
             $(ARCH_SRCS)
COPY_SRCS :=                       # filled by src/copy/copy.mk (per-ISA files and flags)
-include src/copy/copy.mk

LIB_OBJS  = $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS) $(COPY_SRCS)) $(UTIL_OBJS)
LIB_MAP   := src/libgdrapi.map
LIB_REAL  := $(BUILD)/lib/libgdrapi.so.$(VERSION)
LIB_SONAME:= libgdrapi.so.$(VERSION_MAJOR)
LIB_STATIC:= $(BUILD)/lib/libgdrapi.a

.PHONY: all lib tools tests check clean
all: lib tools

lib: $(LIB_REAL) $(BUILD)/lib/$(LIB_SONAME) $(BUILD)/lib/libgdrapi.so $(LIB_STATIC)

# Before the first object: a C compiler and the Vulkan headers, or a message saying what to
# install (deps.sh check-build), never a compiler error. Checked once per build folder.
BUILD_PREREQS := $(BUILD)/.prereqs-ok
$(BUILD_PREREQS):
	@CC='$(CC)' ./deps.sh check-build
	@mkdir -p $(dir $@) && touch $@

$(BUILD)/obj/%.o: %.c | $(BUILD_PREREQS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(OBJ_CFLAGS_$*) -MMD -MP -c $< -o $@

# -z nodelete: dlclose must not unmap us while pins, mappings, fork handlers or a forked
# child's exit handler (src/process/fork.c) still point into the library.
$(LIB_REAL): $(LIB_OBJS) $(LIB_MAP)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,$(LIB_SONAME) -Wl,--version-script=$(LIB_MAP) -Wl,-z,defs \
	    -Wl,-z,nodelete -Wl,-z,relro -Wl,-z,now -Wl,--as-needed $(ALL_LDFLAGS) -o $@ $(LIB_OBJS) -ldl -lpthread

$(BUILD)/lib/$(LIB_SONAME): $(LIB_REAL)
	ln -sf $(notdir $<) $@

$(BUILD)/lib/libgdrapi.so: $(BUILD)/lib/$(LIB_SONAME)
	ln -sf $(notdir $<) $@

# Static archive: for the statically linked programs of the QEMU guest (tests/kernel).
$(LIB_STATIC): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

# ---- tools, tests, module, packaging, benchmarks: one fragment each ---------------------
TEST_PROGS :=          # executables run by 'make check' (appended to by the fragments)
-include tools/tools.mk
-include bridge/bridge.mk
-include tests/tests.mk
-include driver/driver.mk
-include packaging/install.mk
-include bench/bench.mk

tests: $(TEST_PROGS)

clean:
	rm -rf $(BUILD)

# make print-VAR: the value of a variable (tests/abi/test_include_areas.sh reads the flags).
print-%:
	@echo '$($*)'

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

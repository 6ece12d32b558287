# SPDX-License-Identifier: MIT
# vramio: a drop-in libgdrapi.so.2 (GDRCopy 2.6 API/ABI), its tools, tests and kernel module.
#
#   make                 library and tools into $(BUILD)/
#   make check           every test; ends with "N passed, N failed, N skipped"
#   make install         see packaging/install.mk (PREFIX, DESTDIR, libdir)
#
# Sources are found by wildcard, so adding a file needs no edit here. Each area may add its own
# rules in a fragment included below (src/copy/copy.mk, tools/tools.mk, bridge/bridge.mk,
# tests/tests.mk, driver/driver.mk, packaging/install.mk).

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
WARNINGS := -Wall -Wextra -Werror
BASE_CFLAGS := -std=gnu11 -fPIC -fvisibility=hidden $(WARNINGS) -pthread
CPPFLAGS_ALL := -Iinclude -Isrc -Idriver/uapi -I$(CUDA_HOME)/include -D_GNU_SOURCE \
                -DVRAMIO_VERSION_STRING='"$(VERSION)"'

ifeq ($(SANITIZE),asan)
  SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
else ifeq ($(SANITIZE),tsan)
  SAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer
else
  SAN_FLAGS :=
endif

ALL_CFLAGS  = $(BASE_CFLAGS) $(CPPFLAGS_ALL) $(SAN_FLAGS) $(CFLAGS)
ALL_LDFLAGS = $(SAN_FLAGS) $(LDFLAGS)

ARCH := $(shell $(CC) -dumpmachine | cut -d- -f1)

# ---- the library -----------------------------------------------------------------------
LIB_SRCS  := $(wildcard src/*.c)
COPY_SRCS :=                       # filled by src/copy/copy.mk (per-ISA files and flags)
-include src/copy/copy.mk

LIB_OBJS  = $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS) $(COPY_SRCS))
LIB_MAP   := src/libgdrapi.map
LIB_REAL  := $(BUILD)/lib/libgdrapi.so.$(VERSION)
LIB_SONAME:= libgdrapi.so.$(VERSION_MAJOR)
LIB_STATIC:= $(BUILD)/lib/libgdrapi.a

.PHONY: all lib tools tests check clean
all: lib tools

lib: $(LIB_REAL) $(BUILD)/lib/$(LIB_SONAME) $(BUILD)/lib/libgdrapi.so $(LIB_STATIC)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(OBJ_CFLAGS_$*) -MMD -MP -c $< -o $@

# -z nodelete: dlclose must not unmap us while pins, mappings, fork handlers or a forked
# child's exit handler (src/fork.c) still point into the library.
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

# ---- tools, tests, module, packaging: one fragment each ---------------------------------
TEST_PROGS :=          # executables run by 'make check' (appended to by the fragments)
-include tools/tools.mk
-include bridge/bridge.mk
-include tests/tests.mk
-include driver/driver.mk
-include packaging/install.mk

tests: $(TEST_PROGS)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# SPDX-License-Identifier: MIT
# src/copy/copy.mk - the copy engine's sources and per-file ISA flags. Included by the top
# Makefile (which sets ARCH from `$(CC) -dumpmachine`).
#
# Only the ISA file of a kernel gets that ISA's -m flag, so the rest of the library stays
# baseline for the architecture; copy.c picks a kernel at run time from cpuid.
#
#   make bench-copy     CPU microbenchmark of every usable kernel on ordinary memory

COPY_SRCS += src/copy/copy.c src/copy/copy_select.c src/copy/copy_c.c

ifeq ($(ARCH),x86_64)
COPY_SRCS += src/copy/copy_sse41.c src/copy/copy_avx2.c src/copy/copy_avx512.c \
             src/copy/copy_movdir64b.c
OBJ_CFLAGS_src/copy/copy_sse41     := -msse4.1
OBJ_CFLAGS_src/copy/copy_avx2      := -mavx2
OBJ_CFLAGS_src/copy/copy_avx512    := -mavx512f
OBJ_CFLAGS_src/copy/copy_movdir64b := -mmovdir64b
endif

ifeq ($(ARCH),aarch64)
COPY_SRCS += src/copy/copy_neon.c
endif

# ---- microbenchmark (not part of 'make check': timings are measurements, not tests) ----
COPY_BENCH := $(BUILD)/bench/copy_bench
.PHONY: bench-copy
bench-copy: $(COPY_BENCH)
	$(COPY_BENCH) $(COPY_BENCH_ARGS)

$(COPY_BENCH): tests/bench/copy_bench.c $(patsubst %.c,$(BUILD)/obj/%.o,$(COPY_SRCS) $(ARCH_SRCS) src/log.c)
	@mkdir -p $(dir $@)
	$(call prog-link,-Iinclude -Isrc -Isrc/copy,$^)

# SPDX-License-Identifier: MIT
# src/copy/copy.mk - the copy engine's sources and per-file ISA flags. Included by the top
# Makefile (which sets ARCH from `$(CC) -dumpmachine`).
#
# Only the ISA file of a kernel gets that ISA's -m flag, so the rest of the library stays
# baseline for the architecture; copy.c picks a kernel at run time from cpuid.
#
# Its CPU microbenchmark, make bench-copy, is built by bench/bench.mk.

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

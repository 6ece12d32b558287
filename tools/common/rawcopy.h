/* SPDX-License-Identifier: MIT */
/*
 * rawcopy.h - the "raw reference" of the benchmarks: the same operation as the library's
 * gdr_copy_*_mapping, done by a plain loop on the same mapping, with no library code.
 * It is the figure the library must match (docs/copy-kernels.md lists the H200's).
 */
#ifndef TOOLS_RAWCOPY_H
#define TOOLS_RAWCOPY_H

#include <stddef.h>

/* Small write: 8-byte stores (the widest aligned 4-, 2- or 1-byte stores for a tail), then
 * sfence. */
void raw_store_small(void *dst, const void *src, size_t n);
/* Bulk write: non-temporal stores of the widest vector this CPU has, then sfence. */
void raw_write_nt(void *dst, const void *src, size_t n);
/* Read: MFENCE, then streaming (non-temporal) loads of the widest vector, plain stores to
 * dst (the fence as every read of the library begins: src/arch/fence.h). */
void raw_read_nt(void *dst, const void *src, size_t n);
/* Store fence: orders write-combined stores before what follows. */
void raw_sfence(void);
/*
 * The raw write sequences a small copy is compared with; the benchmarks time each one that
 * applies to a size and take the fastest as the reference (the best raw sequence differs by
 * size: 8-byte stores below a line, one full-line store per 64-byte line above):
 *   RAW_W_ST8        8-byte stores (below 8 B: one store of the width) + sfence (raw_store_small)
 *   RAW_W_NT         non-temporal stores of the widest vector, one 64-byte store per line with
 *                    AVX-512, two 32-byte ones with AVX2 (raw_write_nt); from 64 B
 *   RAW_W_MOVDIR64B  one MOVDIR64B per 64-byte line + sfence; whole lines, where the CPU has it
 */
enum raw_write { RAW_W_ST8, RAW_W_NT, RAW_W_MOVDIR64B, RAW_W_COUNT };
const char *raw_write_name(enum raw_write w);
/* Whether w applies to an n-byte copy to a 64-byte aligned place on this CPU. */
int raw_write_usable(enum raw_write w, size_t n);
void raw_write(enum raw_write w, void *dst, const void *src, size_t n);
/* Which vector width the raw loops use ("avx512", "avx2", "sse", "c"). */
const char *raw_kernel_name(void);

#endif /* TOOLS_RAWCOPY_H */

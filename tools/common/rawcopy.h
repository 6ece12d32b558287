/* SPDX-License-Identifier: MIT */
/*
 * rawcopy.h - the "raw reference" of the benchmarks: the same operation as the library's
 * gdr_copy_*_mapping, done by a plain loop on the same mapping, with no library code.
 * It is the figure the library must match (docs/copy-kernels.md lists the H200's).
 */
#ifndef TOOLS_RAWCOPY_H
#define TOOLS_RAWCOPY_H

#include <stddef.h>

/* Small write: 8-byte stores (byte stores for a tail), then sfence. */
void raw_store_small(void *dst, const void *src, size_t n);
/* Bulk write: non-temporal stores of the widest vector this CPU has, then sfence. */
void raw_write_nt(void *dst, const void *src, size_t n);
/* Read: streaming (non-temporal) loads of the widest vector, plain stores to dst. */
void raw_read_nt(void *dst, const void *src, size_t n);
/* Store fence: orders write-combined stores before what follows. */
void raw_sfence(void);
/* Which vector width the raw loops use ("avx512", "avx2", "sse", "c"). */
const char *raw_kernel_name(void);

#endif /* TOOLS_RAWCOPY_H */

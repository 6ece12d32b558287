/* SPDX-License-Identifier: MIT */
/*
 * copy.h - the copy engine used by gdr_copy_to_mapping / gdr_copy_from_mapping.
 *
 * The kernel (instruction set) is chosen once per process from cpuid/xgetbv, or forced with
 * GDRCOPY_COPY_KERNEL=<name>. These functions do no argument checking and no logging: the
 * core has validated the handle, the mapping type and the range.
 */
#ifndef VRAMIO_COPY_H
#define VRAMIO_COPY_H

#include <stddef.h>
#include "gdrapi.h"

/* Host -> mapping. Ends with the fence the mapping type needs (sfence for WC). Returns 0:
 * gdr_copy_to_mapping ends with "return vr_copy_to_mapping(...)", a tail call, so a small
 * copy pays for one call level less (each one showed in the H200's per-copy time). */
int vr_copy_to_mapping(gdr_mapping_type_t type, void *dst, const void *src, size_t n);

/* Mapping -> host. No trailing store fence (nothing was stored to the mapping). Returns 0. */
int vr_copy_from_mapping(gdr_mapping_type_t type, void *dst, const void *src, size_t n);

/* A full fence (mfence, dmb sy, sync): every earlier load and store of this thread, to any
 * mapping type, is ordered before every later one. For copies while mappings of more than one
 * type are live (src/handles.h, vr_mappings_mixed). */
void vr_copy_full_fence(void);

/* Name of the kernel in use ("avx512", "avx2", "sse41", "movdir64b", "neon", "c"). */
const char *vr_copy_kernel_name(void);

#endif /* VRAMIO_COPY_H */

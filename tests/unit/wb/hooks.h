/* SPDX-License-Identifier: MIT */
/*
 * hooks.h - test hooks on the library's internals, for the white-box tests and the dispatch
 * benchmark only: they are built from tests/unit/wb/hooks.c into those programs, never into
 * the shipped library.
 */
#ifndef VRAMIO_WB_HOOKS_H
#define VRAMIO_WB_HOOKS_H

#include <stddef.h>

struct vr_icache;

/* Register a mapping of ordinary memory as a pin (no gdr_t, no backend) and take it away. */
int vr_handles_test_insert(void *base, size_t len, int type, unsigned long *token);
int vr_handles_test_remove(unsigned long token);

/* Number of entries in the vulkan backend's import table. */
size_t vr_icache_count(struct vr_icache *c);

#endif /* VRAMIO_WB_HOOKS_H */

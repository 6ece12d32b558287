/* SPDX-License-Identifier: MIT */
/*
 * copy_table.h - the copy engine's kernel table, for a program linked with the copy objects
 * (the copy tests through copy_test.h, bench/copy_bench.c). The engine's constructor hands
 * the table to its choice before main; the link wraps that one call
 * (-Wl,--wrap=vr_copy_choose_from), which records the table here and offers the program's
 * own kernels first, by name like the engine's: copy_table_extra(name), which each includer
 * defines (NULL: none of that name).
 */
#ifndef VRAMIO_COPY_TABLE_H
#define VRAMIO_COPY_TABLE_H

#include <stddef.h>

#include "copy_kernels.h"

static const struct vr_copy_kernel *copy_table_extra(const char *name);

static const struct vr_copy_kernel *copy_table;
static size_t copy_table_len;

const struct vr_copy_kernel *__real_vr_copy_choose_from(const struct vr_copy_kernel *ks,
                                                        size_t count, unsigned features,
                                                        const char *forced);
const struct vr_copy_kernel *__wrap_vr_copy_choose_from(const struct vr_copy_kernel *ks,
                                                        size_t count, unsigned features,
                                                        const char *forced);

const struct vr_copy_kernel *__wrap_vr_copy_choose_from(const struct vr_copy_kernel *ks,
                                                        size_t count, unsigned features,
                                                        const char *forced)
{
    const struct vr_copy_kernel *extra = forced ? copy_table_extra(forced) : NULL;

    copy_table = ks;
    copy_table_len = count;
    return extra ? extra : __real_vr_copy_choose_from(ks, count, features, forced);
}

#endif /* VRAMIO_COPY_TABLE_H */

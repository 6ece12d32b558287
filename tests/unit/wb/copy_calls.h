/* SPDX-License-Identifier: MIT */
/*
 * copy_calls.h - the four copy entry points as one type, (handle, destination, source, bytes),
 * for the white-box fence tests (wb_copy_fences.c, wb_copy_insns.c): reads first, then writes.
 */
#ifndef VRAMIO_WB_COPY_CALLS_H
#define VRAMIO_WB_COPY_CALLS_H

#include <stddef.h>
#include "gdrapi.h"
#include "vramio.h"

typedef int (*copy_call)(gdr_mh_t, void *, const void *, size_t);

static int read_lib(gdr_mh_t mh, void *dst, const void *src, size_t n)
{
    return gdr_copy_from_mapping(mh, dst, src, n);
}

static int read_auto(gdr_mh_t mh, void *dst, const void *src, size_t n)
{
    return vramio_copy_from_mapping_auto(mh, dst, src, n);
}

static int write_lib(gdr_mh_t mh, void *dst, const void *src, size_t n)
{
    return gdr_copy_to_mapping(mh, dst, src, n);
}

static int write_auto(gdr_mh_t mh, void *dst, const void *src, size_t n)
{
    return vramio_copy_to_mapping_auto(mh, dst, src, n);
}

static const struct {
    const char *name;
    copy_call fn;
    int to_map;
} entries[] __attribute__((unused)) = {
    { "gdr_copy_from_mapping", read_lib, 0 },
    { "from_mapping_auto", read_auto, 0 },
    { "gdr_copy_to_mapping", write_lib, 1 },
    { "to_mapping_auto", write_auto, 1 },
};
#define N_ENTRIES (sizeof(entries) / sizeof(entries[0]))

#endif /* VRAMIO_WB_COPY_CALLS_H */

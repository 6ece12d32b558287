/* SPDX-License-Identifier: MIT */
/*
 * ucx_attrs.h - the four pointer attributes that UCX's CUDA memory domain asks of an address
 * in one call (its memory-type check, cuda_copy_md.c at 9466d10), for the test programs that
 * check what UCX will make of an address (tests/bridge/bridge_client.c, ipc_client.c,
 * tests/gpu/bridge/driver_probe.c). Device memory that is managed, or has no CONTEXT, UCX
 * takes for stream-ordered or virtual memory ("cuda-managed"): its gdr_copy does not serve
 * it, and every message is staged through host memory. A field the driver does not write
 * keeps a value no check accepts: type 0 (no memory type), managed ~0, ctx NULL.
 */
#ifndef VRAMIO_TESTS_LIB_UCX_ATTRS_H
#define VRAMIO_TESTS_LIB_UCX_ATTRS_H

#include <cuda.h>

struct ucx_attrs {
    CUresult result;            /* cuPointerGetAttributes' */
    unsigned int type, managed;
    int ordinal;
    CUcontext ctx;
};

static inline struct ucx_attrs ucx_attrs_of(CUdeviceptr p)
{
    CUpointer_attribute which[4] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                     CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                     CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                     CU_POINTER_ATTRIBUTE_CONTEXT };
    struct ucx_attrs a = { CUDA_ERROR_UNKNOWN, 0, ~0u, -1, NULL };
    void *data[4] = { &a.type, &a.managed, &a.ordinal, &a.ctx };

    a.result = cuPointerGetAttributes(4, which, data, p);
    return a;
}

#endif

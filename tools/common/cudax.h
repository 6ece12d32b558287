/* SPDX-License-Identifier: MIT */
/*
 * cudax.h - the few CUDA driver entry points the tools need beyond the library's loader
 * table (src/cuda_loader.h): kernel launch for pplat and pointer attributes. Looked up with
 * dlsym in the same libcuda.so.1, so the library's shared loader stays as it is.
 */
#ifndef TOOLS_CUDAX_H
#define TOOLS_CUDAX_H

#include <stddef.h>
#include <cuda.h>

#define CUDAX_FUNCS(X)          \
    X(cuModuleLoadData)         \
    X(cuModuleUnload)           \
    X(cuModuleGetFunction)      \
    X(cuLaunchKernel)           \
    X(cuStreamQuery)            \
    X(cuStreamSynchronize)      \
    X(cuPointerSetAttribute)

struct cudax {
#define CUDAX_MEMBER(fn) __typeof__(&fn) fn;
    CUDAX_FUNCS(CUDAX_MEMBER)
#undef CUDAX_MEMBER
};

/* NULL (with the reason in why) when libcuda.so.1 or one of the symbols is missing. */
const struct cudax *cudax_load(char *why, size_t len);

#endif /* TOOLS_CUDAX_H */

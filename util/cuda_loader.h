/* SPDX-License-Identifier: MIT */
/*
 * cuda_loader.h - the CUDA driver API, loaded at run time with dlopen("libcuda.so.1").
 *
 * The library must load on machines without a GPU, so it never links libcuda. The entry
 * points are those of VR_CUDA_FUNCS (cuda_api.h), each looked up by its exported symbol
 * (cuMemAlloc is cuMemAlloc_v2), so callers write cu->cuMemAlloc(...) with the usual
 * prototypes. One list serves the library and the tools; loading is thread-safe.
 * Add an entry to VR_CUDA_FUNCS to use another function; a symbol missing from an old
 * driver leaves its pointer NULL, and vr_cuda_require() reports it.
 */
#ifndef VRAMIO_CUDA_LOADER_H
#define VRAMIO_CUDA_LOADER_H

#include <stddef.h>
#include "cuda_api.h"

struct vr_cuda {
#define VR_CUDA_MEMBER(name, symbol, params) CUresult (*name) params;
    VR_CUDA_FUNCS(VR_CUDA_MEMBER)
#undef VR_CUDA_MEMBER
};

/* dlopen of the CUDA driver: libcuda.so.1, or the real driver behind vramio-run's shim of it
 * (bridge/shim.c). NULL when it cannot be loaded (dlerror says why). In a process that
 * vramio-run started (VR_RUN_MARK set to its directory) whose libcuda.so.1 is not the shim
 * (the directory removed since, the driver loaded by full path or DT_RPATH, a set-user-ID
 * program), it says so on stderr once: the driver, not vramio's pool, serves that process. */
void *vr_cuda_dlopen(void);
#define VR_RUN_MARK "VRAMIO_RUN_SHIM"

/* Which driver vr_cuda_load gives: the library (which leaves this undefined) gets the real
 * driver behind vramio-run's shim, so that the pool and pins see real allocation ranges; a
 * program that defines it as 1 (the tools) gets what every program gets from
 * dlopen("libcuda.so.1"), the shim's replacements included. Hidden: settled at link time. */
extern const int vr_cuda_program_view __attribute__((weak, visibility("hidden")));

/* Load libcuda.so.1 once per process (thread-safe). NULL when it cannot be loaded; then why
 * (if non-NULL) receives the reason. Does not call cuInit. */
const struct vr_cuda *vr_cuda_load(char *why, size_t len);

/* Load and cuInit(0) once per process. 0, or a positive errno with the reason in why. */
int vr_cuda_init(const struct vr_cuda **cu, char *why, size_t len);

/* 0 when the loaded driver has fn, else ENOSYS with "the CUDA driver lacks fn" in why: for
 * entry points newer than cuInit (an old driver leaves them NULL). */
#define vr_cuda_require(cu, fn, why, len) ((cu)->fn ? 0 : vr_cuda_missing(#fn, (why), (len)))
int vr_cuda_missing(const char *name, char *why, size_t len);

/* "CUDA_ERROR_X: text" for a CUresult, from the loaded driver when possible. */
const char *vr_cuda_errstr(CUresult rc);

/* A positive errno for a CUresult (0 for CUDA_SUCCESS). */
int vr_cuda_errno(CUresult rc);

#endif /* VRAMIO_CUDA_LOADER_H */

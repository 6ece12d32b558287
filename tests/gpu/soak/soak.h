/* SPDX-License-Identifier: MIT */
/*
 * soak.h - what the files of the GPU soak share (soak.c says what the soak does): the CUDA
 * driver entry points it calls (loaded with dlopen, so that it builds without a CUDA toolkit
 * and runs under vramio-run or against the stand-in drivers), its settings, and what each
 * worker process counts and reports.
 */
#ifndef VRAMIO_SOAK_H
#define VRAMIO_SOAK_H

#include <cuda.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "vramio.h"

/* ---- soak_cuda.c: the driver, as the program (not the library) sees it -------------------- */
struct soak_cuda {
    CUresult (*init)(unsigned);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*set)(CUcontext);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free)(CUdeviceptr);
    CUresult (*memset8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*htod)(CUdeviceptr, const void *, size_t);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t);
    CUresult (*sync)(void);
    CUresult (*meminfo)(size_t *, size_t *);        /* NULL: the stand-in has none */
    CUresult (*ipc_get)(CUipcMemHandle *, CUdeviceptr);
    CUresult (*ipc_open)(CUdeviceptr *, CUipcMemHandle, unsigned int);
    CUresult (*ipc_close)(CUdeviceptr);
};
extern struct soak_cuda cu;
/* Load the driver (libcuda.so.1, the shim under vramio-run), cuInit, make device 0's primary
 * context current in this thread: 0, or -1 with the reason printed. */
int soak_cuda_start(void);
/* Make device 0's primary context current in this thread. */
void soak_cuda_thread(void);

/* ---- settings ----------------------------------------------------------------------------- */
struct soak_cfg {
    double seconds;         /* of the mixed load */
    int procs, threads;     /* worker processes, threads in each */
    size_t max_size;        /* largest allocation */
    int limits;             /* run the limits part (soak_limits.c) after the load */
};

/* ---- what a worker process counts (soak_ops.c, soak_proc.c) ------------------------------ */
enum soak_op { OP_ALLOC, OP_FREE, OP_READ, OP_WRITE, OP_AUTO, OP_GPU_WRITE, OP_POOL, OP_FORK,
               OP_LONG_PIN, OP_IPC, OP_HOLDER, SOAK_NOPS };
extern const char *const soak_op_names[SOAK_NOPS];

struct soak_stats {
    unsigned long ops[SOAK_NOPS];
    unsigned long reads_checked;     /* CPU reads of GPU memory checked against what it held */
    unsigned long bytes_checked;
    unsigned long errors;            /* anything that should not have happened */
    unsigned long refusals;          /* the expected refusals (a forked child's calls) */
    unsigned long fork_exit, fork_quick_exit;
    int fds0, fds1, maps0, maps1;    /* descriptors, GPU mappings: after warm-up, at the end */
    struct vramio_pool_stats pool;   /* at the end, after vramio_pool_trim */
    char first_error[256];
};

/* A worker thread's place: its stats (merged at the end), its random state, its gdr_t. */
struct soak_thread {
    struct soak_stats st;
    unsigned seed;
    int proc, index;
    gdr_t g;
};

/* Record an error (the first one's words kept). */
void soak_error(struct soak_stats *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
double soak_now(void);
/* Mappings of the GPU driver's devices (or the stand-ins' memory) in this process. */
int soak_count_gpu_maps(void);

/* soak_ops.c: one operation of the mix, and the giving back of a thread's buffers. */
void soak_op(struct soak_thread *t, int allow_fork);
void soak_thread_end(struct soak_thread *t);

/* soak_proc.c: a worker process (returns its exit status), and a holder of pins that is
 * killed with SIGKILL (run as "soak --holder", by exec). */
int soak_worker(const struct soak_cfg *cfg, int index, int ipc_fd, int report_fd);
int soak_holder(void);
/* Start a holder, wait until it holds its pins, kill it with SIGKILL: 0, or -1 with why. */
int soak_kill_holder(char *why, size_t len);

/* soak_limits.c: the limits part; prints its own result lines. */
void soak_limits(void);

/* soak.c: nvidia-smi -q -d MEMORY, in MiB: 0, or -1 where it cannot be run. */
struct soak_smi { long fb_total, fb_used, bar1_total, bar1_used; };
int soak_smi(struct soak_smi *s);

#endif /* VRAMIO_SOAK_H */

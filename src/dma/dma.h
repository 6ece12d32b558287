/* SPDX-License-Identifier: MIT */
/*
 * dma.h - what the files of the copy engine's directory share. Calls run one way, in the
 * order an _auto copy takes them: the entry points (copy_dma.c) call the way of a copy
 * (dma_device.c: the pin's device, its crossover) and then its move (dma_transfer.c: the
 * engine or the BAR, then the fence); the device state calls the calibration
 * (dma_calibrate.c) the first time; the calibration calls the transfers' engine copies; the
 * transfers call neither.
 */
#ifndef VRAMIO_DMA_H
#define VRAMIO_DMA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda_loader.h"
#include "core/pins.h"

#define DMA_MAX_DEVICES 64
#define BOUNCE_BYTES    (2u << 20)    /* per bounce buffer; two per device */

enum { DIR_READ = 0, DIR_WRITE = 1 };

struct dma_dev {
    int state;                    /* 0: not set up; 1: ready; else the errno that stops it */
    CUcontext ctx;                /* the primary context, retained for the process */
    CUstream stream;
    pthread_mutex_t bounce_lock;  /* the bounce buffers and their events */
    unsigned char *bounce[2];
    CUevent done[2];
    CUdeviceptr scratch;          /* the measurement's, kept where it cannot be freed by
                                   * stream order (dma_calibrate.c, scratch_alloc); else 0 */
    _Atomic size_t crossover[2];  /* by direction, pinned host memory; 0 until set or measured */
    _Atomic size_t pageable_x[2]; /* pageable host memory (the bounce buffers' memcpy too);
                                   * stored before crossover[], valid once that is not 0 */
};

/* ---- dma_device.c: the devices, set up once each, and the way of one copy --------------- */

/* CUDA with everything this directory calls, or NULL (then the BAR for good). */
const struct vr_cuda *vr_dma_cuda(void);

/* The device state serving handle's pin, from the pin's remembered finding or a lookup;
 * NULL: copy through the BAR. */
struct dma_dev *vr_dma_dev_of_pin(const struct vr_cuda *cu, gdr_mh_t handle,
                                  const struct vr_dma_range *r);

/* The way of one _auto copy: the device of its pin (NULL: the BAR), and how many of its first
 * bytes the crossover's measurement moved, when this copy measured it (a write's first bytes:
 * vr_dma_calibrate). */
struct vr_dma_way {
    const struct vr_cuda *cu;
    struct dma_dev *d;
    size_t done;
};
void vr_dma_way(int dir, gdr_mh_t handle, const struct vr_dma_range *r, unsigned char *map,
                unsigned char *host, size_t n, struct vr_dma_way *w);

/* ---- dma_transfer.c: copies through the engine --------------------------------------- */

/* Whether [p, p+n) is page-locked CUDA host memory (the answer for the last range kept per
 * thread). */
int vr_dma_host_pinned(const struct vr_cuda *cu, const void *p, size_t n);

/* One asynchronous copy of n bytes on d's stream, in direction dir. */
CUresult vr_dma_engine(const struct vr_cuda *cu, struct dma_dev *d, int dir, uint64_t dev,
                       void *host, size_t n);

/* The same from or to pageable host memory, through d's two bounce buffers (their lock
 * held by the caller); not waited for. */
CUresult vr_dma_bounced(const struct vr_cuda *cu, struct dma_dev *d, int dir, uint64_t dev,
                        unsigned char *host, size_t n);

/* What is left of an _auto copy after its way (w->done bytes moved): by the copy engine from
 * the device's crossover up (the pageable one for pageable host memory), else by the BAR
 * (copy/copy.h); then the full fence while mappings of several types are live (r->mixed).
 * nocancel: the caller's cancellation state (vr_nocancel_begin), restored after the engine's
 * part, so that the BAR's copy and the fences are the call's last acts. 0, or the errno
 * recorded for fn. */
int vr_dma_move(const struct vr_dma_way *w, int dir, const struct vr_dma_range *r,
                unsigned char *map, unsigned char *host, size_t n, int nocancel, const char *fn);

/* ---- dma_calibrate.c: the crossover, set or measured once per device and direction ---- */

/* The smallest crossover of any device, per direction (0 while none is known; writes start at
 * VR_DMA_BAR_WRITE_MIN): a copy below it goes straight to the BAR copy, without the handle's
 * lock or a question to the driver, so that an _auto copy costs what a gdr_ copy costs
 * wherever the BAR is the better way. */
extern _Atomic size_t vr_dma_min_crossover[2];

/* A crossover of some device is now x: lowers vr_dma_min_crossover[dir] to it. */
void vr_dma_note_crossover(int dir, size_t x);

/* VRAMIO_DMA_CROSSOVER_READ / _WRITE as read at load (0: not set): every device's start. */
size_t vr_dma_env_crossover(int dir);

/* The crossovers of d in direction dir, measuring them now if nobody has, on the caller's
 * copy (r, map, host, n). Returns how many bytes of that copy are done (a write's first
 * bytes; 0 for a read, or when nothing was measured). */
size_t vr_dma_calibrate(const struct vr_cuda *cu, struct dma_dev *d, int dir,
                        const struct vr_dma_range *r, unsigned char *map, unsigned char *host,
                        size_t n);

#endif /* VRAMIO_DMA_H */

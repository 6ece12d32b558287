/* SPDX-License-Identifier: MIT */
/*
 * dma_calibrate.c - the crossover of the _auto copies: the size from which the copy engine is
 * the faster way, per device and direction. VRAMIO_DMA_CROSSOVER_READ / _WRITE when set
 * (dma_policy.h; read here, once, at load), else measured once, by the first _auto read of at
 * least VR_DMA_FLOOR bytes and the first _auto write of at least VR_DMA_BAR_WRITE_MIN, in one
 * to two milliseconds. Also the smallest crossover of any device, by which the entry points
 * send a copy below it straight to the BAR.
 *
 * The rules of the measurement (docs/auto-copies.md has the figures behind them):
 *  - both ways are timed warm, a few times per size, the median kept (vr_dma_curve);
 *  - the copy engine on a scratch allocation of its own at each size from 4 KiB to 1 MiB
 *    where a crossover may lie: its cost is no straight line in the size, so it is timed
 *    there, never extrapolated from two far-apart sizes;
 *  - the BAR, whose cost is a straight line, at two sizes on the pin's own mapping: a read
 *    reads up to 16 KiB of it from the caller's range on, again and again (a read has no
 *    side effect); a write times its own first bytes in chunks of up to 64 and 256 KiB, each
 *    chunk written twice with the same bytes and the second write timed, the cost of a
 *    repeated copy;
 *  - the BAR is timed again after the copy engine, the same sizes the same way, and per size
 *    the faster of the two passes kept: a slow moment only adds time, and one that lasts a
 *    whole pass (BAR writes at half their rate for the first milliseconds of a process were
 *    seen on the H200) would otherwise put the crossover far from its place;
 *  - the crossover is where the engine's curve goes below the BAR's for good;
 *  - writes below VR_DMA_BAR_WRITE_MIN always take the BAR and measure nothing: on PCIe a
 *    copy-engine write does not win that small.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/fence.h"
#include "clock.h"       /* util/: vr_now_ns */
#include "copy/copy.h"
#include "dma.h"
#include "dma_policy.h"
#include "process/fork.h"
#include "process/log.h"

#define CAL_ROUNDS 5              /* the copy engine's median of */

/* One measurement at a time in the process (it uses a device's bounce buffers and scratch). */
static pthread_mutex_t measure_lock = PTHREAD_MUTEX_INITIALIZER;

/* A forked child: measure_lock fresh, for the devices the child sets up itself (those of the
 * parent, one of which a thread of the parent may have been measuring at the fork, copy
 * through the BAR there: dma_device.c). Not taken by every fork (fork.h), which would then
 * wait for a whole measurement. */
static void measure_fork_child(void)
{
    pthread_mutex_init(&measure_lock, NULL);
}

/* At load, not at the first use (fork.h). */
__attribute__((constructor)) static void measure_fork_register(void)
{
    vr_fork_on_child(measure_fork_child);
}

_Atomic size_t vr_dma_min_crossover[2] = { 0, VR_DMA_BAR_WRITE_MIN };

/* VRAMIO_DMA_CROSSOVER_READ / _WRITE, read once when the library is loaded (0: not set). */
static size_t env_x[2];

void vr_dma_note_crossover(int dir, size_t x)
{
    size_t cur = atomic_load(&vr_dma_min_crossover[dir]);

    while ((cur == 0 || x < cur) &&
           !atomic_compare_exchange_weak(&vr_dma_min_crossover[dir], &cur, x))
        ;
}

size_t vr_dma_env_crossover(int dir)
{
    return env_x[dir];
}

static void env_crossover(int dir, const char *name)
{
    const char *v = getenv(name);
    size_t x;

    if (!v)
        return;
    if (vr_dma_parse_crossover(v, &x)) {
        vr_warn("%s=%s: not a size (bytes, K, M, G or 'never'); measuring instead", name, v);
        return;
    }
    env_x[dir] = x;
    if (dir == DIR_WRITE)       /* the setting replaces the write floor as well */
        atomic_store(&vr_dma_min_crossover[dir], x);
    else
        vr_dma_note_crossover(dir, x);
}

__attribute__((constructor)) static void dma_env(void)
{
    env_crossover(DIR_READ, "VRAMIO_DMA_CROSSOVER_READ");
    env_crossover(DIR_WRITE, "VRAMIO_DMA_CROSSOVER_WRITE");
}

/*
 * The engine's scratch allocation, stream-ordered on the device's private stream: cuMemFree
 * waits for every kernel of the device, and the first _auto copy of a program whose kernel
 * polls a flag that the same thread is about to write (what GDRCopy is used for) would wait
 * for that kernel, and the kernel for it. Without the stream-ordered allocator (drivers
 * before CUDA 11.2, devices without memory pools) the allocation is made once per device
 * and kept (struct dma_dev, scratch). Both under measure_lock.
 */
static void scratch_free(const struct vr_cuda *cu, struct dma_dev *d, CUdeviceptr p)
{
    if (p != d->scratch && cu->cuMemFreeAsync(p, d->stream) == CUDA_SUCCESS)
        cu->cuStreamSynchronize(d->stream);
}

static CUresult scratch_alloc(const struct vr_cuda *cu, struct dma_dev *d, CUdeviceptr *p)
{
    if (cu->cuMemAllocAsync && cu->cuMemFreeAsync &&
        cu->cuMemAllocAsync(p, VR_DMA_ENGINE_LARGEST, d->stream) == CUDA_SUCCESS) {
        if (cu->cuStreamSynchronize(d->stream) == CUDA_SUCCESS)
            return CUDA_SUCCESS;
        scratch_free(cu, d, *p);
    }
    /* No stream-ordered allocator here (or no memory pool on this device). */
    if (!d->scratch && cu->cuMemAlloc(&d->scratch, VR_DMA_ENGINE_LARGEST) != CUDA_SUCCESS)
        d->scratch = 0;
    *p = d->scratch;
    return d->scratch ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* The copy engine's curves in one direction, eng[0] from pinned host memory (the bounce
 * buffer), eng[1] from pageable memory (through the bounce buffers, as vr_dma_move does it:
 * the memcpy is part of the cost). Each size of vr_dma_engine_sizes copied between a scratch
 * allocation and the host memory once to warm up (the first copies pay one-time costs), then
 * CAL_ROUNDS times, the sizes and kinds in turn in each round (so that a slow moment falls on
 * all of them alike), each copy waited for as vr_dma_move waits for it. In d's context; 0, or
 * EIO (ENOMEM). */
static int measure_engine(const struct vr_cuda *cu, struct dma_dev *d, int dir,
                          struct vr_dma_curve eng[2])
{
    struct vr_dma_sample s[2][CAL_ROUNDS * VR_DMA_ENGINE_POINTS];
    unsigned char *pageable = malloc(VR_DMA_ENGINE_LARGEST);
    CUdeviceptr scratch = 0;
    CUcontext popped;
    size_t k = 0;
    int rc = EIO;

    if (!pageable)
        return ENOMEM;
    memset(pageable, 0x5a, VR_DMA_ENGINE_LARGEST);     /* its pages present, as a caller's are */
    if (cu->cuCtxPushCurrent(d->ctx) != CUDA_SUCCESS) {
        free(pageable);
        return EIO;
    }
    if (scratch_alloc(cu, d, &scratch) == CUDA_SUCCESS) {
        pthread_mutex_lock(&d->bounce_lock);
        for (int round = -1; round < CAL_ROUNDS; round++) {
            for (int i = 0; i < VR_DMA_ENGINE_POINTS; i++) {
                for (int pg = 0; pg < 2; pg++) {
                    size_t n = vr_dma_engine_sizes[i];
                    double t0 = (double)vr_now_ns();
                    CUresult r = pg ? vr_dma_bounced(cu, d, dir, scratch, pageable, n)
                                    : vr_dma_engine(cu, d, dir, scratch, d->bounce[0], n);

                    if (cu->cuStreamSynchronize(d->stream) != CUDA_SUCCESS || r != CUDA_SUCCESS)
                        goto out;
                    if (round >= 0)
                        s[pg][k] = (struct vr_dma_sample){ n, (double)vr_now_ns() - t0 };
                }
                k += round >= 0;
            }
        }
        rc = vr_dma_curve(s[0], k, &eng[0]) || vr_dma_curve(s[1], k, &eng[1]) ? EIO : 0;
out:
        pthread_mutex_unlock(&d->bounce_lock);
        scratch_free(cu, d, scratch);
    }
    cu->cuCtxPopCurrent(&popped);
    free(pageable);
    return rc;
}

/*
 * A timestamp taken only after every earlier load and store has completed: the clock read
 * (rdtsc in the vDSO) does not wait for them, so a plain one taken right after slow uncached
 * loads or the untimed first write of a chunk (bar_write_curve) is taken early, and the copy
 * timed from it is charged with that earlier work; the one that ends a timed copy could
 * likewise be read before the copy's last stores have left.
 */
static double fenced_now_ns(void)
{
    vr_full_fence_wait();
    return (double)vr_now_ns();
}

/*
 * The BAR's side: a warm-up whose time is dropped (the first copy through a mapping pays
 * one-time costs), then a small and a large size in turn, three times each; per size the
 * median (vr_dma_curve). A BAR copy's time is a straight line in its size (posted writes at
 * the link's rate, reads one uncached round trip per few lines), so two sizes make its curve.
 */
#define CAL_RD_SMALL 1024u
#define CAL_RD_LARGE 16384u       /* or less: what is mapped from the caller's address on */
#define CAL_SAMPLES  7
static const unsigned char cal_plan[CAL_SAMPLES] = { 1, 0, 1, 0, 1, 0, 1 };   /* 1: large */

/* Reads of the mapping at map (avail bytes mapped from there, at least VR_DMA_FLOOR) into
 * scratch host memory of our own, since the plan may exceed the caller's copy; a read has no
 * side effect, so it may read the same bytes again. 0, ENOMEM, or EIO. */
static int bar_read_curve(gdr_mapping_type_t type, const unsigned char *map, size_t avail,
                          struct vr_dma_sample *s, struct vr_dma_curve *curve)
{
    size_t large = avail < CAL_RD_LARGE ? avail : CAL_RD_LARGE;
    unsigned char *tmp = malloc(large);
    double t0;

    if (!tmp)
        return ENOMEM;
    for (int i = 0; i < CAL_SAMPLES; i++) {
        s[i].n = cal_plan[i] ? large : CAL_RD_SMALL;
        t0 = fenced_now_ns();
        vr_copy_from_mapping(type, tmp, map, s[i].n);
        s[i].ns = fenced_now_ns() - t0;
    }
    free(tmp);
    return vr_dma_curve(s + 1, CAL_SAMPLES - 1, curve) ? EIO : 0;
}

/*
 * The caller's first 16 units (vr_dma_bar_write_unit of its size n) written through the BAR
 * by the plan (unit, then 4 units and unit in turn), each chunk written twice and the second
 * write timed, with the fence the copy ends with: the same bytes to the same place, so memory
 * ends as if written once. The first write pays what a repeated copy does not: the driver's
 * on-demand mapping of each page, the TLB, the caller's source lines coming from DRAM; touching
 * every page beforehand (a read or a store per page) does not take that cost away, and a
 * curve of first writes puts the crossover far below its place (docs/auto-copies.md). So the
 * repeated write is the one timed. Returns how many bytes are written; 0, or EIO, in *rc.
 */
static size_t bar_write_curve(gdr_mapping_type_t type, unsigned char *map,
                              const unsigned char *host, size_t n, struct vr_dma_sample *s,
                              struct vr_dma_curve *curve, int *rc)
{
    size_t unit = vr_dma_bar_write_unit(n), off = 0;
    double t0;

    for (int i = 0; i < CAL_SAMPLES; i++) {
        s[i].n = i && cal_plan[i] ? 4 * unit : unit;
        vr_copy_to_mapping(type, map + off, host + off, s[i].n);
        t0 = fenced_now_ns();
        vr_copy_to_mapping(type, map + off, host + off, s[i].n);
        s[i].ns = fenced_now_ns() - t0;
        off += s[i].n;
    }
    *rc = vr_dma_curve(s + 1, CAL_SAMPLES - 1, curve) ? EIO : 0;
    return off;
}

/* A crossover for the log: its bytes, or "never". */
static const char *x_str(size_t x, char buf[32])
{
    if (x == VR_DMA_NEVER)
        return "never";
    snprintf(buf, 32, "%zu bytes", x);
    return buf;
}

/* "n:ns n:ns ..." of a curve, into buf. */
static const char *curve_str(const struct vr_dma_curve *c, char *buf, size_t len)
{
    size_t at = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < c->count && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%zu:%.0f", i ? " " : "", c->p[i].n,
                               c->p[i].ns);
    return buf;
}

/* See dma.h; a write's bytes done are its first 16 units (bar_write_curve). */
size_t vr_dma_calibrate(const struct vr_cuda *cu, struct dma_dev *d, int dir,
                        const struct vr_dma_range *r, unsigned char *map, unsigned char *host,
                        size_t n)
{
    struct vr_dma_sample s[CAL_SAMPLES] = { { 0, 0 } }, s2[CAL_SAMPLES] = { { 0, 0 } };
    struct vr_dma_curve bar = { 0 }, again = { 0 }, eng[2] = { { 0 }, { 0 } };
    char bs[3][160] = { "", "", "" }, es[2][240], xs[2][32];
    size_t done = 0, x = VR_DMA_NEVER, xp = VR_DMA_NEVER;
    int rc = 0;

    if (dir == DIR_WRITE && n < VR_DMA_BAR_WRITE_MIN)
        return 0;               /* the BAR for this one; a larger write measures */
    pthread_mutex_lock(&measure_lock);
    if (atomic_load(&d->crossover[dir])) {
        pthread_mutex_unlock(&measure_lock);
        return 0;
    }
    if (dir == DIR_READ)
        rc = bar_read_curve(r->type, map, r->avail, s, &bar);
    else
        done = bar_write_curve(r->type, map, host, n, s, &bar, &rc);
    if (!rc && !measure_engine(cu, d, dir, eng)) {
        if (dir == DIR_READ)
            rc = bar_read_curve(r->type, map, r->avail, s2, &again);
        else
            bar_write_curve(r->type, map, host, n, s2, &again, &rc);  /* the same chunks */
        curve_str(&bar, bs[1], sizeof(bs[1]));
        curve_str(&again, bs[2], sizeof(bs[2]));
        if (!rc)
            vr_dma_curve_lower(&bar, &again);
        x = vr_dma_crossover(&bar, &eng[0]);
        xp = vr_dma_crossover(&bar, &eng[1]);
        if (xp < x)             /* the memcpy cannot make it cheaper: noise */
            xp = x;
    }
    atomic_store(&d->pageable_x[dir], xp);
    atomic_store(&d->crossover[dir], x);
    vr_dma_note_crossover(dir, x);
    pthread_mutex_unlock(&measure_lock);
    vr_info("copy engine %s crossover: %s from pinned memory, %s from pageable (median "
            "ns by size: BAR %s (first pass %s, second %s), warm-up %zu:%.0f; engine pinned %s; "
            "pageable %s)", dir == DIR_WRITE ? "write" : "read", x_str(x, xs[0]),
            x_str(xp, xs[1]), curve_str(&bar, bs[0], sizeof(bs[0])), bs[1], bs[2], s[0].n,
            s[0].ns, curve_str(&eng[0], es[0], sizeof(es[0])),
            curve_str(&eng[1], es[1], sizeof(es[1])));
    return done;
}

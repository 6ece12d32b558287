/* SPDX-License-Identifier: MIT */
/*
 * copy_dma.c - vramio_copy_to_mapping_auto / vramio_copy_from_mapping_auto: the contract of
 * gdr_copy_*_mapping (synchronous, the same checks and errors), but from a crossover size up
 * the bytes move with the GPU's copy engine instead of the CPU through the BAR. A BAR read
 * is an uncached round trip per line (about 1 GB/s); the copy engine reaches tens of GB/s
 * after a fixed cost of several microseconds, so past some size it wins by far.
 *
 * How a copy-engine copy runs, and why:
 *  - on a private CU_STREAM_NON_BLOCKING stream of the pin's device, never the legacy default
 *    stream: it neither waits for the program's kernels nor makes them wait (a kernel spinning
 *    on a flag that this very copy will set would otherwise deadlock);
 *  - in the device's primary context, pushed for the call and popped after it, so the calling
 *    thread's current context (or its lack of one) is as it was;
 *  - from or to the caller's buffer directly when it is page-locked CUDA host memory, else
 *    through two pinned bounce buffers, the CPU filling (or draining) one while the engine
 *    moves the other;
 *  - waited for before returning (cuStreamSynchronize / cuEventSynchronize).
 * Memory that belongs to a CUDA context other than its device's primary one is copied through
 * the BAR (the primary context may not reach it); so is everything when CUDA cannot be used.
 *
 * The crossover is per device and direction: VRAMIO_DMA_CROSSOVER_READ / _WRITE when set
 * (dma_policy.h), else measured once, by the first _auto read of at least VR_DMA_FLOOR bytes
 * and the first _auto write of at least VR_DMA_BAR_WRITE_MIN. Both ways are timed warm, a few
 * times per size, the median kept: the copy engine on a scratch allocation of its own at each
 * size from 4 KiB to 1 MiB where a crossover may lie (its cost is no straight line in the
 * size, so it is timed there, not extrapolated from two far-apart sizes); the BAR, whose cost
 * is a straight line, at two sizes on the pin's own mapping (a read reads up to 16 KiB of it
 * from the caller's range on, again and again: a read has no side effect; a write times its
 * own first bytes in chunks of up to 64 and 256 KiB, each chunk written twice with the same
 * bytes and the second write timed, the cost of a repeated copy).
 * The crossover is where the engine's curve goes below the BAR's for good. One to two
 * milliseconds per direction. Writes below VR_DMA_BAR_WRITE_MIN always take the BAR: on PCIe
 * a copy-engine write has never won that small (the H200's crossover is about 256 KiB).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch/fence.h"
#include "core.h"
#include "copy/copy.h"
#include "cuda_loader.h"
#include "dma_policy.h"
#include "vramio.h"

#define DMA_MAX_DEVICES 64
#define BOUNCE_BYTES    (2u << 20)    /* per bounce buffer; two per device */
#define CAL_ROUNDS      5             /* the copy engine's median of */

enum { DIR_READ = 0, DIR_WRITE = 1 };

struct dma_dev {
    int state;                    /* 0: not set up; 1: ready; else the errno that stops it */
    CUcontext ctx;                /* the primary context, retained for the process */
    CUstream stream;
    pthread_mutex_t bounce_lock;  /* the bounce buffers and their events */
    unsigned char *bounce[2];
    CUevent done[2];
    _Atomic size_t crossover[2];  /* by direction, pinned host memory; 0 until set or measured */
    _Atomic size_t pageable_x[2]; /* pageable host memory (the bounce buffers' memcpy too);
                                   * stored before crossover[], valid once that is not 0 */
};

static struct dma_dev devs[DMA_MAX_DEVICES];
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;   /* setup and calibration */

/* The smallest crossover of any device, per direction (0 while none is known; writes start at
 * VR_DMA_BAR_WRITE_MIN, see above): a copy below it goes straight to the BAR copy, without the
 * handle's lock or a question to the driver, so that an _auto copy costs what a gdr_ copy costs
 * wherever the BAR is the better way. */
static _Atomic size_t min_crossover[2] = { 0, VR_DMA_BAR_WRITE_MIN };

/* VRAMIO_DMA_CROSSOVER_READ / _WRITE, read once when the library is loaded (0: not set). */
static size_t env_x[2];

static void note_crossover(int dir, size_t x)
{
    size_t cur = atomic_load(&min_crossover[dir]);

    while ((cur == 0 || x < cur) && !atomic_compare_exchange_weak(&min_crossover[dir], &cur, x))
        ;
}

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cu_fail(CUresult r, const char *fn, const char *what)
{
    int err = vr_cuda_errno(r);

    return vr_fail_err(err ? err : EIO, "%s: %s failed: %s", fn, what, vr_cuda_errstr(r));
}

/* ---- per-device setup ---------------------------------------------------------------- */

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
        atomic_store(&min_crossover[dir], x);
    else
        note_crossover(dir, x);
}

__attribute__((constructor)) static void dma_env(void)
{
    env_crossover(DIR_READ, "VRAMIO_DMA_CROSSOVER_READ");
    env_crossover(DIR_WRITE, "VRAMIO_DMA_CROSSOVER_WRITE");
}

/* Under setup_lock, with d->ctx current. */
static int dev_setup_in_ctx(const struct vr_cuda *cu, struct dma_dev *d)
{
    CUresult r;
    int i;

    r = cu->cuStreamCreate(&d->stream, CU_STREAM_NON_BLOCKING);
    for (i = 0; i < 2 && r == CUDA_SUCCESS; i++) {
        void *p = NULL;

        r = cu->cuMemAllocHost(&p, BOUNCE_BYTES);
        d->bounce[i] = p;
        if (r == CUDA_SUCCESS)
            r = cu->cuEventCreate(&d->done[i], CU_EVENT_DISABLE_TIMING);
    }
    if (r != CUDA_SUCCESS)
        vr_warn("copy engine: setup failed (%s); the _auto copies use the BAR",
                vr_cuda_errstr(r));
    return r == CUDA_SUCCESS ? 0 : EIO;
}

static int dev_setup(const struct vr_cuda *cu, int ord, struct dma_dev *d)
{
    CUdevice dev;
    CUcontext popped;
    CUresult r = cu->cuDeviceGet(&dev, ord);
    int rc, i;

    if (r == CUDA_SUCCESS)
        r = cu->cuDevicePrimaryCtxRetain(&d->ctx, dev);
    if (r != CUDA_SUCCESS || cu->cuCtxPushCurrent(d->ctx) != CUDA_SUCCESS) {
        vr_warn("copy engine: no primary context on CUDA device %d (%s); using the BAR", ord,
                vr_cuda_errstr(r));
        return ENODEV;
    }
    rc = dev_setup_in_ctx(cu, d);
    cu->cuCtxPopCurrent(&popped);
    if (rc)
        return rc;
    pthread_mutex_init(&d->bounce_lock, NULL);
    for (i = 0; i < 2; i++) {
        atomic_store(&d->pageable_x[i], env_x[i]);
        atomic_store(&d->crossover[i], env_x[i]);
    }
    return 0;
}

/* The loaded driver has every entry point this file calls. */
static int have_entry_points(const struct vr_cuda *cu)
{
    return cu->cuPointerGetAttribute && cu->cuDeviceGet && cu->cuDevicePrimaryCtxRetain &&
           cu->cuCtxPushCurrent && cu->cuCtxPopCurrent && cu->cuStreamCreate &&
           cu->cuStreamSynchronize && cu->cuMemcpyHtoDAsync && cu->cuMemcpyDtoHAsync &&
           cu->cuEventCreate && cu->cuEventRecord && cu->cuEventSynchronize &&
           cu->cuMemAllocHost && cu->cuMemAlloc && cu->cuMemFree;
}

/* Device ord set up (once per process), or NULL when the copy engine cannot be used there. */
static struct dma_dev *dev_ready(const struct vr_cuda *cu, int ord)
{
    struct dma_dev *d;

    if (ord < 0 || ord >= DMA_MAX_DEVICES)
        return NULL;
    d = &devs[ord];
    if (!__atomic_load_n(&d->state, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&setup_lock);
        if (!d->state)
            __atomic_store_n(&d->state, dev_setup(cu, ord, d) ? -1 : 1, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&setup_lock);
    }
    return __atomic_load_n(&d->state, __ATOMIC_ACQUIRE) == 1 ? d : NULL;
}

/* The ready state of the device that holds dev_addr, or NULL: copy through the BAR. Asks the
 * driver (two or three queries), so auto_copy does it once per pin and remembers the answer. */
static struct dma_dev *dev_for(const struct vr_cuda *cu, uint64_t dev_addr)
{
    struct dma_dev *d, *any;
    CUcontext owner = NULL, popped;
    CUresult r;
    int ord = -1, pushed = 0;

    r = cu->cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dev_addr);
    if (r == CUDA_ERROR_INVALID_CONTEXT && (any = dev_ready(cu, 0))) {
        /* A driver that answers only with a context current: any primary one will do. */
        pushed = cu->cuCtxPushCurrent(any->ctx) == CUDA_SUCCESS;
        r = cu->cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dev_addr);
    }
    if (r == CUDA_SUCCESS &&
        cu->cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, dev_addr) != CUDA_SUCCESS)
        owner = NULL;       /* VMM memory has no owning context: any on its device reaches it */
    if (pushed)
        cu->cuCtxPopCurrent(&popped);
    d = r == CUDA_SUCCESS ? dev_ready(cu, ord) : NULL;
    /* Memory of another context than the device's primary one may be out of its reach. */
    if (!d || (owner && owner != d->ctx))
        return NULL;
    return d;
}

/* CUDA with everything this file calls, or NULL (then the BAR for good). */
static const struct vr_cuda *cuda(void)
{
    const struct vr_cuda *cu;
    char why[VR_REASON_LEN];

    if (vr_cuda_init(&cu, why, sizeof(why)) || !have_entry_points(cu)) {
        note_crossover(DIR_READ, VR_DMA_NEVER);
        note_crossover(DIR_WRITE, VR_DMA_NEVER);
        return NULL;
    }
    return cu;
}

/* The device state serving handle's pin, from the pin's remembered finding or a lookup. */
static struct dma_dev *dev_of_pin(const struct vr_cuda *cu, gdr_mh_t handle,
                                  const struct vr_dma_range *r)
{
    struct dma_dev *d;

    if (r->dma_dev == VR_DMA_DEV_NONE)
        return NULL;
    if (r->dma_dev >= 0)
        return dev_ready(cu, r->dma_dev);
    d = dev_for(cu, r->dev_addr);
    vr_pin_set_dma_dev(handle, d ? (int)(d - devs) : VR_DMA_DEV_NONE);
    return d;
}

/* ---- the copies ------------------------------------------------------------------------ */

static int pinned_at(const struct vr_cuda *cu, const void *p)
{
    unsigned mt = 0, flags = 0;

    if (cu->cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                  (CUdeviceptr)(uintptr_t)p) == CUDA_SUCCESS)
        return mt == CU_MEMORYTYPE_HOST;
    return cu->cuMemHostGetFlags && cu->cuMemHostGetFlags(&flags, (void *)p) == CUDA_SUCCESS;
}

/*
 * Whether [p, p+n) is page-locked CUDA host memory (checked at both ends). The answer for the
 * last range is kept per thread: programs copy from the same buffers again and again, and
 * the two driver queries cost about as much as a small copy-engine transfer's setup. A stale
 * answer is harmless: pageable memory handed to the async copy is still copied correctly (the
 * driver stages it), and pinned memory taken for pageable only goes through the bounce buffers.
 */
static int host_pinned(const struct vr_cuda *cu, const void *p, size_t n)
{
    static __thread const void *last_p;
    static __thread size_t last_n;
    static __thread int last;

    if (p != last_p || n != last_n) {
        last = pinned_at(cu, p) && pinned_at(cu, (const unsigned char *)p + n - 1);
        last_p = p;
        last_n = n;
    }
    return last;
}

static CUresult engine(const struct vr_cuda *cu, struct dma_dev *d, int dir, uint64_t dev,
                       void *host, size_t n)
{
    return dir == DIR_WRITE ? cu->cuMemcpyHtoDAsync((CUdeviceptr)dev, host, n, d->stream)
                            : cu->cuMemcpyDtoHAsync(host, (CUdeviceptr)dev, n, d->stream);
}

/* Pageable host memory: chunks through the two bounce buffers. Writes fill one buffer while
 * the engine sends the other; reads drain one while the engine fills the other. */
static CUresult bounced(const struct vr_cuda *cu, struct dma_dev *d, int dir, uint64_t dev,
                        unsigned char *host, size_t n)
{
    size_t nchunks = (n + BOUNCE_BYTES - 1) / BOUNCE_BYTES, i;
    CUresult r = CUDA_SUCCESS;

#define CHUNK_OFF(i) ((i) * (size_t)BOUNCE_BYTES)
#define CHUNK_LEN(i) (n - CHUNK_OFF(i) < BOUNCE_BYTES ? n - CHUNK_OFF(i) : BOUNCE_BYTES)
    if (dir == DIR_WRITE) {
        for (i = 0; i < nchunks && r == CUDA_SUCCESS; i++) {
            unsigned char *b = d->bounce[i & 1];

            if (i >= 2)
                r = cu->cuEventSynchronize(d->done[i & 1]);
            if (r != CUDA_SUCCESS)
                break;
            memcpy(b, host + CHUNK_OFF(i), CHUNK_LEN(i));
            r = engine(cu, d, dir, dev + CHUNK_OFF(i), b, CHUNK_LEN(i));
            if (r == CUDA_SUCCESS)
                r = cu->cuEventRecord(d->done[i & 1], d->stream);
        }
        return r;
    }
    for (i = 0; i < 2 && i < nchunks && r == CUDA_SUCCESS; i++) {
        r = engine(cu, d, dir, dev + CHUNK_OFF(i), d->bounce[i], CHUNK_LEN(i));
        if (r == CUDA_SUCCESS)
            r = cu->cuEventRecord(d->done[i], d->stream);
    }
    for (i = 0; i < nchunks && r == CUDA_SUCCESS; i++) {
        unsigned char *b = d->bounce[i & 1];

        r = cu->cuEventSynchronize(d->done[i & 1]);
        if (r != CUDA_SUCCESS)
            break;
        memcpy(host + CHUNK_OFF(i), b, CHUNK_LEN(i));
        if (i + 2 < nchunks) {
            r = engine(cu, d, dir, dev + CHUNK_OFF(i + 2), b, CHUNK_LEN(i + 2));
            if (r == CUDA_SUCCESS)
                r = cu->cuEventRecord(d->done[i & 1], d->stream);
        }
    }
    return r;
#undef CHUNK_LEN
#undef CHUNK_OFF
}

/* One synchronous copy-engine copy, in d's context (pushed unless it is current already). */
static int dma_copy(const struct vr_cuda *cu, struct dma_dev *d, int dir, uint64_t dev,
                    void *host, size_t n, const char *fn)
{
    CUcontext popped, cur = NULL;
    CUresult r = CUDA_SUCCESS, r2;
    const char *what = dir == DIR_WRITE ? "cuMemcpyHtoDAsync" : "cuMemcpyDtoHAsync";
    int bounce, push = cu->cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != d->ctx;

    if (push && (r = cu->cuCtxPushCurrent(d->ctx)) != CUDA_SUCCESS)
        return cu_fail(r, fn, "cuCtxPushCurrent");
    bounce = !host_pinned(cu, host, n);
    if (bounce) {
        pthread_mutex_lock(&d->bounce_lock);
        r = bounced(cu, d, dir, dev, host, n);
    } else {
        r = engine(cu, d, dir, dev, host, n);
    }
    /* Even after a failure: nothing of this copy may still be running when we return. */
    r2 = cu->cuStreamSynchronize(d->stream);
    if (bounce)
        pthread_mutex_unlock(&d->bounce_lock);
    if (r == CUDA_SUCCESS && r2 != CUDA_SUCCESS) {
        r = r2;
        what = "cuStreamSynchronize";
    }
    if (push)
        cu->cuCtxPopCurrent(&popped);
    return r == CUDA_SUCCESS ? 0 : cu_fail(r, fn, what);
}

/* ---- calibration ----------------------------------------------------------------------- */

/* The copy engine's curves in one direction, eng[0] from pinned host memory (the bounce
 * buffer), eng[1] from pageable memory (through the bounce buffers, as dma_copy does it:
 * the memcpy is part of the cost). Each size of vr_dma_engine_sizes copied between a scratch
 * allocation and the host memory once to warm up (the first copies pay one-time costs), then
 * CAL_ROUNDS times, the sizes and kinds in turn in each round (so that a slow moment falls on
 * all of them alike), each copy waited for as dma_copy waits for it. In d's context; 0, or
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
    if (cu->cuMemAlloc(&scratch, VR_DMA_ENGINE_LARGEST) == CUDA_SUCCESS) {
        pthread_mutex_lock(&d->bounce_lock);
        for (int round = -1; round < CAL_ROUNDS; round++) {
            for (int i = 0; i < VR_DMA_ENGINE_POINTS; i++) {
                for (int pg = 0; pg < 2; pg++) {
                    size_t n = vr_dma_engine_sizes[i];
                    double t0 = now_ns();
                    CUresult r = pg ? bounced(cu, d, dir, scratch, pageable, n)
                                    : engine(cu, d, dir, scratch, d->bounce[0], n);

                    if (cu->cuStreamSynchronize(d->stream) != CUDA_SUCCESS || r != CUDA_SUCCESS)
                        goto out;
                    if (round >= 0)
                        s[pg][k] = (struct vr_dma_sample){ n, now_ns() - t0 };
                }
                k += round >= 0;
            }
        }
        rc = vr_dma_curve(s[0], k, &eng[0]) || vr_dma_curve(s[1], k, &eng[1]) ? EIO : 0;
out:
        pthread_mutex_unlock(&d->bounce_lock);
        cu->cuMemFree(scratch);
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
    return now_ns();
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
 * on-demand mapping of each page, the TLB, the caller's source lines coming from DRAM. On the
 * H200 a read per page beforehand still left 64 KiB at 14.2 us, a store per page 5.4 us, while
 * the copy repeated takes 3.3 us; the crossover came out at 50 and 138 KB instead of the
 * 250 KB where cuMemcpy meets the BAR. Returns how many bytes are written; 0, or EIO, in *rc.
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

/*
 * The crossovers of d in direction dir, measuring them now if nobody has (see the top of the
 * file). Returns how many bytes of the caller's copy are done (a write's first 16 units; 0
 * for a read, or when nothing was measured).
 */
static size_t calibrate(const struct vr_cuda *cu, struct dma_dev *d, int dir,
                        const struct vr_dma_range *r, unsigned char *map, unsigned char *host,
                        size_t n)
{
    struct vr_dma_sample s[CAL_SAMPLES] = { { 0, 0 } };
    struct vr_dma_curve bar = { 0 }, eng[2] = { { 0 }, { 0 } };
    char bs[160], es[2][240], xs[2][32];
    size_t done = 0, x = VR_DMA_NEVER, xp = VR_DMA_NEVER;
    int rc = 0;

    if (dir == DIR_WRITE && n < VR_DMA_BAR_WRITE_MIN)
        return 0;               /* the BAR for this one; a larger write measures */
    pthread_mutex_lock(&setup_lock);
    if (atomic_load(&d->crossover[dir])) {
        pthread_mutex_unlock(&setup_lock);
        return 0;
    }
    if (dir == DIR_READ)
        rc = bar_read_curve(r->type, map, r->avail, s, &bar);
    else
        done = bar_write_curve(r->type, map, host, n, s, &bar, &rc);
    if (!rc && !measure_engine(cu, d, dir, eng)) {
        x = vr_dma_crossover(&bar, &eng[0]);
        xp = vr_dma_crossover(&bar, &eng[1]);
        if (xp < x)             /* the memcpy cannot make it cheaper: noise */
            xp = x;
    }
    atomic_store(&d->pageable_x[dir], xp);
    atomic_store(&d->crossover[dir], x);
    note_crossover(dir, x);
    pthread_mutex_unlock(&setup_lock);
    vr_info("copy engine %s crossover: %s from pinned memory, %s from pageable (median "
            "ns by size: BAR %s, warm-up %zu:%.0f; engine pinned %s; pageable %s)",
            dir == DIR_WRITE ? "write" : "read", x_str(x, xs[0]), x_str(xp, xs[1]),
            curve_str(&bar, bs, sizeof(bs)), s[0].n,
            s[0].ns, curve_str(&eng[0], es[0], sizeof(es[0])),
            curve_str(&eng[1], es[1], sizeof(es[1])));
    return done;
}

/* ---- the entry points ------------------------------------------------------------------ */

static int auto_copy(int dir, gdr_mh_t handle, unsigned char *map, unsigned char *host,
                     size_t n, const char *fn)
{
    const struct vr_cuda *cu;
    struct vr_dma_range r;
    struct dma_dev *d = NULL;
    size_t done = 0, x;
    int rc = vr_pin_dma_range(handle, map, n, host, &r, fn);

    if (rc)
        return rc;
    if ((cu = cuda()))
        d = dev_of_pin(cu, handle, &r);
    if (d) {
        x = atomic_load(&d->crossover[dir]);
        if (!x) {
            done = calibrate(cu, d, dir, &r, map, host, n);
            x = atomic_load(&d->crossover[dir]);
        }
        /* Pageable memory crosses later (dma_copy asks the same, remembered, question). */
        if (x && n - done >= x && !host_pinned(cu, host + done, n - done))
            x = atomic_load(&d->pageable_x[dir]);
        if (x && n - done >= x)
            return dma_copy(cu, d, dir, r.dev_addr + done, host + done, n - done, fn);
    }
    if (n > done) {
        if (dir == DIR_WRITE)
            vr_copy_to_mapping(r.type, map + done, host + done, n - done);
        else
            vr_copy_from_mapping(r.type, host + done, map + done, n - done);
    }
    return 0;
}

VR_EXPORT int vramio_copy_to_mapping_auto(gdr_mh_t handle, void *map_d_ptr, const void *h_ptr,
                                          size_t size)
{
    size_t x = atomic_load_explicit(&min_crossover[DIR_WRITE], memory_order_relaxed);

    if (size < VR_DMA_FLOOR || size < x)
        return vr_gdr_copy_to_mapping(handle, map_d_ptr, h_ptr, size);
    return auto_copy(DIR_WRITE, handle, map_d_ptr, (unsigned char *)(uintptr_t)h_ptr, size,
                     "vramio_copy_to_mapping_auto");
}

VR_EXPORT int vramio_copy_from_mapping_auto(gdr_mh_t handle, void *h_ptr, const void *map_d_ptr,
                                            size_t size)
{
    size_t x = atomic_load_explicit(&min_crossover[DIR_READ], memory_order_relaxed);

    if (size < VR_DMA_FLOOR || size < x)
        return vr_gdr_copy_from_mapping(handle, h_ptr, map_d_ptr, size);
    return auto_copy(DIR_READ, handle, (unsigned char *)(uintptr_t)map_d_ptr, h_ptr, size,
                     "vramio_copy_from_mapping_auto");
}

VR_EXPORT int vramio_copy_auto_crossover(gdr_mh_t handle, size_t *read_bytes,
                                         size_t *write_bytes)
{
    const struct vr_cuda *cu;
    struct vr_dma_range r;
    struct dma_dev *d = NULL;
    struct vr_mapping m;
    int rc;

    if (!read_bytes || !write_bytes)
        return vr_fail(EINVAL, "vramio_copy_auto_crossover: NULL output");
    *read_bytes = *write_bytes = 0;
    if (vr_pin_mapping(handle.h, &m) || !m.len)
        return vr_fail(EINVAL, "vramio_copy_auto_crossover: %#lx is not a mapped pin", handle.h);
    rc = vr_pin_dma_range(handle, (const void *)m.base, 1, read_bytes, &r,
                          "vramio_copy_auto_crossover");
    if (rc)
        return rc;
    if ((cu = cuda()))
        d = dev_of_pin(cu, handle, &r);
    if (!d) {
        *read_bytes = *write_bytes = VR_DMA_NEVER;
        return 0;
    }
    *read_bytes = atomic_load(&d->crossover[DIR_READ]);
    *write_bytes = atomic_load(&d->crossover[DIR_WRITE]);
    return 0;
}

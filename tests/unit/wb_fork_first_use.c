/* SPDX-License-Identifier: MIT */
/*
 * wb_fork_first_use.c - white-box test: a thread's first use of a part of the library while
 * another thread forks. Each lock of the library must be free in the child, whatever the
 * moment of the fork, and glibc runs in a fork's child only the fork handlers registered
 * before that fork began (src/process/fork.c): a part that registered its handlers at its
 * first use could do so during the fork, and the child would keep the lock of the thread.
 *
 * One process per scenario and way out (a first use happens once per process); in each, the
 * fork's prepare phase (t_fork_arm, before the library's handlers) starts the thread's first
 * use and waits until the thread is held where it matters, or done; the child then
 * opens, pins, maps, copies, unmaps, unpins and closes with fake backends (as wb_core's),
 * and leaves by exit() or by _exit(); a child that has not ended after CHILD_WAIT_S hung:
 *   open      the thread's first gdr_open, held with the gdr_t table's lock (in the table's
 *             first chunk, its posix_memalign);
 *   pin       its first gdr_open and pin, held with the pin table's lock;
 *   inherit   its first gdr_open and pin, done during the fork: the child must refuse that
 *             gdr_t as its parent's (EACCES), and run no backend op on it;
 *   ctx       its first borrowed CUDA context (process/cuda_ctx.c, a fake driver table),
 *             held between two registrations with fork.c if it makes them then (it did,
 *             under pthread_once): the child must be able to fork again;
 *   dma_setup its first _auto query, held in the copy engine's device setup (cuStreamCreate
 *             of a fake driver) with the setup lock: the child's own query must answer;
 *   dma_measure  its first _auto copy, held in the crossover's measurement (cuMemAlloc) on
 *             device 0: the child's _auto copy on device 1 must end, and device 0, which the
 *             parent set up, is not the child's to use (the BAR, VR_DMA_NEVER).
 * The thread is held by this program's __wrap_ of the call (WB_WRAP in tests/tests.mk) for at
 * most HOLD_S: a fork that waits for its lock (as it must) goes on after that.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "t.h"
#include "core/core.h"
#include "process/cuda_ctx.h"

#define PAGE         65536UL
#define A_BASE       (1UL << 40)
#define RANGE        (1UL << 32)
#define DEV1_BASE    (A_BASE + RANGE / 2)   /* the fake driver's device 1 from here on */
#define PIN_LEN      (8 * PAGE)
#define BIG_COPY     (4 * PAGE)             /* above every floor of the _auto copies */
#define CHILD_WAIT_S 10
#define HOLD_S       2

/*
 * Under TSan: in a forked child, the library's child hooks make the locks fresh that threads of
 * the parent last touched before the fork; TSan does not take a fork as ordering those threads'
 * earlier accesses before the child's, and would report each as a race. Only the child hooks
 * (all named *fork_child) are excused; the parent's side of every fork is checked.
 */
#ifdef __SANITIZE_THREAD__
const char *__tsan_default_suppressions(void)
{
    return "race:fork_child\n";
}
#endif
/* Under ASan: what the thread held only on its stack at the fork (its gdr_t half made, a
 * buffer of the measurement) is unreachable in the child, and LeakSanitizer at the child's
 * exit() would call it lost. Only what that thread allocated is excused. */
#ifdef __SANITIZE_ADDRESS__
const char *__lsan_default_suppressions(void)
{
    return "leak:first_use\n";
}
#endif

/* ---- fake backends: A serves every address, B and C are unusable ----------------------- */
static _Atomic int backend_ops;

static int probe_ok(char *why, size_t len) { snprintf(why, len, "fake"); return 0; }
static int probe_no(char *why, size_t len) { snprintf(why, len, "not here"); return ENODEV; }
static int fake_open(void **ctx, char *why, size_t len) { *ctx = NULL; return 0; }
static void fake_close(void *ctx) { }

static int fake_pin(void *ctx, const struct vr_pin_req *req, void **pin,
                    struct vr_pin_info *info, char *why, size_t len)
{
    backend_ops++;
    *info = (struct vr_pin_info){ .va = req->va, .mapped_size = req->len, .page_size = PAGE };
    *pin = malloc(1);
    return *pin ? 0 : ENOMEM;
}

static int fake_unpin(void *ctx, void *pin)
{
    backend_ops++;
    free(pin);
    return 0;
}

static int fake_map(void *ctx, void *pin, size_t size, gdr_mapping_type_t want, void **ptr,
                    gdr_mapping_type_t *granted, char *why, size_t len)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    backend_ops++;
    if (p == MAP_FAILED)
        return ENOMEM;
    *ptr = p;
    *granted = GDR_MAPPING_TYPE_WC;
    return 0;
}

static int fake_unmap(void *ctx, void *pin, void *ptr, size_t size)
{
    backend_ops++;
    return munmap(ptr, size) ? errno : 0;
}

#define FAKE(ID, NAME, PROBE) { .id = ID, .name = NAME, .probe = PROBE, .open = fake_open, \
    .close = fake_close, .pin = fake_pin, .unpin = fake_unpin, .map = fake_map, \
    .unmap = fake_unmap }
static const struct vr_backend_ops fake_a = FAKE(VRAMIO_BACKEND_GDRDRV, "fakeA", probe_ok);
static const struct vr_backend_ops fake_b = FAKE(VRAMIO_BACKEND_DMABUF, "fakeB", probe_no);
static const struct vr_backend_ops fake_c = FAKE(VRAMIO_BACKEND_VULKAN, "fakeC", probe_no);

/* gdr_open, with the fakes as the backend table. */
static gdr_t fake_gdr_open(void)
{
    static const struct vr_backend_ops *const table[VRAMIO_BACKEND_COUNT] = {
        [VRAMIO_BACKEND_GDRDRV] = &fake_a, [VRAMIO_BACKEND_DMABUF] = &fake_b,
        [VRAMIO_BACKEND_VULKAN] = &fake_c,
    };
    struct vr_gdr *gdr;

    return vr_instance_open(table, &gdr) ? NULL : (gdr_t)(uintptr_t)gdr->token;
}

/* ---- holding a thread ------------------------------------------------------------------- */
static sem_t go, reached, released;
/* Where this thread's next call waits (each hold once). */
enum hold_at { HOLD_NONE, HOLD_CHUNK, HOLD_CHILD_FN, HOLD_STREAM, HOLD_DEV_ALLOC };
static __thread enum hold_at hold_at;
static _Atomic int held;

/* The thread is where it is held: say so, and wait until the fork is done (at most HOLD_S:
 * a fork that waits for a lock this thread holds goes on then). */
static void hold_here(enum hold_at at)
{
    if (hold_at != at)
        return;
    hold_at = HOLD_NONE;
    held = 1;
    sem_post(&reached);
    t_sem_wait(&released, HOLD_S);
}

/* The handle tables' chunks (handles.c, add_chunk, under the table's lock) are the only
 * allocations of the library aligned to its slot type. */
int __real_posix_memalign(void **p, size_t align, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
    if (align == _Alignof(struct vr_slot))
        hold_here(HOLD_CHUNK);
    return __real_posix_memalign(p, align, n);
}

/* A registration made by a first use, between that use's others (cuda_ctx.c's once). */
int __real_vr_fork_on_child(void (*fn)(void));
int __wrap_vr_fork_on_child(void (*fn)(void))
{
    hold_here(HOLD_CHILD_FN);
    return __real_vr_fork_on_child(fn);
}

/* ---- a fake CUDA driver: two devices, below DEV1_BASE device 0 -------------------------- */
static CUresult f_device_get(CUdevice *d, int ord) { *d = ord; return CUDA_SUCCESS; }
static CUresult f_count(int *n) { *n = 2; return CUDA_SUCCESS; }
static CUresult f_retain(CUcontext *c, CUdevice d)
{
    *c = (CUcontext)(uintptr_t)(0x1000 + d);
    return CUDA_SUCCESS;
}
static CUresult f_release(CUdevice d) { return CUDA_SUCCESS; }
static CUresult f_get_current(CUcontext *c) { *c = NULL; return CUDA_SUCCESS; }
static CUresult f_get_device(CUdevice *d) { *d = 0; return CUDA_SUCCESS; }
static CUresult f_push(CUcontext c) { return CUDA_SUCCESS; }
static CUresult f_pop(CUcontext *c) { *c = NULL; return CUDA_SUCCESS; }
static CUresult f_ptr_attr(void *data, CUpointer_attribute a, CUdeviceptr p)
{
    if (a != CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL || p < A_BASE || p >= A_BASE + RANGE)
        return CUDA_ERROR_INVALID_VALUE;   /* no owning context; host memory is pageable */
    *(int *)data = p >= DEV1_BASE;
    return CUDA_SUCCESS;
}
static CUresult f_stream_create(CUstream *s, unsigned flags)
{
    hold_here(HOLD_STREAM);
    *s = (CUstream)(uintptr_t)0x5000;
    return CUDA_SUCCESS;
}
static CUresult f_stream_sync(CUstream s) { return CUDA_SUCCESS; }
static CUresult f_event_create(CUevent *e, unsigned flags)
{
    *e = (CUevent)(uintptr_t)0x6000;
    return CUDA_SUCCESS;
}
static CUresult f_event_record(CUevent e, CUstream s) { return CUDA_SUCCESS; }
static CUresult f_event_sync(CUevent e) { return CUDA_SUCCESS; }
static CUresult f_alloc_host(void **p, size_t n)
{
    *p = malloc(n);
    return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult f_alloc(CUdeviceptr *p, size_t n)
{
    hold_here(HOLD_DEV_ALLOC);
    *p = (CUdeviceptr)(A_BASE + RANGE - (64UL << 20)); /* no one touches it */
    return CUDA_SUCCESS;
}
static CUresult f_free(CUdeviceptr p) { return CUDA_SUCCESS; }
/* The engine's copies move nothing: only that they end matters here. */
static CUresult f_htod(CUdeviceptr d, const void *h, size_t n, CUstream s) { return CUDA_SUCCESS; }
static CUresult f_dtoh(void *h, CUdeviceptr d, size_t n, CUstream s) { return CUDA_SUCCESS; }

static const struct vr_cuda fake_cu = {
    .cuDeviceGet = f_device_get, .cuDeviceGetCount = f_count,
    .cuDevicePrimaryCtxRetain = f_retain, .cuDevicePrimaryCtxRelease = f_release,
    .cuCtxGetCurrent = f_get_current, .cuCtxGetDevice = f_get_device,
    .cuCtxPushCurrent = f_push, .cuCtxPopCurrent = f_pop, .cuPointerGetAttribute = f_ptr_attr,
    .cuStreamCreate = f_stream_create, .cuStreamSynchronize = f_stream_sync,
    .cuEventCreate = f_event_create, .cuEventRecord = f_event_record,
    .cuEventSynchronize = f_event_sync, .cuMemAllocHost = f_alloc_host, .cuMemAlloc = f_alloc,
    .cuMemFree = f_free, .cuMemcpyHtoDAsync = f_htod, .cuMemcpyDtoHAsync = f_dtoh,
};

/* The copy engine's CUDA (dma_device.c asks here): the fake driver. */
int __wrap_vr_cuda_init(const struct vr_cuda **cu, char *why, size_t len)
{
    if (cu)
        *cu = &fake_cu;
    return 0;
}

/* ---- what the child does ---------------------------------------------------------------- */
enum scenario { S_OPEN, S_PIN, S_INHERIT, S_CTX, S_DMA_SETUP, S_DMA_MEASURE };
static const char *const scenario_name[] = { "open", "pin", "inherit", "ctx", "dma_setup",
                                             "dma_measure" };
static enum scenario scenario;
static gdr_t first_g;         /* the thread's gdr_t and pin */
static gdr_mh_t first_mh;
static void *first_map;

/* What went wrong in a child, one bit each (its exit status, below 128). */
enum { BAD_OPEN = 1, BAD_PIN = 2, BAD_MAP = 4, BAD_COPY = 8, BAD_INHERITED = 16,
       BAD_FORK = 32, BAD_DMA = 64 };

/* The child's own instance through every call; addr: where it pins. */
static int own_instance(uint64_t addr, int dma)
{
    static unsigned char out[BIG_COPY], back[BIG_COPY];
    size_t rd = 0, wr = 0;
    gdr_mh_t mh = { 0 };
    void *map = NULL;
    int bad = 0;
    gdr_t g = fake_gdr_open();

    if (!g)
        return BAD_OPEN;
    if (gdr_pin_buffer_v2(g, addr, PIN_LEN, 0, &mh)) {
        gdr_close(g);
        return BAD_PIN;
    }
    if (gdr_map(g, mh, &map, PIN_LEN)) {
        bad |= BAD_MAP;
    } else {
        t_pattern(out, sizeof(out), 7);
        if (gdr_copy_to_mapping(mh, map, out, PAGE) || gdr_copy_from_mapping(mh, back, map, PAGE) ||
            memcmp(out, back, PAGE))
            bad |= BAD_COPY;
        if (dma && (vramio_copy_auto_crossover(mh, &rd, &wr) ||
                    vramio_copy_to_mapping_auto(mh, map, out, BIG_COPY)))
            bad |= BAD_DMA;
        if (gdr_unmap(g, mh, map, PIN_LEN))
            bad |= BAD_MAP;
    }
    if (gdr_unpin_buffer(g, mh))
        bad |= BAD_PIN;
    if (gdr_close(g))
        bad |= BAD_OPEN;
    return bad;
}

/* The thread's gdr_t, made during the fork: its parent's, refused here before any backend
 * op; its close releases nothing. */
static int refuses_inherited(void)
{
    gdr_info_v2_t info;
    gdr_mh_t mh;
    int ops = backend_ops;

    return gdr_pin_buffer_v2(first_g, A_BASE, PAGE, 0, &mh) == EACCES &&
           gdr_get_info_v2(first_g, first_mh, &info) == EACCES && gdr_close(first_g) == 0 &&
           backend_ops == ops ? 0 : BAD_INHERITED;
}

/* A fork of this child, whose own child leaves at once: its fork handlers must not hang. */
static int forks_again(void)
{
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid == 0)
        _exit(0);
    return pid > 0 && t_wait_child(pid, CHILD_WAIT_S / 2) == 0 ? 0 : BAD_FORK;
}

/* Device 0, which the parent set up: its context, stream and buffers are the parent's (CUDA
 * is not for a child forked after cuInit), so a pin of it copies through the BAR here. */
static int parents_device_unused(void)
{
    size_t rd = 0, wr = 0;
    gdr_t g = fake_gdr_open();
    void *map = NULL;
    gdr_mh_t mh;
    int bad = 0;

    if (!g || gdr_pin_buffer_v2(g, A_BASE, PIN_LEN, 0, &mh) || gdr_map(g, mh, &map, PIN_LEN))
        bad = BAD_PIN;
    else if (vramio_copy_auto_crossover(mh, &rd, &wr) || rd != SIZE_MAX || wr != SIZE_MAX)
        bad = BAD_DMA;
    if (map)
        gdr_unmap(g, mh, map, PIN_LEN);
    gdr_close(g);
    return bad;
}

static int child_work(void)
{
    struct vr_cuda_ctx_guard guard;
    char why[160];
    int bad = 0;

    alarm(CHILD_WAIT_S + 5);
    switch (scenario) {
    case S_INHERIT:
        bad |= refuses_inherited();
        break;
    case S_CTX:
        if (vr_cuda_ctx_enter(&fake_cu, 0, &guard, why, sizeof(why)) == 0)
            vr_cuda_ctx_leave(&fake_cu, &guard);
        else
            bad |= BAD_OPEN;
        bad |= forks_again();
        break;
    case S_DMA_MEASURE:
        return own_instance(DEV1_BASE, 1) | parents_device_unused();
    default:
        break;
    }
    return bad | own_instance(A_BASE, scenario == S_DMA_SETUP);
}

static const char *say_bad(int st, char *buf, size_t len)
{
    if (st == -1)
        snprintf(buf, len, "the child hung (killed after %d s)", CHILD_WAIT_S);
    else if (st >= 128)
        snprintf(buf, len, "the child died of signal %d", st - 128);
    else
        snprintf(buf, len, "the child's status %#x:%s%s%s%s%s%s%s", st,
                 st & BAD_OPEN ? " open/close" : "", st & BAD_PIN ? " pin/unpin" : "",
                 st & BAD_MAP ? " map/unmap" : "", st & BAD_COPY ? " copy" : "",
                 st & BAD_INHERITED ? " inherited" : "",
                 st & BAD_FORK ? " its_fork_hung" : "", st & BAD_DMA ? " dma" : "");
    return buf;
}

/* ---- the thread's first use ------------------------------------------------------------- */
static _Atomic int thread_bad = -1;

static void *first_use(void *arg)
{
    struct vr_cuda_ctx_guard guard;
    static unsigned char host[BIG_COPY];
    char why[160];
    size_t rd, wr;
    int bad = 0;

    if (t_sem_wait(&go, 10))
        return NULL;
    switch (scenario) {
    case S_CTX:
        hold_at = HOLD_CHILD_FN;
        if (vr_cuda_ctx_enter(&fake_cu, 0, &guard, why, sizeof(why)) == 0)
            vr_cuda_ctx_leave(&fake_cu, &guard);
        else
            bad = 1;
        break;
    case S_DMA_SETUP:
        hold_at = HOLD_STREAM;
        bad = vramio_copy_auto_crossover(first_mh, &rd, &wr) != 0;
        break;
    case S_DMA_MEASURE:
        hold_at = HOLD_DEV_ALLOC;
        bad = vramio_copy_to_mapping_auto(first_mh, first_map, host, BIG_COPY) != 0;
        break;
    default:
        /* Nothing more after the held call: a thread left allocating while the fork goes on
         * would be a hazard of TSan's allocator (not fork-safe), not of this library. */
        hold_at = scenario == S_OPEN ? HOLD_CHUNK : HOLD_NONE;
        first_g = fake_gdr_open();
        bad = !first_g;
        if (first_g && scenario != S_OPEN) {
            hold_at = scenario == S_PIN ? HOLD_CHUNK : HOLD_NONE;
            bad = gdr_pin_buffer_v2(first_g, A_BASE, PIN_LEN, 0, &first_mh) != 0;
        }
        break;
    }
    hold_at = HOLD_NONE;
    thread_bad = bad;
    if (!held)
        sem_post(&reached); /* done, never held: the fork waits no longer */
    /* The thread lives on until the fork is done (a thread that ended unjoined is a leak to
     * TSan in the child). */
    t_sem_wait(&released, HOLD_S);
    return NULL;
}

static void run_scenario(const char *mode)
{
    char name[96], why[160];
    size_t n = strcspn(mode, "-");
    int by_exit = strcmp(mode + n, "-exit") == 0, st, s;
    pthread_t th;
    pid_t pid;

    alarm(120);
    for (s = 0; s <= S_DMA_MEASURE; s++)
        if (strlen(scenario_name[s]) == n && !strncmp(mode, scenario_name[s], n))
            break;
    if (s > S_DMA_MEASURE || (!by_exit && strcmp(mode + n, "-_exit"))) {
        t_fail("wb_fork_first_use/mode", "no scenario %s", mode);
        return;
    }
    scenario = (enum scenario)s;
    sem_init(&go, 0, 0);
    sem_init(&reached, 0, 0);
    sem_init(&released, 0, 0);
    if (scenario == S_DMA_SETUP || scenario == S_DMA_MEASURE) {
        /* The pin the thread's _auto call is about, made before (not the point here). */
        first_g = fake_gdr_open();
        if (!first_g || gdr_pin_buffer_v2(first_g, A_BASE, PIN_LEN, 0, &first_mh) ||
            gdr_map(first_g, first_mh, &first_map, PIN_LEN)) {
            t_fail("wb_fork_first_use/setup", "%s", vramio_last_error());
            return;
        }
    }
    if (pthread_create(&th, NULL, first_use, NULL)) {
        t_fail("wb_fork_first_use/thread", "pthread_create failed");
        return;
    }
    t_fork_arm(&go, &reached);
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        st = child_work();
        if (by_exit)
            exit(st);
        _exit(st);
    }
    sem_post(&released);    /* the thread's hold, if it still waits there */
    sem_post(&released);    /* its end */
    st = pid < 0 ? -2 : t_wait_child(pid, CHILD_WAIT_S);
    pthread_join(th, NULL);
    snprintf(name, sizeof(name), "fork_first_use/%s/thread_in_fork", mode);
    if (!t_check(t_fork_armed_saw(), name, "the thread never reached its first use in the fork"))
        return;
    snprintf(name, sizeof(name), "fork_first_use/%s/child_unharmed", mode);
    t_check(st == 0, name, "%s", st == -2 ? "fork failed" : say_bad(st, why, sizeof(why)));
    snprintf(name, sizeof(name), "fork_first_use/%s/thread_unharmed", mode);
    t_check(thread_bad == 0, name, "its first use failed: %s", vramio_last_error());
}

int main(int argc, char **argv)
{
    const char *mode = t_child_mode(argc, argv);
    char out[8192], name[96];
    int s, way, st, sig;

    if (mode) {
        run_scenario(mode);
        return t_status();
    }
    for (s = 0; s <= S_DMA_MEASURE; s++) {
        for (way = 0; way < 2; way++) {
            snprintf(name, sizeof(name), "%s-%s", scenario_name[s], way ? "_exit" : "exit");
            sig = 0;
            st = t_run_self(name, NULL, out, sizeof(out), &sig);
            fputs(out, stdout);
            if (st != 0 && !strstr(out, "not ok "))
                t_fail(name, "status %d signal %d", st, sig);
        }
    }
    return t_status();
}

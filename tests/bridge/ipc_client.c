// SPDX-License-Identifier: MIT
/*
 * ipc_client.c - CUDA IPC of bridged memory (bridge/bridge_ipc.c), run by test_bridge.sh
 * under vramio-run against the stand-in driver (fake_cuda_vmm.c, whose device memory is
 * shared memfds, so two processes see each other's writes).
 *
 * The exporter allocates two small blocks (one slab) and a large one (a slab of its own),
 * fills them, makes IPC handles (one from an address inside a block) and runs itself again as
 * the importer, which opens them, reads each block's bytes at the address it got, writes into
 * one, opens one twice, closes each as often as it opened it, and checks that the last close
 * unmapped everything (four threads open and close one handle at once meanwhile); the
 * exporter then sees the importer's bytes in its block. A second
 * importer without vramio-run (the driver alone) must get a clean error for the same handle.
 * The importer also checks what the driver would refuse or answer: a handle of a block the
 * exporter freed before the open (another block now in its place) is refused, whether the
 * slab is mapped here yet or not; cuMemGetAddressRange of an opened block gives the block's
 * range, as the exporter sees it, and its CONTEXT the importer's; and a forged handle (a valid one with its slab's size
 * claimed larger and the offset moved, issue 38's attack) opens nothing, least of all the
 * importer's own memory: refused by the exporter here, and by the importer itself when the
 * exporter lies (a child of the importer that answers every request with memory of its own,
 * as an exporter of another user can; it is another user, nobody's uid, when root runs this).
 * An open whose exporter is behind (its listening backlog full) must wait for it through the
 * signals that the program handles (SA_RESTART), not fail at the first one.
 * A process of the exporter's user given the handle of one block (F) must not open the block
 * allocated right after it (G) with a handle it derives from F's (the identity of the next
 * allocation, G's place): block ids must not be guessable (bridge/bridge_block_id.c). And the
 * BUFFER_IDs of many allocations are all distinct and at or above 2^63.
 *
 * With "chunks" after FAKE_DIR (and VRAMIO_POOL_CHUNK_MB=4: the stand-in Vulkan offers placed
 * maps, so the pool chunks), a 9 MiB block is made of chunks (CHUNKS_EXPECTED of the
 * stand-in's allocations: 3, or 1 where chunks are off): its
 * range and pointer attributes from an address in every chunk are the block's, as for one
 * allocation; its handle, opened by the importer, reads each chunk's bytes, takes a write
 * across a chunk seam that the exporter then reads, and closes with nothing left in either
 * process; handles forged to name other chunks (the block's handle as a slab's, a slab's as
 * a block of chunks, the block's reservation claimed larger) open nothing. With "many"
 * (VRAMIO_POOL_CHUNK_MB=2), a block of as many chunks as one answer carries is opened whole,
 * and one of a chunk more gets no handle, its IS_LEGACY_CUDA_IPC_CAPABLE 0.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>
#include <cuda.h>

#include "fake_gpu.h"       /* FAKE_GPU_MEMFD_PREFIX: what the stand-in driver imports */
#include "fdpass.h"
#include "hex.h"
#include "t.h"
#include "ucx_attrs.h"
#include "vramio.h"

int fake_vmm_live(void);
int fake_imports(void);

#define SMALL 4096u
#define LARGE (3u << 20)

static int all_are(CUdeviceptr p, size_t n, unsigned char v)
{
    const unsigned char *b = (const unsigned char *)(uintptr_t)p;
    size_t i;

    for (i = 0; i < n; i++)
        if (b[i] != v)
            return 0;
    return 1;
}

/* Threads opening and closing one handle at once while the importer holds it open too. */
struct churn {
    CUipcMemHandle h;
    CUdeviceptr want;
    int bad;
};

static void *churn_thread(void *arg)
{
    struct churn *c = arg;
    CUdeviceptr p;
    int i;

    for (i = 0; i < 200; i++) {
        p = 0;
        if (cuIpcOpenMemHandle(&p, c->h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS ||
            p != c->want || cuIpcCloseMemHandle(p) != CUDA_SUCCESS)
            __atomic_add_fetch(&c->bad, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static int churn(CUipcMemHandle h, CUdeviceptr want)
{
    struct churn c = { h, want, 0 };
    pthread_t th[4];
    int i, n = 0;

    for (i = 0; i < 4; i++)
        n += pthread_create(&th[i], NULL, churn_thread, &c) == 0;
    for (i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    return n == 4 ? c.bad : -1;
}

static int handle_env(const char *name, CUipcMemHandle *h)
{
    return from_hex(getenv(name), h, sizeof(*h));
}

/* Where the bridge's handle (bridge/bridge_ipc.h, struct vb_ipc_handle) keeps the block's
 * offset in its slab and the slab's size (32 bits, in 4 KiB units): what a forger changes. */
#define H_OFFSET     40
#define H_SLAB_UNITS 60

/* h with its slab's size claimed as large as the field holds and the block moved to offset. */
static CUipcMemHandle forged(CUipcMemHandle h, uint64_t offset)
{
    memset((char *)&h + H_SLAB_UNITS, 0xff, 4);
    memcpy((char *)&h + H_OFFSET, &offset, 8);
    return h;
}

static uint64_t offset_of(const CUipcMemHandle *h)
{
    uint64_t v;

    memcpy(&v, (const char *)h + H_OFFSET, 8);
    return v;
}

/* The attack of issue 38: with hb's slab open at pb, the same handle forged to reach the
 * importer's own buffer must be refused as the driver refuses a bad handle. */
static void forged_open(CUipcMemHandle hb, CUdeviceptr pb)
{
    static char priv[64] = "IMPORTER-PRIVATE-DATA";
    CUdeviceptr va = pb - offset_of(&hb), p = 0;
    CUresult r;

    r = cuIpcOpenMemHandle(&p, forged(hb, (uint64_t)(uintptr_t)priv - va),
                           CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    t_check(r == CUDA_ERROR_INVALID_VALUE, "bridge/ipc/forged_handle_refused",
            "result %d, %s", (int)r, r != CUDA_SUCCESS ? "nothing opened" :
            p == (CUdeviceptr)(uintptr_t)priv ? "reads \"IMPORTER-PRIVATE-DATA\"" :
            "opened outside the slab");
    /* Within the size claimed, past what was mapped (the slab is 2 MiB). */
    p = 0;
    r = cuIpcOpenMemHandle(&p, forged(hb, 2u << 20), CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    t_check(r == CUDA_ERROR_INVALID_VALUE, "bridge/ipc/forged_handle_past_the_mapping_refused",
            "result %d at %#llx (the slab: %#llx + 2 MiB)", (int)r, (unsigned long long)p,
            (unsigned long long)va);
}

/* A handle of a block freed before the open must be refused as the driver refuses it. */
static void freed_refused(CUipcMemHandle h, const char *name)
{
    CUdeviceptr p = 0;
    CUresult r = cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);

    t_check(r == CUDA_ERROR_INVALID_VALUE, name, "result %d, reads %#x", (int)r,
            r == CUDA_SUCCESS ? *(unsigned char *)(uintptr_t)p : 0);
    if (r == CUDA_SUCCESS)
        cuIpcCloseMemHandle(p);
}

/* ---- a lying exporter ------------------------------------------------------------------ */
/* The bridge's handle, as bridge/bridge_ipc.h lays it out, and the request's flags
 * (bridge/bridge.h, struct vb_ipc_req: bit 0 asks for the slab's fd). */
struct vb_handle {
    uint32_t magic, pid;
    uint64_t nonce, slab_base, slab_id, block_id, offset, size;
    uint32_t uid, slab_units;
};
_Static_assert(sizeof(struct vb_handle) == sizeof(CUipcMemHandle), "a handle's 64 bytes");
#define VB_MAGIC 0x56524932u
#define REQ_FLAGS 48
#define LIAR_NONCE 0x6c6961726c696172ull

/* Another user: nobody's uid, which needs no account (Debian's nobody is 65534). */
#define OTHER_UID 65534u

/* Bind the socket name of a handle of this process (nonce LIAR_NONCE) and say yes to every
 * request, with a 2 MiB memfd of the stand-in driver's kind (filled with 0xee) when asked
 * for one; as another user when started by root (CI runs the tests as root). Its uid goes
 * to ready once it listens. Ends when killed, or after 30 s. kind: PLAIN as said; BUSY an
 * exporter whose server is behind (its backlog of one connection full, see busy_exporter): it
 * listens with no backlog, accepts nothing for BUSY_MS after ready, and drops a connection
 * that asks nothing within 300 ms; MUTE one that takes a request and never answers it (see
 * mute_exporter). */
#define BUSY_MS 1500
enum liar_kind { PLAIN, BUSY, MUTE };
static void liar(int ready, enum liar_kind kind)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    unsigned char req[128];
    int32_t status = 0;
    int s, c, mfd;
    uint32_t flags, uid;
    ssize_t n;
    void *p;

    alarm(30);
    /* Where that uid cannot be taken (a user namespace without it), as root still. */
    if (geteuid() == 0 && !setgroups(0, NULL) && !setresgid(OTHER_UID, OTHER_UID, OTHER_UID))
        setresuid(OTHER_UID, OTHER_UID, OTHER_UID);
    uid = (uint32_t)geteuid();
    n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "vramio-ipc-%u-%u-%016llx",
                 (unsigned)geteuid(), (unsigned)getpid(), LIAR_NONCE);
    mfd = memfd_create(FAKE_GPU_MEMFD_PREFIX "0", MFD_CLOEXEC);
    s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (mfd < 0 || ftruncate(mfd, 2u << 20) || s < 0 ||
        bind(s, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
                                                   (size_t)n)) || listen(s, kind == BUSY ? 0 : 8))
        _exit(2);
    p = mmap(NULL, 2u << 20, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (p == MAP_FAILED)
        _exit(2);
    memset(p, 0xee, 2u << 20);
    if (write(ready, &uid, sizeof(uid)) != (ssize_t)sizeof(uid))
        _exit(2);
    if (kind == BUSY)
        usleep(BUSY_MS * 1000);
    while ((c = accept(s, NULL, NULL)) >= 0) {
        struct pollfd pc = { .fd = c, .events = POLLIN };

        if (kind == MUTE) { /* the request taken, no answer ever */
            n = recv(c, req, sizeof(req), 0);
            for (;;)
                pause();
        }

        if (kind == BUSY && poll(&pc, 1, 300) != 1) {
            close(c);
            continue;
        }
        n = recv(c, req, sizeof(req), 0);
        memcpy(&flags, req + REQ_FLAGS, sizeof(flags));
        fdpass_send(c, &status, sizeof(status), &mfd, n > REQ_FLAGS && (flags & 1));
        close(c);
    }
    _exit(0);
}

/* Start liar(kind) in a child: 0 with its pid and uid in *pid and *uid, or -1 (a "not ok"
 * line for name said). */
static int liar_start(enum liar_kind kind, const char *name, pid_t *pid, uint32_t *uid)
{
    int fds[2], st;

    if (pipe(fds) || (*pid = fork()) < 0) {
        t_fail(name, "no pipe or fork");
        return -1;
    }
    if (*pid == 0) {
        close(fds[0]);
        liar(fds[1], kind);
    }
    close(fds[1]);
    if (read(fds[0], uid, sizeof(*uid)) != (ssize_t)sizeof(*uid)) {
        t_fail(name, "the exporter did not start");
        kill(*pid, SIGKILL);
        waitpid(*pid, &st, 0);
        close(fds[0]);
        return -1;
    }
    close(fds[0]);
    return 0;
}

/* The attack against an exporter that lies (another user's, when root runs this): a block of
 * its slab opened, then the same handle with the slab's size claimed 16 TiB and the offset
 * reaching this process's stack. */
static void lying_exporter(void)
{
    char priv[64] = "IMPORTER-PRIVATE-DATA";
    struct vb_handle h = { VB_MAGIC, 0, LIAR_NONCE, 0x40000000, 7, 9, 0, 4096, 0,
                           (2u << 20) / 4096 }, f;
    CUipcMemHandle ch;
    CUdeviceptr p = 0, pf = 0;
    CUresult r, rf = CUDA_ERROR_UNKNOWN;
    int st;
    uint32_t uid = UINT32_MAX;
    pid_t pid;

    if (liar_start(PLAIN, "bridge/ipc/lying_exporter", &pid, &uid))
        return;
    h.pid = (uint32_t)pid;
    h.uid = uid;
    if (uid != (uint32_t)geteuid())
        printf("# the lying exporter runs as uid %u\n", (unsigned)uid);
    memcpy(&ch, &h, sizeof(ch));
    r = cuIpcOpenMemHandle(&p, ch, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (t_check(r == CUDA_SUCCESS && all_are(p, 4096, 0xee), "bridge/ipc/lying_exporter_block_opens",
                "result %d", (int)r)) {
        f = h;
        f.slab_units = UINT32_MAX;
        f.offset = (uint64_t)(uintptr_t)priv - p;
        memcpy(&ch, &f, sizeof(ch));
        rf = cuIpcOpenMemHandle(&pf, ch, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
        t_check(rf == CUDA_ERROR_INVALID_VALUE, "bridge/ipc/lying_exporter_forged_handle_refused",
                "result %d, %s", (int)rf, rf != CUDA_SUCCESS ? "nothing opened" :
                pf == (CUdeviceptr)(uintptr_t)priv ? "reads \"IMPORTER-PRIVATE-DATA\"" :
                "opened elsewhere");
        t_check(cuIpcCloseMemHandle(p) == CUDA_SUCCESS &&
                (rf != CUDA_SUCCESS || cuIpcCloseMemHandle(pf) == CUDA_SUCCESS),
                "bridge/ipc/lying_exporter_closes", "a close failed: an open count leaks");
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
}

/* A signal the program handles (SA_RESTART), as a profiler's timer, a language runtime's
 * preemption or SIGCHLD bring them, sent to the opening thread every 20 ms. */
static atomic_int signals_seen, signals_stop;
static void on_signal(int sig) { (void)sig; atomic_fetch_add(&signals_seen, 1); }
static void *signaller(void *arg)
{
    pthread_t target = *(pthread_t *)arg;

    while (!atomic_load(&signals_stop)) {
        pthread_kill(target, SIGUSR1);
        usleep(20 * 1000);
    }
    return NULL;
}

/* An open while the exporter's server is behind (its listening backlog full: many peers at
 * once) and the program's signals arrive: the open waits for the exporter, as the driver's
 * open is not failed by a signal the program handles with SA_RESTART. */
static void busy_exporter(void)
{
    struct vb_handle h = { VB_MAGIC, 0, LIAR_NONCE, 0x48000000, 11, 13, 0, 4096, 0,
                           (2u << 20) / 4096 };
    struct sigaction sa, old;
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    CUipcMemHandle ch;
    CUdeviceptr p = 0;
    CUresult r = CUDA_ERROR_UNKNOWN;
    pthread_t self = pthread_self(), th;
    int st, filler = -1, n, have_th;
    uint32_t uid = UINT32_MAX;
    pid_t pid;

    if (liar_start(BUSY, "bridge/ipc/open_waits_through_signals", &pid, &uid))
        return;
    /* Another peer's connection, not accepted yet: the exporter's backlog is full. */
    n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "vramio-ipc-%u-%u-%016llx",
                 (unsigned)uid, (unsigned)pid, LIAR_NONCE);
    filler = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (filler < 0 || connect(filler, (struct sockaddr *)&a,
                              (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n))) {
        t_fail("bridge/ipc/open_waits_through_signals", "cannot fill the exporter's backlog");
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return;
    }
    h.pid = (uint32_t)pid;
    h.uid = uid;
    memcpy(&ch, &h, sizeof(ch));
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &old);
    atomic_store(&signals_seen, 0);
    atomic_store(&signals_stop, 0);
    have_th = pthread_create(&th, NULL, signaller, &self) == 0;
    r = cuIpcOpenMemHandle(&p, ch, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    atomic_store(&signals_stop, 1);
    if (have_th)
        pthread_join(th, NULL);
    sigaction(SIGUSR1, &old, NULL);
    t_check(have_th && atomic_load(&signals_seen) > 0 && r == CUDA_SUCCESS &&
            all_are(p, 4096, 0xee), "bridge/ipc/open_waits_through_signals",
            "result %d after %d signals (the exporter accepts after %d ms)", (int)r,
            atomic_load(&signals_seen), BUSY_MS);
    if (r == CUDA_SUCCESS)
        cuIpcCloseMemHandle(p);
    close(filler);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
}

/* An exporter that takes the request and never answers (another user's, when root runs
 * this: a daemon opening the handles its clients send) costs only the opens of its own
 * handles their wait (the socket's timeout, seconds): an open of another exporter's handle
 * (hb, open here already, at pb) meanwhile is served at once, not after that wait. */
struct mute_open { CUipcMemHandle h; CUresult r; };
static void *mute_open_thread(void *arg)
{
    struct mute_open *m = arg;
    CUdeviceptr p = 0;

    m->r = cuIpcOpenMemHandle(&p, m->h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    return NULL;
}

static void mute_exporter(CUipcMemHandle hb, CUdeviceptr pb)
{
    struct vb_handle h = { VB_MAGIC, 0, LIAR_NONCE, 0x50000000, 17, 19, 0, 4096, 0,
                           (2u << 20) / 4096 };
    struct mute_open m = { .r = CUDA_ERROR_UNKNOWN };
    struct timespec t0, t1;
    CUdeviceptr p = 0;
    CUresult r;
    pthread_t th;
    uint32_t uid = UINT32_MAX;
    pid_t pid;
    double ms;
    int st;

    if (liar_start(MUTE, "bridge/ipc/mute_exporter_stalls_no_other_open", &pid, &uid))
        return;
    h.pid = (uint32_t)pid;
    h.uid = uid;
    memcpy(&m.h, &h, sizeof(m.h));
    if (pthread_create(&th, NULL, mute_open_thread, &m)) {
        t_fail("bridge/ipc/mute_exporter_stalls_no_other_open", "no thread");
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return;
    }
    usleep(300 * 1000); /* the thread is waiting for the mute exporter's answer */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    r = cuIpcOpenMemHandle(&p, hb, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    t_check(r == CUDA_SUCCESS && p == pb && ms < 1000,
            "bridge/ipc/mute_exporter_stalls_no_other_open",
            "another exporter's open: result %d after %.0f ms", (int)r, ms);
    if (r == CUDA_SUCCESS)
        cuIpcCloseMemHandle(p);
    pthread_join(th, NULL);
    t_check(m.r == CUDA_ERROR_INVALID_VALUE, "bridge/ipc/mute_exporter_open_refused",
            "result %d", (int)m.r);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
}

/* cuMemGetAddressRange of an opened block (at p, and inside it): the block's own range, the
 * size the exporter's cuMemGetAddressRange gave. */
static int range_is(CUdeviceptr p, size_t want, char *why, size_t len)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult r = cuMemGetAddressRange(&base, &size, p + want / 2);

    if (r == CUDA_SUCCESS && base == p && size == want)
        return 1;
    snprintf(why, len, "result %d, %#llx + %zu for the block at %#llx + %zu", (int)r,
             (unsigned long long)base, size, (unsigned long long)p, want);
    return 0;
}

/*
 * CONTEXT of an opened block, alone and among the four attributes UCX asks at once (its
 * memory-type check, cuda_copy_md.c): the context it was opened in, as the driver answers for
 * an opened cuMemAlloc allocation. The driver's answer for the slab's mapping, NULL, made UCX
 * take the bridge's own blocks for stream-ordered memory and stage every message through host
 * memory (H100, driver 580: 155 us where gdr_copy gives 2 us).
 */
static int context_is_current(CUdeviceptr p, char *why, size_t len)
{
    CUcontext cur = NULL, one = NULL;
    struct ucx_attrs four;
    CUresult r1;

    cuCtxGetCurrent(&cur);
    r1 = cuPointerGetAttribute(&one, CU_POINTER_ATTRIBUTE_CONTEXT, p + 8);
    four = ucx_attrs_of(p);
    if (cur && r1 == CUDA_SUCCESS && one == cur && four.result == CUDA_SUCCESS &&
        four.ctx == cur && four.type == CU_MEMORYTYPE_DEVICE && !four.managed)
        return 1;
    snprintf(why, len, "current %p; alone: result %d, %p; with three others: result %d, %p "
             "(type %u, managed %u)", (void *)cur, (int)r1, (void *)one, (int)four.result,
             (void *)four.ctx, four.type, four.managed);
    return 0;
}

/* The importer, under vramio-run: the handles come in IPC_A, IPC_B, IPC_C and IPC_BAD. */
static void importer(void)
{
    CUipcMemHandle ha, hb, hc, hd, bad;
    CUdeviceptr pa = 0, pb = 0, pb2 = 0, pc = 0, pbad = 0;
    long dist = atol(getenv("IPC_DIST") ? getenv("IPC_DIST") : "0");
    size_t sa = 0, sb = 0, sc = 0;
    CUresult ra, rb, rc, r2, rbad, c1, c2, c3, ca, cc;
    char why[160];
    int bad_churn;

    alarm(45); /* the mute exporter's open waits out its timeout */
    if (handle_env("IPC_A", &ha) || handle_env("IPC_B", &hb) || handle_env("IPC_C", &hc) ||
        handle_env("IPC_D", &hd) || handle_env("IPC_BAD", &bad) || !getenv("IPC_SIZES") ||
        sscanf(getenv("IPC_SIZES"), "%zu %zu %zu", &sa, &sb, &sc) != 3) {
        t_fail("bridge/ipc/handles_passed", "no handles in the environment");
        return;
    }
    /* D's block was freed (another lies in its place) before this process started: its
     * slab is not mapped here yet. */
    freed_refused(hd, "bridge/ipc/handle_of_freed_block_refused");
    ra = cuIpcOpenMemHandle(&pa, ha, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    rb = cuIpcOpenMemHandle(&pb, hb, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    rc = cuIpcOpenMemHandle(&pc, hc, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (!t_check(ra == CUDA_SUCCESS && rb == CUDA_SUCCESS && rc == CUDA_SUCCESS,
                 "bridge/ipc/open", "results %d %d %d", (int)ra, (int)rb, (int)rc))
        return;
    /* Again, now that its slab is mapped here (A and B lie in it too). */
    freed_refused(hd, "bridge/ipc/handle_of_freed_block_refused_slab_mapped");
    t_check(range_is(pa, sa, why, sizeof(why)) && range_is(pb, sb, why, sizeof(why)) &&
            range_is(pc, sc, why, sizeof(why)), "bridge/ipc/address_range_is_the_blocks", "%s",
            why);
    t_check(context_is_current(pa, why, sizeof(why)) && context_is_current(pc, why, sizeof(why)),
            "bridge/ipc/opened_block_context_is_the_openers", "%s", why);
    forged_open(hb, pb);
    t_check(all_are(pa, SMALL, 0xa1) && all_are(pb, SMALL, 0xb2) && all_are(pc, LARGE, 0xc3),
            "bridge/ipc/each_block_reads_its_own_bytes", "a %d b %d c %d",
            all_are(pa, SMALL, 0xa1), all_are(pb, SMALL, 0xb2), all_are(pc, LARGE, 0xc3));
    t_check((long)(pb - pa) == dist, "bridge/ipc/blocks_of_one_slab_keep_their_distance",
            "%ld here, %ld in the exporter", (long)(pb - pa), dist);
    t_check(fake_imports() == 2, "bridge/ipc/one_import_per_slab", "%d imports",
            fake_imports());
    lying_exporter();
    busy_exporter();
    mute_exporter(hb, pb);
    r2 = cuIpcOpenMemHandle(&pb2, hb, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    t_check(r2 == CUDA_SUCCESS && pb2 == pb, "bridge/ipc/second_open_same_address",
            "result %d, %#llx vs %#llx", (int)r2, (unsigned long long)pb2,
            (unsigned long long)pb);
    memset((void *)(uintptr_t)pb, 0x5c, 16);
    bad_churn = churn(hb, pb);
    t_check(bad_churn == 0, "bridge/ipc/threads_open_and_close_at_once",
            "%d of 800 open/close pairs went wrong", bad_churn);
    rbad = cuIpcOpenMemHandle(&pbad, bad, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    t_check(rbad != CUDA_SUCCESS, "bridge/ipc/handle_of_no_process_refused", "it opened");
    c1 = cuIpcCloseMemHandle(pb);
    c2 = cuIpcCloseMemHandle(pb);
    c3 = cuIpcCloseMemHandle(pb);
    t_check(c1 == CUDA_SUCCESS && c2 == CUDA_SUCCESS && c3 != CUDA_SUCCESS,
            "bridge/ipc/closes_count_opens", "closes %d %d, third %d", (int)c1, (int)c2,
            (int)c3);
    ca = cuIpcCloseMemHandle(pa);
    cc = cuIpcCloseMemHandle(pc);
    t_check(ca == CUDA_SUCCESS && cc == CUDA_SUCCESS && fake_vmm_live() == 0,
            "bridge/ipc/last_close_unmaps", "closes %d %d, %d allocations still held",
            (int)ca, (int)cc, fake_vmm_live());
}

/* The importer without vramio-run: the driver alone must refuse the bridge's handle. */
static void importer_plain(void)
{
    CUipcMemHandle hb;
    CUdeviceptr p = 0;
    CUresult r;

    alarm(30);
    if (handle_env("IPC_B", &hb)) {
        t_fail("bridge/ipc/plain_importer_refused", "no handle in the environment");
        return;
    }
    r = cuIpcOpenMemHandle(&p, hb, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    t_check(r != CUDA_SUCCESS, "bridge/ipc/plain_importer_refused", "it opened at %#llx",
            (unsigned long long)p);
}

/* This program again in mode, with env: its result lines relayed, and name's line for its
 * exit (0 expected). */
static void child_ran(const char *mode, const char *const *env, const char *name)
{
    char out[8192];
    int sig = 0, st = t_run_self(mode, env, out, sizeof(out), &sig);

    fputs(out, stdout);
    t_check(st == 0, name, "status %d signal %d", st, sig);
}

/* ---- a handle forged for a block never shared ------------------------------------------ */
/* Block ids in the top half of the 64-bit space (bridge/bridge_attr.c: the driver's BUFFER_IDs
 * count up from 1). */
#define ID_TOP (1ull << 63)

/* The handle of the block allocated right after h's, as a peer holding h alone would derive
 * it: the next identity (were ids counted), the block dist bytes further on, of size bytes. */
static CUipcMemHandle next_forged(CUipcMemHandle h, long dist, size_t size)
{
    struct vb_handle v;

    memcpy(&v, &h, sizeof(v));
    v.block_id++;
    v.offset += (uint64_t)dist;
    v.size = size;
    memcpy(&h, &v, sizeof(h));
    return h;
}

/* The forger (another process of the exporter's user): F's handle in IPC_F, and where G, the
 * block allocated right after F, lies in IPC_G_AT (its distance from F and its size, which the
 * pool's layout lets anyone guess); G's handle it never had. The forgery asks for G's memory
 * before F's slab is mapped here (the exporter would send its fd) and after. */
static void forger(void)
{
    CUipcMemHandle hf, fg;
    CUdeviceptr pf = 0, pg = 0, pg2 = 0;
    CUresult rf, rg, rg2;
    size_t gsize = 0;
    long dist = 0;

    alarm(30);
    if (handle_env("IPC_F", &hf) || !getenv("IPC_G_AT") ||
        sscanf(getenv("IPC_G_AT"), "%ld %zu", &dist, &gsize) != 2) {
        t_fail("bridge/ipc/neighbour/handle_passed", "no handle in the environment");
        return;
    }
    fg = next_forged(hf, dist, gsize);
    rg = cuIpcOpenMemHandle(&pg, fg, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    rf = cuIpcOpenMemHandle(&pf, hf, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    t_check(rf == CUDA_SUCCESS && all_are(pf, SMALL, 0xf1), "bridge/ipc/neighbour/genuine_opens",
            "result %d", (int)rf);
    rg2 = cuIpcOpenMemHandle(&pg2, fg, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    t_check(rg == CUDA_ERROR_INVALID_VALUE && rg2 == CUDA_ERROR_INVALID_VALUE,
            "bridge/ipc/neighbour/forged_handle_refused",
            "results %d (slab not mapped) and %d (mapped): %s", (int)rg, (int)rg2,
            (rg == CUDA_SUCCESS && all_are(pg, SMALL, 0x9b)) ||
            (rg2 == CUDA_SUCCESS && all_are(pg2, SMALL, 0x9b)) ?
            "reads the block it was never sent" : "refused or opened elsewhere");
    if (rg == CUDA_SUCCESS)
        cuIpcCloseMemHandle(pg);
    if (rg2 == CUDA_SUCCESS)
        cuIpcCloseMemHandle(pg2);
    if (rf == CUDA_SUCCESS)
        cuIpcCloseMemHandle(pf);
}

/* Blocks F and G, allocated one after the other: F's handle goes to the forger, which must
 * not open G. The forgery is checked here first to be G's handle in all but the identity, so
 * that only the identity can refuse it. */
static void neighbour(void)
{
    char vf[160], vg[64];
    const char *env[3];
    CUipcMemHandle hf, hg, fg;
    struct vb_handle v, g_own;
    CUdeviceptr f = 0, g = 0;
    size_t gsize = 0;

    if (cuMemAlloc(&f, SMALL) || cuMemAlloc(&g, SMALL) || cuIpcGetMemHandle(&hf, f) ||
        cuIpcGetMemHandle(&hg, g) || cuMemGetAddressRange(NULL, &gsize, g)) {
        t_fail("bridge/ipc/neighbour/alloc", "alloc, handle or range failed");
        return;
    }
    memset((void *)(uintptr_t)f, 0xf1, SMALL);
    memset((void *)(uintptr_t)g, 0x9b, SMALL);
    fg = next_forged(hf, (long)(g - f), gsize);
    memcpy(&v, &fg, sizeof(v));
    memcpy(&g_own, &hg, sizeof(g_own));
    v.block_id = g_own.block_id;
    t_check(!memcmp(&v, &g_own, sizeof(v)), "bridge/ipc/neighbour/forgery_is_g_but_the_identity",
            "the forged handle differs from G's in more than its block id");
    memcpy(vf, "IPC_F=", 6), to_hex(&hf, sizeof(hf), vf + 6);
    snprintf(vg, sizeof(vg), "IPC_G_AT=%ld %zu", (long)(g - f), gsize);
    env[0] = vf, env[1] = vg, env[2] = NULL;
    child_ran("forge", env, "bridge/ipc/neighbour/forger_ran");
    cuMemFree(f);
    cuMemFree(g);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* The BUFFER_IDs of ID_ALLOCS allocations, most freed at once (the next one takes the same
 * place), one in ID_HELD kept: each its own, all at or above ID_TOP. */
#define ID_ALLOCS 20000u
#define ID_HELD   64u
static void ids_distinct(void)
{
    static uint64_t ids[ID_ALLOCS];
    CUdeviceptr held[ID_ALLOCS / ID_HELD + 1], p;
    unsigned i, n = 0, nheld = 0, low = 0, same = 0;
    unsigned long long id;

    for (i = 0; i < ID_ALLOCS; i++, n++) {
        p = 0;
        id = 0;
        if (cuMemAlloc(&p, SMALL) ||
            cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p))
            break;
        ids[n] = id;
        if (i % ID_HELD)
            cuMemFree(p);
        else
            held[nheld++] = p;
    }
    while (nheld)
        cuMemFree(held[--nheld]);
    qsort(ids, n, sizeof(ids[0]), cmp_u64);
    for (i = 0; i < n; i++) {
        low += ids[i] < ID_TOP;
        same += i && ids[i] == ids[i - 1];
    }
    t_check(n == ID_ALLOCS && !low && !same, "bridge/ipc/block_ids_distinct_in_the_top_half",
            "%u allocations of %u, %u ids below 2^63, %u repeated", n, ID_ALLOCS, low, same);
}

static void exporter(const char *fake_dir)
{
    char va[160], vb[160], vc[160], vd[160], vbad[160], vdist[64], vsizes[96], vlib[4200];
    const char *env[9];
    CUipcMemHandle ha, hb, hc, hd, bad;
    CUdeviceptr a = 0, b = 0, c = 0, d = 0, e = 0;
    unsigned long long base;
    size_t size, sa = 0, sb = 0, sc = 0;
    int cap = -1;
    CUresult r;

    if (cuMemAlloc(&a, SMALL) || cuMemAlloc(&b, SMALL) || cuMemAlloc(&c, LARGE)) {
        t_fail("bridge/ipc/alloc", "cuMemAlloc failed");
        return;
    }
    if (!t_check(!vramio_alloc_range(a, &base, &size) && !vramio_alloc_range(c, &base, &size),
                 "bridge/ipc/blocks_from_the_pool", "not bridged"))
        return;
    r = cuPointerGetAttribute(&cap, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, b);
    t_check(r == CUDA_SUCCESS && cap == 1, "bridge/ipc/block_is_legacy_ipc_capable",
            "result %d, capable %d", (int)r, cap);
    memset((void *)(uintptr_t)a, 0xa1, SMALL);
    memset((void *)(uintptr_t)b, 0xb2, SMALL);
    memset((void *)(uintptr_t)c, 0xc3, LARGE);
    if (!t_check(!cuIpcGetMemHandle(&ha, a) && !cuIpcGetMemHandle(&hb, b + 100) &&
                 !cuIpcGetMemHandle(&hc, c), "bridge/ipc/get_handles", "cuIpcGetMemHandle failed"))
        return;
    /* D: a handle of a block freed at once, another block (E) allocated in its place. */
    if (cuMemAlloc(&d, SMALL) || cuIpcGetMemHandle(&hd, d) || cuMemFree(d) ||
        cuMemAlloc(&e, SMALL) ||
        cuMemGetAddressRange(NULL, &sa, a) || cuMemGetAddressRange(NULL, &sb, b) ||
        cuMemGetAddressRange(NULL, &sc, c)) {
        t_fail("bridge/ipc/freed_block_handle", "alloc, handle, free or range failed");
        return;
    }
    memset((void *)(uintptr_t)e, 0xe5, SMALL);
    bad = hb;
    ((unsigned char *)&bad)[8] ^= 0xff; /* another exporter's nonce: no such process */
    memcpy(va, "IPC_A=", 6), to_hex(&ha, sizeof(ha), va + 6);
    memcpy(vb, "IPC_B=", 6), to_hex(&hb, sizeof(hb), vb + 6);
    memcpy(vc, "IPC_C=", 6), to_hex(&hc, sizeof(hc), vc + 6);
    memcpy(vd, "IPC_D=", 6), to_hex(&hd, sizeof(hd), vd + 6);
    memcpy(vbad, "IPC_BAD=", 8), to_hex(&bad, sizeof(bad), vbad + 8);
    snprintf(vdist, sizeof(vdist), "IPC_DIST=%ld", (long)(b - a));
    snprintf(vsizes, sizeof(vsizes), "IPC_SIZES=%zu %zu %zu", sa, sb, sc);
    env[0] = va, env[1] = vb, env[2] = vc, env[3] = vd, env[4] = vbad, env[5] = vdist;
    env[6] = vsizes, env[7] = NULL;
    child_ran("import", env, "bridge/ipc/importer_ran");
    t_check(all_are(b, 16, 0x5c) && all_are(b + 16, SMALL - 16, 0xb2) && all_are(a, SMALL, 0xa1),
            "bridge/ipc/importer_writes_reach_the_block", "b[0] %#x b[16] %#x a[0] %#x",
            ((unsigned char *)(uintptr_t)b)[0], ((unsigned char *)(uintptr_t)b)[16],
            ((unsigned char *)(uintptr_t)a)[0]);
    snprintf(vlib, sizeof(vlib), "LD_LIBRARY_PATH=%s", fake_dir);
    env[0] = vb, env[1] = vlib, env[2] = NULL;
    child_ran("import_plain", env, "bridge/ipc/plain_importer_ran");
    cuMemFree(a);
    cuMemFree(b);
    cuMemFree(c);
    cuMemFree(e);
    neighbour();
    ids_distinct();
}

/* ---- a block of chunks ------------------------------------------------------------------- */
#define CHUNKED (9u << 20)            /* 10 MiB rounded: chunks of 4, 4 and 2 MiB */
#define CHUNKED_SPAN (10u << 20)
#define SEAM (4u << 20)               /* the first chunk's end */
#define VB_MAGIC_CHUNKS 0x56524332u

/* What the bridge answers at p for the block at c (its range, its attributes, no handle of
 * its own): the same from every chunk, as from one allocation. */
static int block_answers(CUdeviceptr c, CUdeviceptr p, unsigned long long id0, char *why,
                         size_t len)
{
    CUpointer_attribute attrs[3] = { CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                     CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                     CU_POINTER_ATTRIBUTE_BUFFER_ID };
    CUdeviceptr base = 0, start = 0, start3 = 0;
    size_t size = 0, rsize = 0, size3 = 0;
    unsigned long long id = 0, id3 = 0;
    void *data[3] = { &start3, &size3, &id3 };
    CUmemGenericAllocationHandle h;
    CUcontext cur = NULL, ctx = NULL;
    int cap = 0;
    CUresult rr;

    cuCtxGetCurrent(&cur);
    rr = cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)p);
    if (cuMemGetAddressRange(&base, &size, p) == CUDA_SUCCESS && base == c &&
        size == CHUNKED_SPAN &&
        !cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) && start == c &&
        !cuPointerGetAttribute(&rsize, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p) &&
        rsize == CHUNKED_SPAN &&
        !cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) && id == id0 &&
        !cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, p) && ctx == cur &&
        !cuPointerGetAttribute(&cap, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, p) &&
        cap == 1 && !cuPointerGetAttributes(3, attrs, data, p) && start3 == c &&
        size3 == CHUNKED_SPAN && id3 == id0 && rr != CUDA_SUCCESS)
        return 1;
    snprintf(why, len, "at +%#llx: range +%#llx %zu, attrs +%#llx %zu id %s ctx %s cap %d, "
             "three +%#llx %zu, retain %d", (unsigned long long)(p - c),
             (unsigned long long)(base - c), size, (unsigned long long)(start - c), rsize,
             id == id0 ? "same" : "other", ctx == cur ? "current" : "other", cap,
             (unsigned long long)(start3 - c), size3, (int)rr);
    return 0;
}

/* The importer of the block of chunks: its handle in IPC_C, the exporter's small block's
 * (one slab) in IPC_A. */
static void chunks_importer(void)
{
    CUipcMemHandle hc, ha, f;
    struct vb_handle v;
    CUdeviceptr p = 0, q = 0;
    CUresult r;
    char why[160];
    int live0 = fake_vmm_live(), expected = atoi(getenv("CHUNKS_EXPECTED") ?: "3");

    alarm(30);
    if (handle_env("IPC_C", &hc) || handle_env("IPC_A", &ha)) {
        t_fail("bridge/ipc/chunks/handles_passed", "no handles in the environment");
        return;
    }
    /* Forged: the block's handle as a slab's, a slab's as a block of chunks, and the block's
     * reservation claimed twice its size. */
    memcpy(&v, &hc, sizeof(v));
    v.magic = expected > 1 ? VB_MAGIC : VB_MAGIC_CHUNKS;
    memcpy(&f, &v, sizeof(f));
    r = cuIpcOpenMemHandle(&q, f, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    t_check(r == CUDA_ERROR_INVALID_VALUE, "bridge/ipc/chunks/other_kind_refused",
            "result %d", (int)r);
    memcpy(&v, &ha, sizeof(v));
    v.magic = VB_MAGIC_CHUNKS;
    memcpy(&f, &v, sizeof(f));
    r = cuIpcOpenMemHandle(&q, f, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    t_check(r == CUDA_ERROR_INVALID_VALUE, "bridge/ipc/chunks/slab_as_chunks_refused",
            "result %d", (int)r);
    memcpy(&v, &hc, sizeof(v));
    v.slab_units *= 2;
    memcpy(&f, &v, sizeof(f));
    r = cuIpcOpenMemHandle(&q, f, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    t_check(r == CUDA_ERROR_INVALID_VALUE && fake_vmm_live() == live0,
            "bridge/ipc/chunks/reservation_claimed_larger_refused", "result %d, %d allocations "
            "held", (int)r, fake_vmm_live() - live0);
    r = cuIpcOpenMemHandle(&p, hc, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (!t_check(r == CUDA_SUCCESS, "bridge/ipc/chunks/open", "result %d", (int)r))
        return;
    t_check(fake_imports() == expected && fake_vmm_live() - live0 == expected,
            "bridge/ipc/chunks/one_import_per_chunk", "%d imports, %d allocations held",
            fake_imports(), fake_vmm_live() - live0);
    t_check(range_is(p, CHUNKED_SPAN, why, sizeof(why)), "bridge/ipc/chunks/range_is_the_blocks",
            "%s", why);
    t_check(all_are(p, SEAM, 0x11) && all_are(p + SEAM, SEAM, 0x22) &&
            all_are(p + 2 * SEAM, CHUNKED_SPAN - 2 * SEAM, 0x33),
            "bridge/ipc/chunks/each_chunk_reads_its_bytes", "%d %d %d", all_are(p, SEAM, 0x11),
            all_are(p + SEAM, SEAM, 0x22), all_are(p + 2 * SEAM, CHUNKED_SPAN - 2 * SEAM, 0x33));
    memset((void *)(uintptr_t)(p + SEAM - 64), 0x5a, 128); /* across the first seam */
    r = cuIpcCloseMemHandle(p);
    t_check(r == CUDA_SUCCESS && fake_vmm_live() == live0, "bridge/ipc/chunks/close_leaves_nothing",
            "result %d, %d allocations held", (int)r, fake_vmm_live() - live0);
}

/* The exporter of a block of chunks (see the top). */
static void chunks_exporter(void)
{
    static const unsigned long long at[] = { 0, SEAM - 1, SEAM, SEAM + 12345, 2 * SEAM,
                                             CHUNKED_SPAN - 1 };
    char va[160], vc[160], why[200];
    const char *env[4];
    CUipcMemHandle ha, hc;
    struct vb_handle v;
    CUdeviceptr a = 0, c = 0, base = 0;
    unsigned long long id0 = 0;
    int live0, expected = atoi(getenv("CHUNKS_EXPECTED") ?: "3"), ok = 1;
    size_t i;

    if (cuMemAlloc(&a, SMALL)) {
        t_fail("bridge/ipc/chunks/alloc", "cuMemAlloc failed");
        return;
    }
    live0 = fake_vmm_live();
    if (!t_check(!cuMemAlloc(&c, CHUNKED) && !vramio_alloc_range(c, NULL, NULL),
                 "bridge/ipc/chunks/alloc", "not bridged"))
        return;
    t_check(fake_vmm_live() - live0 == expected, "bridge/ipc/chunks/allocations",
            "%d of the driver's allocations for the block, %d expected", fake_vmm_live() - live0,
            expected);
    cuPointerGetAttribute(&id0, CU_POINTER_ATTRIBUTE_BUFFER_ID, c);
    for (i = 0; i < sizeof(at) / sizeof(at[0]) && ok; i++)
        ok = block_answers(c, c + at[i], id0, why, sizeof(why));
    t_check(ok, "bridge/ipc/chunks/answers_of_every_chunk_are_the_blocks", "%s", why);
    memset((void *)(uintptr_t)c, 0x11, SEAM);
    memset((void *)(uintptr_t)(c + SEAM), 0x22, SEAM);
    memset((void *)(uintptr_t)(c + 2 * SEAM), 0x33, CHUNKED_SPAN - 2 * SEAM);
    if (!t_check(!cuIpcGetMemHandle(&hc, c + 5 * 1048576) && !cuIpcGetMemHandle(&ha, a),
                 "bridge/ipc/chunks/get_handle", "cuIpcGetMemHandle failed"))
        return;
    memcpy(&v, &hc, sizeof(v));
    t_check(v.magic == (expected > 1 ? VB_MAGIC_CHUNKS : VB_MAGIC) && v.offset == 0 &&
            v.size == CHUNKED_SPAN && (uint64_t)v.slab_units * 4096 == CHUNKED_SPAN,
            "bridge/ipc/chunks/handle_names_the_block", "magic %#x offset %llu size %llu",
            v.magic, (unsigned long long)v.offset, (unsigned long long)v.size);
    memcpy(va, "IPC_A=", 6), to_hex(&ha, sizeof(ha), va + 6);
    memcpy(vc, "IPC_C=", 6), to_hex(&hc, sizeof(hc), vc + 6);
    env[0] = va, env[1] = vc, env[2] = NULL;
    child_ran("chunks_import", env, "bridge/ipc/chunks/importer_ran");
    t_check(all_are(c + SEAM - 64, 128, 0x5a) && all_are(c, SEAM - 64, 0x11) &&
            all_are(c + SEAM + 64, SEAM - 64, 0x22), "bridge/ipc/chunks/write_across_seam_seen",
            "before %#x after %#x", ((unsigned char *)(uintptr_t)c)[SEAM - 1],
            ((unsigned char *)(uintptr_t)c)[SEAM]);
    t_check(cuMemFree(c + SEAM) != CUDA_SUCCESS && cuMemFree(c) == CUDA_SUCCESS &&
            fake_vmm_live() == live0, "bridge/ipc/chunks/free_leaves_nothing",
            "%d allocations held", fake_vmm_live() - live0);
    t_check(cuMemGetAddressRange(&base, NULL, c + SEAM + 1) == CUDA_ERROR_NOT_FOUND,
            "bridge/ipc/chunks/freed_block_not_found", "found at %#llx",
            (unsigned long long)base);
    cuMemFree(a);
}

/* ---- a block of as many chunks as one answer carries, and one more ------------------------ */
#define MAX_CHUNKS 240u                /* bridge/bridge.h, VB_IPC_MAX_CHUNKS */
#define CHUNK2 (2u << 20)              /* VRAMIO_POOL_CHUNK_MB=2 */

/* The importer of the block of MAX_CHUNKS chunks (IPC_C): its last chunk reads 0x6d. */
static void many_importer(void)
{
    CUipcMemHandle hc;
    CUdeviceptr p = 0;
    CUresult r;
    char why[160];
    int live0 = fake_vmm_live();

    alarm(60);
    if (handle_env("IPC_C", &hc)) {
        t_fail("bridge/ipc/many/handle_passed", "no handle in the environment");
        return;
    }
    r = cuIpcOpenMemHandle(&p, hc, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (!t_check(r == CUDA_SUCCESS, "bridge/ipc/many/open", "result %d", (int)r))
        return;
    t_check(fake_imports() == (int)MAX_CHUNKS &&
            range_is(p, (size_t)MAX_CHUNKS * CHUNK2, why, sizeof(why)) &&
            all_are(p + (MAX_CHUNKS - 1) * (CUdeviceptr)CHUNK2, 64, 0x6d),
            "bridge/ipc/many/opened_whole", "%d imports; %s", fake_imports(), why);
    r = cuIpcCloseMemHandle(p);
    t_check(r == CUDA_SUCCESS && fake_vmm_live() == live0, "bridge/ipc/many/closed",
            "result %d, %d allocations held", (int)r, fake_vmm_live() - live0);
}

/* A block of MAX_CHUNKS chunks shared whole; one of a chunk more gets no handle (the driver's
 * answer for VMM memory) rather than one that no open could take. */
static void many_exporter(void)
{
    char vc[160];
    const char *env[2];
    CUipcMemHandle hc;
    CUdeviceptr c = 0, more = 0;
    int live0 = fake_vmm_live(), cap_more, cap_c;
    CUresult r;

    if (!t_check(!cuMemAlloc(&c, (size_t)MAX_CHUNKS * CHUNK2) &&
                 fake_vmm_live() - live0 == (int)MAX_CHUNKS, "bridge/ipc/many/alloc",
                 "%d allocations", fake_vmm_live() - live0))
        return;
    memset((void *)(uintptr_t)(c + (MAX_CHUNKS - 1) * (CUdeviceptr)CHUNK2), 0x6d, 64);
    if (!t_check(!cuIpcGetMemHandle(&hc, c), "bridge/ipc/many/handle", "refused"))
        return;
    memcpy(vc, "IPC_C=", 6), to_hex(&hc, sizeof(hc), vc + 6);
    env[0] = vc, env[1] = NULL;
    child_ran("many_import", env, "bridge/ipc/many/importer_ran");
    r = cuMemAlloc(&more, (size_t)(MAX_CHUNKS + 1) * CHUNK2);
    t_check(r == CUDA_SUCCESS && cuIpcGetMemHandle(&hc, more) != CUDA_SUCCESS,
            "bridge/ipc/many/one_chunk_more_no_handle", "alloc %d, a handle made", (int)r);
    /* What the pointer says of it agrees: a program (UCX's cuda_ipc) that is told "legacy IPC
     * capable" asks for a handle and takes the refusal for a broken registration; the block
     * that does get one still says yes. */
    cap_more = cap_c = -1;
    if (r == CUDA_SUCCESS)
        cuPointerGetAttribute(&cap_more, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, more);
    cuPointerGetAttribute(&cap_c, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, c);
    t_check(cap_more == 0 && cap_c == 1, "bridge/ipc/many/capable_says_whether_a_handle_is_made",
            "IS_LEGACY_CUDA_IPC_CAPABLE %d for the block of a chunk more (no handle), %d for "
            "the one with a handle", cap_more, cap_c);
    t_check(!cuMemFree(c) && !cuMemFree(more) && fake_vmm_live() == live0,
            "bridge/ipc/many/free_leaves_nothing", "%d allocations held",
            fake_vmm_live() - live0);
}

int main(int argc, char **argv)
{
    const char *child = t_child_mode(argc, argv);

    if (child && !strcmp(child, "import"))
        importer();
    else if (child && !strcmp(child, "forge"))
        forger();
    else if (child && !strcmp(child, "import_plain"))
        importer_plain();
    else if (child && !strcmp(child, "chunks_import"))
        chunks_importer();
    else if (child && !strcmp(child, "many_import"))
        many_importer();
    else if (argc > 2 && !strcmp(argv[2], "chunks"))
        chunks_exporter();
    else if (argc > 2 && !strcmp(argv[2], "many"))
        many_exporter();
    else if (argc > 1)
        exporter(argv[1]);
    else
        t_fail("bridge/ipc/usage", "ipc_client FAKE_DIR");
    return t_status();
}

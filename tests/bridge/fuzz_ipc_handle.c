// SPDX-License-Identifier: MIT
/*
 * fuzz_ipc_handle.c - a coverage-guided fuzzer (libFuzzer, built with clang under ASan and
 * UBSan: tests/bridge/bridge.mk) of the bridge's CUDA IPC handles: the bytes of a
 * CUipcMemHandle that cuIpcOpenMemHandle is given, the exporter's answers to the opener
 * (bridge_ipc_server.c's vb_ipc_fetch) and the requests its server takes
 * (vb_ipc_serve_one). The bridge's IPC sources are built into this program; the driver is
 * the stand-in (tests/fake/cuda-vmm/libcuda.so.1, through LD_LIBRARY_PATH), and
 * fuzz_ipc_world.c stands in for the pool (vramio_alloc_range: two slabs of the stand-in's
 * VMM memory, five blocks in them, and a block of three chunks side by side in one reservation,
 * which an input may free and allocate again) and for the
 * "other process" that handles name: this one under another nonce, its socket answered by a
 * thread honestly (vb_ipc_serve_one: the bridge's own exporter side) or as the input
 * scripts it, as an exporter of another user may.
 *
 * An input is a list of operations (op_*), each reading its operands from the bytes that
 * follow. What must hold, else abort() (a crash for libFuzzer):
 *   - an open that succeeds returns an address inside mappings made for an import (never
 *     the program's own memory; a block of chunks: one per chunk, side by side), with the
 *     handle's block wholly inside them, whose range (vb_ipc_range) is the block's; while
 *     every answer was honest, its bytes are the block's (at every 2 MiB: each chunk's);
 *   - every close of an address that open returned succeeds, as often as it was opened, and
 *     no other close does; after them no import is left (the stand-in's live allocation
 *     handles are back to this program's own), and no descriptor is left open;
 *   - the server gives a descriptor only for a request that names a live block of a slab
 *     it exported, with that block's size and identity, and only when asked for one (one per
 *     chunk for a block of chunks, asked about as one, in an answer of that form).
 * Crashes, sanitizer reports, leaks and hangs (-timeout) are libFuzzer's to report.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fdpass.h"
#include "fuzz_ipc.h"

#define MAX_OPEN 64
#define NSLOT 4

/* ---- the opener's side -------------------------------------------------------------------- */
/* The blocks open, in the order of their first open, as bridge_ipc_open.c keeps them (a
 * record goes at its last close); and every address an open gave in this input. */
static struct opened { CUdeviceptr p; uint64_t size, id; unsigned refs; } opened[MAX_OPEN];
static unsigned nopened;
static CUdeviceptr given[MAX_OPS];
static unsigned ngiven;
static struct vb_ipc_handle slot[NSLOT]; /* handles made by op_export, naming NONCE_OTHER */
static unsigned nslot;
static uint64_t self_nonce;             /* this process's own server's */
static int base_live, base_fds;         /* the stand-in's live handles, our fds, at rest */
int exported[NSLABS];

/* The range of p (vb_ipc_range): inside an open block, the range of the last one opened
 * there (blocks opened at one address may differ in size: a block freed and another
 * allocated in its place, both open here). */
static void range_check(CUdeviceptr p)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    unsigned i;
    int r = vb_ipc_range(p, &base, &size, NULL), inside = 0, same = 0;

    for (i = nopened; i-- > 0 && !inside;) {
        if (p < opened[i].p || p - opened[i].p >= opened[i].size)
            continue;
        inside = 1;
        same = r == 1 && base == opened[i].p && size == opened[i].size;
    }
    CHECK(!inside || same, "range of %#llx inside an opened block: %d, %#llx + %zu",
          (unsigned long long)p, r, (unsigned long long)base, size);
}

/* Whether [p, p + n) is mapped, mapping after mapping (a block of chunks is several), none of
 * them this process's own slabs. */
static void check_mapped(CUdeviceptr p, uint64_t n)
{
    const struct vr_cuda *t = vb_real();
    CUdeviceptr at = p, mb = 0;
    size_t ms = 0;
    unsigned i;

    while (at - p < n) {
        CHECK(t->cuMemGetAddressRange(&mb, &ms, at) == CUDA_SUCCESS && at - mb < ms,
              "open gave %#llx (+%llu): +%llu outside any mapping", (unsigned long long)p,
              (unsigned long long)n, (unsigned long long)(at - p));
        for (i = 0; i < NSLABS; i++)
            CHECK(mb - slabs[i].base >= slabs[i].size, "open gave our own memory %#llx",
                  (unsigned long long)p);
        at = mb + ms;
    }
}

/* An open that succeeded: where it must lie, what it must read and say (see the top). */
static void check_opened(const struct vb_ipc_handle *h, CUdeviceptr p)
{
    uint64_t off;
    unsigned i;

    check_mapped(p, h->size);
    /* The block's first bytes, and the first of every 2 MiB (each chunk's, in order). */
    if (all_honest)
        for (i = 0; i < NSLABS; i++)
            for (off = 0; h->slab_base == slabs[i].base && off < h->size; off += SLAB_SMALL)
                CHECK(!memcmp((void *)(uintptr_t)(p + off),
                              (void *)(uintptr_t)(slabs[i].base + h->offset + off),
                              h->size - off < 64 ? h->size - off : 64),
                      "an honest open reads other bytes than the block's at +%llu",
                      (unsigned long long)off);
    for (i = 0; i < nopened; i++)
        if (opened[i].p == p && opened[i].size == h->size && opened[i].id == h->block_id)
            break;
    CHECK(i < MAX_OPEN && ngiven < MAX_OPS, "too many opens recorded");
    if (i == nopened) {
        opened[nopened].p = p;
        opened[nopened].size = h->size;
        opened[nopened].id = h->block_id;
        opened[nopened++].refs = 0;
        given[ngiven++] = p;
    }
    opened[i].refs++;
    range_check(p);
}

static void open_handle(struct in *in, const struct vb_ipc_handle *h)
{
    CUipcMemHandle ch;
    CUdeviceptr p = 0;
    CUresult r;

    script_read(in);
    memcpy(&ch, h, sizeof(ch));
    r = vb_ipc_open_mem_handle(&p, ch, u8(in) & 1 ? CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS : 0);
    if (r == CUDA_SUCCESS)
        check_opened(h, p);
}

/* Make a handle of block k (from an address inside it), as the other process's. */
static void op_export(struct in *in)
{
    unsigned k = u8(in) % NBLOCKS;
    uint64_t inside = u64(in) % blocks[k].size;
    CUipcMemHandle ch;
    CUresult r;

    r = vb_ipc_get_mem_handle(&ch, block_base(k) + inside);
    CHECK((r == CUDA_SUCCESS) == blocks[k].live, "handle of block %u (live %d): %d", k,
          blocks[k].live, (int)r);
    if (r != CUDA_SUCCESS)
        return;
    exported[blocks[k].slab] = 1;
    memcpy(&slot[nslot % NSLOT], &ch, sizeof(ch));
    self_nonce = slot[nslot % NSLOT].nonce;
    slot[nslot % NSLOT].nonce = NONCE_OTHER;
    nslot++;
}

/* Open a made handle, changed in up to three places. */
static void op_open_made(struct in *in)
{
    struct vb_ipc_handle h;
    unsigned n;

    if (!nslot)
        return;
    h = slot[u8(in) % (nslot < NSLOT ? nslot : NSLOT)];
    if (u8(in) % 8 == 0)
        h.nonce = self_nonce; /* naming this process itself */
    for (n = u8(in) % 4; n; n--)
        mutate(in, &h, sizeof(h), handle_fields, NHANDLE_FIELDS);
    open_handle(in, &h);
}

/* Open 64 bytes of the input, or those with the other process named in them. */
static void op_open_raw(struct in *in)
{
    struct vb_ipc_handle h;
    unsigned i, named = u8(in) & 3;

    for (i = 0; i < sizeof(h); i++)
        ((uint8_t *)&h)[i] = u8(in);
    if (named) {
        h.magic = named & 2 ? VB_IPC_MAGIC_CHUNKS : VB_IPC_MAGIC;
        h.pid = (uint32_t)getpid();
        h.uid = (uint32_t)geteuid();
        h.nonce = NONCE_OTHER;
    }
    open_handle(in, &h);
}

/* A close of p that succeeded: the last opened at p counts down (bridge_ipc_open.c's order),
 * and its record goes at 0. Whether there was one to count down. */
static int closed(CUdeviceptr p)
{
    unsigned i;

    for (i = nopened; i-- > 0 && opened[i].p != p;)
        ;
    if (i >= nopened)
        return 0;
    if (--opened[i].refs == 0) {
        nopened--;
        memmove(&opened[i], &opened[i + 1], (nopened - i) * sizeof(opened[0]));
    }
    return 1;
}

static void op_close(struct in *in)
{
    CUdeviceptr p;

    if (!nopened)
        return;
    p = opened[u8(in) % nopened].p;
    CHECK(vb_ipc_close_mem_handle(p) == CUDA_SUCCESS, "close of opened %#llx failed",
          (unsigned long long)p);
    closed(p);
}

/* Close an address near one opened, or any: it succeeds only for an address opened. */
static void op_close_any(struct in *in)
{
    CUdeviceptr p = nopened && (u8(in) & 1) ? opened[u8(in) % nopened].p + (int8_t)u8(in) * 512
                                             : (CUdeviceptr)u64(in);

    if (vb_ipc_close_mem_handle(p) != CUDA_SUCCESS)
        return;
    CHECK(closed(p), "close of %#llx, never opened, succeeded", (unsigned long long)p);
}

/* Free block k, or allocate it again; or free the large slab or the block of chunks and make
 * a new one (its handles and requests name a slab that is gone). */
static void op_free(struct in *in)
{
    unsigned k = u8(in) % (NBLOCKS + 2);

    if (k >= NBLOCKS)
        slab_remake(k == NBLOCKS ? 1 : 2);
    else if (blocks[k].live)
        block_free(k);
    else
        block_alloc(k);
}

/* The answer the server must give req (see the top): whether it names a live block of a
 * slab it exported, with its size and identity. */
static int request_good(const struct vb_ipc_req *req)
{
    unsigned long long id = 0;
    unsigned k;

    for (k = 0; k < NBLOCKS; k++) {
        const struct slab *s = &slabs[blocks[k].slab];

        if (exported[blocks[k].slab] && blocks[k].live && req->base == s->base &&
            !(req->flags & VB_IPC_CHUNKS) == !s->chunks &&
            req->id == s->id && req->size == s->size && req->offset == blocks[k].off &&
            req->bsize == blocks[k].size && vb_block_id(block_base(k), 0, &id) &&
            id == req->block_id)
            return 1;
    }
    return 0;
}

/* The server's answer on sv: its status (of a slab's form, or of a block of chunks' when
 * chunks), the count of descriptors (closed here) in *nfd, and *told the count the answer of
 * a block of chunks says. */
static int32_t answer_of(int sv, int chunks, unsigned *nfd, uint32_t *told)
{
    unsigned char cbuf[CMSG_SPACE(VB_IPC_MAX_CHUNKS * sizeof(int))];
    struct vb_ipc_chunks_reply r = { -1, 0, 0 };
    struct iovec iov = { &r, chunks ? sizeof(r) : sizeof(r.status) };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                        .msg_controllen = sizeof(cbuf) };
    struct cmsghdr *cm;
    ssize_t got = recvmsg(sv, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC | MSG_TRUNC);
    unsigned i;
    int fd;

    CHECK(got == (ssize_t)iov.iov_len, "the server's answer: %zd bytes, %zu expected", got,
          iov.iov_len);
    *nfd = 0;
    for (cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
        for (i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            close(fd);
            (*nfd)++;
        }
    *told = r.nfd;
    return r.status;
}

/* A request straight to the server (vb_ipc_serve_one): one of a block, changed, or bytes. */
static void op_request(struct in *in)
{
    unsigned char raw[96];
    struct vb_ipc_req req;
    int32_t status;
    uint32_t told = 0;
    unsigned k = u8(in) % NBLOCKS, n, i, nfd = 0, len = sizeof(req), chunks;
    unsigned long long id = 0;
    int sv[2];

    memset(&req, 0, sizeof(req));
    req.base = slabs[blocks[k].slab].base;
    req.id = slabs[blocks[k].slab].id;
    req.size = slabs[blocks[k].slab].size;
    req.offset = blocks[k].off;
    req.bsize = blocks[k].size;
    req.block_id = vb_block_id(block_base(k), 0, &id) ? id : 0;
    req.flags = (u8(in) & 1) | (slabs[blocks[k].slab].chunks ? VB_IPC_CHUNKS : 0);
    for (n = u8(in) % 4; n; n--)
        mutate(in, &req, sizeof(req), req_fields, NREQ_FIELDS);
    memcpy(raw, &req, sizeof(req));
    if (u8(in) % 4 == 0) { /* other lengths, other bytes */
        len = u8(in) % sizeof(raw);
        for (i = sizeof(req); i < len; i++)
            raw[i] = u8(in);
    }
    memcpy(&req, raw, sizeof(req));
    /* A well-formed request about chunks gets an answer of their form, any other a status. */
    chunks = len == sizeof(req) && !req.zero &&
             !(req.flags & ~(VB_IPC_WANT_FD | VB_IPC_CHUNKS)) && (req.flags & VB_IPC_CHUNKS);
    CHECK(!socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), "socketpair");
    if (len)
        CHECK(send(sv[0], raw, len, 0) == (ssize_t)len, "send: %s", strerror(errno));
    else
        shutdown(sv[0], SHUT_WR);
    vb_ipc_serve_one(sv[1]);
    close(sv[1]);
    status = answer_of(sv[0], chunks, &nfd, &told);
    close(sv[0]);
    if (status == 0) {
        CHECK(len == sizeof(req) && request_good(&req), "the server said yes to a request "
              "of no live exported block (%u bytes)", len);
        CHECK(nfd == ((req.flags & VB_IPC_WANT_FD) ? (chunks ? slabs[2].chunks : 1) : 0) &&
              (!chunks || told == nfd), "%u descriptors (the answer says %u) for flags %u",
              nfd, told, req.flags);
    } else {
        CHECK(status > 0 && !nfd, "the server said %d with %u descriptors", status, nfd);
    }
}

/* The range of an address near one opened. */
static void op_range(struct in *in)
{
    unsigned i;

    if (!nopened)
        return;
    i = u8(in) % nopened;
    range_check(opened[i].p + (int8_t)u8(in) * (opened[i].size / 64 + 1));
}

/* After an input: every open closed, nothing left mapped or open, the pool whole again. */
static void settle(void)
{
    struct timespec ts = { 0, 1000 * 1000 };
    CUdeviceptr base;
    size_t size;
    unsigned i, n;

    while (nopened) {
        CHECK(vb_ipc_close_mem_handle(opened[0].p) == CUDA_SUCCESS,
              "close of opened %#llx failed: its open count leaks",
              (unsigned long long)opened[0].p);
        closed(opened[0].p);
    }
    for (i = 0; i < ngiven; i++)
        CHECK(vb_ipc_close_mem_handle(given[i]) != CUDA_SUCCESS &&
              vb_ipc_range(given[i], &base, &size, NULL) == 0,
              "%#llx still open after its last close", (unsigned long long)given[i]);
    ngiven = 0;
    nslot = 0;
    for (i = 0; i < NBLOCKS; i++)
        if (!blocks[i].live)
            block_alloc(i);
    for (n = 0; __atomic_load_n(&busy, __ATOMIC_SEQ_CST) && n < 2000; n++)
        nanosleep(&ts, NULL);
    CHECK(!__atomic_load_n(&busy, __ATOMIC_SEQ_CST), "the responder is stuck");
    CHECK(fake_int("fake_vmm_live") == base_live, "%d allocation handles live, %d at rest: "
          "an import leaks", fake_int("fake_vmm_live"), base_live);
    n = (unsigned)fd_count();
    CHECK((int)n == base_fds, "%u sockets and memfds open, %d at rest", n, base_fds);
    npipes = 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const struct vr_cuda *t = vb_real();
    unsigned k;

    CHECK(t && t->cuInit(0) == CUDA_SUCCESS,
          "no stand-in driver: run with LD_LIBRARY_PATH=build/tests/fake/cuda-vmm");
    vb_log_on = getenv("VRAMIO_BRIDGE_LOG") != NULL;
    slab_make(&slabs[0], SLAB_SMALL, 0);
    slab_make(&slabs[1], SLAB_LARGE, 0);
    slab_make(&slabs[2], SLAB_CHUNKED, 3);
    for (k = 0; k < NBLOCKS; k++)
        block_alloc(k);
    responder_start();
    base_live = fake_int("fake_vmm_live");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static void (*const ops[])(struct in *) = {
        op_export, op_open_made, op_open_raw, op_close, op_close_any, op_free, op_request,
        op_range,
    };
    struct in in = { data, size };
    unsigned n;

    if (!base_fds) { /* the server's socket and thread are made at the first export */
        struct in none = { NULL, 0 };

        op_export(&none);
        nslot = 0;
        base_fds = fd_count();
    }
    all_honest = 1;
    for (n = 0; in.n && n < MAX_OPS; n++)
        ops[u8(&in) % (sizeof(ops) / sizeof(ops[0]))](&in);
    settle();
    return 0;
}

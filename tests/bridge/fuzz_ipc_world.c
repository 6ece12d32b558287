// SPDX-License-Identifier: MIT
/*
 * fuzz_ipc_world.c - the world of the IPC handle fuzzer (fuzz_ipc_handle.c says what it
 * checks): what the bridge's IPC sources need besides themselves (the log, the driver, the
 * pool: vramio_alloc_range over two slabs of the stand-in driver's VMM memory with five
 * blocks in them, and a block of three chunks), the reading and changing of the input, and the
 * other process: a socket of this process's name under NONCE_OTHER, answered by a thread
 * honestly (vb_ipc_serve_one) or as the input scripts it (any status, memory of its own of any
 * size, several or odd descriptors, short or long packets, no answer, an answer about chunks
 * with any count, chunk size and memory), as an exporter of another user may.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fake_gpu.h"
#include "fdpass.h"
#include "fuzz_ipc.h"

/* ---- what the bridge's IPC sources need besides themselves ------------------------------ */
int vb_log_on;

void vb_log(const char *fmt, ...)
{
    va_list ap;

    if (!vb_log_on)
        return;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

const struct vr_cuda *vb_real(void)
{
    return vr_cuda_load(NULL, 0);
}

/* No pool of the bridge's stands in for a default pool here (bridge_mempool.c), and the
 * parts of bridge_fork.c's list that are not built in hold no lock here. */
CUmemoryPool vb_mempool_program_view(CUmemoryPool pool)
{
    return pool;
}

void vb_async_fork(enum vb_fork_phase phase) {}
void vb_resolve_fork(enum vb_fork_phase phase) {}

/* The pool: slabs of the stand-in's VMM memory, blocks in them. */
struct slab slabs[NSLABS];
struct block blocks[NBLOCKS] = {
    { 0, 0, 4096, 0 }, { 0, 4096, 4096, 0 }, { 0, 8192, 512, 0 }, { 0, 1u << 20, 1u << 20, 0 },
    { 1, 0, 3u << 20, 0 }, { 2, 0, SLAB_CHUNKED, 0 },
};
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

CUdeviceptr block_base(unsigned k)
{
    return slabs[blocks[k].slab].base + blocks[k].off;
}

int vramio_alloc_range(unsigned long long ptr, unsigned long long *base, size_t *size)
{
    int rc = ENOENT;
    unsigned k;

    pthread_mutex_lock(&pool_lock);
    for (k = 0; k < NBLOCKS; k++) {
        const struct slab *s = &slabs[blocks[k].slab];

        if (ptr < s->base || ptr - s->base >= s->size)
            continue;
        rc = EFAULT; /* in the pool's memory */
        if (blocks[k].live && ptr >= block_base(k) && ptr - block_base(k) < blocks[k].size) {
            if (base)
                *base = block_base(k);
            if (size)
                *size = blocks[k].size;
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&pool_lock);
    return rc;
}

/* A block allocated (again): a new identity, its bytes a pattern of its own. */
void block_alloc(unsigned k)
{
    static unsigned char gen;
    CUcontext ctx = NULL;

    vb_real()->cuCtxGetCurrent(&ctx);
    pthread_mutex_lock(&pool_lock);
    blocks[k].live = 1;
    pthread_mutex_unlock(&pool_lock);
    vb_block_add(block_base(k), ctx);
    memset((void *)(uintptr_t)block_base(k), 0x10 + (int)k + 16 * (++gen & 7), 64);
}

void block_free(unsigned k)
{
    pthread_mutex_lock(&pool_lock);
    blocks[k].live = 0;
    pthread_mutex_unlock(&pool_lock);
    vb_block_forget(block_base(k));
}

/* ---- the input ------------------------------------------------------------------------- */
uint8_t u8(struct in *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

uint64_t u64(struct in *in)
{
    uint64_t v = 0;
    int i;

    for (i = 0; i < 8; i++)
        v |= (uint64_t)u8(in) << (8 * i);
    return v;
}

/* Values at the edges of what the fields mean: sizes and offsets around units, 2 MiB, the
 * 32-bit and 64-bit limits, and addresses of this process. */
uint64_t edge(struct in *in)
{
    static uint64_t stack_word;
    const uint64_t v[] = {
        0, 1, 2, 0x7f, 0x80, 0xff, 4095, 4096, 4097, 8192, SLAB_SMALL - 1, SLAB_SMALL,
        SLAB_SMALL + 1, SLAB_LARGE, 3u << 20, 0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ull,
        1ull << 47, INT64_MAX, 1ull << 63, UINT64_MAX - 4095, UINT64_MAX - 1, UINT64_MAX,
        (uint64_t)(uintptr_t)&stack_word, slabs[0].base, slabs[1].base, slabs[0].id,
        slabs[1].id, SLAB_SMALL / VB_IPC_UNIT, SLAB_LARGE / VB_IPC_UNIT, VB_IPC_MAGIC,
        VB_IPC_MAGIC_CHUNKS, SLAB_CHUNKED, SLAB_CHUNKED / VB_IPC_UNIT, slabs[2].base,
        slabs[2].id, VB_IPC_CHUNKS, VB_IPC_CHUNKS | VB_IPC_WANT_FD,
    };

    return v[u8(in) % (sizeof(v) / sizeof(v[0]))];
}

void mutate(struct in *in, void *obj, size_t len, const struct field *f, size_t nf)
{
    unsigned kind = u8(in) % 5, i = u8(in) % nf;
    uint64_t v = 0;

    memcpy(&v, (char *)obj + f[i].off, f[i].width);
    switch (kind) {
    case 0: v = edge(in); break;
    case 1: v = u64(in); break;
    case 2: v += (uint64_t)(int8_t)u8(in); break;
    case 3: v ^= 1ull << (u8(in) % (8 * f[i].width)); break;
    default: ((uint8_t *)obj)[u8(in) % len] = u8(in); return;
    }
    memcpy((char *)obj + f[i].off, &v, f[i].width);
}

#define F(type, m) { offsetof(type, m), sizeof(((type *)0)->m) }
const struct field handle_fields[NHANDLE_FIELDS] = {
    F(struct vb_ipc_handle, magic), F(struct vb_ipc_handle, pid), F(struct vb_ipc_handle, nonce),
    F(struct vb_ipc_handle, slab_base), F(struct vb_ipc_handle, slab_id),
    F(struct vb_ipc_handle, block_id), F(struct vb_ipc_handle, offset),
    F(struct vb_ipc_handle, size), F(struct vb_ipc_handle, uid),
    F(struct vb_ipc_handle, slab_units),
};
const struct field req_fields[NREQ_FIELDS] = {
    F(struct vb_ipc_req, base), F(struct vb_ipc_req, id), F(struct vb_ipc_req, size),
    F(struct vb_ipc_req, offset), F(struct vb_ipc_req, bsize), F(struct vb_ipc_req, block_id),
    F(struct vb_ipc_req, flags), F(struct vb_ipc_req, zero),
};

/* ---- the other process: a socket of this process's name under NONCE_OTHER -------------- */
enum { HONEST, STATUS, OWN_MEMORY, ODD_FDS, ODD_LENGTH, CHUNKS };
static struct script {
    int kind;
    int32_t status;
    size_t mem;          /* OWN_MEMORY, ODD_FDS, CHUNKS: the size of the memfds sent */
    int nfd, pipe_fd;    /* ODD_FDS, CHUNKS: how many, and whether one is a pipe's */
    uint8_t len, bytes[12]; /* ODD_LENGTH: the packet (len 0: closed without one) */
    struct vb_ipc_chunks_reply chunks; /* CHUNKS: the answer's words */
    size_t last;         /* CHUNKS: the size of the last memfd */
} script;
static pthread_mutex_t script_lock = PTHREAD_MUTEX_INITIALIZER;
int busy;
unsigned long pipes[MAX_OPS * 2];
unsigned npipes;
int all_honest;

/* An answer about chunks: its status, count and chunk size (honest-looking or edges), and
 * the memfds that come with it (their count and sizes, a pipe among them or not). */
static void chunks_script_read(struct in *in, struct script *s)
{
    const size_t sz[] = { SLAB_SMALL, 4096, SLAB_LARGE, SLAB_SMALL + 4096 };

    s->chunks.status = u8(in) % 4 ? 0 : (int32_t)edge(in);
    s->chunks.nfd = u8(in) % 4 ? 3 : (uint32_t)edge(in);
    s->chunks.chunk = u8(in) % 4 ? SLAB_SMALL : edge(in);
    s->nfd = u8(in) % (FDPASS_MAX + 1);
    s->mem = sz[u8(in) % 4];
    s->last = sz[u8(in) % 4];
    s->pipe_fd = (u8(in) & 7) == 0;
}

void script_read(struct in *in)
{
    struct script s = { 0 };
    const int32_t st[] = { 0, EINVAL, ENOENT, EPROTO, -1, 4095, 4096, INT32_MAX, INT32_MIN };
    unsigned k = u8(in) % 11;

    s.kind = k < 5 ? HONEST : k == 10 ? CHUNKS : (int)k - 4;
    if (s.kind > ODD_LENGTH && s.kind != CHUNKS)
        s.kind = ODD_LENGTH;
    if (s.kind == CHUNKS)
        chunks_script_read(in, &s);
    if (s.kind == STATUS || s.kind == ODD_FDS)
        s.status = st[u8(in) % (sizeof(st) / sizeof(st[0]))];
    if (s.kind == OWN_MEMORY || s.kind == ODD_FDS) {
        const size_t sz[] = { SLAB_SMALL, 4096, SLAB_LARGE, SLAB_SMALL + 4096 };

        s.mem = sz[u8(in) % 4];
    }
    if (s.kind == ODD_FDS) {
        s.nfd = 1 + u8(in) % 3;
        s.pipe_fd = u8(in) & 1;
    }
    if (s.kind == ODD_LENGTH) {
        s.len = u8(in) % (sizeof(s.bytes) + 1);
        for (k = 0; k < s.len; k++)
            s.bytes[k] = u8(in);
    }
    if (s.kind != HONEST)
        all_honest = 0;
    pthread_mutex_lock(&script_lock);
    script = s;
    pthread_mutex_unlock(&script_lock);
}

/* A memfd of the stand-in driver's kind (its import takes it), size bytes of 0xee. */
static int own_memory(size_t size)
{
    int fd = memfd_create(FAKE_GPU_MEMFD_PREFIX "0", MFD_CLOEXEC);

    CHECK(fd >= 0 && !ftruncate(fd, (off_t)size), "memfd: %s", strerror(errno));
    return fd;
}

/* The scripted answer about chunks: its words and its memfds (the last of its own size). */
static void answer_chunks(int c, const struct script *s)
{
    int fds[FDPASS_MAX], n, p[2] = { -1, -1 };
    struct stat st;

    for (n = 0; n < s->nfd; n++)
        fds[n] = own_memory(n + 1 == s->nfd ? s->last : s->mem);
    if (s->pipe_fd && s->nfd && !pipe(p)) {
        if (!fstat(p[0], &st) && npipes < sizeof(pipes) / sizeof(pipes[0]))
            pipes[npipes++] = (unsigned long)st.st_ino;
        close(fds[0]);
        fds[0] = p[0];
    }
    fdpass_send(c, &s->chunks, sizeof(s->chunks), fds, s->nfd);
    while (n--)
        close(fds[n]);
    if (p[0] >= 0)
        close(p[1]);
}

static void answer(int c, const struct script *s)
{
    unsigned char req[128];
    int fds[FDPASS_MAX], n = 0, p[2] = { -1, -1 }, i;

    if (s->kind == HONEST) {
        vb_ipc_serve_one(c);
        return;
    }
    if (s->kind == CHUNKS) { /* after the request: the opener's mapping of them is the point */
        struct pollfd pc = { .fd = c, .events = POLLIN };

        if (poll(&pc, 1, 1000) == 1 && recv(c, req, sizeof(req), 0) > 0)
            answer_chunks(c, s);
        return;
    }
    if (recv(c, req, sizeof(req), MSG_DONTWAIT) < 0 && errno != EAGAIN)
        return;
    switch (s->kind) {
    case STATUS:
        fdpass_send(c, &s->status, sizeof(s->status), NULL, 0);
        break;
    case OWN_MEMORY:
    case ODD_FDS:
        /* ODD_FDS: 1 to 3 descriptors, the first a pipe's where the script says so. */
        if (s->kind == ODD_FDS && s->pipe_fd && !pipe(p)) {
            struct stat st;

            if (!fstat(p[0], &st) && npipes < sizeof(pipes) / sizeof(pipes[0]))
                pipes[npipes++] = (unsigned long)st.st_ino;
            fds[n++] = p[0];
        }
        do
            fds[n++] = own_memory(s->mem);
        while (s->kind == ODD_FDS && n < s->nfd);
        fdpass_send(c, &s->status, sizeof(s->status), fds, s->kind == ODD_FDS ? s->nfd : 1);
        for (i = 0; i < n; i++)
            if (fds[i] != p[0])
                close(fds[i]);
        break;
    default:
        if (s->len)
            fdpass_send(c, s->bytes, s->len, NULL, 0);
        break;
    }
    if (p[0] >= 0)
        close(p[0]), close(p[1]);
}

static void *responder(void *arg)
{
    int lfd = (int)(intptr_t)arg, c;
    struct script s;

    for (;;) {
        c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        __atomic_add_fetch(&busy, 1, __ATOMIC_SEQ_CST);
        pthread_mutex_lock(&script_lock);
        s = script;
        pthread_mutex_unlock(&script_lock);
        answer(c, &s);
        close(c);
        __atomic_sub_fetch(&busy, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

void responder_start(void)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    pthread_t th;
    int s, n;

    n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "vramio-ipc-%u-%u-%016llx",
                 (unsigned)geteuid(), (unsigned)getpid(), (unsigned long long)NONCE_OTHER);
    s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    CHECK(s >= 0 && !bind(s, (struct sockaddr *)&a,
                          (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) &&
          !listen(s, 16), "responder socket: %s", strerror(errno));
    CHECK(!pthread_create(&th, NULL, responder, (void *)(intptr_t)s), "responder thread");
    pthread_detach(th);
}

/* The descriptors that the code under test could leave open: sockets and memfds (a count);
 * a pipe the responder sent that is still open is a leak at once. Others are not counted:
 * libFuzzer's symbolizer opens pipes and /dev/null of its own. */
int fd_count(void)
{
    char path[64], target[128];
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    unsigned long ino;
    unsigned i;
    ssize_t n;
    int count = 0;

    CHECK(d, "/proc/self/fd: %s", strerror(errno));
    while ((e = readdir(d))) {
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        n = readlink(path, target, sizeof(target) - 1);
        if (n <= 0)
            continue;
        target[n] = 0;
        count += !strncmp(target, "socket:", 7) || !strncmp(target, "/memfd:", 7);
        if (sscanf(target, "pipe:[%lu]", &ino) == 1)
            for (i = 0; i < npipes; i++)
                CHECK(ino != pipes[i], "descriptor %s, a pipe the exporter sent, is open",
                      e->d_name);
    }
    closedir(d);
    return count;
}

int fake_int(const char *name)
{
    static void *lib;
    int (*f)(void);

    if (!lib)
        lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    *(void **)&f = lib ? dlsym(lib, name) : NULL;
    CHECK(f, "the stand-in driver has no %s", name);
    return f();
}

/* Map size bytes of a new allocation at p (reserved). */
static void piece_map(CUdeviceptr p, size_t size)
{
    const struct vr_cuda *t = vb_real();
    CUmemAllocationProp prop;
    CUmemGenericAllocationHandle h;
    CUmemAccessDesc access;

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK(t->cuMemCreate(&h, size, &prop, 0) == CUDA_SUCCESS &&
          t->cuMemMap(p, size, 0, h, 0) == CUDA_SUCCESS &&
          t->cuMemSetAccess(p, size, &access, 1) == CUDA_SUCCESS &&
          t->cuMemRelease(h) == CUDA_SUCCESS, "an allocation of the stand-in driver");
}

/* A slab of size bytes: one allocation, or chunks of equal size side by side (chunks > 0). */
void slab_make(struct slab *s, size_t size, unsigned chunks)
{
    const struct vr_cuda *t = vb_real();
    unsigned i;

    CHECK(t->cuMemAddressReserve(&s->base, size, 0, 0, 0) == CUDA_SUCCESS, "a reservation");
    for (i = 0; i < (chunks ? chunks : 1); i++) {
        CUdeviceptr p = s->base + i * (size / (chunks ? chunks : 1));

        piece_map(p, size / (chunks ? chunks : 1));
        memset((void *)(uintptr_t)p, 0xc0 + (int)i, 64); /* each piece its own bytes */
    }
    CHECK(t->cuPointerGetAttribute(&s->id, CU_POINTER_ATTRIBUTE_BUFFER_ID, s->base) ==
          CUDA_SUCCESS, "the slab's id");
    s->size = size;
    s->chunks = chunks;
}

static void slab_unmake(const struct slab *s)
{
    const struct vr_cuda *t = vb_real();
    unsigned i, n = s->chunks ? s->chunks : 1;

    for (i = 0; i < n; i++)
        CHECK(t->cuMemUnmap(s->base + i * (s->size / n), s->size / n) == CUDA_SUCCESS,
              "a slab's piece unmapped");
    CHECK(t->cuMemAddressFree(s->base, s->size) == CUDA_SUCCESS, "a slab's reservation freed");
}

void slab_remake(unsigned i)
{
    struct slab old;
    unsigned k;

    for (k = 0; k < NBLOCKS; k++)
        if (blocks[k].slab == (int)i && blocks[k].live)
            block_free(k);
    slab_unmake(&slabs[i]);
    old = slabs[i];
    slab_make(&slabs[i], slabs[i].size, slabs[i].chunks);
    /* The server's record names base, id and size: a new slab with all three the same (the
     * stand-in's BUFFER_ID is the address) is still the one it exported. */
    exported[i] &= slabs[i].base == old.base && slabs[i].id == old.id;
    /* And to an opener that still has the old one mapped, the new one is the old: with the
     * driver's ids, unique per allocation, they differ. Its bytes are not checked then. */
    if (slabs[i].id == old.id)
        all_honest = 0;
    for (k = 0; k < NBLOCKS; k++)
        if (blocks[k].slab == (int)i)
            block_alloc(k);
}

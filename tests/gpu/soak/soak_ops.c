/* SPDX-License-Identifier: MIT */
/*
 * soak_ops.c - the operations of a soak thread, each checked: every buffer a thread holds
 * always holds what the GPU last wrote into it (a constant from cuMemsetD8, or a pattern from
 * cuMemcpyHtoD), so every CPU read through a mapping is compared with that; every CPU write
 * through a mapping is read back by the GPU (cuMemcpyDtoH) and compared, then undone the same
 * way. Pins are of random sub-ranges at random offsets; copies go through gdr_copy_*_mapping or
 * the _auto copies; a forked child uses or drops the parent's pin and mapping (refused: EACCES,
 * a fault on the mapping) and leaves by exit() or _exit(); the parent's pin works on after it.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "soak.h"
#include "t.h"

#define LIVE      12
#define MAX_COPY  ((size_t)4 << 20)

const char *const soak_op_names[SOAK_NOPS] = {
    "alloc", "free", "read", "write", "auto", "gpu_write", "pool", "fork", "long_pin", "ipc",
    "holder",
};

/* A buffer of this thread: what the GPU last wrote into all of it (constant: seed's low byte
 * everywhere; else pattern(seed, offset)). */
struct buf {
    CUdeviceptr d;
    size_t size;
    int constant;
    uint32_t seed;
};

struct pin {
    gdr_mh_t mh;
    void *map;
    size_t map_len;
    unsigned char *cpu;     /* the CPU address of the pinned start */
    int buf;
    size_t off, len;
};

static __thread struct buf bufs[LIVE];
static __thread struct pin long_pin;
static __thread int long_pinned;

static inline uint8_t pattern(uint32_t seed, uint64_t i)
{
    uint64_t x = (i + seed) * 0x9e3779b97f4a7c15ULL;

    return (uint8_t)(x >> 56) ^ (uint8_t)(seed >> 8);
}

/* What buffer b holds in [off, off + len). */
static void expected(const struct buf *b, size_t off, size_t len, unsigned char *out)
{
    if (b->constant)
        memset(out, (int)(b->seed & 0xff), len);
    else
        for (size_t i = 0; i < len; i++)
            out[i] = pattern(b->seed, off + i);
}

static size_t rand_size(struct soak_thread *t, size_t max)
{
    int bits = 1 + rand_r(&t->seed) % 24;   /* log-uniform: 2 B .. 16 MiB */
    size_t s = ((size_t)1 << bits) + (size_t)rand_r(&t->seed) % ((size_t)1 << bits);

    return s > max ? max : s;
}

/* ---- pins ---------------------------------------------------------------------------------- */
static int pin_range(struct soak_thread *t, CUdeviceptr d, size_t len, struct pin *p)
{
    gdr_info_v2_t info;
    int rc = gdr_pin_buffer_v2(t->g, d, len, 0, &p->mh);

    if (!rc)
        rc = gdr_get_info_v2(t->g, p->mh, &info);
    if (!rc) {
        p->map_len = info.mapped_size;
        rc = gdr_map(t->g, p->mh, &p->map, p->map_len);
        if (rc)
            gdr_unpin_buffer(t->g, p->mh);
    }
    if (rc) {
        soak_error(&t->st, "pin/map 0x%llx+%zu: %s", (unsigned long long)d, len,
                   vramio_last_error());
        return -1;
    }
    p->cpu = (unsigned char *)p->map + (d - info.va);
    return 0;
}

static void unpin(struct soak_thread *t, struct pin *p)
{
    if (gdr_unmap(t->g, p->mh, p->map, p->map_len) || gdr_unpin_buffer(t->g, p->mh))
        soak_error(&t->st, "unmap/unpin: %s", vramio_last_error());
}

/* Pin a random sub-range of a random live buffer: its index, or -1. */
static int pin_some(struct soak_thread *t, struct pin *p)
{
    int k = rand_r(&t->seed) % LIVE;
    struct buf *b = &bufs[k];

    if (!b->d)
        return -1;
    p->buf = k;
    p->off = (size_t)rand_r(&t->seed) % b->size;
    p->len = 1 + (size_t)rand_r(&t->seed) % (b->size - p->off);
    if (p->len > MAX_COPY)
        p->len = MAX_COPY;
    return pin_range(t, b->d + p->off, p->len, p) ? -1 : k;
}

/* ---- checked copies ---------------------------------------------------------------------- */
/* The CPU reads p's range through its mapping; compared with what the GPU wrote. */
static void read_check(struct soak_thread *t, const struct pin *p, int automatic)
{
    unsigned char *got = malloc(p->len), *want = malloc(p->len);
    int rc;

    if (!got || !want) {
        soak_error(&t->st, "out of host memory");
    } else {
        rc = automatic ? vramio_copy_from_mapping_auto(p->mh, got, p->cpu, p->len)
                       : gdr_copy_from_mapping(p->mh, got, p->cpu, p->len);
        expected(&bufs[p->buf], p->off, p->len, want);
        t->st.reads_checked++;
        t->st.bytes_checked += p->len;
        if (rc || memcmp(got, want, p->len))
            soak_error(&t->st, "%sread of %zu bytes at %zu of a %zu-byte buffer: %s",
                       automatic ? "_auto " : "", p->len, p->off, bufs[p->buf].size,
                       rc ? vramio_last_error() : "not what the GPU wrote");
    }
    free(got);
    free(want);
}

/* The CPU writes src into p's range; the GPU reads it back and must see src. */
static void write_check(struct soak_thread *t, const struct pin *p, const unsigned char *src,
                        int automatic)
{
    unsigned char *back = malloc(p->len);
    int rc;

    rc = automatic ? vramio_copy_to_mapping_auto(p->mh, p->cpu, src, p->len)
                   : gdr_copy_to_mapping(p->mh, p->cpu, src, p->len);
    if (!back || rc || cu.dtoh(back, bufs[p->buf].d + p->off, p->len) != CUDA_SUCCESS ||
        memcmp(back, src, p->len))
        soak_error(&t->st, "%swrite of %zu bytes at %zu: %s", automatic ? "_auto " : "", p->len,
                   p->off, rc ? vramio_last_error() : "the GPU read other bytes");
    free(back);
}

/* A CPU write through the mapping, checked, then undone the same way. */
static void write_and_undo(struct soak_thread *t, const struct pin *p, int automatic)
{
    unsigned char *mine = malloc(p->len), *was = malloc(p->len);
    uint32_t s = (uint32_t)rand_r(&t->seed);

    if (mine && was) {
        for (size_t i = 0; i < p->len; i++)
            mine[i] = pattern(s, i);
        write_check(t, p, mine, automatic);
        expected(&bufs[p->buf], p->off, p->len, was);
        write_check(t, p, was, automatic);
    }
    free(mine);
    free(was);
}

/* ---- buffers ------------------------------------------------------------------------------- */
/* The GPU writes all of buffer b: a constant or a pattern. */
static void gpu_write(struct soak_thread *t, struct buf *b)
{
    unsigned char *h = NULL;
    CUresult r;

    b->seed = (uint32_t)rand_r(&t->seed);
    b->constant = rand_r(&t->seed) % 2;
    if (b->constant) {
        r = cu.memset8(b->d, (unsigned char)(b->seed & 0xff), b->size);
    } else {
        h = malloc(b->size);
        if (!h) {
            soak_error(&t->st, "out of host memory");
            return;
        }
        expected(b, 0, b->size, h);
        r = cu.htod(b->d, h, b->size);
    }
    /* The driver may return before a memset or a copy is done: wait for it. */
    if (r == CUDA_SUCCESS)
        r = cu.sync();
    if (r != CUDA_SUCCESS)
        soak_error(&t->st, "GPU write of %zu bytes: CUDA error %d", b->size, (int)r);
    free(h);
}

static void drop_long_pin(struct soak_thread *t)
{
    if (long_pinned)
        unpin(t, &long_pin);
    long_pinned = 0;
}

static void buf_free(struct soak_thread *t, struct buf *b)
{
    if (long_pinned && &bufs[long_pin.buf] == b)
        drop_long_pin(t);
    if (cu.free(b->d) != CUDA_SUCCESS)
        soak_error(&t->st, "cuMemFree: failed");
    b->d = 0;
}

static void op_alloc(struct soak_thread *t, size_t max)
{
    struct buf *b = &bufs[rand_r(&t->seed) % LIVE];
    CUresult r;

    if (b->d)
        buf_free(t, b);
    b->size = rand_size(t, max);
    r = cu.alloc(&b->d, b->size);
    if (r != CUDA_SUCCESS) {
        soak_error(&t->st, "cuMemAlloc(%zu): CUDA error %d", b->size, (int)r);
        b->d = 0;
        return;
    }
    gpu_write(t, b);
}

/* vramio_alloc's own calls: allocate, pin, both copies checked, free. */
static void op_pool(struct soak_thread *t, size_t max)
{
    struct buf *b = &bufs[rand_r(&t->seed) % LIVE], keep = *b;
    unsigned long long d;
    struct pin p;
    size_t size = rand_size(t, max);
    int rc = vramio_alloc(0, size, &d);

    if (rc) {
        soak_error(&t->st, "vramio_alloc(%zu): %s", size, vramio_last_error());
        return;
    }
    if (long_pinned && long_pin.buf == (int)(b - bufs))
        drop_long_pin(t);
    *b = (struct buf){ .d = d, .size = size };
    gpu_write(t, b);
    p.buf = (int)(b - bufs);
    p.off = 0;
    p.len = size < MAX_COPY ? size : MAX_COPY;
    if (pin_range(t, d, p.len, &p) == 0) {
        read_check(t, &p, 0);
        write_and_undo(t, &p, 0);
        unpin(t, &p);
    }
    if (vramio_free(d))
        soak_error(&t->st, "vramio_free: %s", vramio_last_error());
    *b = keep;
}

/* ---- fork ---------------------------------------------------------------------------------- */
static sigjmp_buf fault_jmp;

static void on_fault(int sig)
{
    siglongjmp(fault_jmp, 1);
}

/* The child: the parent's handle and mapping are not its own. Its status: 0 when each call
 * was refused as it should be, else the number of the one that was not. */
static void child(struct soak_thread *t, const struct pin *p, int use, int quick)
{
    unsigned char b[8];
    volatile int bad = 0;

    if (use) {
        struct sigaction sa = { .sa_handler = on_fault };
        volatile unsigned char v;

        if (gdr_copy_from_mapping(p->mh, b, p->cpu, 1) == 0)
            bad = 11;                       /* the parent's pin, used here */
        sigaction(SIGSEGV, &sa, NULL);
        sigaction(SIGBUS, &sa, NULL);
        if (!bad && sigsetjmp(fault_jmp, 1) == 0) {
            v = *(volatile unsigned char *)p->cpu;
            (void)v;
            bad = 12;                       /* the parent's GPU memory, read here */
        }
    } else {
        if (gdr_unmap(t->g, p->mh, p->map, p->map_len) != EACCES)
            bad = 13;
        else if (gdr_unpin_buffer(t->g, p->mh) != EACCES)
            bad = 14;
        else if (gdr_close(t->g) != 0)
            bad = 15;
    }
    if (quick)
        _exit(bad);
    exit(bad);
}

static void op_fork(struct soak_thread *t)
{
    struct pin p;
    int use = rand_r(&t->seed) % 2, quick = rand_r(&t->seed) % 2, status;
    pid_t pid;

    if (pin_some(t, &p) < 0)
        return;
    fflush(NULL);
    pid = fork();
    if (pid == 0)
        child(t, &p, use, quick);
    if (pid < 0 || t_wait_bounded(pid, &status, 30) != 0) {
        soak_error(&t->st, "fork: %s", pid < 0 ? strerror(errno) : "the child did not end");
    } else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        soak_error(&t->st, "a forked child that %s the parent's pin: status %#x (10 + the "
                   "step not refused)", use ? "used" : "dropped", status);
    } else {
        t->st.refusals += 2;   /* the copy and the touch, or the unmap and the unpin */
        (quick ? &t->st.fork_quick_exit : &t->st.fork_exit)[0]++;
    }
    /* The parent's pin and mapping work on. */
    read_check(t, &p, 0);
    unpin(t, &p);
}

/* ---- one operation ------------------------------------------------------------------------- */
void soak_op(struct soak_thread *t, int allow_fork)
{
    static const unsigned char weights[SOAK_NOPS] = {
        [OP_ALLOC] = 12, [OP_FREE] = 4, [OP_READ] = 20, [OP_WRITE] = 16, [OP_AUTO] = 10,
        [OP_GPU_WRITE] = 6, [OP_POOL] = 4, [OP_FORK] = 1, [OP_LONG_PIN] = 6,
    };
    unsigned total = 0, pick;
    struct pin p;
    int op, k;

    for (op = 0; op < SOAK_NOPS; op++)
        total += weights[op];
    pick = (unsigned)rand_r(&t->seed) % total;
    for (op = 0; pick >= weights[op]; op++)
        pick -= weights[op];
    if (op == OP_FORK && !allow_fork)
        op = OP_READ;
    t->st.ops[op]++;
    switch (op) {
    case OP_ALLOC:
        op_alloc(t, (size_t)16 << 20);
        break;
    case OP_FREE:
        k = rand_r(&t->seed) % LIVE;
        if (bufs[k].d)
            buf_free(t, &bufs[k]);
        break;
    case OP_READ: case OP_WRITE: case OP_AUTO:
        if (pin_some(t, &p) < 0)
            break;
        if (op != OP_WRITE)
            read_check(t, &p, op == OP_AUTO);
        if (op != OP_READ)
            write_and_undo(t, &p, op == OP_AUTO);
        unpin(t, &p);
        break;
    case OP_GPU_WRITE:
        k = rand_r(&t->seed) % LIVE;
        if (bufs[k].d)
            gpu_write(t, &bufs[k]);
        break;
    case OP_POOL:
        op_pool(t, (size_t)8 << 20);
        break;
    case OP_FORK:
        op_fork(t);
        break;
    default:    /* OP_LONG_PIN: one pin kept across operations, read now and then */
        if (!long_pinned)
            long_pinned = pin_some(t, &long_pin) >= 0;
        else if (rand_r(&t->seed) % 4 == 0)
            drop_long_pin(t);
        else
            read_check(t, &long_pin, rand_r(&t->seed) % 2);
    }
}

void soak_thread_end(struct soak_thread *t)
{
    drop_long_pin(t);
    for (int k = 0; k < LIVE; k++)
        if (bufs[k].d)
            buf_free(t, &bufs[k]);
}

/* SPDX-License-Identifier: MIT */
/*
 * t_fork_more.c - GDRCopy 2.6's invalidation_fork_map_and_free and
 * invalidation_fork_child_gdr_pin_parent_with_tokens, and the extended leakage_pin_pages_fork.
 * The first two fork before CUDA starts (T_FORK_FIRST), so that parent and child each have
 * GPU memory of their own; every child leaves through exit(), and every wait is bounded.
 */
#include "harness.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_loader.h"

#define MF_SIZE GPU_PAGE_SIZE

/* Read one message of n bytes from fd within seconds; 0, or -1 (timeout, EOF, error). */
static int read_within(int fd, void *buf, size_t n, int seconds)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    size_t got = 0;
    ssize_t r;

    while (got < n) {
        if (poll(&p, 1, seconds * 1000) != 1)
            return -1;
        r = read(fd, (char *)buf + got, n - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* Both sides: their own memory, gdr_t, pin and mapping, written with their own pattern. */
struct side {
    struct gm_buf b;
    gdr_t g;
    gdr_mh_t mh;
    void *map;
    size_t map_size;
    char *p;
    unsigned char data[256];
};

static void side_setup(struct side *s, uint32_t seed)
{
    t_init_kind();
    t_alloc(MF_SIZE, &s->b);
    s->g = t_open();
    s->p = t_pin_map(s->g, s->b.dptr, MF_SIZE, &s->mh, &s->map, &s->map_size);
    t_pattern(s->data, sizeof(s->data), seed);
    T_ASSERT_OK(gdr_copy_to_mapping(s->mh, s->p, s->data, sizeof(s->data)));
}

/* The child maps its own memory, frees it under the mapping (its mapping is invalidated or
 * kept, per backend), tells the parent, then releases everything. */
static int map_and_free_child(void *arg)
{
    int fd = *(int *)arg;
    struct side s;
    char done = 'F';

    side_setup(&s, 0x1234);
    t_free(&s.b);
    T_ASSERT(write(fd, &done, 1) == 1, "cannot tell the parent: %s", strerror(errno));
    t_unmap_unpin(s.g, s.mh, s.map, s.map_size);
    T_ASSERT_OK(gdr_close(s.g));
    return 0;
}

T_CASE(invalidation_fork_map_and_free, T_UPSTREAM | T_FORK_FIRST,
       "a child's free under its own mapping spares the parent's")
{
    unsigned char got[256];
    struct side s;
    int pfd[2], st;
    char msg = 0;
    pid_t pid;

    T_ASSERT(pipe(pfd) == 0, "pipe: %s", strerror(errno));
    pid = t_fork(map_and_free_child, &pfd[1]);
    close(pfd[1]);
    side_setup(&s, 0x5678);
    if (read_within(pfd[0], &msg, 1, 60) != 0) {
        st = t_wait_child(pid, 60);
        if (st == 77)
            t_skip_exit("the child could not use the %s kind", gm_kind_name(T.kind));
        t_fail_exit("the child did not report its gpuMemFree (status %d)", st);
    }
    /* The child's free must not have touched the parent's mapping. */
    memset(got, 0, sizeof(got));
    T_ASSERT_OK(gdr_copy_from_mapping(s.mh, got, s.p, sizeof(got)));
    t_compare(s.data, got, sizeof(got), "the parent's mapping after the child's free");
    t_check_gpu(&s.b, 0, s.data, sizeof(s.data), "the parent's memory after the child's free");
    st = t_wait_child(pid, 60);
    T_ASSERT(st == 0, "the child ended with status %d", st);
    close(pfd[0]);
    t_unmap_unpin(s.g, s.mh, s.map, s.map_size);
    T_ASSERT_OK(gdr_close(s.g));
    t_free(&s.b);
}

struct token_msg {
    uint64_t addr;
    CUDA_POINTER_ATTRIBUTE_P2P_TOKENS tokens;
};

/* The child opens its own gdr_t and tries to pin its parent's memory with the parent's
 * tokens (which could be guessed): that must fail. EOF on the pipe: nothing to try. */
static int pin_with_tokens_child(void *arg)
{
    int fd = *(int *)arg;
    struct token_msg m;
    gdr_mh_t mh = { 0 };
    gdr_t g = gdr_open();

    if (read_within(fd, &m, sizeof(m), 60) != 0)
        return 0;
    if (!g)
        return 0; /* nothing usable in the child: nothing can be pinned either */
    if (gdr_pin_buffer(g, m.addr, MF_SIZE, m.tokens.p2pToken, m.tokens.vaSpaceToken, &mh) == 0)
        t_fail_exit("the child pinned its parent's memory 0x%" PRIx64 " with the parent's tokens",
                    m.addr);
    gdr_close(g);
    return 0;
}

T_CASE(invalidation_fork_child_gdr_pin_parent_with_tokens, T_FORK_FIRST,
       "a child cannot pin its parent's memory with the parent's P2P tokens")
{
    const struct vr_cuda *cu;
    struct token_msg m = { 0 };
    struct gm_buf b;
    int pfd[2], st;
    CUresult cr;
    pid_t pid;

    if (T.kind != GM_CUDA)
        t_skip_exit("P2P tokens exist only for cuMemAlloc memory (kind cuda), not %s",
                    gm_kind_name(T.kind));
    T_ASSERT(pipe(pfd) == 0, "pipe: %s", strerror(errno));
    pid = t_fork(pin_with_tokens_child, &pfd[0]);
    close(pfd[0]);
    t_init_kind();
    cu = gm_cuda();
    t_alloc(MF_SIZE, &b);
    cr = cu->cuPointerGetAttribute(&m.tokens, CU_POINTER_ATTRIBUTE_P2P_TOKENS,
                                   (CUdeviceptr)b.dptr);
    if (cr != CUDA_SUCCESS) {
        close(pfd[1]);
        t_wait_child(pid, 60);
        t_skip_exit("this CUDA driver gives no P2P tokens: %s", vr_cuda_errstr(cr));
    }
    m.addr = b.dptr;
    T_ASSERT(write(pfd[1], &m, sizeof(m)) == (ssize_t)sizeof(m), "write: %s", strerror(errno));
    st = t_wait_child(pid, 60);
    T_ASSERT(st == 0, "the child ended with status %d", st);
    close(pfd[1]);
    t_free(&b);
}

struct pages_fork {
    gdr_t g;
    char *p;
    int through_exit;
};

/* The child: the parent's mapping faults, its gdr_t is refused; then it leaves. */
static int pages_child(void *arg)
{
    struct pages_fork *a = arg;
    gdr_mh_t mh;

    if (t_access(a->p, 0) == 0)
        t_fail_exit("the child could read its parent's mapping");
    T_ASSERT_EQ_ERR(gdr_pin_buffer_v2(a->g, 0x1000, MF_SIZE, 0, &mh), EACCES);
    return 0;
}

/* Extended (-e): pinned pages across many forks: children ending through exit() and
 * _exit() leak no pin, descriptor or mapping of the parent's, and its data stays. */
T_CASE(leakage_pin_pages_fork, T_EXTENDED,
       "pinned pages across many forks: nothing leaks, the parent's data stays")
{
    const int cycles = 24, pages = 4;
    struct gm_buf b;
    gdr_mh_t mh[4];
    void *map[4];
    size_t size[4];
    char *p[4];
    unsigned char want[4][128], got[128];
    uint64_t pins_before = 0, pins_after = 0;
    int fds_before, fds_after, st;
    struct pages_fork a;
    gdr_t g;

    t_alloc((size_t)pages * GPU_PAGE_SIZE, &b);
    g = t_open();
    for (int i = 0; i < pages; i++) {
        p[i] = t_pin_map(g, b.dptr + (uint64_t)i * GPU_PAGE_SIZE, GPU_PAGE_SIZE, &mh[i], &map[i],
                         &size[i]);
        t_pattern(want[i], sizeof(want[i]), 100 + (uint32_t)i);
        T_ASSERT_OK(gdr_copy_to_mapping(mh[i], p[i], want[i], sizeof(want[i])));
    }
    a = (struct pages_fork){ .g = g, .p = p[0] };
    st = t_in_child(pages_child, &a); /* the first fork may set up process-wide state */
    T_ASSERT(st == 0, "the first child ended with status %d", st);
    fds_before = t_count_fds();
    gm_live_pins(&pins_before);
    for (int c = 0; c < cycles; c++) {
        int i = c % pages;

        a.p = p[i];
        st = t_in_child_ending(pages_child, &a, c % 2 == 0);
        T_ASSERT(st == 0, "child %d (%s) ended with status %d", c, c % 2 ? "_exit" : "exit", st);
        /* The parent re-pins one page per cycle while the others stay mapped. */
        t_unmap_unpin(g, mh[i], map[i], size[i]);
        p[i] = t_pin_map(g, b.dptr + (uint64_t)i * GPU_PAGE_SIZE, GPU_PAGE_SIZE, &mh[i], &map[i],
                         &size[i]);
        memset(got, 0, sizeof(got));
        T_ASSERT_OK(gdr_copy_from_mapping(mh[i], got, p[i], sizeof(got)));
        t_compare(want[i], got, sizeof(got), "the parent's page after a child");
    }
    fds_after = t_count_fds();
    gm_live_pins(&pins_after);
    t_log("fds %d -> %d, provider pins %" PRIu64 " -> %" PRIu64 " over %d forks", fds_before,
          fds_after, pins_before, pins_after, cycles);
    T_ASSERT(fds_after <= fds_before + (gm_kind_is_cuda(T.kind) ? 2 : 0),
             "%d descriptors leaked over %d forks", fds_after - fds_before, cycles);
    T_ASSERT(pins_after <= pins_before, "%" PRIu64 " provider pins leaked over %d forks",
             pins_after - pins_before, cycles);
    for (int i = 0; i < pages; i++)
        t_unmap_unpin(g, mh[i], map[i], size[i]);
    T_ASSERT_OK(gdr_close(g));
    t_free(&b);
}

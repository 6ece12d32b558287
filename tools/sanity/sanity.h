/* SPDX-License-Identifier: MIT */
/*
 * sanity.h - the gdrcopy_sanity test harness. Each test runs in a child process made by the
 * runner (tools/sanity.c) for one allocation kind; it ends by returning (pass), or through
 * t_fail / t_skip, which report one line to the runner and exit the child. Tests use only the
 * public API (gdrapi.h, vramio.h) and the GPU-memory helper (common/gpumem.h).
 */
#ifndef TOOLS_SANITY_H
#define TOOLS_SANITY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gdrapi.h"
#include "vramio.h"
#include "../common/gpumem.h"

/* What the running test may know about its environment. */
struct t_env {
    enum gm_kind kind;  /* where its GPU memory comes from */
    int gpu;
    int verbose;
    int report_fd;      /* the runner reads the reason of a failure or skip here */
};
extern struct t_env T;

/* Test flags. */
#define T_ONCE 1u       /* needs no GPU memory: run once, not once per allocation kind */
#define T_UPSTREAM 2u   /* upstream names it NAME_cumemalloc (kind cuda) and NAME_vmmalloc */
#define T_FORK_FIRST 4u /* forks before CUDA starts: the test calls t_init_kind() itself */
#define T_EXTENDED 8u   /* long: run only with -e, as upstream's extended tests */

struct t_case {
    const char *name;
    void (*fn)(void);
    unsigned flags;
    const char *what;   /* one line for -l */
};
extern const struct t_case t_cases[];
extern const size_t t_case_count;

__attribute__((noreturn, format(printf, 3, 4)))
void t_fail_at(const char *file, int line, const char *fmt, ...);
__attribute__((noreturn, format(printf, 1, 2)))
void t_skip(const char *fmt, ...);
__attribute__((format(printf, 1, 2)))
void t_log(const char *fmt, ...);

#define t_fail(...) t_fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define T_ASSERT(cond, ...) do { if (!(cond)) t_fail(__VA_ARGS__); } while (0)
/* expr must return 0. */
#define T_OK(expr) do {                                                                   \
        int t_rc_ = (expr);                                                               \
        if (t_rc_)                                                                        \
            t_fail("%s returned %d (%s; %s)", #expr, t_rc_, vramio_strerror(t_rc_),       \
                   vramio_last_error());                                                  \
    } while (0)
/* expr must return an error (non-zero, never -1). */
#define T_ERR(expr) do {                                                                  \
        int t_rc_ = (expr);                                                               \
        if (t_rc_ == 0 || t_rc_ < 0)                                                      \
            t_fail("%s returned %d, expected a positive errno", #expr, t_rc_);            \
    } while (0)
/* expr must return exactly err. */
#define T_EQ_ERR(expr, err) do {                                                          \
        int t_rc_ = (expr);                                                               \
        if (t_rc_ != (err))                                                               \
            t_fail("%s returned %d (%s), expected %d (%s)", #expr, t_rc_,                 \
                   vramio_strerror(t_rc_), (err), vramio_strerror(err));                  \
    } while (0)

/* gdr_open, failing the test with every backend's reason when nothing is usable. */
gdr_t t_open(void);
/* Allocate with the test's kind; skip when the kind cannot allocate here. */
void t_alloc(size_t size, struct gm_buf *buf);
void t_free(struct gm_buf *buf);
/* The backend that serves g, as a name. */
const char *t_backend(gdr_t g);
/* Pin with gdr_pin_buffer_v2 (flags 0) and map the whole pinned range; returns the CPU
 * address of addr (not of info.va). */
char *t_pin_map(gdr_t g, uint64_t addr, size_t size, gdr_mh_t *mh, void **map, size_t *map_size);
void t_unmap_unpin(gdr_t g, gdr_mh_t mh, void *map, size_t map_size);

/* A deterministic pattern (seeded) and a comparison that fails the test with the first
 * differing offset. */
void t_pattern(void *buf, size_t n, uint32_t seed);
void t_compare(const void *want, const void *got, size_t n, const char *what);
/* Check the GPU memory at off through the kind's own path against want. */
void t_check_gpu(const struct gm_buf *b, size_t off, const void *want, size_t n, const char *what);

/* Make the test's allocation kind usable in this process (what the runner does before a test
 * without T_FORK_FIRST); skips the test when it cannot. */
void t_init_kind(void);
/* Open descriptors of this process (for the leak tests). */
int t_count_fds(void);

/* Touch one byte at p (read, or write when write != 0); 0 if it worked, else the signal
 * (SIGSEGV, SIGBUS) that the access raised. */
int t_access(volatile char *p, int write);
/* Run fn(arg) in a forked child that leaves through exit() with fn's value (or _exit() when
 * through_exit is 0: both paths must work); returns its exit status, 128 + signal if killed,
 * and fails the test when the child does not end within 60 s. */
int t_in_child(int (*fn)(void *), void *arg);
int t_in_child_ending(int (*fn)(void *), void *arg, int through_exit);
/* Fork a child running fn(arg), then exit(); the pid, for t_wait_child. */
pid_t t_fork(int (*fn)(void *), void *arg);
/* Its exit status (128 + signal when killed); a child alive after seconds is killed and the
 * test fails. */
int t_wait_child(pid_t pid, unsigned seconds);

/* The tests, one function each (grouped by file: t_basic.c, t_data.c, t_invalidate.c,
 * t_fork.c, t_ours.c). */
void test_basic(void);
void test_basic_v2(void);
void test_basic_v2_forcepci(void);
void test_basic_with_tokens(void);
void test_basic_unaligned_mapping(void);
void test_basic_small_buffers_mapping(void);
void test_basic_child_thread_pins_buffer(void);
void test_data_validation(void);
void test_data_validation_v2(void);
void test_data_validation_forcepci(void);
void test_data_validation_mix_mappings(void);
void test_invalidation_access_after_gdr_close(void);
void test_invalidation_access_after_free(void);
void test_invalidation_two_mappings(void);
void test_invalidation_fork_access_after_free(void);
void test_invalidation_fork_after_gdr_map(void);
void test_invalidation_fork_child_gdr_map_parent(void);
void test_invalidation_fork_child_gdr_open(void);
void test_invalidation_fork_map_and_free(void);
void test_invalidation_fork_child_gdr_pin_parent_with_tokens(void);
void test_leakage_pin_pages_fork(void);
void test_invalidation_unix_sock_shared_fd_gdr_pin_buffer(void);
void test_invalidation_unix_sock_shared_fd_gdr_map(void);
void test_attributes_sanity(void);
void test_leakage_extended(void);
void test_thread_stress(void);
void test_stale_handles(void);
void test_foreign_handles(void);
void test_bad_arguments(void);

#endif /* TOOLS_SANITY_H */

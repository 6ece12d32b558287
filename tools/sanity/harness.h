/* SPDX-License-Identifier: MIT */
/*
 * harness.h - the gdrcopy_sanity test harness (harness.c). Each test file defines and
 * registers its tests with T_CASE; the runner (tools/sanity.c) runs each in a child process for
 * one allocation kind. A test ends by returning (pass, unless a T_CHECK recorded a failure), or
 * through t_fail_exit / t_skip_exit, which report one line to the runner and exit the child.
 * Tests use the public API (gdrapi.h, vramio.h) and the GPU-memory helper (common/gpumem.h);
 * three reach below the library where the test is about what lies there: t_basic.c and
 * t_fork_more.c ask the CUDA driver for P2P tokens through util's loader (cuda_loader.h), and
 * t_fork.c calls gdrdrv's ioctls on an inherited descriptor (uapi/gdrdrv.h); and the harness
 * asks it whether the GPU is coherent (t_force_pcie_must_pin).
 */
#ifndef TOOLS_SANITY_HARNESS_H
#define TOOLS_SANITY_HARNESS_H

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
    const char *file;   /* where it is defined: the runner orders the tests by file, then line */
    int line;
};

/*
 * T_CASE(name, flags, what) { body } defines the test "name" and registers it: a pointer to
 * its t_case goes into the linker section t_cases, which the runner reads between the
 * linker's __start_t_cases and __stop_t_cases. Adding a test is this one edit in a test file.
 * Pointers, not the structs themselves: the compiler may align a struct more than its size
 * (padding between entries), never a pointer.
 */
#define T_CASE(id, flags_, what_)                                                         \
    static void test_##id(void);                                                          \
    static const struct t_case t_case_##id = { #id, test_##id, (flags_), (what_),        \
                                               __FILE__, __LINE__ };                      \
    static const struct t_case *const t_case_ref_##id                                     \
        __attribute__((used, section("t_cases"), aligned(sizeof(void *)))) = &t_case_##id; \
    static void test_##id(void)

/*
 * Two kinds of check, named apart:
 *   T_ASSERT*, t_fail_exit: fail and exit. The test (or the forked child) ends here; use
 *                      them when what follows depends on the check.
 *   T_CHECK*, t_record: record and continue. The failure is kept and the test goes on; it
 *                      fails when it ends (or at the next T_ASSERT), with every recorded
 *                      reason. They return 1 when the check passed, so that a dependent
 *                      check can be skipped: if (T_CHECK_OK(get(&v))) T_CHECK(v == 1, ...).
 * The OK forms want expr to return 0; ERR a positive errno (never 0, never -1); EQ_ERR
 * exactly err.
 */
__attribute__((noreturn, format(printf, 3, 4)))
void t_fail_exit_at(const char *file, int line, const char *fmt, ...);
__attribute__((format(printf, 3, 4)))
void t_record_at(const char *file, int line, const char *fmt, ...);
__attribute__((noreturn, format(printf, 1, 2)))
void t_skip_exit(const char *fmt, ...);
__attribute__((format(printf, 1, 2)))
void t_log(const char *fmt, ...);
/* Report the failures this process recorded, if any; returns their number (the runner and
 * t_in_child then end the test or child with status 1). */
int t_report_recorded(void);

#define t_fail_exit(...) t_fail_exit_at(__FILE__, __LINE__, __VA_ARGS__)
#define t_record(...) t_record_at(__FILE__, __LINE__, __VA_ARGS__)

/* The checks, once: on failure, act (t_fail_exit or t_record) says why; the value is 1 if it
 * held. */
#define T_COND_(cond, act, ...) ({ int t_ok_ = !!(cond); if (!t_ok_) act(__VA_ARGS__); t_ok_; })
#define T_OK_(expr, text, act) ({                                                         \
        int t_rc_ = (expr);                                                               \
        if (t_rc_)                                                                        \
            act("%s returned %d (%s; %s)", text, t_rc_, vramio_strerror(t_rc_),           \
                vramio_last_error());                                                     \
        t_rc_ == 0; })
#define T_ERR_(expr, text, act) ({                                                        \
        int t_rc_ = (expr);                                                               \
        if (t_rc_ <= 0)                                                                   \
            act("%s returned %d, expected a positive errno", text, t_rc_);                \
        t_rc_ > 0; })
#define T_EQ_ERR_(expr, err, text, act) ({                                                \
        int t_rc_ = (expr);                                                               \
        if (t_rc_ != (err))                                                               \
            act("%s returned %d (%s), expected %d (%s)", text, t_rc_,                     \
                vramio_strerror(t_rc_), (err), vramio_strerror(err));                     \
        t_rc_ == (err); })

#define T_ASSERT(cond, ...) ((void)T_COND_(cond, t_fail_exit, __VA_ARGS__))
#define T_ASSERT_OK(expr) ((void)T_OK_(expr, #expr, t_fail_exit))
#define T_ASSERT_ERR(expr) ((void)T_ERR_(expr, #expr, t_fail_exit))
#define T_ASSERT_EQ_ERR(expr, err) ((void)T_EQ_ERR_(expr, err, #expr, t_fail_exit))

#define T_CHECK(cond, ...) T_COND_(cond, t_record, __VA_ARGS__)
#define T_CHECK_OK(expr) T_OK_(expr, #expr, t_record)
#define T_CHECK_ERR(expr) T_ERR_(expr, #expr, t_record)
#define T_CHECK_EQ_ERR(expr, err) T_EQ_ERR_(expr, err, #expr, t_record)

/* gdr_open, failing the test with every backend's reason when nothing is usable. */
gdr_t t_open(void);
/* Allocate with the test's kind; skip when the kind cannot allocate here. */
void t_alloc(size_t size, struct gm_buf *buf);
void t_free(struct gm_buf *buf);
/* The backend that serves g, as a name. */
const char *t_backend(gdr_t g);
/* Whether a GDR_PIN_FLAG_FORCE_PCIE pin must work here: the attribute says the flag is
 * supported and the GPU is coherent (C2C). Upstream's module and dma-buf path refuse the flag
 * on other GPUs although the attribute says 1, and upstream's sanity test waives it there. */
int t_force_pcie_must_pin(gdr_t g);
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

/*
 * The child side of the runner's steps: tools/sanity.c forks a child for each, with T set and
 * T.report_fd its end of the report pipe, and reads what the child reports. The runner calls
 * the harness, never the other way.
 *   t_child_backend: reports the name of the backend gdr_open picks (exit 0), or every
 *                    backend's reason when none is usable (exit 3).
 *   t_child_kind:    T.kind can be allocated and pinned here, or a skip that says why not.
 *   t_child_case:    runs the struct t_case arg, after t_init_kind() unless it is T_ONCE or
 *                    T_FORK_FIRST.
 */
void t_child_backend(void *arg);
void t_child_kind(void *arg);
void t_child_case(void *arg);

#endif /* TOOLS_SANITY_HARNESS_H */

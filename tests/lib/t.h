/* SPDX-License-Identifier: MIT */
/*
 * t.h - the test kit every C test program of vramio uses (unit, white-box, guest, dma-buf,
 * multi-GPU, bridge and GPU tests, the CUDA programs of tests/gpu/bridge too): result lines in the protocol of tests/run.sh and of the
 * QEMU guest's /init (ok NAME / not ok NAME: why / skip NAME: why), the exit codes, one
 * deterministic pattern generator, and the process helpers (re-running this program in a
 * child, bounded waits, reading a byte that may fault, passing an fd over a socket).
 * Shell tests have the same in tests/lib/t.sh.
 */
#ifndef VRAMIO_TEST_T_H
#define VRAMIO_TEST_T_H

#include <pthread.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus      /* the bridge's GPU programs (tests/gpu/bridge, CUDA) are C++ */
extern "C" {
#endif

/* Exit codes of a test program: T_SKIP means "nothing to test here", its last line says why. */
enum { T_PASS = 0, T_FAIL = 1, T_SKIP = 77 };

/* ---- result lines (t.c) ------------------------------------------------------------------ */
void t_ok(const char *name);
/* "not ok NAME: why"; counts a failure. */
__attribute__((format(printf, 2, 3)))
void t_fail(const char *name, const char *why_fmt, ...);
/* "skip NAME: why". */
__attribute__((format(printf, 2, 3)))
void t_skip(const char *name, const char *why_fmt, ...);
/* ok NAME when cond holds, else not ok NAME: <why>. Returns cond. */
__attribute__((format(printf, 3, 4)))
int t_check(int cond, const char *name, const char *why_fmt, ...);
/* Exit status for main: T_FAIL when any result failed, else T_PASS. */
int t_status(void);

/* Deterministic bytes: the same (len, seed) always gives the same buffer, and buffers of
 * different seeds differ nearly everywhere, so a shifted or stale copy shows. */
void t_pattern(void *buf, size_t len, uint64_t seed);

/* ---- processes (t_proc.c) ---------------------------------------------------------------- */
/*
 * Run this program again as "<self> --child <mode>" with the GDRCOPY_* variables cleared and
 * then the NAME=VALUE strings of env (NULL-terminated, may be NULL) set. Its stdout and stderr
 * together go to out (NUL-terminated, truncated to len). Returns its exit status, or -1 when it
 * did not exit normally (the signal number goes to *sig when sig is non-NULL).
 * VRAMIO_TEST_LAUNCHER (e.g. qemu-ppc64le), when set, is the program that runs the child.
 */
int t_run_self(const char *mode, const char *const *env, char *out, size_t len, int *sig);

/* When argv asks for a child mode, its name; else NULL. */
const char *t_child_mode(int argc, char **argv);

/* The folder of the stand-in driver family (tests/fake/fake.mk: "cuda-dmabuf", "cuda-vmm")
 * beside this program's build folder, in dir: 1 when its libcuda.so.1 is there, else 0. */
int t_fake_cuda_dir(const char *family, char *dir, size_t len);

/* Wait for child pid for at most seconds: 0 when it ended (status in *status), else -1
 * after killing it with SIGKILL (a hung child is a failure, never a hung test). */
int t_wait_bounded(pid_t pid, int *status, unsigned seconds);

/* The same, as one number: the child's exit status, 128 + the signal that ended it, or -1
 * when it had not ended after seconds (it is killed). */
int t_wait_child(pid_t pid, unsigned seconds);

/* sem_wait for at most seconds (EINTR does not end it): 0 when s was posted, else -1. The
 * tests that hold a thread inside the library while another forks wait with it. */
int t_sem_wait(sem_t *s, unsigned seconds);
/* Join th within ms milliseconds (its return value in *ret when ret is not NULL): 0, or
 * ETIMEDOUT with the thread left where it is (a hang becomes a failure, not a lost run). */
int t_join_within(pthread_t th, unsigned ms, void **ret);

/* Make the next fork() start something in another thread during its prepare phase: that fork
 * posts go, then waits (at most 10 s) for reached, before any fork handler of the libraries
 * runs (this kit's is registered at the first call, after theirs, so it runs first); the
 * thread, waiting for go, posts reached once it is where the fork should find it.
 * t_fork_armed_saw() then says whether reached came. */
void t_fork_arm(sem_t *go, sem_t *reached);
int t_fork_armed_saw(void);

/* Read one byte at p: 0 when that worked, else the signal it raised (SIGSEGV or SIGBUS). */
int t_touch_faults(const volatile void *p);

/* Pass fd with a 64-bit handle over a UNIX socket (SCM_RIGHTS): 0 or -1. */
int t_send_fd(int sock, int fd, uint64_t handle);
/* Receive what t_send_fd sent: the fd, or -1 (also when no fd came with the message). */
int t_recv_fd(int sock, uint64_t *handle);

/* What a process holds, for the tests that check it gave everything back: its open
 * descriptors, and its mappings whose line in /proc/self/maps contains needle. */
int t_count_fds(void);
int t_count_maps(const char *needle);

/* Let the process open room more descriptors and no more (RLIMIT_NOFILE set to the lowest free
 * one plus room), for the tests of what a call says out of descriptors: the new limit, and
 * the old one in *old for setrlimit to restore. */
struct rlimit;
int t_fd_room(int room, struct rlimit *old);

/* A small file such as a module parameter in sysfs: write s to it (0 or the errno), read
 * the number it starts with (-1 when it cannot be read). */
int t_write_file(const char *path, const char *s);
long t_read_long(const char *path);

#ifdef __cplusplus
}
#endif

#endif /* VRAMIO_TEST_T_H */

/* SPDX-License-Identifier: MIT */
/*
 * check.h - small helpers shared by the unit tests: one result line per case in the runner's
 * format (ok NAME / not ok NAME: why / skip NAME: why), and re-running the test program itself
 * in a child with a chosen environment, to observe what a fresh process prints.
 */
#ifndef VRAMIO_TEST_CHECK_H
#define VRAMIO_TEST_CHECK_H

#include <stddef.h>
#include <sys/types.h>

/* Print "ok name" when cond holds, else "not ok name: <why>" (printf-style). Returns cond. */
__attribute__((format(printf, 3, 4)))
int check(int cond, const char *name, const char *why_fmt, ...);

/* Print "skip name: why". */
__attribute__((format(printf, 2, 3)))
void check_skip(const char *name, const char *why_fmt, ...);

/* Exit status for main: 1 when any check failed, else 0. */
int check_status(void);

/*
 * Run this program again as "<self> --child <mode>" with the GDRCOPY_* variables cleared and
 * then the NAME=VALUE strings of env (NULL-terminated, may be NULL) set. Its stdout and stderr
 * together go to out (NUL-terminated, truncated to len). Returns its exit status, or -1 when it
 * did not exit normally (the signal number goes to *sig when sig is non-NULL).
 * VRAMIO_TEST_LAUNCHER (e.g. qemu-ppc64le), when set, is the program that runs the child.
 */
int run_self(const char *mode, const char *const *env, char *out, size_t len, int *sig);

/* When argv asks for a child mode, its name; else NULL. */
const char *child_mode(int argc, char **argv);

/* Wait for child pid for at most seconds: 0 when it ended (status in *status), else -1
 * after killing it with SIGKILL (a hung child is a failure, never a hung test). */
int wait_bounded(pid_t pid, int *status, unsigned seconds);

/* Read one byte at p: 0 when that worked, else the signal it raised (SIGSEGV or SIGBUS). */
int touch_faults(const volatile void *p);

#endif /* VRAMIO_TEST_CHECK_H */

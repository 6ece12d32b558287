/* SPDX-License-Identifier: MIT */
/*
 * fds.h - the process's file descriptors, for the reason of a call that needed one: a driver
 * that finds none left says only that an OS call failed (CUDA_ERROR_OPERATING_SYSTEM); the
 * user must hear that the descriptor limit was reached, and what to do.
 */
#ifndef VRAMIO_FDS_H
#define VRAMIO_FDS_H

/* EMFILE or ENFILE when the process cannot open one more descriptor now, else 0. */
int vr_fds_exhausted(void);

/* The process's descriptor limit (RLIMIT_NOFILE, soft). */
unsigned long long vr_fds_limit(void);

#endif /* VRAMIO_FDS_H */

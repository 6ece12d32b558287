// SPDX-License-Identifier: MIT
/*
 * fsync_wrap.c - an interposer of the eatmydata/faketime kind: it wraps fsync and finds the
 * next definition with dlsym(RTLD_NEXT), as UCX's libucs does for signal/sigaction. Built as
 * a library to preload (test_interpose.sh) and linked into interpose_client.c itself
 * (-DWRAP_IN_PROGRAM). If RTLD_NEXT gives the wrapper back, it says so instead of recursing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

typedef int (*fsync_fn)(int);

__attribute__((visibility("default"))) int fsync_wrap_calls;
__attribute__((visibility("default"))) int fsync_wrap_self;

__attribute__((visibility("default"))) int fsync(int fd)
{
    fsync_fn next = (fsync_fn)dlsym(RTLD_NEXT, "fsync");

    fsync_wrap_calls++;
    if (!next || next == fsync) {
        fsync_wrap_self = 1; /* the lookup found this wrapper again (or nothing) */
        errno = ELOOP;
        return -1;
    }
    return next(fd);
}

/* SPDX-License-Identifier: MIT */
/* fds.c - the process's file descriptors (see fds.h). */
#include "fds.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

int vr_fds_exhausted(void)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC), err = errno;

    if (fd >= 0) {
        close(fd);
        return 0;
    }
    return err == EMFILE || err == ENFILE ? err : 0;
}

unsigned long long vr_fds_limit(void)
{
    struct rlimit rl = { 0, 0 };

    getrlimit(RLIMIT_NOFILE, &rl);
    return (unsigned long long)rl.rlim_cur;
}

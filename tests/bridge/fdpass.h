/* SPDX-License-Identifier: MIT */
/* fdpass.h - one packet with descriptors (SCM_RIGHTS) on a UNIX socket, for the test programs
 * that answer the bridge's IPC requests as an exporter would, or would not
 * (ipc_client.c's lying exporter, fuzz_ipc_handle.c's scripted ones). */
#ifndef VRAMIO_TESTS_BRIDGE_FDPASS_H
#define VRAMIO_TESTS_BRIDGE_FDPASS_H

#include <string.h>
#include <sys/socket.h>

#define FDPASS_MAX 4

/* Send len bytes of buf with nfd (at most FDPASS_MAX) descriptors: sendmsg's result. */
static inline ssize_t fdpass_send(int c, const void *buf, size_t len, const int *fds, int nfd)
{
    char cbuf[CMSG_SPACE(FDPASS_MAX * sizeof(int))];
    struct iovec iov = { (void *)buf, len };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
    struct cmsghdr *cm;

    if (nfd > 0 && nfd <= FDPASS_MAX) {
        memset(cbuf, 0, sizeof(cbuf));
        m.msg_control = cbuf;
        m.msg_controllen = CMSG_SPACE((size_t)nfd * sizeof(int));
        cm = CMSG_FIRSTHDR(&m);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN((size_t)nfd * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, (size_t)nfd * sizeof(int));
    }
    return sendmsg(c, &m, MSG_NOSIGNAL);
}

#endif /* VRAMIO_TESTS_BRIDGE_FDPASS_H */

/* SPDX-License-Identifier: MIT */
/* hex.h - IPC handles as hex text between test programs and the processes they start
 * (tests/bridge/ipc_client.c, users_client.c, fork_client.c, tests/gpu/bridge/driver_probe.c):
 * out gets 2n digits and a NUL; from_hex gives -1 for anything else. */
#ifndef VRAMIO_TESTS_LIB_HEX_H
#define VRAMIO_TESTS_LIB_HEX_H

#include <stdio.h>
#include <string.h>

static inline void to_hex(const void *p, size_t n, char *out)
{
    const unsigned char *b = p;
    size_t i;

    for (i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

static inline int from_hex(const char *s, void *p, size_t n)
{
    unsigned char *b = p;
    unsigned v;
    size_t i;

    if (!s || strlen(s) != 2 * n)
        return -1;
    for (i = 0; i < n; i++) {
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return -1;
        b[i] = (unsigned char)v;
    }
    return 0;
}

#endif

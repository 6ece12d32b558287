// SPDX-License-Identifier: MIT
/*
 * evil_cuda.c - the libcuda.so.1 that test_bridge_users.sh's second user plants where
 * vramio-run's directory was: loaded by a program, it says so (and in which user).
 */
#include <stdio.h>
#include <unistd.h>

__attribute__((constructor)) static void evil(void)
{
    fprintf(stderr, "EVIL libcuda.so.1 loaded in uid %u\n", (unsigned)geteuid());
}

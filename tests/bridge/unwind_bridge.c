// SPDX-License-Identifier: MIT
/*
 * unwind_bridge.c - a stand-in for libvramio_bridge.so that test_shim.sh loads into the shim
 * (VRAMIO_BRIDGE_LIB) when it unwinds from inside the shim's entries (shim_client.c): every
 * replaced name goes to one function that answers at once, so that a program calling an
 * entry in a loop spends its time in the entry, and no real replacement's work is timed.
 */
#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))

static int answer(void)
{
    return 0;
}

/* The bridge's two names that the shim looks up (bridge/shim.c, load_bridge). */
EXPORT void *vramio_bridge_impl(const char *name)
{
    return name ? (void *)answer : NULL;
}

EXPORT void vramio_bridge_log(const char *fmt, ...)
{
    (void)fmt;
}

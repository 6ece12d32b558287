/* SPDX-License-Identifier: MIT */
/*
 * nocancel.h - calls of vramio that are not cancellation points.
 *
 * A call that takes a lock of the library or of vramio-run's bridge can reach a cancellation
 * point while it holds one: a condition wait (gdr_close waiting for calls in progress, a pin
 * waiting for another thread's import), a socket wait (the bridge's IPC open waiting for the
 * exporter's answer), close() or open() of a descriptor, the write of a log line. A thread
 * cancelled there would leave the lock held for ever, and every later call that needs it
 * would hang, a fork's handler that takes it included. GDRCopy's calls and the CUDA driver's
 * are not documented as cancellation points, and a program cannot clean up our locks, so each
 * such call runs with cancellation disabled: it completes, and a cancel that came meanwhile
 * acts at the thread's next cancellation point after it returns. Calls whose locked parts
 * hold no cancellation point (the copies' lock-free paths, the bridge's attribute lookups)
 * need none of this and pay nothing for it.
 */
#ifndef VRAMIO_NOCANCEL_H
#define VRAMIO_NOCANCEL_H

#include <pthread.h>

static inline int vr_nocancel_begin(void)
{
    int old = PTHREAD_CANCEL_ENABLE;

    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    return old;
}

static inline void vr_nocancel_end(int old)
{
    pthread_setcancelstate(old, NULL);
}

/* The value of call, made with cancellation disabled. */
#define VR_NOCANCEL(call) __extension__({                \
        int vr_nc_old_ = vr_nocancel_begin();            \
        __typeof__(call) vr_nc_rc_ = (call);             \
        vr_nocancel_end(vr_nc_old_);                     \
        vr_nc_rc_;                                       \
    })

#endif

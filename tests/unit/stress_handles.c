/* SPDX-License-Identifier: MIT */
/*
 * stress_handles.c - 16 threads call every entry point at once on one gdr_t (or on NULL where
 * no backend is usable), with garbage, zeroed and stale handles, while other threads open and
 * close their own instances and one closes the shared gdr_t halfway through. Nothing may
 * crash, every bad handle must get EINVAL, and under TSan no data race may be reported.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t.h"
#include "vramio.h"

#define NTHREADS 16
#define ITERS    4000

static gdr_t shared;
static _Atomic int bad_handle_accepted, unexpected_rc, closed_shared;
static char first_problem[256];
static pthread_mutex_t problem_lock = PTHREAD_MUTEX_INITIALIZER;

static void note(_Atomic int *counter, const char *what, int rc)
{
    if ((*counter)++ == 0) {
        pthread_mutex_lock(&problem_lock);
        if (!first_problem[0])
            snprintf(first_problem, sizeof(first_problem), "%s returned %d", what, rc);
        pthread_mutex_unlock(&problem_lock);
    }
}

static unsigned long garbage(unsigned *seed, long id, int i)
{
    switch (rand_r(seed) % 5) {
    case 0: return 0;
    case 1: return (unsigned long)i;
    case 2: return ~0UL - (unsigned long)id;
    case 3: return ((unsigned long)rand_r(seed) << 33) ^ (unsigned long)rand_r(seed);
    default: return (unsigned long)(uintptr_t)&seed[id % 2];
    }
}

/* Calls on handles that are never valid: each must be EINVAL whatever g is. */
static void bad_handle_calls(gdr_t g, gdr_mh_t mh, char *buf)
{
    gdr_info_t info;
    void *va;
    int rc, flag;

    if ((rc = gdr_copy_to_mapping(mh, buf, buf + 64, 64)) != EINVAL)
        note(&bad_handle_accepted, "gdr_copy_to_mapping", rc);
    if ((rc = gdr_copy_from_mapping(mh, buf, buf + 64, 64)) != EINVAL)
        note(&bad_handle_accepted, "gdr_copy_from_mapping", rc);
    if ((rc = gdr_get_info_v2(g, mh, &info)) != EINVAL)
        note(&bad_handle_accepted, "gdr_get_info_v2", rc);
    if ((rc = gdr_get_callback_flag(g, mh, &flag)) != EINVAL)
        note(&bad_handle_accepted, "gdr_get_callback_flag", rc);
    if ((rc = gdr_map(g, mh, &va, 65536)) != EINVAL)
        note(&bad_handle_accepted, "gdr_map", rc);
    if ((rc = gdr_unmap(g, mh, buf, 65536)) != EINVAL)
        note(&bad_handle_accepted, "gdr_unmap", rc);
    if ((rc = gdr_unpin_buffer(g, mh)) != EINVAL)
        note(&bad_handle_accepted, "gdr_unpin_buffer", rc);
}

/* Calls that may succeed on a live gdr_t; only their return code range is checked. */
static void shared_calls(gdr_t g, char *buf)
{
    gdr_mh_t mh = { 0 };
    int rc, v, major, minor;

    rc = gdr_pin_buffer_v2(g, (unsigned long)(uintptr_t)buf, 4096, 0, &mh);
    if (rc == 0) {
        /* Host memory is not GPU memory; should a backend accept it anyway, release it. */
        if ((rc = gdr_unpin_buffer(g, mh)) != 0 && rc != EINVAL)
            note(&unexpected_rc, "gdr_unpin_buffer", rc);
        bad_handle_calls(g, mh, buf); /* now stale */
    } else if (rc < 0) {
        note(&unexpected_rc, "gdr_pin_buffer_v2", rc);
    }
    rc = gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &v);
    if (rc < 0 || (!g && rc != EINVAL))
        note(&unexpected_rc, "gdr_get_attribute", rc);
    rc = gdr_driver_get_version(g, &major, &minor);
    if (rc < 0 || (!g && rc != EINVAL))
        note(&unexpected_rc, "gdr_driver_get_version", rc);
    (void)vramio_last_error();
}

static void *worker(void *arg)
{
    long id = (long)arg;
    unsigned seed = (unsigned)id * 7919u + 1;
    char *buf = calloc(1, 65536 + 128);
    gdr_mh_t mh;
    gdr_t own;
    int i;

    for (i = 0; i < ITERS; i++) {
        mh.h = garbage(&seed, id, i);
        bad_handle_calls(shared, mh, buf);
        shared_calls(shared, buf);
        if (id == 0 && i == ITERS / 2 && shared) {
            /* Close the shared instance while the others are using it. */
            if (gdr_close(shared) != 0)
                note(&unexpected_rc, "gdr_close(shared)", -1);
            closed_shared = 1;
        }
        if (id >= NTHREADS - 4 && i % (ITERS / 4) == 0) {
            own = gdr_open();
            if (own) {
                shared_calls(own, buf);
                bad_handle_calls(own, mh, buf);
                if (gdr_close(own) != 0)
                    note(&unexpected_rc, "gdr_close(own)", -1);
                bad_handle_calls(own, mh, buf); /* a stale gdr_t */
                if (gdr_close(own) != EINVAL)
                    note(&bad_handle_accepted, "gdr_close(stale)", -1);
            }
        }
    }
    free(buf);
    return NULL;
}

int main(void)
{
    pthread_t t[NTHREADS];
    long i;

    shared = gdr_open();
    if (!shared)
        printf("# no usable backend: the threads share a NULL gdr_t\n");
    for (i = 0; i < NTHREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);

    t_check(bad_handle_accepted == 0, "bad_handles_einval_under_contention", "%d, first: %s",
            (int)bad_handle_accepted, first_problem);
    t_check(unexpected_rc == 0, "return_codes_in_range", "%d, first: %s", (int)unexpected_rc,
            first_problem);
    if (shared) {
        int v;

        t_check(closed_shared && gdr_close(shared) == EINVAL &&
                gdr_get_attribute(shared, GDR_ATTR_USE_PERSISTENT_MAPPING, &v) == EINVAL,
                "shared_gdr_stale_after_close", "a closed gdr_t still works");
    } else {
        t_skip("shared_gdr_stale_after_close", "no backend is usable here");
    }
    return t_status();
}

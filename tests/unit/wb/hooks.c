/* SPDX-License-Identifier: MIT */
/* hooks.c - test hooks on the library's internals (see hooks.h). */
#include "wb/hooks.h"

#include <errno.h>
#include <pthread.h>

#include "backends/vulkan_import_cache.h"
#include "handles.h"

int vr_handles_test_insert(void *base, size_t len, int type, unsigned long *token)
{
    struct vr_slot *s;
    int rc = vr_slot_alloc(&vr_pins, NULL, 0, token);

    if (rc)
        return rc;
    s = vr_slot_lock(&vr_pins, *token);
    if (!s)
        return EINVAL;
    vr_slot_set_mapping(s, base, len, type);
    vr_slot_unlock(s);
    return 0;
}

int vr_handles_test_remove(unsigned long token)
{
    struct vr_slot *s = vr_slot_lock(&vr_pins, token);

    if (!s)
        return EINVAL;
    vr_slot_free_locked(&vr_pins, s);
    return 0;
}

size_t vr_icache_count(struct vr_icache *c)
{
    size_t n;

    pthread_mutex_lock(&c->lock);
    n = c->count;
    pthread_mutex_unlock(&c->lock);
    return n;
}

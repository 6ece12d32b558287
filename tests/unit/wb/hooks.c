/* SPDX-License-Identifier: MIT */
/* hooks.c - test hooks on the library's internals (see hooks.h). */
#include "wb/hooks.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "backends/vulkan_import_cache.h"
#include "core/core.h"

/* A pin of no gdr_t (owner 0: no gdr_t call reaches it) and no backend, mapped at base: what
 * the library reads of a pin is all there, so every path that takes a pin handle treats it
 * as one whose GPU memory the copy engine cannot reach (VR_DMA_DEV_NONE). */
int vr_handles_test_insert(void *base, size_t len, int type, unsigned long *token)
{
    struct vr_pin *pin = calloc(1, sizeof(*pin));
    struct vr_slot *s;
    int rc;

    if (!pin)
        return ENOMEM;
    *pin = (struct vr_pin){ .info = { .va = (uintptr_t)base, .mapped_size = len },
                            .map_ptr = base, .map_pid = vr_self_pid(), .map_size = len,
                            .map_copy_len = len, .map_type = (gdr_mapping_type_t)type,
                            .dma_dev = VR_DMA_DEV_NONE };
    rc = vr_slot_alloc(&vr_pins, pin, 0, token);
    if (rc) {
        free(pin);
        return rc;
    }
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
    void *pin;

    if (!s)
        return EINVAL;
    pin = s->obj;
    vr_slot_free_locked(&vr_pins, s);
    free(pin);
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

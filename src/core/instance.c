/* SPDX-License-Identifier: MIT */
/*
 * instance.c - the gdr_t object: choosing the backends from a table it is given (gdr_open),
 * the registry of live gdr_t values with the reference every call holds, closing, and what an
 * instance says about its backends.
 *
 * A lazy backend (backend.h: dmabuf, whose probe calls cuInit) behind a usable one is not
 * probed by gdr_open: where upstream's module opens, upstream never touches CUDA, and neither
 * does gdr_open here. Its probe runs at the first pin the backends before it refuse. A narrow
 * backend (vulkan) that would serve alone must confirm that it can pin before gdr_open
 * answers (backend.h, confirm): a non-NULL gdr_t is a promise that pins work.
 *
 * A gdr_t is a token of the vr_gdrs table, not a pointer: a stale or made-up value is
 * rejected without being dereferenced. Every call on a gdr_t holds a reference for its
 * duration, and gdr_close waits for those to drain before tearing anything down, so a close
 * that races with a slow pin either sees the new pin (and releases it) or makes the pin fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"

#define ALL_BACKENDS ((1u << VRAMIO_BACKEND_COUNT) - 2)

/*
 * Which backends the environment allows, as a mask of (1 << vramio_backend_t). When one is
 * forced, the others get the reason in off (len bytes). EINVAL for an unknown name.
 */
static int allowed_backends(const struct vr_backend_ops *const table[VRAMIO_BACKEND_COUNT],
                            unsigned *mask, char *off, size_t len)
{
    const char *name = getenv("GDRCOPY_BACKEND");
    int b;

    *mask = ALL_BACKENDS;
    if (name && *name) {
        size_t used = 0;

        for (b = VRAMIO_BACKEND_GDRDRV; b < VRAMIO_BACKEND_COUNT; b++) {
            if (strcmp(name, table[b]->name) == 0) {
                *mask = 1u << b;
                snprintf(off, len, "not selected (GDRCOPY_BACKEND=%s)", name);
                return 0;
            }
        }
        used = (size_t)snprintf(off, len, "GDRCOPY_BACKEND=%s is not a backend name (use", name);
        for (b = VRAMIO_BACKEND_GDRDRV; b < VRAMIO_BACKEND_COUNT && used < len; b++)
            used += (size_t)snprintf(off + used, len - used, "%s %s",
                                     b == VRAMIO_BACKEND_GDRDRV ? "" :
                                     b + 1 < VRAMIO_BACKEND_COUNT ? "," : " or",
                                     table[b]->name);
        if (used < len)
            snprintf(off + used, len - used, ")");
        return EINVAL;
    }
    for (b = VRAMIO_BACKEND_GDRDRV; b < VRAMIO_BACKEND_COUNT; b++) {
        if (vr_backend_forced(table[b])) {
            *mask = 1u << b;
            snprintf(off, len, "not selected (%s=1)", table[b]->force_env);
            break;
        }
    }
    return 0;
}

/* Decide about one backend as gdr_open would; on success also make its context (ctx). */
static int consider_backend(const struct vr_backend_ops *ops, unsigned mask, const char *off,
                            void **ctx, char *why, size_t len)
{
    int rc;

    if (!(mask & (1u << ops->id))) {
        snprintf(why, len, "%s", off);
        return ENODEV;
    }
    why[0] = '\0';
    rc = ops->probe(why, len);
    if (rc == 0 && ctx)
        rc = ops->open(ctx, why, len);
    if (rc == 0)
        snprintf(why, len, "usable");
    else if (!why[0])
        snprintf(why, len, "unusable (%s)", vramio_strerror(rc));
    return rc;
}

/* Whether the user chose this backend by name (GDRCOPY_BACKEND). */
static int chosen_by_name(const struct vr_backend_ops *ops)
{
    const char *forced = getenv("GDRCOPY_BACKEND");

    return forced && strcmp(forced, ops->name) == 0;
}

/* Whether the user asked for a backend that needs opting in: by name, or by its variable. */
static int opted_in(const struct vr_backend_ops *ops)
{
    const char *v = getenv(ops->opt_in_env);

    return chosen_by_name(ops) || (v && atoi(v) != 0);
}

/* Leave backend b out of the choice: close its context, keep rc and the reason. */
static void leave_out(struct vr_gdr *gdr, int b, void *ctx[], int ok[], int rc)
{
    if (ctx[b])
        gdr->ops[b].close(ctx[b]);
    ctx[b] = NULL;
    ok[b] = 0;
    gdr->status[b] = rc;
}

int vr_choose_backends(const struct vr_backend_ops *const table[VRAMIO_BACKEND_COUNT],
                       struct vr_gdr *gdr, int open,
                       char *reason, size_t len)
{
    char off[VR_REASON_LEN];
    void *ctx[VRAMIO_BACKEND_COUNT] = { 0 };
    int ok[VRAMIO_BACKEND_COUNT] = { 0 };
    unsigned mask;
    int b, broad = 0, deferred[VRAMIO_BACKEND_COUNT] = { 0 }, before = 0;

    if (allowed_backends(table, &mask, off, sizeof(off))) {
        vr_copy_reason(reason, len, off);
        return EINVAL;
    }
    for (b = VRAMIO_BACKEND_GDRDRV; b < VRAMIO_BACKEND_COUNT; b++)
        vr_backend_merge(&gdr->ops[b], table[b]);
    for (b = VRAMIO_BACKEND_GDRDRV; b < VRAMIO_BACKEND_COUNT; b++) {
        const struct vr_backend_ops *ops = &gdr->ops[b];

        if (open && ops->lazy && before && (mask & (1u << b))) {
            deferred[b] = 1;
            gdr->status[b] = EAGAIN;
            snprintf(gdr->why[b], VR_REASON_LEN, "not probed: %s serves this gdr_t; probed at "
                     "the first pin %s refuses", gdr->ops[before - 1].name,
                     gdr->ops[before - 1].name);
            continue;
        }
        gdr->status[b] = consider_backend(ops, mask, off, open ? &ctx[b] : NULL, gdr->why[b],
                                          VR_REASON_LEN);
        ok[b] = gdr->status[b] == 0;
        broad |= ok[b] && !ops->opt_in_env;
        if (ok[b] && !before)
            before = b + 1;
    }
    /* A narrow backend alone would make gdr_open promise pins it cannot keep: without an
     * opt-in, gdr_open then fails as it does with upstream GDRCopy and no module; opted in,
     * it must first confirm that it can pin at all (backend.h), or gdr_open fails the same
     * way. Beside a broad backend it stays as the fall-through for memory that one refuses. */
    for (b = VRAMIO_BACKEND_GDRDRV; b < VRAMIO_BACKEND_COUNT; b++) {
        const struct vr_backend_ops *ops = &gdr->ops[b];
        char why[VR_REASON_LEN];
        int rc;

        if (!ok[b] || !ops->opt_in_env || broad)
            continue;
        if (!opted_in(ops)) {
            leave_out(gdr, b, ctx, ok, ENODEV);
            snprintf(gdr->why[b], VR_REASON_LEN, "usable, not enabled: set %s=1 for programs "
                     "whose memory is %s", ops->opt_in_env, ops->serves);
            continue;
        }
        why[0] = '\0';
        rc = ops->confirm(!chosen_by_name(ops), why, sizeof(why));
        if (rc) {
            leave_out(gdr, b, ctx, ok, rc);
            vr_reason(gdr->why[b], VR_REASON_LEN, "cannot pin: %s",
                      why[0] ? why : vramio_strerror(rc));
        }
    }
    gdr->nactive = 0;
    for (b = VRAMIO_BACKEND_GDRDRV; b < VRAMIO_BACKEND_COUNT; b++)
        if ((ok[b] || deferred[b]) && open)
            gdr->active[gdr->nactive++] = (struct vr_active){
                &gdr->ops[b], ctx[b], deferred[b] ? VR_ACTIVE_DEFERRED : VR_ACTIVE_READY };
    return 0;
}

int vr_active_ready(struct vr_gdr *gdr, int i, char *why, size_t len)
{
    struct vr_active *a = &gdr->active[i];
    int id = a->ops->id, st = __atomic_load_n(&a->state, __ATOMIC_ACQUIRE), rc;
    void *ctx = NULL;

    if (st == VR_ACTIVE_READY)
        return 0;
    pthread_mutex_lock(&gdr->lazy_lock);
    st = a->state;
    if (st == VR_ACTIVE_DEFERRED) {
        rc = consider_backend(a->ops, ~0u, "", &ctx, gdr->why[id], VR_REASON_LEN);
        gdr->status[id] = rc;
        a->ctx = ctx;
        st = rc ? VR_ACTIVE_FAILED : VR_ACTIVE_READY;
        __atomic_store_n(&a->state, st, __ATOMIC_RELEASE);
        vr_info("gdr_open: backend %s, probed at the first pin %s refused: %s", a->ops->name,
                gdr->active[0].ops->name, gdr->why[id]);
    }
    rc = st == VR_ACTIVE_READY ? 0 : gdr->status[id];
    if (rc)
        snprintf(why, len, "%s", gdr->why[id]);
    pthread_mutex_unlock(&gdr->lazy_lock);
    return rc;
}

/* Close the contexts of the instance's backends that made one. */
static void close_active(struct vr_gdr *gdr)
{
    for (int i = 0; i < gdr->nactive; i++)
        if (gdr->active[i].state == VR_ACTIVE_READY)
            gdr->active[i].ops->close(gdr->active[i].ctx);
}

int vr_instance_open(const struct vr_backend_ops *const backends[VRAMIO_BACKEND_COUNT],
                     struct vr_gdr **out)
{
    struct vr_gdr *gdr = calloc(1, sizeof(*gdr));
    char off[VR_REASON_LEN];
    int b, rc;

    if (!gdr)
        return vr_fail_err(ENOMEM, "gdr_open: out of memory");
    if (vr_choose_backends(backends, gdr, 1, off, sizeof(off))) {
        free(gdr);
        return vr_fail_err(EINVAL, "gdr_open: %s", off);
    }
    gdr->pid = vr_self_pid();
    pthread_mutex_init(&gdr->lazy_lock, NULL);
    /* Why each backend is unusable: an error when that leaves none, else a detail. */
    for (b = VRAMIO_BACKEND_GDRDRV; b < VRAMIO_BACKEND_COUNT; b++)
        if (gdr->status[b])
            vr_log(gdr->nactive ? VR_LOG_DEBUG : VR_LOG_ERROR, "gdr_open: backend %s: %s",
                   gdr->ops[b].name, gdr->why[b]);
    if (gdr->nactive == 0) {
        char all[VR_REASONS_LEN];
        size_t used = 0;

        for (b = VRAMIO_BACKEND_GDRDRV; b < VRAMIO_BACKEND_COUNT; b++)
            used += (size_t)snprintf(all + used, sizeof(all) - used, "%s%s: %s",
                                     used ? "; " : "", gdr->ops[b].name, gdr->why[b]);
        free(gdr);
        return vr_fail_err(ENODEV, "gdr_open: no usable backend (%s)", all);
    }
    rc = vr_slot_alloc(&vr_gdrs, gdr, 0, &gdr->token);
    if (rc) {
        close_active(gdr);
        free(gdr);
        return vr_fail_err(rc, "gdr_open: cannot register the instance: %s", vramio_strerror(rc));
    }
    gdr->slot = vr_slot_at(&vr_gdrs, (uint32_t)(gdr->token & VR_TOKEN_FIELD_MASK));
    vr_info("gdr_open: backend %s%s%s%s%s", gdr->active[0].ops->name,
            gdr->nactive > 1 ? ", then " : "", gdr->nactive > 1 ? gdr->active[1].ops->name : "",
            gdr->nactive > 2 ? ", then " : "", gdr->nactive > 2 ? gdr->active[2].ops->name : "");
    *out = gdr;
    return 0;
}

int vr_gdr_get(gdr_t g, const char *fn, struct vr_gdr **out)
{
    struct vr_slot *s = vr_slot_lock(&vr_gdrs, (unsigned long)(uintptr_t)g);
    struct vr_gdr *gdr;

    if (!s)
        return vr_fail(EINVAL, "%s: %p is not an open gdr_t", fn, (void *)g);
    gdr = s->obj;
    if (gdr->pid != vr_self_pid()) {
        vr_slot_unlock(s);
        return vr_fail(EACCES, "%s: this gdr_t was opened by process %d, the parent of this "
                       "forked process: its pins and mappings are not inherited; call gdr_open "
                       "in this process", fn, (int)gdr->pid);
    }
    if (s->closing) {
        vr_slot_unlock(s);
        return vr_fail(EINVAL, "%s: %p is being closed", fn, (void *)g);
    }
    s->refs++;
    vr_slot_unlock(s);
    *out = gdr;
    return 0;
}

void vr_gdr_put(struct vr_gdr *gdr)
{
    struct vr_slot *s = gdr->slot;

    pthread_mutex_lock(&s->lock);
    if (--s->refs == 0 && s->closing)
        pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->lock);
}

int vr_instance_close_begin(gdr_t g, struct vr_gdr **out)
{
    struct vr_slot *s = vr_slot_lock(&vr_gdrs, (unsigned long)(uintptr_t)g);

    *out = NULL;
    if (!s)
        return vr_fail(EINVAL, "gdr_close: %p is not an open gdr_t", (void *)g);
    if (((struct vr_gdr *)s->obj)->pid != vr_self_pid()) {
        /* A forked child closing what it inherited: the pins and driver objects are the
         * parent's, so nothing is released here (upstream's gdr_close only closes the
         * child's copy of the descriptor). The records are memory of the child, gone at its
         * exit; every later use of g in the child is still refused. */
        vr_slot_unlock(s);
        vr_dbg("gdr_close: %p belongs to the parent process: nothing to release here",
               (void *)g);
        return 0;
    }
    if (s->closing) {
        vr_slot_unlock(s);
        return vr_fail(EINVAL, "gdr_close: %p is already being closed", (void *)g);
    }
    s->closing = 1;
    while (s->refs > 0)
        pthread_cond_wait(&s->idle, &s->lock);
    *out = s->obj;
    vr_slot_unlock(s);
    return 0;
}

void vr_instance_free(struct vr_gdr *gdr)
{
    struct vr_slot *s = gdr->slot;

    close_active(gdr);
    pthread_mutex_destroy(&gdr->lazy_lock);
    pthread_mutex_lock(&s->lock);
    vr_slot_free_locked(&vr_gdrs, s);
    free(gdr);
}

int vr_instance_backend(gdr_t g, vramio_backend_t *backend)
{
    struct vr_gdr *gdr;
    int rc = vr_gdr_get(g, "vramio_get_backend", &gdr);

    if (rc)
        return rc;
    *backend = gdr->active[0].ops->id;
    vr_gdr_put(gdr);
    return 0;
}

int vr_instance_driver_version(gdr_t g, int *major, int *minor)
{
    const struct vr_active *a;
    struct vr_gdr *gdr;
    int rc;

    *major = 0;
    *minor = 0;
    rc = vr_gdr_get(g, "gdr_driver_get_version", &gdr);
    if (rc)
        return rc;
    a = &gdr->active[0];
    *major = a->ops->version.major;
    *minor = a->ops->version.minor;
    rc = a->ops->driver_version(a->ctx, major, minor);
    vr_gdr_put(gdr);
    return rc ? vr_fail(rc, "gdr_driver_get_version: %s", vramio_strerror(rc)) : 0;
}

int vr_instance_attribute(gdr_t g, gdr_attr_t attr, int *v)
{
    const struct vr_active *a;
    struct vr_gdr *gdr;
    int rc = vr_gdr_get(g, "gdr_get_attribute", &gdr);

    if (rc)
        return rc;
    a = &gdr->active[0];
    *v = a->ops->attr[attr];
    rc = a->ops->get_attr(a->ctx, attr, v);
    vr_gdr_put(gdr);
    return rc ? vr_fail(rc, "gdr_get_attribute: %s", vramio_strerror(rc)) : 0;
}

int vr_instance_status(gdr_t g, vramio_backend_t backend, char *reason, size_t len)
{
    struct vr_gdr *gdr;
    int rc = vr_gdr_get(g, "vramio_backend_status", &gdr);

    if (rc) {
        vr_copy_reason(reason, len, vramio_last_error());
        return rc;
    }
    pthread_mutex_lock(&gdr->lazy_lock);
    vr_copy_reason(reason, len, gdr->why[backend]);
    rc = gdr->status[backend];
    pthread_mutex_unlock(&gdr->lazy_lock);
    vr_gdr_put(gdr);
    return rc;
}

int vr_backends_probe(const struct vr_backend_ops *const backends[VRAMIO_BACKEND_COUNT],
                      vramio_backend_t backend, char *reason, size_t len)
{
    struct vr_gdr *probe;
    char off[VR_REASON_LEN];
    int rc;

    /* What gdr_open would decide about this one depends on the others (the opt-in rule). */
    probe = calloc(1, sizeof(*probe));
    if (!probe) {
        vr_copy_reason(reason, len, "out of memory");
        return vr_fail_err(ENOMEM, "vramio_backend_probe: out of memory");
    }
    rc = vr_choose_backends(backends, probe, 0, off, sizeof(off));
    if (rc) {
        vr_copy_reason(reason, len, off);
        free(probe);
        return vr_fail(rc, "vramio_backend_probe: %s", off);
    }
    rc = probe->status[backend];
    vr_copy_reason(reason, len, probe->why[backend]);
    if (rc)
        vr_fail(rc, "vramio_backend_probe: %s: %s", probe->ops[backend].name,
                probe->why[backend]);
    free(probe);
    return rc;
}

int vr_backends_span(const struct vr_backend_ops *const backends[VRAMIO_BACKEND_COUNT], int gpu)
{
    struct vr_gdr *probe = calloc(1, sizeof(*probe));
    char off[VR_REASON_LEN];
    int b, yes = 0;

    /* The first backend gdr_open would use decides: a pin is offered to it first, and a
     * backend that does not span may take a range across chunks and fail it for good where
     * one allocation pinned (gdrdrv's nvidia_p2p_get_pages, dma-buf's export across VMM
     * allocations: never tried on a GPU). Only one that pins by the page anyway comes first
     * then, so chunks would buy nothing there. */
    if (!probe)
        return -1;
    if (vr_choose_backends(backends, probe, 0, off, sizeof(off)) == 0)
        for (b = VRAMIO_BACKEND_GDRDRV; b < VRAMIO_BACKEND_COUNT; b++)
            if (probe->status[b] == 0) {
                yes = probe->ops[b].spans(gpu);
                break;
            }
    free(probe);
    return yes;
}

/* SPDX-License-Identifier: MIT */
/*
 * wb_open_policy.c - white-box test of gdr_open's choice of backends (open.c,
 * vr_choose_backends) with fake backends whose probes answer as a case says: a narrow backend
 * (one with opt_in_env, like vulkan) is used alone only when the user opted in
 * (GDRCOPY_BACKEND=<name> or its variable), beside a broad one it stays as the fall-through,
 * the reason of a left-out one says how to opt in, the environment is read at every call
 * (an LD_PRELOAD bridge sets the variable in its constructor), a left-out backend's context
 * is closed again, and a narrow backend that would serve alone must confirm it can pin.
 * And whether vramio_alloc's pool may make chunks (vr_backends_span): only where the first
 * backend a pin is offered to pins across them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t.h"
#include "core/core.h"

static int probe_rc[VRAMIO_BACKEND_COUNT];
static _Atomic int live_ctx;

static int probe_gdrdrv(char *why, size_t len) { snprintf(why, len, "g"); return probe_rc[1]; }
static int probe_dmabuf(char *why, size_t len) { snprintf(why, len, "d"); return probe_rc[2]; }
static int probe_vulkan(char *why, size_t len) { snprintf(why, len, "v"); return probe_rc[3]; }
/* The narrow backend's confirm (backend.h): its answer, and how it was asked. */
static int confirm_rc, confirm_calls, confirm_every = -1;
static int confirm_vulkan(int every, char *why, size_t len)
{
    confirm_calls++;
    confirm_every = every;
    if (confirm_rc)
        snprintf(why, len, "no Vulkan driver (test)");
    return confirm_rc;
}
static int f_open(void **ctx, char *why, size_t len)
{
    *ctx = &live_ctx;
    live_ctx++;
    return 0;
}
static void f_close(void *ctx) { live_ctx--; }
/* The narrow backend pins across allocations (the vulkan backend with placed maps). */

static int spans_yes(int gpu) { return 1; }

/* Only the choice is exercised: the pin ops are never reached. */
#define FAKE(ID, NAME, PROBE, ENV, SERVES, FORCE) { .id = ID, .name = NAME, .opt_in_env = ENV, \
    .serves = SERVES, .force_env = FORCE, .probe = PROBE, .open = f_open, .close = f_close, \
    .confirm = ENV ? confirm_vulkan : NULL, .spans = ENV ? spans_yes : NULL }
static const struct vr_backend_ops fg = FAKE(VRAMIO_BACKEND_GDRDRV, "gdrdrv", probe_gdrdrv, NULL,
                                             NULL, NULL);
static const struct vr_backend_ops fd = FAKE(VRAMIO_BACKEND_DMABUF, "dmabuf", probe_dmabuf, NULL,
                                             NULL, "GDRCOPY_USE_DMABUF_MMAP");
static const struct vr_backend_ops fv = FAKE(VRAMIO_BACKEND_VULKAN, "vulkan", probe_vulkan,
                                             "VRAMIO_ENABLE_VULKAN", "VMM (test)", NULL);
static const struct vr_backend_ops *const table[VRAMIO_BACKEND_COUNT] = {
    [VRAMIO_BACKEND_GDRDRV] = &fg, [VRAMIO_BACKEND_DMABUF] = &fd, [VRAMIO_BACKEND_VULKAN] = &fv,
};

/* The active backends of a choice as letters in order ("gv"), "-" for none; EINVAL as "E". */
static const char *choose(int g, int d, int v, struct vr_gdr *out)
{
    static char s[8];
    char reason[VR_REASON_LEN];
    int i, n = 0;

    probe_rc[1] = g ? 0 : ENODEV;
    probe_rc[2] = d ? 0 : ENODEV;
    probe_rc[3] = v ? 0 : ENODEV;
    memset(out, 0, sizeof(*out));
    if (vr_choose_backends(table, out, 1, reason, sizeof(reason)))
        return "E";
    for (i = 0; i < out->nactive; i++)
        s[n++] = out->active[i].ops->name[0];
    s[n] = '\0';
    for (i = 0; i < out->nactive; i++)
        out->active[i].ops->close(out->active[i].ctx);
    return n ? s : "-";
}

struct row {
    const char *backend, *enable, *use_dmabuf; /* the environment (NULL: unset) */
    int g, d, v;                               /* probes: 1 usable */
    const char *want;
};

static void set(const char *name, const char *v)
{
    if (v)
        setenv(name, v, 1);
    else
        unsetenv(name);
}

/* A narrow backend that would serve alone is asked to confirm that it can pin (the vulkan
 * backend: a Vulkan driver, a device for the GPU's UUID, a BAR1 window); when it cannot,
 * gdr_open and vramio_backend_probe leave it out with its reason, as upstream fails without
 * its module. Opted in by its variable it must serve every GPU, chosen by name one; beside a
 * broad backend it is not asked (the fall-through finds out at the first pin it gets). */
static void confirm_rules(void)
{
    static const struct {
        const char *backend, *enable;
        int g, rc, calls, every;
        const char *want, *name;
    } rows[] = {
        { NULL, "1", 0, 0, 1, 1, "v", "confirm_opted_in_every_gpu" },
        { NULL, "1", 0, ENODEV, 1, 1, "-", "confirm_refused_opted_in_null" },
        { "vulkan", NULL, 0, 0, 1, 0, "v", "confirm_by_name_one_gpu" },
        { "vulkan", NULL, 0, ENODEV, 1, 0, "-", "confirm_refused_by_name_null" },
        { NULL, "1", 1, ENODEV, 0, -1, "gv", "confirm_not_asked_beside_broad" },
        { NULL, NULL, 0, 0, 0, -1, "-", "confirm_not_asked_without_opt_in" },
    };
    struct vr_gdr gdr;
    size_t i;

    set("GDRCOPY_USE_DMABUF_MMAP", NULL);
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *got;

        set("GDRCOPY_BACKEND", rows[i].backend);
        set("VRAMIO_ENABLE_VULKAN", rows[i].enable);
        confirm_rc = rows[i].rc;
        confirm_calls = 0;
        confirm_every = -1;
        got = choose(rows[i].g, 0, 1, &gdr);
        t_check(strcmp(got, rows[i].want) == 0 && confirm_calls == rows[i].calls &&
                    confirm_every == rows[i].every && live_ctx == 0, rows[i].name,
                "active '%s' (want '%s'), asked %d times (every %d), %d contexts open", got,
                rows[i].want, confirm_calls, confirm_every, (int)live_ctx);
    }
    /* The reason says it cannot pin, and why; the same without contexts (the bridge's way). */
    set("GDRCOPY_BACKEND", NULL);
    set("VRAMIO_ENABLE_VULKAN", "1");
    confirm_rc = ENODEV;
    choose(0, 0, 1, &gdr);
    t_check(gdr.status[VRAMIO_BACKEND_VULKAN] == ENODEV &&
                strcmp(gdr.why[VRAMIO_BACKEND_VULKAN], "cannot pin: no Vulkan driver (test)") == 0,
            "confirm_refused_reason", "%d '%s'", gdr.status[VRAMIO_BACKEND_VULKAN],
            gdr.why[VRAMIO_BACKEND_VULKAN]);
    probe_rc[1] = probe_rc[2] = ENODEV;
    probe_rc[3] = 0;
    memset(&gdr, 0, sizeof(gdr));
    vr_choose_backends(table, &gdr, 0, (char[VR_REASON_LEN]){ 0 }, VR_REASON_LEN);
    t_check(gdr.status[VRAMIO_BACKEND_VULKAN] == ENODEV && live_ctx == 0,
            "confirm_refused_probe_only_same_answer", "status %d",
            gdr.status[VRAMIO_BACKEND_VULKAN]);
    unsetenv("VRAMIO_ENABLE_VULKAN");
    confirm_rc = 0;
}

/* The pool chunks only where the backend every pin is offered first spans: beside gdrdrv or
 * dma-buf (which pin by the page and were never tried across VMM allocations) it does not. */
static void span_rules(void)
{
    static const struct {
        const char *backend, *enable;
        int g, d, v, want;
        const char *name;
    } rows[] = {
        { NULL, "1", 0, 0, 1, 1, "span_vulkan_alone" },
        { "vulkan", NULL, 1, 1, 1, 1, "span_vulkan_by_name_beside_others" },
        { NULL, "1", 1, 0, 1, 0, "span_not_behind_gdrdrv" },
        { NULL, "1", 0, 1, 1, 0, "span_not_behind_dmabuf" },
        { NULL, NULL, 0, 0, 1, 0, "span_not_without_opt_in" },
        { NULL, "1", 0, 0, 0, 0, "span_not_where_vulkan_unusable" },
    };
    size_t i;

    set("GDRCOPY_USE_DMABUF_MMAP", NULL);
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        int got;

        set("GDRCOPY_BACKEND", rows[i].backend);
        set("VRAMIO_ENABLE_VULKAN", rows[i].enable);
        probe_rc[1] = rows[i].g ? 0 : ENODEV;
        probe_rc[2] = rows[i].d ? 0 : ENODEV;
        probe_rc[3] = rows[i].v ? 0 : ENODEV;
        got = vr_backends_span(table, 0);
        t_check(got == rows[i].want && live_ctx == 0, rows[i].name,
                "%d (want %d), %d contexts open", got, rows[i].want, (int)live_ctx);
    }
    set("GDRCOPY_BACKEND", NULL);
    set("VRAMIO_ENABLE_VULKAN", NULL);
}

int main(void)
{
    static const struct row rows[] = {
        { NULL, NULL, NULL, 0, 0, 1, "-" },          /* vulkan alone: gdr_open fails */
        { NULL, "1", NULL, 0, 0, 1, "v" },           /* opted in */
        { NULL, "0", NULL, 0, 0, 1, "-" },
        { NULL, "", NULL, 0, 0, 1, "-" },
        { "vulkan", NULL, NULL, 0, 0, 1, "v" },      /* forced by name */
        { "vulkan", NULL, NULL, 1, 1, 1, "v" },
        { NULL, NULL, NULL, 1, 0, 1, "gv" },         /* fall-through beside gdrdrv */
        { NULL, NULL, NULL, 0, 1, 1, "dv" },         /* ... or beside dmabuf */
        { NULL, NULL, NULL, 1, 1, 1, "gdv" },
        { NULL, "1", NULL, 1, 1, 1, "gdv" },         /* the order is kept */
        { NULL, NULL, NULL, 1, 1, 0, "gd" },
        { NULL, NULL, NULL, 0, 0, 0, "-" },
        { NULL, "1", NULL, 0, 0, 0, "-" },
        { NULL, NULL, "1", 0, 1, 1, "d" },           /* GDRCOPY_USE_DMABUF_MMAP forces dmabuf */
        { NULL, "1", "1", 0, 0, 1, "-" },            /* ... which is unusable here */
        { NULL, NULL, "2", 1, 1, 0, "gd" },          /* exactly "1" forces, as upstream */
        { NULL, NULL, "01", 1, 1, 0, "gd" },
        { "gdrdrv", "1", NULL, 0, 1, 1, "-" },       /* a forced other backend wins */
        { "nothing", NULL, NULL, 1, 1, 1, "E" },
    };
    struct vr_gdr gdr;
    char name[96];
    size_t i;

    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *r = &rows[i];
        const char *got;

        set("GDRCOPY_BACKEND", r->backend);
        set("VRAMIO_ENABLE_VULKAN", r->enable);
        set("GDRCOPY_USE_DMABUF_MMAP", r->use_dmabuf);
        got = choose(r->g, r->d, r->v, &gdr);
        snprintf(name, sizeof(name), "policy_%s_%s_%s_%d%d%d", r->backend ? r->backend : "-",
                 r->enable ? (*r->enable ? r->enable : "empty") : "-",
                 r->use_dmabuf ? r->use_dmabuf : "-", r->g, r->d, r->v);
        t_check(strcmp(got, r->want) == 0, name, "active '%s', want '%s'", got, r->want);
    }

    /* The reason of the left-out backend tells the user what to do; the status is an errno. */
    set("GDRCOPY_BACKEND", NULL);
    set("VRAMIO_ENABLE_VULKAN", NULL);
    set("GDRCOPY_USE_DMABUF_MMAP", NULL);
    choose(0, 0, 1, &gdr);
    t_check(gdr.status[VRAMIO_BACKEND_VULKAN] == ENODEV &&
            strcmp(gdr.why[VRAMIO_BACKEND_VULKAN], "usable, not enabled: set VRAMIO_ENABLE_VULKAN=1 "
                   "for programs whose memory is VMM (test)") == 0, "left_out_reason",
            "%d '%s'", gdr.status[VRAMIO_BACKEND_VULKAN], gdr.why[VRAMIO_BACKEND_VULKAN]);
    t_check(live_ctx == 0, "left_out_context_closed", "%d contexts open", (int)live_ctx);
    choose(1, 0, 1, &gdr);
    t_check(gdr.status[VRAMIO_BACKEND_VULKAN] == 0 &&
            strcmp(gdr.why[VRAMIO_BACKEND_VULKAN], "usable") == 0, "fall_through_reason",
            "%d '%s'", gdr.status[VRAMIO_BACKEND_VULKAN], gdr.why[VRAMIO_BACKEND_VULKAN]);

    /* Read at every call: a bridge's setenv after load takes effect at the next gdr_open. */
    t_check(strcmp(choose(0, 0, 1, &gdr), "-") == 0, "env_before", "vulkan used without opt-in");
    setenv("VRAMIO_ENABLE_VULKAN", "1", 0);
    t_check(strcmp(choose(0, 0, 1, &gdr), "v") == 0, "env_read_each_call",
            "the variable set after the first call was not seen");
    /* A user's explicit setting wins over a tool's setenv(..., 0). */
    setenv("VRAMIO_ENABLE_VULKAN", "0", 1);
    setenv("VRAMIO_ENABLE_VULKAN", "1", 0);
    t_check(strcmp(choose(0, 0, 1, &gdr), "-") == 0, "user_setting_wins", "opted in anyway");

    /* Without contexts (vramio_backend_probe's way) the answer is the same. */
    unsetenv("VRAMIO_ENABLE_VULKAN");
    probe_rc[1] = probe_rc[2] = ENODEV;
    probe_rc[3] = 0;
    memset(&gdr, 0, sizeof(gdr));
    vr_choose_backends(table, &gdr, 0, name, sizeof(name));
    t_check(gdr.status[VRAMIO_BACKEND_VULKAN] == ENODEV && gdr.nactive == 0 && live_ctx == 0,
            "probe_only_same_answer", "status %d active %d", gdr.status[VRAMIO_BACKEND_VULKAN],
            gdr.nactive);
    confirm_rules();
    span_rules();
    return t_status();
}

/* SPDX-License-Identifier: MIT */
/*
 * wb_lazy_probe.c - white-box test of the lazy probe (backend.h, lazy; instance.c,
 * vr_active_ready) with fake backends handed to the instance as its table: a "gdrdrv" that
 * serves addresses below REFUSED and refuses (ENOTSUP) the rest, and a lazy "dmabuf" whose probe
 * counts its calls (the real one calls cuInit) and may fail.
 *
 * Checks: where gdrdrv is usable gdr_open does not probe dmabuf, nor does a pin gdrdrv serves;
 * the first pin gdrdrv refuses probes it once and dmabuf serves it (vramio_handle_backend says
 * so); a failed deferred probe is said in the pin's error and not repeated; gdr_get_attribute
 * answers for gdrdrv; chosen by name, or alone, dmabuf is probed by gdr_open; eight threads
 * whose first pins gdrdrv refuses at once probe it once.
 *
 * Then the real dmabuf backend behind the fake gdrdrv, where the stand-in libcuda.so.1
 * (tests/fake/fake_cuda_dmabuf.c) is on the library path (test_dmabuf_emulated.sh runs this
 * program so; elsewhere that part is a skip): gdr_open calls no cuInit, the first pin of its
 * device memory does, and dmabuf pins it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t.h"
#include "core/core.h"

#define REFUSED (1UL << 40)

static _Atomic int dmabuf_probes, live_pins, live_ctx;
static int gdrdrv_rc, dmabuf_rc;

struct fake_pin {
    int backend;
};

static int g_probe(char *why, size_t len) { snprintf(why, len, "g"); return gdrdrv_rc; }
static int d_probe(char *why, size_t len)
{
    dmabuf_probes++;
    snprintf(why, len, dmabuf_rc ? "cuInit failed (test)" : "d");
    return dmabuf_rc;
}
static int d_open(void **ctx, char *why, size_t len)
{
    *ctx = &live_ctx;
    live_ctx++;
    return 0;
}
static void d_close(void *ctx) { live_ctx--; }

static int pin_as(int backend, const struct vr_pin_req *req, void **pin,
                  struct vr_pin_info *info)
{
    struct fake_pin *p = malloc(sizeof(*p));

    if (!p)
        return ENOMEM;
    p->backend = backend;
    *info = (struct vr_pin_info){ .va = req->va, .mapped_size = req->len, .page_size = 65536 };
    *pin = p;
    live_pins++;
    return 0;
}
static int g_pin(void *ctx, const struct vr_pin_req *req, void **pin, struct vr_pin_info *info,
                 char *why, size_t len)
{
    if (req->addr >= REFUSED) {
        snprintf(why, len, "not memory gdrdrv pins (test)");
        return ENOTSUP;
    }
    return pin_as(VRAMIO_BACKEND_GDRDRV, req, pin, info);
}
static int d_pin(void *ctx, const struct vr_pin_req *req, void **pin, struct vr_pin_info *info,
                 char *why, size_t len)
{
    return ctx == &live_ctx ? pin_as(VRAMIO_BACKEND_DMABUF, req, pin, info) : EBADF;
}
static int f_unpin(void *ctx, void *pin)
{
    free(pin);
    live_pins--;
    return 0;
}

static const struct vr_backend_ops fg = {
    .id = VRAMIO_BACKEND_GDRDRV, .name = "gdrdrv", .attr = { [GDR_ATTR_USING_DMA_BUF_MMAP] = 0 },
    .probe = g_probe, .pin = g_pin, .unpin = f_unpin,
};
static const struct vr_backend_ops fd = {
    .id = VRAMIO_BACKEND_DMABUF, .name = "dmabuf", .force_env = "GDRCOPY_USE_DMABUF_MMAP",
    .lazy = 1, .attr = { [GDR_ATTR_USING_DMA_BUF_MMAP] = 1 },
    .probe = d_probe, .open = d_open, .close = d_close, .pin = d_pin, .unpin = f_unpin,
};
static const struct vr_backend_ops fv = {
    .id = VRAMIO_BACKEND_VULKAN, .name = "vulkan", .opt_in_env = "VRAMIO_ENABLE_VULKAN",
    .serves = "nothing (test)",
};
static const struct vr_backend_ops *const table[VRAMIO_BACKEND_COUNT] = {
    [VRAMIO_BACKEND_GDRDRV] = &fg, [VRAMIO_BACKEND_DMABUF] = &fd, [VRAMIO_BACKEND_VULKAN] = &fv,
};

static gdr_t open_fake(void)
{
    struct vr_gdr *gdr;

    return vr_instance_open(table, &gdr) ? NULL : (gdr_t)(uintptr_t)gdr->token;
}

static int pin(gdr_t g, unsigned long addr, gdr_mh_t *mh)
{
    struct vr_pin_req req = { .addr = addr, .size = 65536 };

    return vr_pin_create(g, &req, mh, "gdr_pin_buffer_v2");
}

static vramio_backend_t served_by(gdr_t g, gdr_mh_t mh)
{
    vramio_backend_t b = VRAMIO_BACKEND_NONE;

    vr_pin_backend(g, mh, &b, "vramio_handle_backend");
    return b;
}

static void real_dmabuf_behind_gdrdrv(void)
{
    static const struct vr_backend_ops *const real[VRAMIO_BACKEND_COUNT] = {
        [VRAMIO_BACKEND_GDRDRV] = &fg, [VRAMIO_BACKEND_DMABUF] = &vr_backend_dmabuf,
        [VRAMIO_BACKEND_VULKAN] = &fv,
    };
    void *l = dlopen("libcuda.so.1", RTLD_NOW);
    int (*inits)(void) = l ? (int (*)(void))dlsym(l, "fake_cuda_inits") : NULL;
    int (*alloc_on)(int, unsigned long long *, size_t) =
        l ? (int (*)(int, unsigned long long *, size_t))dlsym(l, "fake_cuda_alloc_on") : NULL;
    unsigned long long d = 0;
    struct vr_gdr *gdr;
    gdr_mh_t mh;
    int rc, at_open;

    if (!inits || !alloc_on) {
        t_skip("wb_lazy/real_dmabuf_no_cuinit_at_open", "the stand-in libcuda.so.1 is not on "
               "the library path (tests/dmabuf/test_dmabuf_emulated.sh runs this part)");
        return;
    }
    gdrdrv_rc = 0;
    rc = vr_instance_open(real, &gdr);
    at_open = inits();
    t_check(rc == 0 && at_open == 0, "wb_lazy/real_dmabuf_no_cuinit_at_open",
            "gdr_open %d, %d cuInit calls", rc, at_open);
    if (rc || alloc_on(0, &d, 1 << 20) != 0)
        return;
    rc = pin((gdr_t)(uintptr_t)gdr->token, (unsigned long)d, &mh);
    t_check(rc == 0 && inits() > 0 &&
                served_by((gdr_t)(uintptr_t)gdr->token, mh) == VRAMIO_BACKEND_DMABUF,
            "wb_lazy/real_dmabuf_pins_what_gdrdrv_refuses", "rc %d (%s), %d cuInit calls", rc,
            vramio_last_error(), inits());
    gdr_close((gdr_t)(uintptr_t)gdr->token);
}

static void *pin_refused(void *arg)
{
    gdr_mh_t mh;

    return (void *)(intptr_t)pin(arg, REFUSED, &mh);
}

/* Where gdrdrv is usable gdr_open leaves dmabuf alone, and so does a pin gdrdrv serves; the
 * first pin it refuses probes dmabuf, once per gdr_t, and dmabuf serves it; gdr_get_attribute
 * stays gdrdrv's; gdr_close releases the lazily opened context. */
static void probed_at_first_refused_pin(void)
{
    char why[VR_REASON_LEN];
    gdr_mh_t a, b, c;
    gdr_t g = open_fake();
    int rc, v = -1;

    vr_instance_status(g, VRAMIO_BACKEND_DMABUF, why, sizeof(why));
    t_check(g && dmabuf_probes == 0 && strstr(why, "not probed"),
            "wb_lazy/open_leaves_dmabuf_unprobed",
            "gdr_open %p, %d probes, '%s'", (void *)g, (int)dmabuf_probes, why);
    rc = pin(g, 0x10000, &a);
    t_check(rc == 0 && dmabuf_probes == 0 && served_by(g, a) == VRAMIO_BACKEND_GDRDRV,
            "wb_lazy/gdrdrv_pin_leaves_dmabuf_unprobed",
            "rc %d, %d probes", rc, (int)dmabuf_probes);
    rc = pin(g, REFUSED, &b);
    t_check(rc == 0 && dmabuf_probes == 1 && served_by(g, b) == VRAMIO_BACKEND_DMABUF &&
                live_ctx == 1, "wb_lazy/refused_pin_probes_dmabuf_once",
            "rc %d (%s), %d probes, served by %d", rc, vramio_last_error(), (int)dmabuf_probes,
            (int)served_by(g, b));
    rc = pin(g, REFUSED + 65536, &c);
    vr_instance_status(g, VRAMIO_BACKEND_DMABUF, why, sizeof(why));
    t_check(rc == 0 && dmabuf_probes == 1 && strcmp(why, "usable") == 0,
            "wb_lazy/probed_once_per_gdr_t",
            "rc %d, %d probes, '%s'", rc, (int)dmabuf_probes, why);
    vr_instance_attribute(g, GDR_ATTR_USING_DMA_BUF_MMAP, &v);
    t_check(v == 0, "wb_lazy/attributes_stay_gdrdrvs", "USING_DMA_BUF_MMAP %d", v);
    gdr_close(g);
    t_check(live_pins == 0 && live_ctx == 0,
            "wb_lazy/close_releases_lazy_context", "%d pins, %d ctx",
            (int)live_pins, (int)live_ctx);
}

/* A deferred probe that fails: the pin fails with both reasons, the probe is not redone. */
static void failed_probe(void)
{
    gdr_mh_t a, b;
    gdr_t g;
    int rc;

    dmabuf_rc = ENODEV;
    dmabuf_probes = 0;
    g = open_fake();
    rc = pin(g, REFUSED, &b);
    t_check(rc == ENOTSUP && strstr(vramio_last_error(), "cuInit failed (test)") &&
                strstr(vramio_last_error(), "not memory gdrdrv pins"), "wb_lazy/failed_probe_said",
            "rc %d '%s'", rc, vramio_last_error());
    rc = pin(g, REFUSED, &b);
    t_check(rc == ENOTSUP && dmabuf_probes == 1,
            "wb_lazy/failed_probe_not_repeated", "rc %d, %d probes",
            rc, (int)dmabuf_probes);
    t_check(pin(g, 0x10000, &a) == 0, "wb_lazy/gdrdrv_still_pins", "%s", vramio_last_error());
    gdr_close(g);
    dmabuf_rc = 0;
}

/* Eight threads' first pins, all refused by gdrdrv at once: one probe. */
static void concurrent_first_pins(void)
{
    pthread_t th[8];
    int i, bad = 0;
    gdr_t g;

    dmabuf_probes = 0;
    g = open_fake();
    for (i = 0; i < 8; i++)
        pthread_create(&th[i], NULL, pin_refused, g);
    for (i = 0; i < 8; i++) {
        void *r;

        pthread_join(th[i], &r);
        bad += r != NULL;
    }
    t_check(bad == 0 && dmabuf_probes == 1, "wb_lazy/concurrent_first_pins_one_probe",
            "%d pins failed, %d probes", bad, (int)dmabuf_probes);
    gdr_close(g);
}

/* Chosen by name, forced, or alone: gdr_open probes it, as before. */
static void probed_at_open(void)
{
    gdr_t g;

    dmabuf_probes = 0;
    setenv("GDRCOPY_BACKEND", "dmabuf", 1);
    g = open_fake();
    t_check(g && dmabuf_probes == 1,
            "wb_lazy/by_name_probed_at_open", "%d probes", (int)dmabuf_probes);
    gdr_close(g);
    unsetenv("GDRCOPY_BACKEND");
    setenv("GDRCOPY_USE_DMABUF_MMAP", "1", 1);
    g = open_fake();
    t_check(g && dmabuf_probes == 2,
            "wb_lazy/forced_probed_at_open", "%d probes", (int)dmabuf_probes);
    gdr_close(g);
    unsetenv("GDRCOPY_USE_DMABUF_MMAP");
    gdrdrv_rc = ENODEV;
    g = open_fake();
    t_check(g && dmabuf_probes == 3,
            "wb_lazy/alone_probed_at_open", "%d probes", (int)dmabuf_probes);
    gdr_close(g);
    t_check(live_pins == 0 && live_ctx == 0,
            "wb_lazy/nothing_left", "%d pins, %d ctx", (int)live_pins,
            (int)live_ctx);
}

int main(void)
{
    unsetenv("GDRCOPY_BACKEND");
    unsetenv("GDRCOPY_USE_DMABUF_MMAP");
    probed_at_first_refused_pin();
    failed_probe();
    concurrent_first_pins();
    probed_at_open();
    real_dmabuf_behind_gdrdrv();
    return t_status();
}

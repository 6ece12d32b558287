// SPDX-License-Identifier: MIT
/*
 * wb_dmabuf_policy.c - the dma-buf backend's decisions, without a GPU: which CUDA driver may
 * mmap exports, what a failed mmap (errno 524 above all) is reported as, the plan of a pin
 * (its device, host-page range, export flags, whether a refused PCIE flag is retried without
 * it, its mapping type, or why it is refused) from its facts, one result per decision, what a
 * refused export is reported as, and the GDRCOPY_USE_DMABUF_MMAP switch.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_types.h"
#include "backends/backend.h"
#include "backends/dmabuf_policy.h"
#include "gdrapi.h"
#include "t.h"

#define PCIE CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE
#define FORCE GDR_PIN_FLAG_FORCE_PCIE
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void driver_versions(void)
{
    char why[320] = "";
    int rc = vr_dmabuf_driver_check(13000, why, sizeof(why));

    t_check(rc == ENOTSUP && strstr(why, "13.0") && strstr(why, "13.3") && strstr(why, "610"),
            "wb_dmabuf/driver_13_0_too_old", "rc %d why '%s'", rc, why);
    rc = vr_dmabuf_driver_check(12080, why, sizeof(why));
    t_check(rc == ENOTSUP && strstr(why, "12.8"), "wb_dmabuf/driver_12_8_too_old",
            "rc %d why '%s'", rc, why);
    why[0] = '\0';
    rc = vr_dmabuf_driver_check(13030, why, sizeof(why));
    t_check(rc == 0, "wb_dmabuf/driver_13_3_ok", "rc %d why '%s'", rc, why);
    t_check(vr_dmabuf_driver_check(14000, why, sizeof(why)) == 0, "wb_dmabuf/driver_14_0_ok",
            "refused");
}

static void mmap_errors(void)
{
    char why[320];
    int rc = vr_dmabuf_mmap_error(VR_KERNEL_ENOTSUPP, 13000, why, sizeof(why));

    t_check(rc == ENOTSUP && strstr(why, "524") && strstr(why, "13.0"),
            "wb_dmabuf/mmap_524_explained", "rc %d why '%s'", rc, why);
    rc = vr_dmabuf_mmap_error(EACCES, 13030, why, sizeof(why));
    t_check(rc == EACCES && strstr(why, "errno 13"), "wb_dmabuf/mmap_other_errno_kept",
            "rc %d why '%s'", rc, why);
    rc = vr_dmabuf_mmap_error(0, 13030, why, sizeof(why));
    t_check(rc == EIO, "wb_dmabuf/mmap_no_errno_is_eio", "rc %d", rc);
    rc = vr_dmabuf_mmap_error(VR_KERNEL_ENOTSUPP, 13030, why, sizeof(why));
    t_check(rc == ENOTSUP && strstr(why, "13.3") && strstr(why, "this buffer"),
            "wb_dmabuf/mmap_524_on_13_3_is_this_buffers", "rc %d why '%s'", rc, why);
}

/* GDRCopy's rule for GDRCOPY_USE_DMABUF_MMAP: forced by exactly "1". */
static void force_env_rule(void)
{
    static const struct vr_backend_ops ops = { .force_env = "GDRCOPY_USE_DMABUF_MMAP" };
    static const char *const no[] = { "0", "2", "01", "1 ", "yes", "" };

    unsetenv("GDRCOPY_USE_DMABUF_MMAP");
    t_check(!vr_backend_forced(&ops), "wb_dmabuf/not_forced_unset", "forced");
    for (size_t i = 0; i < COUNT(no); i++) {
        setenv("GDRCOPY_USE_DMABUF_MMAP", no[i], 1);
        t_check(!vr_backend_forced(&ops), "wb_dmabuf/not_forced_other", "'%s' forces", no[i]);
    }
    setenv("GDRCOPY_USE_DMABUF_MMAP", "1", 1);
    t_check(vr_backend_forced(&ops), "wb_dmabuf/forced_1", "not forced");
    unsetenv("GDRCOPY_USE_DMABUF_MMAP");
}

/* ---- the plan of a pin: one row per decision ---------------------------------------------- */

/* A pin the plan takes: [a, a + n) of device d, whose memory the driver exports, with pin
 * flags fl, on a host of pages of pg, on a coherent platform (coh) or not. */
#define TAKEN(d, a, n, pg, fl, coh)                                                            \
    { .addr = (a), .size = (n), .pin_flags = (fl), .host_page = (pg),                         \
      .ptr_result = CUDA_SUCCESS, .device = (d), .dmabuf_supported = 1, .coherent = (coh) }
/* The plan wanted: device d, [va, va + n) in pages of pg, export flags ef, the PCIE flag asked
 * (f: its refusal is the pin's), type t. */
#define PLAN(d, va_, n, pg, ef, f, t)                                                          \
    { .device = (d), .va = (va_), .len = (n), .page_size = (pg), .export_flags = (ef),        \
      .pcie_flag = (f), .map_type = (t) }
#define WC GDR_MAPPING_TYPE_WC
#define CACHING GDR_MAPPING_TYPE_CACHING

static const struct plan_case {
    const char *name;
    struct vr_dmabuf_pin_facts facts;
    int err;                   /* the refusal's errno, or 0 */
    const char *says;          /* what its reason says */
    struct vr_dmabuf_plan want;
} plan_cases[] = {
    /* Refused: the next backend is offered the memory (ENOTSUP), or the range is wrong. */
    { "wb_dmabuf/plan_refuses_host_memory",
      { .addr = 0x1000, .size = 64, .host_page = 4096, .ptr_result = CUDA_ERROR_INVALID_VALUE,
        .device = -1 }, ENOTSUP, "not CUDA device memory", { 0 } },
    { "wb_dmabuf/plan_refuses_device_without_dmabuf",
      { .addr = 0x1000, .size = 64, .host_page = 4096, .ptr_result = CUDA_SUCCESS,
        .device = 2 }, ENOTSUP, "device 2 does not support dma-buf", { 0 } },
    { "wb_dmabuf/plan_refuses_wrap_in_host_pages", TAKEN(1, UINT64_MAX - 10, 5, 4096, 0, 0),
      EINVAL, "wraps around", { 0 } },
    { "wb_dmabuf/plan_refuses_empty_range", TAKEN(1, 0x1000, 0, 4096, 0, 0), EINVAL,
      "wraps around", { 0 } },
    /* Exported and mapped in whole host pages, as GDRCopy; the pin's page size the host's. */
    { "wb_dmabuf/plan_range_4k", TAKEN(1, 0x13064, 5000, 4096, 0, 0), 0, NULL,
      PLAN(1, 0x13000, 8192, 4096, 0, 0, WC) },
    { "wb_dmabuf/plan_range_64k", TAKEN(1, 0x30000, 65536, 65536, 0, 0), 0, NULL,
      PLAN(1, 0x30000, 65536, 65536, 0, 0, WC) },
    { "wb_dmabuf/plan_range_64k_unaligned", TAKEN(1, 0x3fffe, 4, 65536, 0, 0), 0, NULL,
      PLAN(1, 0x30000, 131072, 65536, 0, 0, WC) },
    /* Exported in a context of the pointer's own device, whichever is current. */
    { "wb_dmabuf/plan_device_of_the_pointer", TAKEN(3, 0x10000, 4096, 4096, 0, 0), 0, NULL,
      PLAN(3, 0x10000, 4096, 4096, 0, 0, WC) },
    /* Export flags and the mapping type, by pin flags and platform: FORCE_PCIE is asked of the
     * driver everywhere (on x86 too: its refusal there is the pin's, as upstream's). */
    { "wb_dmabuf/plan_x86_force_pcie_asked_of_the_driver",
      TAKEN(1, 0x10000, 4096, 4096, FORCE, 0), 0, NULL, PLAN(1, 0x10000, 4096, 4096, PCIE, 1, WC) },
    { "wb_dmabuf/plan_coherent_default_caching", TAKEN(1, 0x10000, 4096, 65536, 0, 1), 0,
      NULL, PLAN(1, 0x10000, 65536, 65536, 0, 0, CACHING) },
    { "wb_dmabuf/plan_coherent_force_pcie_final_wc",
      TAKEN(1, 0x10000, 4096, 65536, FORCE, 1), 0, NULL,
      PLAN(1, 0x10000, 65536, 65536, PCIE, 1, WC) },
    { "wb_dmabuf/plan_arm_discrete_default_wc", TAKEN(1, 0x10000, 4096, 65536, 0, 0), 0,
      NULL, PLAN(1, 0x10000, 65536, 65536, 0, 0, WC) },
    { "wb_dmabuf/plan_arm_discrete_force_pcie_final",
      TAKEN(1, 0x10000, 4096, 65536, FORCE, 0), 0, NULL,
      PLAN(1, 0x10000, 65536, 65536, PCIE, 1, WC) },
};

static int plan_matches(const struct vr_dmabuf_plan *p, const struct vr_dmabuf_plan *w)
{
    return p->device == w->device && p->va == w->va && p->len == w->len &&
           p->page_size == w->page_size && p->export_flags == w->export_flags &&
           p->pcie_flag == w->pcie_flag && p->map_type == w->map_type;
}

static void plan_decisions(void)
{
    for (size_t i = 0; i < COUNT(plan_cases); i++) {
        const struct plan_case *c = &plan_cases[i];
        struct vr_dmabuf_plan p = { 0 };
        char why[320] = "";
        int rc = vr_dmabuf_plan(&c->facts, &p, why, sizeof(why));

        if (c->err)
            t_check(rc == c->err && strstr(why, c->says), c->name, "rc %d '%s'", rc, why);
        else
            t_check(rc == 0 && plan_matches(&p, &c->want), c->name,
                    "rc %d '%s': device %d va %#llx len %llu page %u export flags %llu "
                    "pcie flag %d type %d", rc, why, p.device, (unsigned long long)p.va,
                    (unsigned long long)p.len, p.page_size, p.export_flags, p.pcie_flag,
                    (int)p.map_type);
    }
}

static void export_refusals(void)
{
    t_check(vr_dmabuf_export_errno(CUDA_ERROR_OPERATING_SYSTEM, EMFILE, 0) == EMFILE &&
                vr_dmabuf_export_errno(CUDA_ERROR_OPERATING_SYSTEM, ENFILE, 0) == ENFILE &&
                vr_dmabuf_export_errno(CUDA_ERROR_OPERATING_SYSTEM, 0, 0) == ENOTSUP &&
                vr_dmabuf_export_errno(CUDA_ERROR_OUT_OF_MEMORY, 0, 0) == ENOMEM &&
                vr_dmabuf_export_errno(CUDA_ERROR_INVALID_VALUE, EMFILE, 0) == ENOTSUP &&
                vr_dmabuf_export_errno(CUDA_ERROR_NOT_SUPPORTED, 0, 0) == ENOTSUP,
            "wb_dmabuf/export_errno", "wrong errno");
    /* FORCE_PCIE refused by the driver (a GPU without a coherent link): the pin's refusal,
     * final (not offered to the next backend, which would take the flag), as upstream's. */
    t_check(vr_dmabuf_export_errno(CUDA_ERROR_NOT_SUPPORTED, 0, 1) == EINVAL &&
                vr_dmabuf_export_errno(CUDA_ERROR_OUT_OF_MEMORY, 0, 1) == ENOMEM,
            "wb_dmabuf/export_errno_force_pcie_refused_final", "wrong errno");
    t_check(vr_dmabuf_trial_settled(0) && vr_dmabuf_trial_settled(ENOTSUP) &&
                vr_dmabuf_trial_settled(EINVAL) && !vr_dmabuf_trial_settled(ENOMEM) &&
                !vr_dmabuf_trial_settled(EMFILE) && !vr_dmabuf_trial_settled(EAGAIN),
            "wb_dmabuf/trial_kept_only_when_settled", "wrong verdict");
}

int main(void)
{
    driver_versions();
    mmap_errors();
    force_env_rule();
    plan_decisions();
    export_refusals();
    return t_status();
}

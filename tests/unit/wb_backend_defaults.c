/* SPDX-License-Identifier: MIT */
/*
 * wb_backend_defaults.c - white-box test of the backend tables' defaults
 * (src/backends/backend_ops.c) and of the static capabilities the core reads from a table (backend.h): a slot a backend
 * leaves out is filled once by the merge, never called through NULL; gdr_get_attribute and
 * gdr_driver_get_version answer from the table's data unless the backend's op changes it; a
 * mapping type outside the table's map_types is refused by the core, with the table's reason,
 * before the backend's map runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "t.h"
#include "core/core.h"

#define BASE (1UL << 40)
#define PAGE 65536UL

static int map_calls;

static int usable(char *why, size_t len) { snprintf(why, len, "fake"); return 0; }

static int one_pin(void *ctx, const struct vr_pin_req *req, void **pin,
                   struct vr_pin_info *info, char *why, size_t len)
{
    *pin = (void *)(uintptr_t)req->va;
    *info = (struct vr_pin_info){ .va = req->va, .mapped_size = PAGE, .page_size = PAGE };
    return 0;
}

static int any_map(void *ctx, void *pin, size_t size, gdr_mapping_type_t want, void **ptr,
                   gdr_mapping_type_t *granted, char *why, size_t len)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    map_calls++;
    if (p == MAP_FAILED)
        return ENOMEM;
    *ptr = p;
    *granted = want == GDR_MAPPING_TYPE_NONE ? GDR_MAPPING_TYPE_WC : want;
    return 0;
}

static int any_unmap(void *ctx, void *pin, void *ptr, size_t size)
{
    return munmap(ptr, size) ? errno : 0;
}

/* Changes one attribute and the minor version; the table's data gives the rest. */
static int attr_op(void *ctx, gdr_attr_t attr, int *value)
{
    if (attr == GDR_ATTR_USING_DMA_BUF_MMAP)
        *value = 7;
    return 0;
}

static int version_op(void *ctx, int *major, int *minor)
{
    *minor = 4;
    return 0;
}

/* Data only, and the ops a backend must have; everything optional left out. */
static const struct vr_backend_ops lean = {
    .id = VRAMIO_BACKEND_GDRDRV, .name = "lean",
    .attr = { [GDR_ATTR_USE_PERSISTENT_MAPPING] = 1, [GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE] = 1 },
    .map_types = VR_MAP_TYPE_BIT(GDR_MAPPING_TYPE_WC),
    .map_types_why = "lean maps write-combined only",
    .probe = usable, .pin = one_pin, .map = any_map, .unmap = any_unmap,
};
/* Its own version data, and ops that refine the table's answers. */
static const struct vr_backend_ops refined = {
    .id = VRAMIO_BACKEND_DMABUF, .name = "refined",
    .attr = { [GDR_ATTR_USE_PERSISTENT_MAPPING] = 1 }, .version = { 3, 1 },
    .probe = usable, .pin = one_pin, .map = any_map, .unmap = any_unmap,
    .get_attr = attr_op, .driver_version = version_op,
};
/* Nothing but a name: every op slot takes its default. */
static const struct vr_backend_ops empty = { .id = VRAMIO_BACKEND_VULKAN, .name = "empty" };

static void test_merge(void)
{
    struct vr_backend_ops m;
    void *ctx = &m, *pin = NULL;
    char why[64] = "";
    int flag = 1, v = 5, major = 0, minor = 0;
    struct vr_pin_req req = { .addr = BASE, .size = 1, .va = BASE, .len = PAGE };
    struct vr_pin_info info;
    gdr_mapping_type_t granted;

    vr_backend_merge(&m, &empty);
    t_check(m.probe && m.open && m.close && m.pin && m.unpin && m.map && m.unmap &&
            m.callback_flag && m.get_attr && m.driver_version && m.map_types_why,
            "merge_fills_every_slot", "a slot is still NULL");
    t_check(m.probe(why, sizeof(why)) == ENOTSUP &&
            m.pin(NULL, &req, &pin, &info, why, sizeof(why)) == ENOTSUP &&
            m.map(NULL, NULL, PAGE, GDR_MAPPING_TYPE_NONE, &pin, &granted, why, sizeof(why)) ==
            ENOTSUP, "merge_refuses_missing_ops", "a missing probe, pin or map did not refuse");
    t_check(m.open(&ctx, why, sizeof(why)) == 0 && ctx == NULL, "merge_open_no_state",
            "ctx %p", ctx);
    m.close(NULL);
    t_check(m.callback_flag(NULL, NULL, &flag) == 0 && flag == 0, "merge_never_invalidated",
            "flag %d", flag);
    t_check(m.get_attr(NULL, GDR_ATTR_USE_PERSISTENT_MAPPING, &v) == 0 && v == 5,
            "merge_attr_keeps_table_answer", "v %d", v);
    t_check(m.version.major == 2 && m.version.minor == 6 &&
            m.driver_version(NULL, &major, &minor) == 0 && major == 0 && minor == 0,
            "merge_version_default_2_6", "%d.%d, op wrote %d.%d", m.version.major,
            m.version.minor, major, minor);
    t_check(m.map_types == VR_MAP_TYPES_ALL, "merge_map_types_default_all", "%#x", m.map_types);
    vr_backend_merge(&m, &refined);
    t_check(m.version.major == 3 && m.version.minor == 1 && m.get_attr == attr_op &&
            m.map == any_map, "merge_keeps_what_is_given", "%d.%d", m.version.major,
            m.version.minor);
}

static void test_through_gdr(void)
{
    static const struct vr_backend_ops *const table[VRAMIO_BACKEND_COUNT] = {
        [VRAMIO_BACKEND_GDRDRV] = &lean, [VRAMIO_BACKEND_DMABUF] = &refined,
        [VRAMIO_BACKEND_VULKAN] = &empty,
    };
    struct vr_gdr *gdr;
    gdr_t g;
    gdr_mh_t mh;
    void *va = NULL;
    int v1 = -1, v2 = -1, v3 = -1, major = -1, minor = -1, flag = -1, calls, rc;

    /* The empty backend's refused probe leaves it out; lean comes first. */
    if (!t_check(vr_instance_open(table, &gdr) == 0, "open_from_table", "%s", vramio_last_error()))
        return;
    g = (gdr_t)(uintptr_t)gdr->token;
    t_check(gdr->nactive == 2 && gdr->status[VRAMIO_BACKEND_VULKAN] == ENOTSUP,
            "refused_probe_not_active", "%d active, status %d", gdr->nactive,
            gdr->status[VRAMIO_BACKEND_VULKAN]);
    gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &v1);
    gdr_get_attribute(g, GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE, &v2);
    gdr_get_attribute(g, GDR_ATTR_USING_DMA_BUF_MMAP, &v3);
    t_check(v1 == 1 && v2 == 1 && v3 == 0, "attributes_from_table", "%d %d %d", v1, v2, v3);
    rc = gdr_driver_get_version(g, &major, &minor);
    t_check(rc == 0 && major == 2 && minor == 6, "version_default", "rc %d %d.%d", rc, major,
            minor);
    rc = gdr_pin_buffer_v2(g, BASE, PAGE, 0, &mh);
    if (t_check(rc == 0, "pin", "%d %s", rc, vramio_last_error())) {
        t_check(gdr_get_callback_flag(g, mh, &flag) == 0 && flag == 0, "callback_flag_default",
                "flag %d", flag);
        calls = map_calls;
        rc = gdr_map_v2(g, mh, &va, PAGE, GDR_MAP_FLAG_REQ_CACHE_MAPPING);
        t_check(rc == EINVAL && map_calls == calls &&
                strstr(vramio_last_error(), "lean maps write-combined only"),
                "core_refuses_type_outside_map_types", "rc %d, %d map calls: %s", rc,
                map_calls - calls, vramio_last_error());
        rc = gdr_map_v2(g, mh, &va, PAGE, GDR_MAP_FLAG_REQ_WC_MAPPING);
        t_check(rc == 0 && map_calls == calls + 1, "type_in_map_types_reaches_map", "rc %d", rc);
        if (rc == 0)
            gdr_unmap(g, mh, va, PAGE);
        gdr_unpin_buffer(g, mh);
    }
    gdr_close(g);

    /* With lean forced away, refined answers: its data, changed by its ops. */
    setenv("GDRCOPY_BACKEND", "refined", 1);   /* a table's own name */
    if (t_check(vr_instance_open(table, &gdr) == 0, "open_refined", "%s", vramio_last_error())) {
        g = (gdr_t)(uintptr_t)gdr->token;
        v1 = v2 = v3 = -1;
        gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &v1);
        gdr_get_attribute(g, GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE, &v2);
        gdr_get_attribute(g, GDR_ATTR_USING_DMA_BUF_MMAP, &v3);
        t_check(v1 == 1 && v2 == 0 && v3 == 7, "attributes_refined_by_op", "%d %d %d", v1, v2,
                v3);
        rc = gdr_driver_get_version(g, &major, &minor);
        t_check(rc == 0 && major == 3 && minor == 4, "version_refined_by_op", "rc %d %d.%d", rc,
                major, minor);
        rc = gdr_pin_buffer_v2(g, BASE, PAGE, 0, &mh);
        if (rc == 0) {
            rc = gdr_map_v2(g, mh, &va, PAGE, GDR_MAP_FLAG_REQ_CACHE_MAPPING);
            t_check(rc == 0, "map_types_default_lets_map_decide", "rc %d %s", rc,
                    vramio_last_error());
            if (rc == 0)
                gdr_unmap(g, mh, va, PAGE);
            gdr_unpin_buffer(g, mh);
        }
        gdr_close(g);
    }
    unsetenv("GDRCOPY_BACKEND");
}

int main(void)
{
    unsetenv("GDRCOPY_BACKEND");
    unsetenv("GDRCOPY_USE_DMABUF_MMAP");
    test_merge();
    test_through_gdr();
    return t_status();
}

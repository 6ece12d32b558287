/* SPDX-License-Identifier: MIT */
/*
 * test_api_basics.c - the calls that need no GPU: versions, mapping type names, error strings,
 * backend names, the copy kernel name, the per-thread last error, and argument checks that
 * come before any gdr_t is looked at (flags, attributes, sizes).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "t.h"
#include "vramio.h"

static void mapping_type_strings(void)
{
    static const char *const want[] = { "None", "Write Combining", "Caching", "Device" };
    const char *s;
    int t, bad = 0;

    for (t = 0; t < 4; t++) {
        s = NULL;
        if (gdr_get_mapping_type_string((gdr_mapping_type_t)t, &s) != 0 || !s ||
            strcmp(s, want[t]) != 0)
            bad++;
    }
    t_check(bad == 0, "mapping_type_strings", "%d of 4 names wrong", bad);
    s = "untouched";
    t_check(gdr_get_mapping_type_string(GDR_MAPPING_TYPE_MAX, &s) == EINVAL &&
            gdr_get_mapping_type_string((gdr_mapping_type_t)-1, &s) == EINVAL &&
            gdr_get_mapping_type_string((gdr_mapping_type_t)1000, &s) == EINVAL,
            "mapping_type_string_unknown_einval", "an unknown type was accepted");
    t_check(gdr_get_mapping_type_string(GDR_MAPPING_TYPE_WC, NULL) == EINVAL,
            "mapping_type_string_null_einval", "NULL output accepted");
}

static void versions(void)
{
    int major = -1, minor = -1;

    gdr_runtime_get_version(&major, &minor);
    t_check(major == 2 && minor == 6, "runtime_version_2_6", "got %d.%d", major, minor);
    gdr_runtime_get_version(NULL, NULL); /* must not crash */
    gdr_runtime_get_version(&major, NULL);
    t_check(major == 2, "runtime_version_null_minor", "major %d", major);
    t_check(GDR_API_VERSION == ((2 << 16) | 6), "api_version_macro", "%#x", GDR_API_VERSION);
}

static void strings(void)
{
    static const int special[] = { INT_MIN, INT_MIN + 1, -1, 0, 1, EINVAL, ENOTSUP, 4095,
                                   4096, 100000, INT_MAX };
    const char *s;
    int e, bad = 0;
    size_t i;

    for (e = -2000; e <= 2000; e++) {
        s = vramio_strerror(e);
        if (!s || !s[0])
            bad++;
    }
    for (i = 0; i < sizeof(special) / sizeof(special[0]); i++) {
        s = vramio_strerror(special[i]);
        if (!s || !s[0])
            bad++;
    }
    t_check(bad == 0, "strerror_never_null_or_empty", "%d values gave NULL or empty", bad);
    t_check(strcmp(vramio_strerror(EINVAL), vramio_strerror(ENOMEM)) != 0, "strerror_distinct",
            "EINVAL and ENOMEM have the same text");

    t_check(vramio_backend_name(VRAMIO_BACKEND_NONE) && !strcmp(vramio_backend_name(VRAMIO_BACKEND_NONE), "none") &&
            vramio_backend_name(VRAMIO_BACKEND_GDRDRV) && !strcmp(vramio_backend_name(VRAMIO_BACKEND_GDRDRV), "gdrdrv") &&
            vramio_backend_name(VRAMIO_BACKEND_DMABUF) && !strcmp(vramio_backend_name(VRAMIO_BACKEND_DMABUF), "dmabuf") &&
            vramio_backend_name(VRAMIO_BACKEND_VULKAN) && !strcmp(vramio_backend_name(VRAMIO_BACKEND_VULKAN), "vulkan"),
            "backend_names", "a name differs");
    t_check(vramio_backend_name(VRAMIO_BACKEND_COUNT) == NULL &&
            vramio_backend_name((vramio_backend_t)-1) == NULL &&
            vramio_backend_name((vramio_backend_t)77) == NULL,
            "backend_name_out_of_range_null", "an out-of-range value got a name");

    s = vramio_copy_kernel();
    t_check(s && (!strcmp(s, "avx512") || !strcmp(s, "avx2") || !strcmp(s, "sse41") ||
                  !strcmp(s, "movdir64b") || !strcmp(s, "neon") || !strcmp(s, "c")),
            "copy_kernel_name_known", "got '%s'", s ? s : "(null)");
}

static void backend_queries(void)
{
    char why[64];
    int b, bad = 0;

    memset(why, 'x', sizeof(why));
    t_check(vramio_backend_probe(VRAMIO_BACKEND_NONE, why, sizeof(why)) == EINVAL &&
            vramio_backend_probe(VRAMIO_BACKEND_COUNT, why, sizeof(why)) == EINVAL &&
            memchr(why, '\0', sizeof(why)) != NULL,
            "probe_bad_backend_einval", "not EINVAL or reason not terminated");
    for (b = VRAMIO_BACKEND_GDRDRV; b < VRAMIO_BACKEND_COUNT; b++) {
        memset(why, 'x', sizeof(why));
        vramio_backend_probe((vramio_backend_t)b, why, sizeof(why));
        if (!memchr(why, '\0', sizeof(why)) || !why[0])
            bad++;
        vramio_backend_probe((vramio_backend_t)b, NULL, 0); /* no reason wanted: no crash */
        memset(why, 'x', sizeof(why));
        vramio_backend_probe((vramio_backend_t)b, why, 1);
        if (why[0] != '\0')
            bad++;
    }
    t_check(bad == 0, "probe_reason_terminated", "%d reasons were empty or unterminated", bad);
}

/* Flags, attributes and sizes are checked whatever the gdr_t is. */
static void argument_checks(void)
{
    gdr_t g = gdr_open(); /* may be NULL: the checks below must hold either way */
    void *va = NULL;
    gdr_mh_t mh = { 0 };
    int v;

    t_check(gdr_pin_buffer_v2(g, 0x100000, 65536, 2, &mh) == EINVAL &&
            gdr_pin_buffer_v2(g, 0x100000, 65536, 0x80000000u, &mh) == EINVAL,
            "pin_unknown_flags_einval", "unknown pin flags accepted");
    t_check(gdr_pin_buffer(g, 0x100000, 0, 0, 0, &mh) == EINVAL &&
            gdr_pin_buffer_v2(g, 0x100000, 0, 0, &mh) == EINVAL, "pin_size_0_einval",
            "a 0-byte pin was accepted");
    t_check(gdr_pin_buffer_v2(g, ~0UL - 4095, 8192, 0, &mh) == EINVAL, "pin_wraparound_einval",
            "addr+size overflow accepted");
    t_check(gdr_map_v2(g, mh, &va, 65536, 4) == EINVAL && gdr_map_v2(g, mh, &va, 65536, -1) == EINVAL,
            "map_flags_out_of_range_einval", "map flags outside 0..3 accepted");
    t_check(gdr_map(g, mh, NULL, 65536) == EINVAL, "map_null_out_einval", "NULL va accepted");
    t_check(gdr_get_attribute(g, (gdr_attr_t)0, &v) == EINVAL &&
            gdr_get_attribute(g, GDR_ATTR_MAX, &v) == EINVAL &&
            gdr_get_attribute(g, (gdr_attr_t)-5, &v) == EINVAL,
            "unknown_attribute_einval", "an unknown attribute was accepted");
    if (g) {
        t_check(gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &v) == 0,
                "known_attribute_ok", "GDR_ATTR_USE_PERSISTENT_MAPPING failed");
        gdr_close(g);
    } else {
        t_skip("known_attribute_ok", "no backend is usable here");
    }
}

static void *fail_in_thread(void *arg)
{
    const char **out = arg;

    out[0] = strlen(vramio_last_error()) == 0 ? "empty" : "not empty";
    gdr_close(NULL);
    out[1] = strstr(vramio_last_error(), "gdr_close") ? "gdr_close" : "other";
    return NULL;
}

static void last_error_per_thread(void)
{
    const char *seen[2] = { NULL, NULL };
    pthread_t t;
    int v;

    t_check(vramio_last_error() != NULL, "last_error_not_null", "NULL");
    gdr_get_attribute(NULL, (gdr_attr_t)99, &v);
    t_check(strstr(vramio_last_error(), "attribute") != NULL, "last_error_explains",
            "got '%s'", vramio_last_error());
    pthread_create(&t, NULL, fail_in_thread, seen);
    pthread_join(t, NULL);
    t_check(seen[0] && !strcmp(seen[0], "empty"), "last_error_fresh_thread_empty", "%s",
            seen[0] ? seen[0] : "?");
    t_check(seen[1] && !strcmp(seen[1], "gdr_close"), "last_error_in_thread", "%s",
            seen[1] ? seen[1] : "?");
    t_check(strstr(vramio_last_error(), "attribute") != NULL, "last_error_is_per_thread",
            "another thread's failure replaced ours: '%s'", vramio_last_error());
}

int main(void)
{
    mapping_type_strings();
    versions();
    strings();
    backend_queries();
    argument_checks();
    last_error_per_thread();
    return t_status();
}

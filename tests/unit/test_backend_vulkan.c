/* SPDX-License-Identifier: MIT */
/*
 * test_backend_vulkan.c - the vulkan backend and vramio_alloc where they cannot work (no GPU,
 * no CUDA driver): the probe says why, gdr_open with the backend forced returns NULL with that
 * reason, and vramio_alloc / vramio_free give clean errors for every bad input. On a machine
 * where the backend is usable, tests/gpu covers it and this skips.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "t.h"
#include "vramio.h"

static int child(const char *mode)
{
    gdr_t g;

    if (strcmp(mode, "open") != 0)
        return 2;
    g = gdr_open();
    printf("result %s\n", g ? "handle" : "NULL");
    printf("last_error %s\n", vramio_last_error());
    if (g)
        gdr_close(g);
    return 0;
}

int main(int argc, char **argv)
{
    static const char *const forced[] = { "GDRCOPY_BACKEND=vulkan", NULL };
    const char *mode = t_child_mode(argc, argv);
    char why[256] = "", out[8192];
    unsigned long long d = 1;
    int rc, sig = 0;

    if (mode)
        return child(mode);

    rc = vramio_backend_probe(VRAMIO_BACKEND_VULKAN, why, sizeof(why));
    if (rc == 0) {
        t_skip("vulkan_unusable_reason", "the vulkan backend is usable here (tests/gpu)");
    } else {
        t_check(why[0] && (strstr(why, "libcuda") || strstr(why, "libvulkan")),
                "vulkan_unusable_reason", "rc %d, reason '%s' names neither library", rc, why);
        rc = t_run_self("open", forced, out, sizeof(out), &sig);
        t_check(rc == 0 && strstr(out, "result NULL") && strstr(out, "vulkan") &&
                    (strstr(out, "libcuda") || strstr(out, "libvulkan")),
                "vulkan_forced_open_null_with_reason", "exit %d sig %d output: %s", rc, sig, out);
        rc = vramio_alloc(0, 1 << 20, &d);
        t_check(rc != 0 && d == 0 && vramio_last_error()[0], "alloc_without_gpu_fails",
                "rc %d dptr %#llx last error '%s'", rc, d, vramio_last_error());
    }

    t_check(vramio_alloc(0, 4096, NULL) == EINVAL, "alloc_null_dptr", "not EINVAL");
    d = 1;
    t_check(vramio_alloc(0, 0, &d) == EINVAL, "alloc_size_zero", "not EINVAL");
    t_check(vramio_alloc(-1, 4096, &d) == EINVAL, "alloc_negative_gpu", "not EINVAL");
    t_check(vramio_free(0) == EINVAL, "free_zero", "not EINVAL");
    t_check(vramio_free(0x7f0000200000ull) == EINVAL && strstr(vramio_last_error(), "vramio_alloc"),
            "free_foreign_pointer", "not EINVAL or no reason: '%s'", vramio_last_error());
    return t_status();
}

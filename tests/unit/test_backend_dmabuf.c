/* SPDX-License-Identifier: MIT */
/*
 * test_backend_dmabuf.c - the dma-buf backend where it cannot work (no CUDA driver): the probe
 * says why, and GDRCOPY_USE_DMABUF_MMAP=1 (upstream's switch, which forces this backend)
 * makes gdr_open return NULL with that reason instead of crashing or asserting. On a machine
 * where the backend is usable, tests/gpu covers it and this skips.
 */
#include <stdio.h>
#include <string.h>
#include "t.h"
#include "vramio.h"

static int child(const char *mode)
{
    gdr_t g;
    int major = -1, minor = -1;

    if (strcmp(mode, "open") != 0)
        return 2;
    g = gdr_open();
    printf("result %s\n", g ? "handle" : "NULL");
    printf("last_error %s\n", vramio_last_error());
    if (g) {
        gdr_driver_get_version(g, &major, &minor);
        printf("driver %d.%d\n", major, minor);
        gdr_close(g);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const char *const forced[] = { "GDRCOPY_USE_DMABUF_MMAP=1", NULL };
    const char *mode = t_child_mode(argc, argv);
    char why[256] = "", out[8192];
    int rc, sig = 0;

    if (mode)
        return child(mode);

    rc = vramio_backend_probe(VRAMIO_BACKEND_DMABUF, why, sizeof(why));
    if (rc == 0) {
        t_skip("dmabuf_unusable_reason", "the dma-buf backend is usable here (tests/gpu)");
        return t_status();
    }
    t_check(why[0] && (strstr(why, "libcuda") || strstr(why, "driver")), "dmabuf_unusable_reason",
            "rc %d, reason '%s'", rc, why);
    rc = t_run_self("open", forced, out, sizeof(out), &sig);
    t_check(rc == 0 && strstr(out, "result NULL") && strstr(out, "dmabuf") &&
                (strstr(out, "libcuda") || strstr(out, "driver")),
            "dmabuf_forced_open_null_with_reason", "exit %d sig %d output: %s", rc, sig, out);
    return t_status();
}

/* SPDX-License-Identifier: MIT */
/*
 * use_gdrapi.c - a client built against the installed headers and library only (pkg-config):
 * the versions agree, and gdr_open either works or returns NULL with a one-line reason.
 */
#include <stdio.h>
#include <gdrapi.h>
#include <vramio.h>

int main(void)
{
    int major = -1, minor = -1;

    gdr_runtime_get_version(&major, &minor);
    if (major != GDR_API_MAJOR_VERSION || minor != GDR_API_MINOR_VERSION) {
        printf("runtime version %d.%d, header %d.%d\n", major, minor, GDR_API_MAJOR_VERSION,
               GDR_API_MINOR_VERSION);
        return 1;
    }
    gdr_t g = gdr_open();
    if (g) {
        vramio_backend_t b = VRAMIO_BACKEND_NONE;
        vramio_get_backend(g, &b);
        printf("gdr_open: usable, backend %s\n", vramio_backend_name(b));
        return gdr_close(g) == 0 ? 0 : 1;
    }
    const char *why = vramio_last_error();
    if (!why || !*why) {
        printf("gdr_open returned NULL with no reason\n");
        return 1;
    }
    printf("gdr_open: NULL: %s\n", why);
    return 0;
}

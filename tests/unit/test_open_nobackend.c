/* SPDX-License-Identifier: MIT */
/*
 * test_open_nobackend.c - on a machine where no backend is usable, gdr_open returns NULL and
 * the error log names every backend with the reason it is unusable.
 */
#include <stdio.h>
#include <string.h>
#include "t.h"
#include "vramio.h"

static const char *const names[] = { "gdrdrv", "dmabuf", "vulkan" };

/* The line of log that mentions backend name at error level, or NULL. */
static const char *error_line_for(const char *log, const char *name, char *line, size_t len)
{
    const char *p = log, *nl;
    size_t n;

    while (*p) {
        nl = strchr(p, '\n');
        n = nl ? (size_t)(nl - p) : strlen(p);
        if (n < len) {
            memcpy(line, p, n);
            line[n] = '\0';
            if (strncmp(line, "gdrapi: error: ", 15) == 0 && strstr(line, name))
                return line;
        }
        p += n + (nl ? 1 : 0);
    }
    return NULL;
}

static int child(const char *mode)
{
    gdr_t g;

    if (strcmp(mode, "open") != 0)
        return 2;
    g = gdr_open();
    printf("result %s\n", g ? "handle" : "NULL");
    printf("last_error %s\n", vramio_last_error());
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = t_child_mode(argc, argv);
    char out[16384], line[1024], why[256];
    const char *l, *after;
    int b, rc, sig = 0;

    if (mode)
        return child(mode);

    for (b = VRAMIO_BACKEND_GDRDRV; b < VRAMIO_BACKEND_COUNT; b++) {
        if (vramio_backend_probe((vramio_backend_t)b, why, sizeof(why)) == 0) {
            printf("backend %s is usable on this machine\n", names[b - 1]);
            return 77;
        }
    }

    rc = t_run_self("open", NULL, out, sizeof(out), &sig);
    t_check(rc == 0, "open_child_exits_cleanly", "exit %d signal %d; output:\n%s", rc, sig, out);
    t_check(strstr(out, "result NULL\n") != NULL, "open_returns_null", "output:\n%s", out);
    for (b = 0; b < 3; b++) {
        char name[64];

        snprintf(name, sizeof(name), "log_names_%s_with_reason", names[b]);
        l = error_line_for(out, names[b], line, sizeof(line));
        after = l ? strstr(l, names[b]) + strlen(names[b]) : NULL;
        /* A reason: at least a few characters of text after the backend's name. */
        t_check(after && strlen(after) > 4, name, "no error line naming %s with a reason:\n%s",
                names[b], out);
    }
    l = strstr(out, "last_error ");
    t_check(l && strstr(l, "gdrdrv") && strstr(l, "dmabuf") && strstr(l, "vulkan"),
            "last_error_names_every_backend", "output:\n%s", out);

    /* The same in this process: NULL, and a last error. */
    t_check(gdr_open() == NULL, "open_null_in_process", "gdr_open returned a handle");
    t_check(vramio_last_error()[0] != '\0', "last_error_set", "vramio_last_error() is empty");
    return t_status();
}

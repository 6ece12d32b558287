/* SPDX-License-Identifier: MIT */
/*
 * wb_gdrdrv_probe.c - white-box test of the gdrdrv backend where no module is loaded (the
 * build machines and CI): it must report itself unusable with a reason a user can act on,
 * and gdr_open must still work or fail cleanly. The module itself is tested in the QEMU
 * guests (tests/kernel). Linked with the backend's object and -Wl,--wrap=open
 * (tests/tests.mk): the other reasons come from an open of /dev/gdrdrv made to fail here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>
#include "backends/backend.h"
#include "t.h"

#define DEVICE "/dev/gdrdrv"

static int open_errno;              /* 0: the real open; else what opening DEVICE fails with */

int __real_open(const char *path, int flags, ...);
int __wrap_open(const char *path, int flags, ...);

int __wrap_open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    va_list ap;

    if (open_errno && strcmp(path, DEVICE) == 0) {
        errno = open_errno;
        return -1;
    }
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    return __real_open(path, flags, mode);
}

/* The probe's answer when opening the device fails with err. */
static int probe_with(int err, char *why, size_t len)
{
    int rc;

    open_errno = err;
    why[0] = '\0';
    rc = vr_backend_gdrdrv.probe(why, len);
    open_errno = 0;
    return rc;
}

int main(void)
{
    char why[256] = "", msg[320];
    void *ctx = (void *)1;
    int rc;

    if (access(DEVICE, F_OK) == 0) {
        printf(DEVICE " exists here: this test is for machines without the module\n");
        return 77;
    }

    rc = vr_backend_gdrdrv.probe(why, sizeof(why));
    snprintf(msg, sizeof(msg), "rc %d, why '%s'", rc, why);
    t_check(rc == ENODEV, "probe_enodev_without_module", "%s", msg);
    t_check(strstr(why, "not loaded") != NULL, "probe_says_not_loaded", "%s", msg);

    why[0] = '\0';
    rc = vr_backend_gdrdrv.open(&ctx, why, sizeof(why));
    snprintf(msg, sizeof(msg), "rc %d, ctx %p, why '%s'", rc, ctx, why);
    t_check(rc == ENODEV && ctx == NULL && strstr(why, "not loaded"), "open_fails_cleanly", "%s", msg);

    /* The other reasons, from an open that fails otherwise. */
    rc = probe_with(ENXIO, why, sizeof(why));
    t_check(rc == ENODEV && strstr(why, "no driver") != NULL, "reason_enxio", "rc %d: %s", rc,
            why);
    rc = probe_with(EIO, why, sizeof(why));
    t_check(rc == EIO && strstr(why, "cannot open") && strstr(why, strerror(EIO)), "reason_other",
            "rc %d: %s", rc, why);
    /* EACCES with no node to stat falls back to the plain message rather than crashing. */
    rc = probe_with(EACCES, why, sizeof(why));
    t_check(rc == EACCES && why[0] != '\0', "reason_eacces_without_node", "rc %d: %s", rc, why);

    return t_status();
}

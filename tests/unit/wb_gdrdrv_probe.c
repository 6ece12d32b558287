/* SPDX-License-Identifier: MIT */
/*
 * wb_gdrdrv_probe.c - white-box test of the gdrdrv backend where no module is loaded (the
 * build machines and CI): it must report itself unusable with a reason a user can act on,
 * and gdr_open must still work or fail cleanly. The module itself is tested in the QEMU
 * guests (tests/kernel). Includes the backend's source to reach its reason formatter.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "../../src/backends/gdrdrv.c"
#include "t.h"

int main(void)
{
    char why[256] = "", msg[320];
    void *ctx = (void *)1;
    int rc;

    if (access(GD_DEVICE, F_OK) == 0) {
        printf(GD_DEVICE " exists here: this test is for machines without the module\n");
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

    /* The other reasons, formatted without a device. */
    gd_explain_open_error(ENXIO, why, sizeof(why));
    t_check(strstr(why, "no driver") != NULL, "reason_enxio", "%s", why);
    gd_explain_open_error(EIO, why, sizeof(why));
    t_check(strstr(why, "cannot open") && strstr(why, strerror(EIO)), "reason_other", "%s", why);
    /* EACCES with no node to stat falls back to the plain message rather than crashing. */
    gd_explain_open_error(EACCES, why, sizeof(why));
    t_check(why[0] != '\0', "reason_eacces_without_node", "%s", why);

    return t_status();
}

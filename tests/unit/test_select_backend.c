/* SPDX-License-Identifier: MIT */
/*
 * test_select_backend.c - GDRCOPY_BACKEND=<name> forces one backend (the others report that
 * they were not selected), an unknown name is an error that names it, and upstream's
 * GDRCOPY_USE_DMABUF_MMAP=1 forces dma-buf. Observed through vramio_backend_probe and the
 * log of gdr_open in fresh processes; holds whether or not a backend is usable here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t.h"
#include "vramio.h"

#define NB 3
static const char *const names[NB] = { "gdrdrv", "dmabuf", "vulkan" };

/* Child: one "probe <name> <rc> <reason>" line per backend, then what gdr_open did. */
static int child(const char *mode)
{
    char why[256];
    vramio_backend_t used;
    gdr_t g;
    int b, rc;

    for (b = 1; b <= NB; b++) {
        rc = vramio_backend_probe((vramio_backend_t)b, why, sizeof(why));
        printf("probe %s %d %s\n", names[b - 1], rc, why);
    }
    if (strcmp(mode, "open") == 0) {
        g = gdr_open();
        if (g && vramio_get_backend(g, &used) == 0)
            printf("opened %s\n", vramio_backend_name(used));
        else
            printf("opened none\n");
        if (g)
            gdr_close(g);
    }
    fflush(stdout);
    return 0;
}

/* The rc and reason that the child printed for backend name. */
static int probe_line(const char *out, const char *name, int *rc, char *why, size_t len)
{
    char key[64];
    const char *p, *nl;
    size_t n;

    snprintf(key, sizeof(key), "probe %s ", name);
    p = strstr(out, key);
    if (!p)
        return 0;
    p += strlen(key);
    *rc = atoi(p);
    p = strchr(p, ' ');
    if (!p)
        return 0;
    p++;
    nl = strchr(p, '\n');
    n = nl ? (size_t)(nl - p) : strlen(p);
    if (n >= len)
        n = len - 1;
    memcpy(why, p, n);
    why[n] = '\0';
    return 1;
}

static void check_forced(const char *var_eq, const char *var, int forced, const int *base_rc)
{
    const char *env[] = { var_eq, NULL };
    char out[16384], why[512], name[128];
    int b, rc, got, sig = 0;

    rc = t_run_self("open", env, out, sizeof(out), &sig);
    snprintf(name, sizeof(name), "%s_child_ok", var_eq);
    t_check(rc == 0, name, "exit %d signal %d:\n%s", rc, sig, out);
    for (b = 0; b < NB; b++) {
        got = probe_line(out, names[b], &rc, why, sizeof(why));
        snprintf(name, sizeof(name), "%s_probe_%s", var_eq, names[b]);
        if (b == forced)
            t_check(got && rc == base_rc[b] && !strstr(why, var), name,
                    "the forced backend should probe as without %s (rc %d), got %d '%s'", var,
                    base_rc[b], got ? rc : -1, got ? why : "");
        else
            t_check(got && rc != 0 && strstr(why, var), name,
                    "expected 'not selected' naming %s, got rc %d '%s'", var, got ? rc : -1,
                    got ? why : "(no line)");
    }
    snprintf(name, sizeof(name), "%s_open_uses_only_forced", var_eq);
    if (strstr(out, "opened none") && base_rc[forced] == 0)
        t_check(0, name, "%s probes usable, yet gdr_open failed:\n%s", names[forced], out);
    else if (strstr(out, "opened none"))
        t_check(strstr(out, "gdrapi: error:") != NULL, name,
                "gdr_open failed without an error line:\n%s", out);
    else
        t_check(strstr(out, names[forced]) && strstr(out, "opened ") &&
                strncmp(strstr(out, "opened ") + 7, names[forced], strlen(names[forced])) == 0,
                name, "gdr_open used another backend:\n%s", out);
}

int main(int argc, char **argv)
{
    const char *mode = t_child_mode(argc, argv);
    char out[16384], why[512], var_eq[64], name[128];
    const char *bogus[] = { "GDRCOPY_BACKEND=bogus-backend", NULL };
    const char *dmabuf_off[] = { "GDRCOPY_USE_DMABUF_MMAP=0", NULL };
    int base_rc[NB], b, rc, got, sig = 0;

    if (mode)
        return child(mode);

    /* Baseline, without any forcing (run_self clears the GDRCOPY_* variables). */
    rc = t_run_self("probe", NULL, out, sizeof(out), &sig);
    t_check(rc == 0, "baseline_child_ok", "exit %d signal %d:\n%s", rc, sig, out);
    for (b = 0; b < NB; b++) {
        got = probe_line(out, names[b], &base_rc[b], why, sizeof(why));
        snprintf(name, sizeof(name), "baseline_probe_%s_has_reason", names[b]);
        t_check(got && why[0] != '\0', name, "no probe result with a reason:\n%s", out);
        if (!got)
            base_rc[b] = -1;
    }

    for (b = 0; b < NB; b++) {
        snprintf(var_eq, sizeof(var_eq), "GDRCOPY_BACKEND=%s", names[b]);
        check_forced(var_eq, "GDRCOPY_BACKEND", b, base_rc);
    }
    check_forced("GDRCOPY_USE_DMABUF_MMAP=1", "GDRCOPY_USE_DMABUF_MMAP", 1, base_rc);

    rc = t_run_self("open", bogus, out, sizeof(out), &sig);
    t_check(rc == 0, "bogus_child_ok", "exit %d signal %d:\n%s", rc, sig, out);
    t_check(strstr(out, "opened none") != NULL, "bogus_open_fails", "output:\n%s", out);
    t_check(strstr(out, "gdrapi: error:") && strstr(out, "bogus-backend"), "bogus_logged",
            "no error line naming the bad value:\n%s", out);
    for (b = 0; b < NB; b++) {
        got = probe_line(out, names[b], &rc, why, sizeof(why));
        snprintf(name, sizeof(name), "bogus_probe_%s_einval", names[b]);
        t_check(got && rc == 22 && strstr(why, "bogus-backend"), name, "rc %d '%s'",
                got ? rc : -1, got ? why : "");
    }

    rc = t_run_self("probe", dmabuf_off, out, sizeof(out), &sig);
    for (b = 0; b < NB; b++) {
        got = probe_line(out, names[b], &rc, why, sizeof(why));
        snprintf(name, sizeof(name), "dmabuf_mmap_0_does_not_force_%s", names[b]);
        t_check(got && rc == base_rc[b] && !strstr(why, "GDRCOPY"), name, "rc %d '%s'",
                got ? rc : -1, got ? why : "");
    }
    return t_status();
}

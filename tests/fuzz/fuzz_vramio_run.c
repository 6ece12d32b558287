/* SPDX-License-Identifier: MIT */
/*
 * fuzz_vramio_run.c - libFuzzer target: vramio-run's arguments and every environment variable
 * it reads (VRAMIO_BRIDGE_LIB, LD_LIBRARY_PATH, VRAMIO_RUN_DIR, XDG_RUNTIME_DIR,
 * XDG_CACHE_HOME, HOME, TMPDIR, VRAMIO_ENABLE_VULKAN, VRAMIO_RUN_SHIM), through its own code:
 * bridge/vramio_run.c and bridge/run_dir.c are built into this program (tests/fuzz/fuzz.mk,
 * main renamed vramio_run_main) and its exec of the program is caught here (--wrap=execvp).
 *
 * vramio-run makes directories (0700, as this user). So that no input can make one outside
 * it, every path is inside a sandbox directory (made at the start, emptied and furnished again
 * for every input): a value is a path of the sandbox's furniture or one of the input's own,
 * always put under the sandbox (vramio-run's working directory, for relative ones), with every
 * ".." taken out. The furniture: the bridge and its shim, a bridge without a shim, a driver
 * and a directory of an earlier vramio-run (its link to the driver), directories that are this
 * user's, another user's (when root), writable by all, sticky and writable by all (one of them
 * holding this user's vramio-UID made by another user, when root), a symlink, a file.
 *
 * A finding, besides ASan's and UBSan's: an exit status other than vramio-run's (0, 2, 126,
 * 127); a program started with a directory that is not one vramio-run may use (outside the
 * sandbox, not absolute, a ':', ';' or '$' in it, not this user's alone, writable by others)
 * or whose links are not the shim and the driver, or without VRAMIO_ENABLE_VULKAN and the
 * mark; and a descriptor left open.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fuzz_common.h"

int vramio_run_main(int argc, char **argv);     /* bridge/vramio_run.c's main */
int __wrap_execvp(const char *file, char *const argv[]);
struct passwd *__wrap_getpwuid(uid_t uid);
struct passwd *__real_getpwuid(uid_t uid);

static char sandbox[PATH_MAX];
static int execs;               /* the caught exec of this input */
static struct fz_counts base;

/* ---- the caught exec ----------------------------------------------------------------------- */
static int under_sandbox(const char *path)
{
    char real[PATH_MAX];
    size_t n = strlen(sandbox);

    return realpath(path, real) && !strncmp(real, sandbox, n) && (real[n] == '/' || !real[n]);
}

static void link_is(const char *dir, const char *name, const char *want)
{
    char path[PATH_MAX + 64], got[PATH_MAX];
    ssize_t n;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    n = readlink(path, got, sizeof(got) - 1);
    if (n <= 0)
        fz_finding("the program was started with %s missing", path);
    got[n] = '\0';
    if (strcmp(got, want) && !(realpath(want, path) && !strcmp(got, path)))
        fz_finding("%s/%s points to %s, not %s", dir, name, got, want);
}

int __wrap_execvp(const char *file, char *const argv[])
{
    const char *llp = getenv("LD_LIBRARY_PATH"), *mark = getenv("VRAMIO_RUN_SHIM");
    char dir[PATH_MAX], shim[PATH_MAX + 64];
    struct stat st;
    size_t n = llp ? strcspn(llp, ":") : 0;

    execs++;
    if (!llp || !mark || n >= sizeof(dir))
        fz_finding("exec of %s with LD_LIBRARY_PATH=%s VRAMIO_RUN_SHIM=%s", file, llp, mark);
    memcpy(dir, llp, n);
    dir[n] = '\0';
    if (strcmp(dir, mark) || dir[0] != '/' || strpbrk(dir, ";$"))
        fz_finding("exec with the directory '%s' first on LD_LIBRARY_PATH, mark '%s'", dir, mark);
    if (!under_sandbox(dir))
        fz_finding("vramio-run used %s, outside every directory it was given", dir);
    if (lstat(dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & (S_IWGRP | S_IWOTH)))
        fz_finding("vramio-run's directory %s: not a directory of this user's alone", dir);
    if (!getenv("VRAMIO_ENABLE_VULKAN"))
        fz_finding("exec without VRAMIO_ENABLE_VULKAN");
    snprintf(shim, sizeof(shim), "%s/lib/libvramio_cuda.so", sandbox);
    link_is(dir, "libcuda.so.1", shim);
    link_is(dir, "libcuda.so", shim);
    errno = ENOENT;
    return -1;
}

/* This user's entry in the password database, its home the sandbox's "pwhome": vramio-run
 * falls back to it when the environment names no usable base (a service, a cron job), and
 * no input may make a directory outside the sandbox. */
struct passwd *__wrap_getpwuid(uid_t uid)
{
    static struct passwd pw;
    static char home[PATH_MAX + 16];
    struct passwd *real = __real_getpwuid(uid);

    if (!real || uid != geteuid())
        return real;
    pw = *real;
    snprintf(home, sizeof(home), "%s/pwhome", sandbox);
    pw.pw_dir = home;
    return &pw;
}

/* ---- the sandbox --------------------------------------------------------------------------- */
static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    if (ftw->level > 0)
        remove(path);
    return 0;
}

static void put_file(const char *rel, int mode)
{
    char p[PATH_MAX + 64];
    int fd;

    snprintf(p, sizeof(p), "%s/%s", sandbox, rel);
    fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, mode);
    if (fd < 0)
        fz_finding("sandbox: %s: %s", p, strerror(errno));
    close(fd);
}

static void put_dir(const char *rel, int mode, int uid)
{
    char p[PATH_MAX + 64];

    snprintf(p, sizeof(p), "%s/%s", sandbox, rel);
    if (mkdir(p, 0700) || chmod(p, (mode_t)mode))
        fz_finding("sandbox: %s: %s", p, strerror(errno));
    if (uid >= 0 && geteuid() == 0 && chown(p, (uid_t)uid, (gid_t)uid))
        fz_finding("sandbox: chown %s: %s", p, strerror(errno));
}

static void furnish(void)
{
    char p[PATH_MAX + 64], t[PATH_MAX + 64];

    nftw(sandbox, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    put_dir("lib", 0755, -1);
    put_file("lib/libvramio_bridge.so", 0644);
    put_file("lib/libvramio_cuda.so", 0644);
    put_dir("lib2", 0755, -1);
    put_file("lib2/libvramio_bridge.so", 0644);
    put_dir("drv", 0755, -1);
    put_file("drv/libcuda.so.1", 0644);
    put_dir("old", 0700, -1);           /* an earlier vramio-run's directory */
    snprintf(p, sizeof(p), "%s/old/libcuda.so.1.real", sandbox);
    snprintf(t, sizeof(t), "%s/drv/libcuda.so.1", sandbox);
    if (symlink(t, p))
        fz_finding("sandbox: %s", strerror(errno));
    put_dir("home", 0700, -1);
    put_dir("pwhome", 0700, -1);
    put_dir("xdg", 0700, -1);
    put_dir("tmp", 01777, -1);
    /* A shared temporary directory where another user made this user's vramio-UID first. */
    put_dir("tmp2", 01777, -1);
    snprintf(p, sizeof(p), "tmp2/vramio-%u", (unsigned)geteuid());
    put_dir(p, 0700, 65534);
    put_dir("open", 0777, -1);
    put_dir("other", 0755, 65534);
    put_dir("other/in", 0700, 65534);
    put_file("file", 0644);
    snprintf(p, sizeof(p), "%s/link", sandbox);
    if (symlink("home", p))
        fz_finding("sandbox: %s", strerror(errno));
}

/* A path of the input: furniture, then the input's own (no ".." in it), in the sandbox;
 * sometimes relative (from the sandbox, the working directory). */
static const char *pick_path(struct fz_in *in, char *out, size_t len)
{
    static const char *const furniture[] = {
        "", "lib", "lib/libvramio_bridge.so", "lib2/libvramio_bridge.so", "drv", "old",
        "home", "xdg", "tmp", "open", "other", "other/in", "file", "link", "tmp2", "home/.cache",
    };
    unsigned s = fz_u8(in);
    char own[200], *dd;

    fz_str(in, own, sizeof(own));
    while ((dd = strstr(own, "..")))
        dd[1] = '_';
    snprintf(out, len, "%s%s%s%s%s", s & 0x80 ? "" : sandbox, s & 0x80 ? "" : "/",
             furniture[s % 16], own[0] && own[0] != '/' && furniture[s % 16][0] ? "/" : "", own);
    if ((s & 0x80) && (out[0] == '/' || !out[0]))
        snprintf(out, len, "%s/%s", sandbox, furniture[s % 16]);
    return out;
}

/* ---- the target ---------------------------------------------------------------------------- */
/* The sandbox goes with the process (libFuzzer ends by exit(), a finding by abort()). */
static void remove_sandbox(void)
{
    nftw(sandbox, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    rmdir(sandbox);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *h = getenv("HOME"), *x = getenv("XDG_RUNTIME_DIR"), *t = NULL;
    char made[PATH_MAX + 32], cache[PATH_MAX];

    fz_start(argc, argv, "cuda-vmm", NULL);
    /* A directory only this user (or root) can change, on every parent: vramio-run refuses
     * any base below one that others can write to, sticky or not (/tmp, /dev/shm), so the
     * sandbox must not be there. */
    if (x && x[0] == '/' && access(x, W_OK) == 0)
        t = x;
    else if (h && h[0] == '/') {
        snprintf(cache, sizeof(cache), "%s/.cache", h);
        mkdir(cache, 0700);
        if (access(cache, W_OK) == 0)
            t = cache;
    }
    if (!t && geteuid() == 0)
        t = "/run";
    if (!t)
        fz_finding("no private directory for the sandbox (XDG_RUNTIME_DIR, HOME/.cache)");
    snprintf(made, sizeof(made), "%s/vramio-fuzz-run.XXXXXX", t);
    if (!mkdtemp(made) || !realpath(made, sandbox))
        fz_finding("cannot make the sandbox %s: %s", made, strerror(errno));
    atexit(remove_sandbox);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = { "VRAMIO_BRIDGE_LIB", "LD_LIBRARY_PATH", "VRAMIO_RUN_DIR",
        "XDG_RUNTIME_DIR", "XDG_CACHE_HOME", "HOME", "VRAMIO_ENABLE_VULKAN", "VRAMIO_RUN_SHIM" };
    static const char *const opts[] = { "--log", "--", "--help", "-h", "--version", "-x",
                                        "prog", "" };
    static int counted;
    char values[8][PATH_MAX + 256], tmp[PATH_MAX + 256], cwd[PATH_MAX], *argv[8];
    struct fz_in in = { data, size };
    struct fz_counts now;
    unsigned which, nargs;
    int argc = 1, rc;

    if (!counted++)
        fz_counts(&base);
    furnish();
    which = fz_u8(&in);
    for (int v = 0; v < 8; v++) {
        if (!(which & (1u << v))) {
            fz_setenv(v, names[v], NULL);
        } else if (v >= 6) {
            fz_str(&in, values[v], 64);     /* not paths: any value */
            fz_setenv(v, names[v], values[v]);
        } else if (v == 1 && (fz_u8(&in) & 1)) {
            /* A search path: a directory of an earlier run first, or the input's own. */
            char a[PATH_MAX + 256], b[PATH_MAX + 256];
            snprintf(values[v], sizeof(values[v]), "%.2000s:%.2000s",
                     pick_path(&in, a, sizeof(a)), pick_path(&in, b, sizeof(b)));
            fz_setenv(v, names[v], values[v]);
        } else {
            fz_setenv(v, names[v], pick_path(&in, values[v], sizeof(values[v])));
        }
    }
    /* TMPDIR always: vramio-run's last resort would otherwise be the machine's /tmp. */
    pick_path(&in, tmp, sizeof(tmp));
    fz_setenv(8, "TMPDIR", tmp[0] == '/' ? tmp : sandbox);
    argv[0] = "vramio-run";
    nargs = fz_u8(&in) % 4;
    for (unsigned i = 0; i < nargs; i++)
        argv[argc++] = (char *)opts[fz_u8(&in) % 8];
    argv[argc++] = "prog";
    argv[argc] = NULL;
    /* Without VRAMIO_BRIDGE_LIB vramio-run looks beside itself: give it the sandbox's. */
    if (!getenv("VRAMIO_BRIDGE_LIB")) {
        snprintf(tmp, sizeof(tmp), "%s/lib/libvramio_bridge.so", sandbox);
        fz_setenv(9, "VRAMIO_BRIDGE_LIB", tmp);
    }
    /* Relative values are relative to the sandbox: vramio-run runs there (libFuzzer's own
     * paths stay relative to where it was started). */
    execs = 0;
    if (!getcwd(cwd, sizeof(cwd)) || chdir(sandbox))
        fz_finding("cannot go into the sandbox: %s", strerror(errno));
    rc = vramio_run_main(argc, argv);
    if (chdir(cwd))
        fz_finding("cannot come back from the sandbox: %s", strerror(errno));
    if (rc != 0 && rc != 2 && rc != 126 && rc != 127)
        fz_finding("vramio-run returned %d", rc);
    if (execs && rc != 127)
        fz_finding("vramio-run returned %d after a failed exec of a missing program", rc);
    for (int v = 0; v < 8; v++)
        unsetenv(names[v]);
    unsetenv("TMPDIR");
    unsetenv("VRAMIO_BRIDGE_LOG");
    fz_counts(&now);
    fz_counts_same(&base, &now, "after vramio-run");
    return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * vramio-run - run a program so that its CUDA device allocations come from vramio's pool,
 * which the vulkan backend pins, maps and copies with no kernel module. The program is not
 * changed; its children inherit the bridge.
 *
 * How: a private directory, made once per (shim, driver) pair, holds libcuda.so.1 and
 * libcuda.so -> the shim (libvramio_cuda.so, bridge/shim.c) and VB_REAL_DRIVER -> the
 * driver that the loader finds for libcuda.so.1; it goes first on LD_LIBRARY_PATH. Only
 * the loader's search for the driver changes: no LD_PRELOAD, no libc function replaced.
 * The directory's own path is what LD_LIBRARY_PATH holds, so an install under a path with
 * ':' or ';' (which LD_LIBRARY_PATH cannot hold) works; where no usable directory exists,
 * or no driver can be found, vramio-run refuses rather than run the program unbridged.
 *
 * The bridge (libvramio_bridge.so, the shim beside it) is found through VRAMIO_BRIDGE_LIB,
 * else relative to this program: the private directory of an install (../lib/vramio,
 * ../lib64/vramio, ../lib/<multiarch>/vramio; see packaging/install.mk), or ../lib in the
 * build tree. VRAMIO_BRIDGE_LIB is passed on as the absolute path it resolved to: each
 * process of the program would look a relative one up in its own current directory.
 * The directory: VRAMIO_RUN_DIR, else $XDG_RUNTIME_DIR/vramio,
 * ${XDG_CACHE_HOME:-$HOME/.cache}/vramio, ${TMPDIR:-/tmp}/vramio-UID, the passwd home's
 * .cache/vramio, /run/vramio (root): the first whose every directory only this user or root
 * can change (run_dir.c says why and how; the shared /tmp never is).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bridge.h"
#include "run_dir.h"
#include "cuda_loader.h"    /* util/: vr_cuda_dlopen */

#define SHIM_NAME "libvramio_cuda.so"
#ifndef VRAMIO_MULTIARCH
#define VRAMIO_MULTIARCH ""
#endif

static void usage(FILE *f)
{
    fprintf(f,
            "usage: vramio-run [--log] [--] PROGRAM [ARGS...]\n"
            "       vramio-run --help | --version\n"
            "\n"
            "Runs PROGRAM with vramio's libcuda.so.1 shim first on LD_LIBRARY_PATH: its\n"
            "cudaMalloc/cuMemAlloc memory becomes CUDA VMM memory from vramio's pool, which\n"
            "libgdrapi's vulkan backend can pin, map and copy without the gdrdrv kernel\n"
            "module; every other driver function is the driver's own. Sets\n"
            "VRAMIO_ENABLE_VULKAN=1 unless it is set.\n"
            "\n"
            "  --log      print what the bridge intercepts (VRAMIO_BRIDGE_LOG=1) and the\n"
            "             directories passed over\n"
            "  --help     this text\n"
            "  --version  the vramio version\n"
            "\n"
            "Environment: VRAMIO_BRIDGE_LIB (the bridge library; the shim is beside it),\n"
            "VRAMIO_RUN_DIR (where the shim's directory is made), VRAMIO_POOL_CACHE_MB\n"
            "(emptied slabs kept per GPU, default 64), VRAMIO_POOL_CHUNK_MB (the chunk\n"
            "size of large allocations, default 1024, 0: one allocation each).\n");
}

__attribute__((format(printf, 1, 2))) static int fail(const char *fmt, ...)
{
    va_list ap;

    fputs("vramio-run: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 127;
}

/* The bridge: VRAMIO_BRIDGE_LIB or beside this program; its real path, or 0. */
static int find_bridge(char *out)
{
    static const char *const dirs[] = { "../lib/vramio", "../lib64/vramio",
                                        "../lib/" VRAMIO_MULTIARCH "/vramio", "../lib" };
    const char *env = getenv("VRAMIO_BRIDGE_LIB");
    char self[PATH_MAX], cand[PATH_MAX + 64];
    size_t i;
    ssize_t n;
    char *slash;

    if (env && *env)
        return realpath(env, out) != NULL;
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return 0;
    self[n] = '\0';
    slash = strrchr(self, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
        if ((size_t)snprintf(cand, sizeof(cand), "%s/%s/%s", self, dirs[i], VB_BRIDGE_NAME) <
                sizeof(cand) && access(cand, R_OK) == 0 && realpath(cand, out))
            return 1;
    return 0;
}

/* The driver file the loader finds for libcuda.so.1 (in out), or 0 with the reason in why. */
static int find_driver(char *out, char *why, size_t len)
{
    const char *llp = getenv("LD_LIBRARY_PATH");
    char dir[PATH_MAX], cand[PATH_MAX + 32];
    struct link_map *lm = NULL;
    const char *p = llp, *e;
    ssize_t n;
    void *h;

    /* Run under vramio-run already: the first shim directory on the path names the driver
     * (loading the shim here would load the bridge for nothing). */
    while (p && *p) {
        e = p + strcspn(p, ":;");
        if (e > p && (size_t)(e - p) < sizeof(dir)) {
            memcpy(dir, p, (size_t)(e - p));
            dir[e - p] = '\0';
            snprintf(cand, sizeof(cand), "%s/%s", dir, VB_REAL_DRIVER);
            n = readlink(cand, out, PATH_MAX - 1);
            if (n > 0) {
                out[n] = '\0';
                return 1;
            }
            snprintf(cand, sizeof(cand), "%s/libcuda.so.1", dir);
            if (access(cand, F_OK) == 0)
                break; /* the loader will take this one */
        }
        p = *e ? e + 1 : e;
    }
    h = vr_cuda_dlopen();
    if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name || !*lm->l_name) {
        const char *d = dlerror();

        snprintf(why, len, "%s", d ? d : "libcuda.so.1 has no file name");
        return 0;
    }
    if (!realpath(lm->l_name, dir)) {
        snprintf(why, len, "%s: %s", lm->l_name, strerror(errno));
        return 0;
    }
    /* The name the loader found (libcuda.so.1, a link to the versioned file), so that a
     * driver update keeps the directory right. */
    if (lm->l_name[0] == '/' && strlen(lm->l_name) < PATH_MAX)
        snprintf(out, PATH_MAX, "%s", lm->l_name);
    else
        snprintf(out, PATH_MAX, "%s", dir);
    return 1;
}

static int log_on;

/* With --log: the bases passed over, and why. */
static void note(const char *line)
{
    if (log_on && line && *line)
        fprintf(stderr, "vramio-run: passed over %s\n", line);
}

int main(int argc, char **argv)
{
    char bridge[PATH_MAX], shim[PATH_MAX + 32], driver[PATH_MAX], dir[PATH_MAX],
         why[4 * PATH_MAX], *path, *slash;
    const char *old, *old_bridge;
    int i = 1, err;
    size_t need;

    /* Privileges that the caller lacks (set-user-ID, set-group-ID, file capabilities such
     * as cap_dac_override, a security module's transition: the kernel says AT_SECURE for
     * each): the directory would be made with them, where the caller's environment says.
     * The loader ignores LD_LIBRARY_PATH for such programs anyway, so vramio-run has nothing
     * to offer them (README: they run unbridged). */
    if (getuid() != geteuid() || getgid() != getegid())
        return fail("refusing to run set-user-ID or set-group-ID (real uid %u, effective %u)",
                    (unsigned)getuid(), (unsigned)geteuid());
    if (getauxval(AT_SECURE))
        return fail("refusing to run with privileges that its caller lacks (AT_SECURE: file "
                    "capabilities, or a security module's transition)");
    /* The mark of an outer vramio-run: its directory is checked afresh here. */
    unsetenv(VR_RUN_MARK);

    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--version")) {
            printf("vramio-run (vramio) %s\n", VRAMIO_VERSION_STRING);
            return 0;
        } else if (!strcmp(argv[i], "--log")) {
            log_on = 1;
        } else {
            fprintf(stderr, "vramio-run: unknown option '%s' (see vramio-run --help)\n", argv[i]);
            return 2;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "vramio-run: no program to run (see vramio-run --help)\n");
        return 2;
    }
    old_bridge = getenv("VRAMIO_BRIDGE_LIB");
    if (!find_bridge(bridge)) {
        if (old_bridge && *old_bridge)
            return fail("the bridge library %s cannot be read: %s", old_bridge,
                        strerror(errno));
        return fail("the bridge library %s is not beside vramio-run (set VRAMIO_BRIDGE_LIB)",
                    VB_BRIDGE_NAME);
    }
    slash = strrchr(bridge, '/');
    snprintf(shim, sizeof(shim), "%.*s/%s", (int)(slash - bridge), bridge, SHIM_NAME);
    if (access(shim, R_OK) != 0)
        return fail("the shim %s cannot be read: %s", shim, strerror(errno));
    if (!find_driver(driver, why, sizeof(why)))
        return fail("no CUDA driver to run the program with: %s", why);
    if (!vr_run_dir(shim, driver, dir, why, sizeof(why), note))
        return fail("no directory for the shim of libcuda.so.1 (set VRAMIO_RUN_DIR to one of "
                    "yours that no other user can write to, nor any directory above it): %s",
                    why);
    /* Ours first, then whatever the user's path holds already (an empty entry would mean
     * the current directory: none is added). */
    old = getenv("LD_LIBRARY_PATH");
    need = strlen(dir) + (old ? strlen(old) + 1 : 0) + 1;
    path = malloc(need);
    if (!path)
        return fail("out of memory");
    snprintf(path, need, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
    /* The user's VRAMIO_ENABLE_VULKAN stands (with 0 the bridge says that nothing can be
     * pinned and leaves every allocation to the driver); VR_RUN_MARK lets libgdrapi say
     * when the program's libcuda.so.1 is not the shim after all (the directory removed).
     * The user's VRAMIO_BRIDGE_LIB goes on as the file checked here, absolute. */
    if (setenv("LD_LIBRARY_PATH", path, 1) || setenv("VRAMIO_ENABLE_VULKAN", "1", 0) ||
        (old_bridge && *old_bridge && setenv("VRAMIO_BRIDGE_LIB", bridge, 1)) ||
        setenv(VR_RUN_MARK, dir, 1) || (log_on && setenv("VRAMIO_BRIDGE_LOG", "1", 1))) {
        free(path);
        return fail("cannot set the environment: %s", strerror(errno));
    }
    free(path);
    execvp(argv[i], &argv[i]);
    /* exec's errno, kept before the message: a failed write of it (stderr closed or full)
     * sets errno too, and made "not found" exit 126 instead of a shell's 127. */
    err = errno;
    fprintf(stderr, "vramio-run: cannot run '%s': %s\n", argv[i], strerror(err));
    return err == ENOENT ? 127 : 126;
}

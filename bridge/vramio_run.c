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
 * build tree. The directory: VRAMIO_RUN_DIR, else $XDG_RUNTIME_DIR/vramio, else
 * ${XDG_CACHE_HOME:-$HOME/.cache}/vramio, else /tmp/vramio-UID; the first that is ours.
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
#include <sys/stat.h>
#include <unistd.h>
#include "bridge.h"
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
            "VRAMIO_ENABLE_VULKAN=1.\n"
            "\n"
            "  --log      print what the bridge intercepts (VRAMIO_BRIDGE_LOG=1)\n"
            "  --help     this text\n"
            "  --version  the vramio version\n"
            "\n"
            "Environment: VRAMIO_BRIDGE_LIB (the bridge library; the shim is beside it),\n"
            "VRAMIO_RUN_DIR (where the shim's directory is made), VRAMIO_POOL_CACHE_MB\n"
            "(emptied slabs kept per GPU, default 64).\n");
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

/* snprintf that says whether the whole text fit (a cut path must never be used). */
__attribute__((format(printf, 3, 4))) static int put(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < len;
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

/* A path LD_LIBRARY_PATH can hold as one entry: no separator, no $ORIGIN-style token. */
static int path_ok(const char *p)
{
    return p[0] == '/' && !strpbrk(p, ":;$");
}

/* base exists (made if missing, 0700), is a directory of ours that others cannot write. */
static int our_dir(const char *base)
{
    char tmp[PATH_MAX];
    struct stat st;
    char *s;

    if (!put(tmp, sizeof(tmp), "%s", base))
        return 0;
    for (s = tmp + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
            return 0;
        *s = '/';
    }
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
        return 0;
    return lstat(base, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
           !(st.st_mode & (S_IWGRP | S_IWOTH));
}

static const char *const link_names[] = { "libcuda.so.1", "libcuda.so", VB_REAL_DRIVER };

/* dir's links point where they should. */
static int links_right(const char *dir, const char *shim, const char *driver)
{
    char path[PATH_MAX + 32], target[PATH_MAX];
    size_t i;
    ssize_t n;

    for (i = 0; i < 3; i++) {
        if (!put(path, sizeof(path), "%s/%s", dir, link_names[i]))
            return 0;
        n = readlink(path, target, sizeof(target) - 1);
        if (n <= 0)
            return 0;
        target[n] = '\0';
        if (strcmp(target, i < 2 ? shim : driver))
            return 0;
    }
    return 1;
}

/* FNV-1a of the two targets: one directory per pair, shared by every run that needs it. */
static uint64_t pair_hash(const char *a, const char *b)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const char *s;

    for (s = a; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;
    for (s = b; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* Make (or find) base/cuda-HASH with the three links, made whole before it appears. */
static int make_links(const char *base, const char *shim, const char *driver, char *out,
                      char *why, size_t len)
{
    char tmp[PATH_MAX], path[PATH_MAX + 32];
    size_t i;

    if (!put(out, PATH_MAX, "%s/cuda-%016llx", base,
             (unsigned long long)pair_hash(shim, driver)) ||
        !put(tmp, sizeof(tmp), "%s/.new-XXXXXX", base)) {
        put(why, len, "%s: too long a path", base);
        return 0;
    }
    if (links_right(out, shim, driver))
        return 1;
    if (!mkdtemp(tmp)) {
        put(why, len, "cannot make a directory in %s: %s", base, strerror(errno));
        return 0;
    }
    for (i = 0; i < 3; i++) {
        put(path, sizeof(path), "%s/%s", tmp, link_names[i]);
        if (symlink(i < 2 ? shim : driver, path) != 0) {
            put(why, len, "cannot make %s: %s", path, strerror(errno));
            break;
        }
    }
    if (i == 3 && rename(tmp, out) == 0)
        return 1;
    /* Another run made it first (rename onto a full directory fails), or we failed. */
    for (i = 0; i < 3; i++) {
        put(path, sizeof(path), "%s/%s", tmp, link_names[i]);
        unlink(path);
    }
    rmdir(tmp);
    if (links_right(out, shim, driver))
        return 1;
    if (!*why)
        put(why, len, "%s exists with other contents", out);
    return 0;
}

/* The shim's directory for this pair, in the first usable base; 0 with the reasons. */
static int shim_dir(const char *shim, const char *driver, char *out, char *why, size_t len)
{
    const char *env = getenv("VRAMIO_RUN_DIR"), *xdg = getenv("XDG_RUNTIME_DIR"),
               *cache = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char bases[4][PATH_MAX], one[PATH_MAX + 64];
    size_t i, n = 0, used = 0;

    if (env && *env) {
        n += (size_t)put(bases[n], PATH_MAX, "%s", env);
    } else {
        if (xdg && *xdg)
            n += (size_t)put(bases[n], PATH_MAX, "%s/vramio", xdg);
        if (cache && *cache)
            n += (size_t)put(bases[n], PATH_MAX, "%s/vramio", cache);
        else if (home && *home)
            n += (size_t)put(bases[n], PATH_MAX, "%s/.cache/vramio", home);
        n += (size_t)put(bases[n], PATH_MAX, "/tmp/vramio-%u", (unsigned)getuid());
    }
    why[0] = '\0';
    for (i = 0; i < n; i++) {
        one[0] = '\0';
        if (!path_ok(bases[i]))
            put(one, sizeof(one), "%s: LD_LIBRARY_PATH cannot hold it (':', ';', '$' or "
                "not absolute)", bases[i]);
        else if (!our_dir(bases[i]))
            put(one, sizeof(one), "%s: not a directory of this user that only it can write",
                bases[i]);
        else if (make_links(bases[i], shim, driver, out, one, sizeof(one)))
            return 1;
        used += (size_t)snprintf(why + used, used < len ? len - used : 0, "%s%s",
                                 used ? "; " : "", one);
        if (used >= len)
            used = len - 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    char bridge[PATH_MAX], shim[PATH_MAX + 32], driver[PATH_MAX], dir[PATH_MAX],
         why[4 * PATH_MAX], *path, *slash;
    const char *old;
    int i = 1, log = 0;
    size_t need;

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
            log = 1;
        } else {
            fprintf(stderr, "vramio-run: unknown option '%s' (see vramio-run --help)\n", argv[i]);
            return 2;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "vramio-run: no program to run (see vramio-run --help)\n");
        return 2;
    }
    old = getenv("VRAMIO_BRIDGE_LIB");
    if (!find_bridge(bridge)) {
        if (old && *old)
            return fail("the bridge library %s cannot be read: %s", old, strerror(errno));
        return fail("the bridge library %s is not beside vramio-run (set VRAMIO_BRIDGE_LIB)",
                    VB_BRIDGE_NAME);
    }
    slash = strrchr(bridge, '/');
    snprintf(shim, sizeof(shim), "%.*s/%s", (int)(slash - bridge), bridge, SHIM_NAME);
    if (access(shim, R_OK) != 0)
        return fail("the shim %s cannot be read: %s", shim, strerror(errno));
    if (!find_driver(driver, why, sizeof(why)))
        return fail("no CUDA driver to run the program with: %s", why);
    if (!shim_dir(shim, driver, dir, why, sizeof(why)))
        return fail("no directory for the shim of libcuda.so.1: %s", why);
    /* Ours first, then whatever the user's path holds already (an empty entry would mean
     * the current directory: none is added). */
    old = getenv("LD_LIBRARY_PATH");
    need = strlen(dir) + (old ? strlen(old) + 1 : 0) + 1;
    path = malloc(need);
    if (!path)
        return fail("out of memory");
    snprintf(path, need, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
    if (setenv("LD_LIBRARY_PATH", path, 1) || setenv("VRAMIO_ENABLE_VULKAN", "1", 1) ||
        (log && setenv("VRAMIO_BRIDGE_LOG", "1", 1))) {
        free(path);
        return fail("cannot set the environment: %s", strerror(errno));
    }
    free(path);
    execvp(argv[i], &argv[i]);
    fprintf(stderr, "vramio-run: cannot run '%s': %s\n", argv[i], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}

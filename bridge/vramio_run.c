/* SPDX-License-Identifier: MIT */
/*
 * vramio-run - run a program with libvramio_bridge.so preloaded: its CUDA device allocations
 * come from vramio's pool, which the vulkan backend pins, maps and copies with no kernel
 * module. The program is not changed; its children inherit the bridge.
 *
 * The bridge is found through VRAMIO_BRIDGE_LIB, else relative to this program: the private
 * directory of an install (../lib/vramio, ../lib64/vramio, ../lib/<multiarch>/vramio; see
 * packaging/install.mk), or ../lib in the build tree; else by its name through the loader.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BRIDGE_NAME "libvramio_bridge.so"
#ifndef VRAMIO_MULTIARCH
#define VRAMIO_MULTIARCH ""
#endif

static void usage(FILE *f)
{
    fprintf(f,
            "usage: vramio-run [--log] [--] PROGRAM [ARGS...]\n"
            "       vramio-run --help | --version\n"
            "\n"
            "Runs PROGRAM with " BRIDGE_NAME " preloaded: its cudaMalloc/cuMemAlloc memory\n"
            "becomes CUDA VMM memory from vramio's pool, which libgdrapi's vulkan backend can\n"
            "pin, map and copy without the gdrdrv kernel module. Sets VRAMIO_ENABLE_VULKAN=1.\n"
            "\n"
            "  --log      print what the bridge intercepts (VRAMIO_BRIDGE_LOG=1)\n"
            "  --help     this text\n"
            "  --version  the vramio version\n"
            "\n"
            "Environment: VRAMIO_BRIDGE_LIB (the bridge library to preload),\n"
            "VRAMIO_POOL_CACHE_MB (emptied slabs kept per GPU, default 64).\n");
}

/* The bridge beside this program, or its bare name for the loader's search. */
static void find_bridge(char *out, size_t len)
{
    static const char *const dirs[] = { "../lib/vramio", "../lib64/vramio",
                                        "../lib/" VRAMIO_MULTIARCH "/vramio", "../lib" };
    const char *env = getenv("VRAMIO_BRIDGE_LIB");
    char self[PATH_MAX];
    size_t i;
    ssize_t n;
    char *slash;

    if (env && *env) {
        snprintf(out, len, "%s", env);
        return;
    }
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
                if ((size_t)snprintf(out, len, "%s/%s/%s", self, dirs[i], BRIDGE_NAME) < len &&
                    access(out, R_OK) == 0)
                    return;
        }
    }
    snprintf(out, len, "%s", BRIDGE_NAME);
}

int main(int argc, char **argv)
{
    char bridge[PATH_MAX + 64], *preload;
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
    find_bridge(bridge, sizeof(bridge));
    if (strchr(bridge, '/') && access(bridge, R_OK) != 0) {
        fprintf(stderr, "vramio-run: the bridge library %s cannot be read: %s\n", bridge,
                strerror(errno));
        return 127;
    }
    /* Ours first, then whatever the user preloads already. */
    old = getenv("LD_PRELOAD");
    need = strlen(bridge) + (old ? strlen(old) + 1 : 0) + 1;
    preload = malloc(need);
    if (!preload) {
        fprintf(stderr, "vramio-run: out of memory\n");
        return 127;
    }
    snprintf(preload, need, "%s%s%s", bridge, old && *old ? ":" : "", old && *old ? old : "");
    if (setenv("LD_PRELOAD", preload, 1) || setenv("VRAMIO_ENABLE_VULKAN", "1", 1) ||
        (log && setenv("VRAMIO_BRIDGE_LOG", "1", 1))) {
        fprintf(stderr, "vramio-run: cannot set the environment: %s\n", strerror(errno));
        free(preload);
        return 127;
    }
    free(preload);
    execvp(argv[i], &argv[i]);
    fprintf(stderr, "vramio-run: cannot run '%s': %s\n", argv[i], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}

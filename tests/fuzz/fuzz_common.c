/* SPDX-License-Identifier: MIT */
/*
 * fuzz_common.c - the input reader, the start with the stand-in drivers, the counters every
 * input gives back, findings (fuzz_common.h).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fuzz_common.h"
#include "t.h"

#ifndef FUZZ_FAKE_DIR
#error "FUZZ_FAKE_DIR: the build's tests/fake directory (tests/fuzz/fuzz.mk)"
#endif

extern char **environ;

/* Where findings go: stderr as it was at the start (libFuzzer's -close_fd_mask=2 sends the
 * target's stderr to /dev/null; the library's error log would drown the output otherwise). */
static int report_fd = 2;

uint64_t fz_take(struct fz_in *in, int bytes)
{
    uint64_t v = 0;

    for (int i = 0; i < bytes && in->n; i++, in->p++, in->n--)
        v |= (uint64_t)in->p[0] << (8 * i);
    return v;
}

void fz_str(struct fz_in *in, char *out, size_t len)
{
    size_t want = fz_u8(in), i;

    for (i = 0; i < want && i + 1 < len && in->n; i++) {
        out[i] = (char)in->p[0];
        in->p++;
        in->n--;
        if (!out[i])
            break;
    }
    out[i < len ? i : len - 1] = '\0';
}

uint64_t fz_size(struct fz_in *in, uint64_t unit)
{
    switch (fz_u8(in) & 7) {
    case 0: return fz_u8(in);
    case 1: return fz_u16(in);
    case 2: return (uint64_t)fz_u8(in) * unit;
    case 3: return (uint64_t)fz_u8(in) * unit + fz_u16(in);
    case 4: return fz_u32(in);
    case 5: return fz_u64(in);
    case 6: return (uint64_t)fz_u8(in) * unit - (fz_u8(in) & 15);
    default: return unit;
    }
}

/* ---- starting ---------------------------------------------------------------------------- */
static int user_var(const char *kv)
{
    return !strncmp(kv, "GDRCOPY_", 8) || !strncmp(kv, "VRAMIO_", 7) || !strncmp(kv, "FAKE_", 5);
}

void fz_start(int *argc, char ***argv, const char *standin, const char *const *vars)
{
    char llp[4096], pre[4096], asan[4096], **args;
    const char *a = getenv("ASAN_OPTIONS");
    char **e;
    int vmm = strcmp(standin, "cuda-vmm") == 0;

    if (getenv("VRAMIO_FUZZ_STANDIN")) {
        int fd = fcntl(2, F_DUPFD_CLOEXEC, 3);

        report_fd = fd >= 0 ? fd : 2;
        return;
    }
    /* The user's settings would change what the inputs do: every target runs with its own. */
    for (e = environ; *e;) {
        if (user_var(*e)) {
            char name[256];
            size_t n = strcspn(*e, "=");

            snprintf(name, sizeof(name), "%.*s", (int)n, *e);
            unsetenv(name);
            e = environ;
        } else {
            e++;
        }
    }
    snprintf(llp, sizeof(llp), "%s/%s%s", FUZZ_FAKE_DIR, standin,
             vmm ? ":" FUZZ_FAKE_DIR "/vulkan" : "");
    setenv("LD_LIBRARY_PATH", llp, 1);
    if (!vmm) {
        /* The stand-in's mmap of its exports (fake_mmap.c); ASan then does not come first. */
        snprintf(pre, sizeof(pre), "%s/%s/libfake_mmap.so", FUZZ_FAKE_DIR, standin);
        setenv("LD_PRELOAD", pre, 1);
    }
    snprintf(asan, sizeof(asan), "%s%sverify_asan_link_order=0", a ? a : "", a && *a ? ":" : "");
    setenv("ASAN_OPTIONS", asan, 1);
    for (; vars && *vars; vars++)
        putenv((char *)*vars);
    setenv("VRAMIO_FUZZ_STANDIN", standin, 1);
    /* libFuzzer's report of newly covered functions starts the symbolizer, whose pipes would
     * count as descriptors of the input that found them: off (fuzz_replay.c ignores flags). */
    args = calloc((size_t)*argc + 2, sizeof(*args));
    if (!args)
        exit(1);
    memcpy(args, *argv, (size_t)*argc * sizeof(*args));
    args[*argc] = "-print_funcs=0";
    execv("/proc/self/exe", args);
    fprintf(stderr, "fuzz: cannot re-execute with the stand-ins: %s\n", strerror(errno));
    exit(1);
}

void fz_setenv(int slot, const char *name, const char *value)
{
    static char bufs[FZ_ENV_SLOTS][4608];

    unsetenv(name);
    if (!value)
        return;
    if (slot < 0 || slot >= FZ_ENV_SLOTS ||
        (size_t)snprintf(bufs[slot], sizeof(bufs[slot]), "%s=%s", name, value) >=
            sizeof(bufs[slot]))
        fz_finding("fz_setenv: slot %d, %s too long", slot, name);
    putenv(bufs[slot]);
}

void *fz_cuda_sym(const char *name)
{
    static void *lib;

    if (!lib)
        lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return lib ? dlsym(lib, name) : NULL;
}

/* ---- counters ---------------------------------------------------------------------------- */
void fz_counts(struct fz_counts *c)
{
    c->fds = t_count_fds();
    c->maps = t_count_maps("/memfd:fake");
}

/* What each descriptor is, for the report of a leaked one. */
static void list_fds(char *out, size_t len)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    char link[300], target[256];
    size_t used = 0;
    ssize_t n;

    out[0] = '\0';
    while (d && (de = readdir(d)) && used < len) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
        n = readlink(link, target, sizeof(target) - 1);
        target[n > 0 ? n : 0] = '\0';
        used += (size_t)snprintf(out + used, len - used, " %s:%s", de->d_name, target);
    }
    if (d)
        closedir(d);
}

void fz_counts_same(const struct fz_counts *base, const struct fz_counts *now, const char *what)
{
    char fds[2048];

    if (base->fds != now->fds) {
        list_fds(fds, sizeof(fds));
        fz_finding("%s: %d open descriptors, %d before:%s", what, now->fds, base->fds, fds);
    }
    if (base->maps != now->maps)
        fz_finding("%s: %d mappings of the stand-ins' memory, %d before", what, now->maps,
                   base->maps);
}

void fz_finding(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    dprintf(report_fd, "FUZZ FINDING: %s\n", msg);
    abort();
}

void fz_errno_ok(int rc, const char *call)
{
    if (rc < 0 || rc > 4095)
        fz_finding("%s returned %d: neither 0 nor a positive errno", call, rc);
}

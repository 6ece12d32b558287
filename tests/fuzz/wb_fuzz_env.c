/* SPDX-License-Identifier: MIT */
/*
 * wb_fuzz_env.c - libFuzzer target (white-box): every environment variable the library reads,
 * with any value, through the code that reads it, each answer checked against the rule the
 * README gives for it. An input is a list of (variable, value) pairs; the variables are set,
 * then:
 *   GDRCOPY_ENABLE_LOGGING, GDRCOPY_LOG_LEVEL   read once per process (log.c, under
 *       pthread_once): this file is built with log.c itself, whose once-state it resets, so
 *       the library's own reader runs for every input; the levels it lets through are checked
 *   VRAMIO_DMA_CROSSOVER_READ/_WRITE   read by a constructor: their parser (dma_policy.c) is
 *       run on the value and checked against a parser of this file
 *   GDRCOPY_COPY_KERNEL   read by a constructor: the choice (copy_select.c) is run with it
 *       and any CPU features, over a table of kernels of this file
 *   GDRCOPY_BACKEND, GDRCOPY_USE_DMABUF_MMAP, VRAMIO_ENABLE_VULKAN   read by every gdr_open:
 *       gdr_open runs (the VMM and Vulkan stand-ins, the gdrdrv stand-in present or not) and
 *       the backend it chose is checked
 *   VRAMIO_UPSTREAM_ALIGNMENT   read by every gdr_map: an unaligned pin is mapped or refused
 *   VRAMIO_FORK_CHILD_TEARDOWN, VRAMIO_POOL_CACHE_MB, VRAMIO_RUN_SHIM   read in a forked child,
 *       once per GPU pool, and at the first load of the driver: a child is forked (when the
 *       input sets one of them) that exits (the stand-in Vulkan driver's exit handler aborts
 *       in a forked child: it must run exactly when the teardown is asked for), makes the first
 *       pool of GPU 1 and frees into it (is an emptied slab kept?), and loads the driver
 *       again (does it say that the shim is missing exactly when VRAMIO_RUN_SHIM is set?)
 * and, after every input, nothing of it is left (descriptors, mappings, pins, imports).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>
#include "copy/copy_kernels.h"
#include "dma/dma_policy.h"
#include "fake_gdrdrv.h"
#include "fuzz_common.h"
#include "vramio.h"
/* The library's log, built into this program in place of the archive's log.o, so that its
 * once-read environment can be read again for every input (log_once, log_threshold). */
#include "process/log.c"

void *vr_cuda_dlopen(void);     /* util/cuda_loader.c: the driver, as the library loads it */
/* The sanitizers' report file (absent where the program is built without them), and the
 * source coverage's file (tests/fuzz/fuzz_coverage.sh: a child that leaves by _exit() would
 * take what it ran with it). */
void __sanitizer_set_report_fd(void *fd) __attribute__((weak));
int __llvm_profile_write_file(void) __attribute__((weak));

static const char *const vars[] = {
    "GDRCOPY_ENABLE_LOGGING", "GDRCOPY_LOG_LEVEL", "VRAMIO_DMA_CROSSOVER_READ",
    "VRAMIO_DMA_CROSSOVER_WRITE", "GDRCOPY_COPY_KERNEL", "GDRCOPY_BACKEND",
    "GDRCOPY_USE_DMABUF_MMAP", "VRAMIO_ENABLE_VULKAN", "VRAMIO_UPSTREAM_ALIGNMENT",
    "VRAMIO_FORK_CHILD_TEARDOWN", "VRAMIO_POOL_CACHE_MB", "VRAMIO_RUN_SHIM",
};
#define NVARS (int)(sizeof(vars) / sizeof(vars[0]))
enum { V_LOG, V_LEVEL, V_XREAD, V_XWRITE, V_KERNEL, V_BACKEND, V_DMABUF, V_VULKAN, V_ALIGN,
       V_TEARDOWN, V_CACHE, V_SHIM };

static unsigned long long vmm_mem;    /* a vramio_alloc allocation of GPU 0, for the pins */
static struct fz_counts base;

/* ---- the log ------------------------------------------------------------------------------ */
static void check_log(const char *enable, const char *level)
{
    int want = VR_LOG_ERROR;
    char *end;
    long v;

    log_once = (pthread_once_t)PTHREAD_ONCE_INIT;
    log_threshold = VR_LOG_ERROR;
    if (enable) {
        want = VR_LOG_INFO;
        if (level && *level) {
            errno = 0;
            v = strtol(level, &end, 10);
            if (!*end && !errno && v >= 1 && v <= 4)
                want = (int)v;
        }
    }
    for (int l = VR_LOG_DEBUG; l <= VR_LOG_ERROR; l++)
        if (log_enabled((enum vr_log_level)l) != (l >= want))
            fz_finding("GDRCOPY_ENABLE_LOGGING=%s GDRCOPY_LOG_LEVEL=%s: level %d %s", enable,
                       level, l, l >= want ? "not shown" : "shown");
    vr_log(VR_LOG_DEBUG, "fuzz: %s %s", enable ? enable : "-", level ? level : "-");
}

/* ---- the crossovers --------------------------------------------------------------------- */
/* The README's rule: bytes, with K, M or G (powers of 1024), or never/off; below the floor
 * raised to it. 0 and the size, or EINVAL. Written apart from dma_policy.c's. */
static int my_crossover(const char *s, size_t *out)
{
    unsigned __int128 v = 0;
    size_t i = 0, shift = 0;

    if (!strcasecmp(s, "never") || !strcasecmp(s, "off")) {
        *out = SIZE_MAX;
        return 0;
    }
    for (; s[i] >= '0' && s[i] <= '9'; i++) {
        v = v * 10 + (unsigned)(s[i] - '0');
        if (v > SIZE_MAX)
            return EINVAL;
    }
    if (i == 0)
        return EINVAL;
    if (s[i] && strchr("kKmMgG", s[i])) {
        shift = strchr("kK", s[i]) ? 10 : strchr("mM", s[i]) ? 20 : 30;
        i++;
    }
    if (s[i] || (v << shift) > SIZE_MAX)
        return EINVAL;
    v <<= shift;
    *out = v < VR_DMA_FLOOR ? VR_DMA_FLOOR : (size_t)v;
    return 0;
}

static void check_crossover(const char *name, const char *value)
{
    size_t got = 7, want = 7;
    int rc, my;

    if (!value)
        return;
    rc = vr_dma_parse_crossover(value, &got);
    my = my_crossover(value, &want);
    if (rc != my || (rc == 0 && got != want) || (rc && got != 7))
        fz_finding("%s=%s: parsed as %d/%zu, the rule says %d/%zu", name, value, rc, got, my,
                   want);
}

/* ---- the copy kernel ---------------------------------------------------------------------- */
static void check_kernel(const char *forced, unsigned features)
{
    static const struct vr_copy_kernel ks[] = {
        { .name = "avx512", .needs = 1u << 3 }, { .name = "avx2", .needs = 1u << 2 },
        { .name = "sse41", .needs = 1u << 1 }, { .name = "movdir64b", .needs = 1u << 4 },
        { .name = "c", .needs = 0 },
    };
    const size_t n = sizeof(ks) / sizeof(ks[0]);
    const struct vr_copy_kernel *k = vr_copy_choose_from(ks, n, features, forced), *want = NULL;

    for (size_t i = 0; i < n && !want; i++)
        if ((ks[i].needs & features) == ks[i].needs)
            want = &ks[i];
    for (size_t i = 0; forced && i < n; i++)
        if (!strcmp(ks[i].name, forced) && (ks[i].needs & features) == ks[i].needs)
            want = &ks[i];
    if (k != want)
        fz_finding("GDRCOPY_COPY_KERNEL=%s with features %#x: chose %s, not %s", forced,
                   features, k ? k->name : "none", want->name);
}

/* ---- the backends ------------------------------------------------------------------------- */
static int is_one(const char *v)
{
    return v && !strcmp(v, "1");
}

static void check_open(const char **val, int module)
{
    const char *forced = val[V_BACKEND];
    struct fgd_config cfg = { .open_errno = module ? 0 : ENOENT, .version = (2 << 16) | 6,
                              .persistent = 1 };
    vramio_backend_t b = VRAMIO_BACKEND_NONE;
    int opted = (forced && !strcmp(forced, "vulkan")) || (val[V_VULKAN] && atoi(val[V_VULKAN]));
    gdr_t g;

    fgd_config(&cfg);
    g = gdr_open();
    if (g && vramio_get_backend(g, &b))
        fz_finding("vramio_get_backend of an open gdr_t failed");
    if (forced && *forced) {
        if (strcmp(forced, "gdrdrv") && strcmp(forced, "dmabuf") && strcmp(forced, "vulkan")) {
            if (g || !strstr(vramio_last_error(), "GDRCOPY_BACKEND"))
                fz_finding("GDRCOPY_BACKEND=%s: gdr_open %s (%s)", forced,
                           g ? "worked" : "failed without naming it", vramio_last_error());
        } else if (g && strcmp(vramio_backend_name(b), forced)) {
            fz_finding("GDRCOPY_BACKEND=%s: gdr_open chose %s", forced, vramio_backend_name(b));
        } else if (!g && (module || !strcmp(forced, "vulkan")) && strcmp(forced, "dmabuf")) {
            fz_finding("GDRCOPY_BACKEND=%s: gdr_open failed (%s)", forced, vramio_last_error());
        }
    } else if (is_one(val[V_DMABUF])) {
        /* The VMM stand-in has no dma-buf export: the forced backend is unusable. */
        if (g)
            fz_finding("GDRCOPY_USE_DMABUF_MMAP=1: gdr_open chose %s", vramio_backend_name(b));
    } else if (module) {
        if (!g || b != VRAMIO_BACKEND_GDRDRV)
            fz_finding("with gdrdrv: gdr_open %s %s", g ? "chose" : "failed",
                       g ? vramio_backend_name(b) : vramio_last_error());
    } else if (!!g != opted) {
        fz_finding("VRAMIO_ENABLE_VULKAN=%s without gdrdrv: gdr_open %s", val[V_VULKAN],
                   g ? "worked" : "failed");
    }
    if (g && b == VRAMIO_BACKEND_VULKAN) {
        /* A pin 4 KiB into the allocation: mapped, unless upstream's alignment is asked. */
        gdr_mh_t mh;
        void *map;
        int rc = gdr_pin_buffer_v2(g, vmm_mem + 4096, 4096, 0, &mh);

        if (rc)
            fz_finding("a vulkan pin failed: %s", vramio_last_error());
        rc = gdr_map(g, mh, &map, 4096);
        if ((rc == 0) == is_one(val[V_ALIGN]))
            fz_finding("VRAMIO_UPSTREAM_ALIGNMENT=%s: an unaligned pin %s", val[V_ALIGN],
                       rc ? "refused" : "mapped");
    }
    if (g && gdr_close(g))
        fz_finding("gdr_close failed");
    cfg.open_errno = ENOENT;
    fgd_config(&cfg);
}

/* ---- what a forked child reads ---------------------------------------------------------- */
/* Exits 20 or 21 when the pool's cache does not follow the value; else by exit(0), where the
 * library's exit handler (registered in the child by the fork, so run first) leaves at once
 * with _exit(0), unless the teardown was asked for: then the exit handlers before it run, the
 * first of them teardown_ran (registered after libFuzzer's and the Vulkan stand-in's, which
 * would save the input as a crash, or abort). */
#define TEARDOWN_RAN 42
static pid_t parent;

static void teardown_ran(void)
{
    if (getpid() != parent)
        _exit(TEARDOWN_RAN);
}

static void child(const char **val, int errfd)
{
    struct vramio_pool_stats st;
    unsigned long long d;
    unsigned long mb = 64;
    char *end;
    int cached;

    if (val[V_CACHE] && *val[V_CACHE]) {
        mb = strtoul(val[V_CACHE], &end, 10);
        if (*end || mb > (SIZE_MAX >> 20))
            mb = 64;
    }
    if (vramio_alloc(1, 4096, &d) || vramio_free(d) || vramio_pool_stats(1, &st))
        _exit(20);
    cached = (size_t)mb << 20 >= ((size_t)2 << 20);
    if ((int)st.cached_slabs != cached)
        _exit(21);
    dup2(errfd, 2);
    vr_cuda_dlopen();
    if (__llvm_profile_write_file)
        __llvm_profile_write_file();
    exit(0);
}

static void check_child(const char **val)
{
    char out[4096] = "";
    int p[2], status, teardown = val[V_TEARDOWN] && atoi(val[V_TEARDOWN]) != 0;
    int shim_said, shim_set = val[V_SHIM] && *val[V_SHIM];
    ssize_t n, got = 0;
    pid_t pid, w = -1;

    if (!val[V_TEARDOWN] && !val[V_CACHE] && !val[V_SHIM])
        return;
    if (pipe(p))
        fz_finding("pipe: %s", strerror(errno));
    pid = fork();
    if (pid == 0) {
        /* Nothing of the child's reaches libFuzzer's output or artifacts: its descriptors
         * lead nowhere (its exit handler says that the target exited), and an abort is a
         * plain death (not a crash that libFuzzer would save the input of). */
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        static const int sigs[] = { SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE };

        for (int fd = 1; fd < 1024; fd++)
            if (fd != p[1] && fd != null && fcntl(fd, F_GETFD) != -1)
                dup2(null, fd);
        for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
            signal(sigs[i], SIG_DFL);
        /* A forked child would reopen the sanitizers' report file as ".PID" in the working
         * directory: stderr (now /dev/null) instead. */
        if (__sanitizer_set_report_fd)
            __sanitizer_set_report_fd((void *)(intptr_t)2);
        child(val, p[1]);
    }
    close(p[1]);
    /* Read to the end (a child that logs at debug level says more than out holds: it must
     * not meet a closed pipe, nor when a signal cuts a read short), keeping the first of it. */
    for (;;) {
        char rest[4096];

        n = got < (ssize_t)sizeof(out) - 1 ? read(p[0], out + got, sizeof(out) - 1 - (size_t)got)
                                            : read(p[0], rest, sizeof(rest));
        if (n < 0 && errno == EINTR)
            continue;           /* libFuzzer's timer (-timeout) */
        if (n <= 0)
            break;
        got += got < (ssize_t)sizeof(out) - 1 ? n : 0;
    }
    out[got] = '\0';
    close(p[0]);
    while (pid > 0 && (w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
        ;
    if (pid < 0 || w != pid)
        fz_finding("fork or wait: %s", strerror(errno));
    if (WIFEXITED(status) && (WEXITSTATUS(status) == 20 || WEXITSTATUS(status) == 21))
        fz_finding("VRAMIO_POOL_CACHE_MB=%s: the child's pool check %d failed", val[V_CACHE],
                   WEXITSTATUS(status));
    if (!WIFEXITED(status) ||
        WEXITSTATUS(status) != (teardown ? TEARDOWN_RAN : 0))
        fz_finding("VRAMIO_FORK_CHILD_TEARDOWN=%s: the child's exit %s the exit handlers "
                   "(status %#x)", val[V_TEARDOWN], teardown ? "skipped" : "ran", status);
    shim_said = strstr(out, "is not vramio's shim") != NULL;
    if (shim_said != shim_set)
        fz_finding("VRAMIO_RUN_SHIM=%s: the missing shim %s", val[V_SHIM],
                   shim_said ? "reported" : "not reported");
}

/* ---- the target ------------------------------------------------------------------------- */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char *const standin_vars[] = { "FAKE_CUDA_DEVICES=2", "FAKE_VK_GPUS=2", NULL };
    gdr_t g;

    fz_start(argc, argv, "cuda-vmm", standin_vars);
    /* GPU 0's pool (the pins' memory) and the Vulkan instance exist before the counters are
     * taken; GPU 1's pool is left for the forked children to make. */
    setenv("VRAMIO_ENABLE_VULKAN", "1", 1);
    g = gdr_open();
    if (!g || vramio_alloc(0, 4 << 20, &vmm_mem))
        fz_finding("start: %s", vramio_last_error());
    {
        gdr_mh_t mh;
        void *map;
        if (gdr_pin_buffer_v2(g, vmm_mem, 65536, 0, &mh) || gdr_map(g, mh, &map, 65536))
            fz_finding("start: %s", vramio_last_error());
    }
    gdr_close(g);
    unsetenv("VRAMIO_ENABLE_VULKAN");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int counted;
    struct fz_in in = { data, size };
    char values[NVARS][256];
    const char *val[NVARS] = { 0 };
    struct fz_counts now;
    unsigned flags;

    if (!counted++) {
        fz_counts(&base);
        parent = getpid();
        atexit(teardown_ran);   /* after libFuzzer's own: see child() */
    }
    flags = fz_u8(&in);
    while (in.n) {
        int v = (int)(fz_u8(&in) % NVARS);

        fz_str(&in, values[v], sizeof(values[v]));
        val[v] = values[v];
    }
    for (int v = 0; v < NVARS; v++)
        fz_setenv(v, vars[v], val[v]);
    check_log(val[V_LOG], val[V_LEVEL]);
    check_crossover(vars[V_XREAD], val[V_XREAD]);
    check_crossover(vars[V_XWRITE], val[V_XWRITE]);
    check_kernel(val[V_KERNEL], flags & 0x1f);
    check_open(val, flags & 0x80);
    check_child(val);
    for (int v = 0; v < NVARS; v++)
        unsetenv(vars[v]);
    log_once = (pthread_once_t)PTHREAD_ONCE_INIT;
    if (fgd_live_files() || fgd_live_pins() || fgd_live_maps())
        fz_finding("gdrdrv left: %d files, %d pins, %d mappings", fgd_live_files(),
                   fgd_live_pins(), fgd_live_maps());
    fz_counts(&now);
    fz_counts_same(&base, &now, "after gdr_close");
    return 0;
}

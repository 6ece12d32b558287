// SPDX-License-Identifier: MIT
/*
 * wb_reasons.c - a reason keeps its end, the advice the user acts on, however deeply it is
 * wrapped in others and however long what it quotes: against the stand-in CUDA driver and
 * Vulkan loader (tests/fake/, the driver's own error texts: FAKE_CUDA_ERROR_TEXT=driver), each
 * case in a child of its own:
 *   fd_span_check  the longest wrapping of the export's "out of file descriptors" reason: a
 *                  pin across two allocations side by side (vramio_alloc's chunks) whose
 *                  GPU's check of placed maps runs at that pin and finds no descriptor left
 *                  for its export (vulkan.c's span_find and pin_span around vulkan_span.c's
 *                  check around vulkan_export.c's reason): "raise it with ulimit -n" stays;
 *                  the pin says EMFILE, and once descriptors are free again the next pin
 *                  checks again and spans (the check's verdict of that moment is not kept)
 *   default_pool   the longest reason the vulkan backend gives whole, stream-ordered memory of
 *                  a pool without a POSIX-fd handle type (vulkan.c's pool_allocation): its
 *                  advice to run under vramio-run stays
 *   fd_pool_check  stream-ordered memory of a POSIX-fd pool, first pinned with no descriptor
 *                  free: the pool check that runs then fails for now, and is run again by
 *                  the next pin, which pins (vulkan_pool.c keeps no verdict of that moment)
 *   long_dlerror   libcuda.so.1 and libvulkan.so.1 found at a path of nearly PATH_MAX bytes,
 *                  neither loadable: dlerror() quotes the path, and each reason is cut in its
 *                  middle ("...") so that its end (the loader's cause, "install libvulkan1")
 *                  stays, in the backends' reasons and in gdr_open's line that joins them.
 * And util/reason.h's cut on its own: where it cuts, what it keeps, no character split.
 *
 * Whether the backends can pin across chunks is the core's answer (vr_pins_can_span): wrapped
 * here (-Wl,--wrap) to say yes without asking, so that the vulkan backend's check of placed
 * maps runs at the first pin across chunks, not at the allocation.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"
#include "cuda_loader.h"
#include "reason.h"
#include "vramio.h"

#define MIB (1ull << 20)

int __wrap_vr_pins_can_span(int gpu);
int __wrap_vr_pins_can_span(int gpu)
{
    return 1;
}

/* 1 when s ends with end. */
static int ends_with(const char *s, const char *end)
{
    size_t n = strlen(s), m = strlen(end);

    return n >= m && strcmp(s + n - m, end) == 0;
}

/* Vulkan started, GPU 0's device made and its import released: 4 MiB of two 2 MiB chunks in
 * *d, a gdr_t in *g. */
static int span_setup(gdr_t *g, unsigned long long *d)
{
    gdr_mh_t mh;

    *g = gdr_open();
    return t_check(*g && vramio_alloc(0, 4 * MIB, d) == 0 &&
                       gdr_pin_buffer_v2(*g, *d, MIB, 0, &mh) == 0 &&
                       gdr_unpin_buffer(*g, mh) == 0,
                   "reasons/fd_span_check/setup", "%s", vramio_last_error());
}

static void mode_fd_span_check(void)
{
    unsigned long long d = 0;
    struct rlimit old;
    char end[64];
    const char *e;
    gdr_mh_t mh;
    gdr_t g;
    int rc, limit;

    if (!span_setup(&g, &d))
        return;
    /* Two for the check's allocations side by side (the stand-in's memfds), none for the
     * export of the first to Vulkan. */
    limit = t_fd_room(2, &old);
    rc = gdr_pin_buffer_v2(g, d, 4 * MIB, 0, &mh);
    setrlimit(RLIMIT_NOFILE, &old);
    e = vramio_last_error();
    snprintf(end, sizeof(end), "the limit is %d: raise it with ulimit -n)", limit);
    t_check(rc != 0 && strstr(e, "runs past its CUDA allocation") &&
                strstr(e, "needs placed maps that work") && strstr(e, "EMFILE") &&
                ends_with(e, end) && !strstr(e, "..."),
            "reasons/fd_span_check/advice_whole", "rc %d, %zu bytes: %s", rc, strlen(e), e);
    /* The moment passed: the pin says what it was, and the next one checks again and spans
     * (a verdict kept from that moment refused every such pin for the process's life). */
    t_check(rc == EMFILE, "reasons/fd_span_check/pin_says_emfile", "rc %d", rc);
    rc = gdr_pin_buffer_v2(g, d, 4 * MIB, 0, &mh);
    t_check(rc == 0, "reasons/fd_span_check/next_pin_checks_again", "rc %d: %s", rc,
            vramio_last_error());
    if (rc == 0)
        gdr_unpin_buffer(g, mh);
    gdr_close(g);
    vramio_free(d);
}

static void mode_default_pool(void)
{
    const struct vr_cuda *cu;
    CUdeviceptr d = 0;
    const char *e;
    char why[256];
    gdr_mh_t mh;
    gdr_t g = gdr_open();
    int rc;

    if (!t_check(g && vr_cuda_init(&cu, why, sizeof(why)) == 0 &&
                     cu->cuMemAllocAsync(&d, 65536, NULL) == CUDA_SUCCESS,
                 "reasons/default_pool/setup", "%s", vramio_last_error()))
        return;
    rc = gdr_pin_buffer_v2(g, d, 65536, 0, &mh);
    e = vramio_last_error();
    t_check(rc == ENOTSUP && strstr(e, "of a pool made without") &&
                ends_with(e, "from such a pool where the driver allows it)"),
            "reasons/default_pool/advice_whole", "rc %d, %zu bytes: %s", rc, strlen(e), e);
    cu->cuMemFreeAsync(d, NULL);
    gdr_close(g);
}

/* Stream-ordered memory of a POSIX-fd pool, pinned first with no descriptor free: the pool
 * check (vulkan_pool.c) that runs at that first pin fails for want of one, and the pin says
 * so; the next pin, with descriptors free, checks again and pins (a verdict kept from that
 * moment refused every pin of such memory for the process's life). */
static void mode_fd_pool_check(void)
{
    const struct vr_cuda *cu;
    CUmemPoolProps props = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                             .handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                             .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE } };
    CUmemoryPool pool;
    CUdeviceptr d = 0;
    struct rlimit old;
    char why[256];
    gdr_mh_t mh;
    gdr_t g = gdr_open();
    int rc;

    if (!t_check(g && vr_cuda_init(&cu, why, sizeof(why)) == 0 &&
                     cu->cuMemPoolCreate(&pool, &props) == CUDA_SUCCESS &&
                     cu->cuMemAllocFromPoolAsync(&d, 65536, pool, NULL) == CUDA_SUCCESS,
                 "reasons/fd_pool_check/setup", "%s", vramio_last_error()))
        return;
    t_fd_room(0, &old);
    rc = gdr_pin_buffer_v2(g, d, 65536, 0, &mh);
    setrlimit(RLIMIT_NOFILE, &old);
    t_check(rc == ENOMEM || rc == EMFILE, "reasons/fd_pool_check/first_pin_fails_for_now",
            "rc %d: %s", rc, vramio_last_error());
    if (rc == 0)
        gdr_unpin_buffer(g, mh);
    rc = gdr_pin_buffer_v2(g, d, 65536, 0, &mh);
    t_check(rc == 0, "reasons/fd_pool_check/next_pin_checks_again", "rc %d: %s", rc,
            vramio_last_error());
    if (rc == 0)
        gdr_unpin_buffer(g, mh);
    cu->cuMemFreeAsync(d, NULL);
    cu->cuMemPoolDestroy(pool);
    gdr_close(g);
}

/* reason quotes a path cut in its middle ("...") and ends with end. */
static void cut_keeping_end(const char *name, const char *reason, const char *end)
{
    t_check(strstr(reason, "...") && strstr(reason, "file too short") && ends_with(reason, end),
            name, "%zu bytes, not cut in the middle or without its end '%s': %s",
            strlen(reason), end, reason);
}

static void mode_long_dlerror(void)
{
    char why[8192];
    gdr_t g = gdr_open();

    t_check(!g, "reasons/long_dlerror/gdr_open_null", "a gdr_t with no driver loadable");
    cut_keeping_end("reasons/long_dlerror/gdr_open_line", vramio_last_error(),
                    "; install libvulkan1)");
    vramio_backend_probe(VRAMIO_BACKEND_VULKAN, why, sizeof(why));
    cut_keeping_end("reasons/long_dlerror/vulkan", why, "; install libvulkan1");
    vramio_backend_probe(VRAMIO_BACKEND_DMABUF, why, sizeof(why));
    cut_keeping_end("reasons/long_dlerror/dmabuf", why, ": file too short)");
}

/* The drivers of the long folder, neither loadable (empty: "file too short"). */
static const char *const long_libs[] = { "libcuda.so.1", "libvulkan.so.1" };

/* What long_dir_make made down to dir, deepest first. */
static void long_dir_remove(const char *top, char *dir)
{
    char file[PATH_MAX + 64];
    char *slash;

    for (int i = 0; i < 2; i++) {
        snprintf(file, sizeof(file), "%s/%s", dir, long_libs[i]);
        unlink(file);
    }
    while (strlen(dir) >= strlen(top) && rmdir(dir) == 0 && strcmp(dir, top) != 0) {
        slash = strrchr(dir, '/');
        *slash = '\0';
    }
}

/*
 * A folder of nearly PATH_MAX bytes (components of 200) under a new one in /tmp, holding the
 * long_libs: in dir, its top in top. 1, or 0 when it cannot be made (and nothing is left).
 */
static int long_dir_make(char *top, char *dir, size_t len)
{
    char comp[201], file[PATH_MAX + 64];
    FILE *f;

    memset(comp, 'd', 200);
    comp[200] = '\0';
    snprintf(top, len, "/tmp/wb_reasons.XXXXXX");
    if (!mkdtemp(top))
        return 0;
    snprintf(dir, len, "%s", top);
    while (strlen(dir) + 1 + 200 + 1 + strlen(long_libs[1]) < PATH_MAX) {
        strcat(strcat(dir, "/"), comp);
        if (mkdir(dir, 0700) != 0) {
            *strrchr(dir, '/') = '\0';
            long_dir_remove(top, dir);
            return 0;
        }
    }
    for (int i = 0; i < 2; i++) {
        snprintf(file, sizeof(file), "%s/%s", dir, long_libs[i]);
        f = fopen(file, "w");
        if (!f) {
            long_dir_remove(top, dir);
            return 0;
        }
        fclose(f);
    }
    return 1;
}

/* 1 when s is whole UTF-8 characters: no lead byte without its continuation bytes. */
static int whole_chars(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int more = (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 : (*p & 0xf8) == 0xf0 ? 3 : 0;

        if ((*p & 0xc0) == 0x80)
            return 0;
        for (; more > 0; more--)
            if ((*++p & 0xc0) != 0x80)
                return 0;
    }
    return 1;
}

/* vr_reason on its own: whole where it fits; else the first third of what fits, "..." and the
 * end, in len - 1 bytes; no UTF-8 character split; a buffer with no room for that keeps the
 * beginning; none at all is left alone. */
static void reason_cuts(void)
{
    char buf[32], text[128], utf8[128] = "";
    size_t i;

    for (i = 0; i < 100; i++)
        text[i] = (char)('a' + i % 26);
    text[100] = '\0';
    for (i = 0; i < 40; i++)
        strcat(utf8, "\xc3\xa9");   /* e acute, two bytes */
    vr_reason(buf, sizeof(buf), "%s %d", "fits", 31);
    t_check(strcmp(buf, "fits 31") == 0, "reasons/cut/whole_where_it_fits", "'%s'", buf);
    vr_reason(buf, sizeof(buf), "%.31s", text);
    t_check(strncmp(buf, text, 31) == 0 && strlen(buf) == 31, "reasons/cut/none_at_the_limit",
            "'%s'", buf);
    vr_reason(buf, sizeof(buf), "%s: %s", "why", text);
    t_check(strlen(buf) == 31 && strncmp(buf, "why: abcd...", 12) == 0 &&
                ends_with(buf, text + 100 - 19),
            "reasons/cut/third_mark_end", "'%s'", buf);
    vr_reason(buf, sizeof(buf), "%s!!", utf8);   /* both cuts fall inside a character */
    t_check(whole_chars(buf) && strstr(buf, "...") && ends_with(buf, "\xc3\xa9!!") &&
                strlen(buf) <= 31,
            "reasons/cut/utf8_whole_chars", "'%s'", buf);
    vr_reason(buf, 6, "%s", text);
    t_check(strcmp(buf, "abcde") == 0, "reasons/cut/tiny_buffer_keeps_beginning", "'%s'", buf);
    vr_reason(NULL, 0, "%s", text);
    t_ok("reasons/cut/no_buffer");
}

/* Each case: its name (the child's mode), what it runs, whether it runs against the stand-ins
 * with the vulkan backend chosen (else the long folder on its library path, every backend
 * judged), and its environment. */
struct child {
    const char *name;
    void (*run)(void);
    int stand_ins;
    const char *env[4];
};

static const struct child cases[] = {
    { "fd_span_check", mode_fd_span_check, 1, { "VRAMIO_POOL_CHUNK_MB=2" } },
    { "default_pool", mode_default_pool, 1, { NULL } },
    { "fd_pool_check", mode_fd_pool_check, 1, { NULL } },
    { "long_dlerror", mode_long_dlerror, 0, { NULL } },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static void run_case(size_t i, const char *stand_ins, const char *long_dir)
{
    static char out[1 << 16];
    char lib_path[2 * PATH_MAX + 64], name[64];
    const char *env[8] = { lib_path, "FAKE_CUDA_ERROR_TEXT=driver", "GDRCOPY_BACKEND=vulkan" };
    int rc, sig = 0, n = 3;

    snprintf(lib_path, sizeof(lib_path), "LD_LIBRARY_PATH=%s",
             cases[i].stand_ins ? stand_ins : long_dir);
    if (!cases[i].stand_ins)
        n = 1;
    for (int k = 0; k < 4 && cases[i].env[k]; k++)
        env[n++] = cases[i].env[k];
    env[n] = NULL;
    rc = t_run_self(cases[i].name, env, out, sizeof(out), &sig);
    fputs(out, stdout);
    snprintf(name, sizeof(name), "reasons/%s/child", cases[i].name);
    t_check(rc == 0, name, "exit %d, signal %d", rc, sig);
}

int main(int argc, char **argv)
{
    const char *mode = t_child_mode(argc, argv);
    char dir[PATH_MAX], stand_ins[2 * PATH_MAX + 8], top[PATH_MAX], long_dir[PATH_MAX];
    size_t i;

    for (i = 0; mode && i < NCASES; i++)
        if (strcmp(mode, cases[i].name) == 0)
            cases[i].run();
    if (mode)
        return t_status();
    reason_cuts();
    if (!t_fake_cuda_dir("cuda-vmm", dir, sizeof(dir))) {
        t_skip("reasons", "no stand-in driver at %s (make fake-drivers)", dir);
        return t_status();
    }
    /* The Vulkan stand-in's folder beside the CUDA one's. */
    snprintf(stand_ins, sizeof(stand_ins), "%s:%.*s/vulkan", dir,
             (int)(strrchr(dir, '/') - dir), dir);
    if (!t_check(long_dir_make(top, long_dir, sizeof(long_dir)), "reasons/long_dir",
                 "cannot make a folder of %d bytes under /tmp", PATH_MAX))
        return t_status();
    for (i = 0; i < NCASES; i++)
        run_case(i, stand_ins, long_dir);
    long_dir_remove(top, long_dir);
    return t_status();
}

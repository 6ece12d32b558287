/* SPDX-License-Identifier: MIT */
/*
 * gdrcopy_apiperf - cost of the gdrapi calls around a copy: gdr_pin_buffer, gdr_map,
 * gdr_get_info, gdr_unmap, gdr_unpin_buffer (and gdr_open/gdr_close), for buffer sizes from
 * 64 KiB doubling up to -s. Prints avg/min/p50/p99 in microseconds per call.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdrapi.h"
#include "vramio.h"
#include "common/gpumem.h"
#include "common/stats.h"
#include "common/util.h"

static const char *prog = "gdrcopy_apiperf";

enum { API_PIN, API_MAP, API_INFO, API_UNMAP, API_UNPIN, API_COUNT };
static const char *const api_names[API_COUNT] = {
    "gdr_pin_buffer", "gdr_map", "gdr_get_info", "gdr_unmap", "gdr_unpin_buffer",
};

struct opts {
    size_t size;
    unsigned long iters, warmup;
    struct common_opts co;
    const char *json;
};

static void usage(void)
{
    printf("Usage: %s [-h] [-s SIZE] [-n ITERS] [-w ITERS] [-d GPU] [-a KIND] [--json FILE]\n"
           "Time of the gdrapi calls per buffer size (64 KiB doubling up to SIZE).\n\n"
           "Options:\n"
           "  -h          print this help and exit\n"
           "  -s SIZE     largest buffer size (default 4M; K, M, G suffixes)\n"
           "  -n ITERS    measured iterations per size (default 100)\n"
           "  -w ITERS    warm-up iterations per size, not measured (default 10)\n"
           "  -d GPU      CUDA device ordinal (default 0)\n"
           "  -a KIND     GPU memory: %s\n"
           "              (default vramio; upstream's cuMemAlloc and cuMemCreate are accepted)\n"
           "  --json FILE write the results as JSON to FILE ('-' for stdout)\n",
           prog, gm_kind_help());
}

static void parse(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        { "help", no_argument, NULL, 'h' }, { "json", required_argument, NULL, 'J' }, { 0 },
    };
    int c;

    *o = (struct opts){ .size = 4u << 20, .iters = 100, .warmup = 10, .co = { .kind = GM_VRAMIO } };
    while ((c = getopt_long(argc, argv, "hs:n:w:d:a:", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': usage(); exit(0);
        case 's':
            if (parse_size(optarg, &o->size) || o->size < GPU_PAGE_SIZE)
                usage_error(prog, "-s needs a size of at least 64K, not '%s'", optarg);
            break;
        case 'n': o->iters = count_opt(prog, c, optarg, 1ul << 24); break;
        case 'w':
            if (parse_uint(optarg, 1ul << 24, &o->warmup))
                usage_error(prog, "-w needs a count, not '%s'", optarg);
            break;
        case 'd': case 'a': common_opt(prog, c, optarg, &o->co); break;
        case 'J': o->json = optarg; break;
        default: usage_error(prog, "invalid option");
        }
    }
    if (optind < argc)
        usage_error(prog, "unexpected argument '%s'", argv[optind]);
}

static void check(int rc, const char *what)
{
    if (rc)
        die(prog, "%s failed: %s (%s)", what, vramio_strerror(rc), vramio_last_error());
}

/* One pin-map-info-unmap-unpin cycle; times[k] gets each call's microseconds. */
static void cycle(gdr_t g, uint64_t dptr, size_t size, double *times)
{
    gdr_mh_t mh;
    gdr_info_t info;
    void *map;
    uint64_t t0, t1;

    t0 = vr_now_ns();
    check(gdr_pin_buffer(g, dptr, size, 0, 0, &mh), "gdr_pin_buffer");
    t1 = vr_now_ns();
    times[API_PIN] = (double)(t1 - t0) / 1e3;
    check(gdr_map(g, mh, &map, size), "gdr_map");
    t0 = vr_now_ns();
    times[API_MAP] = (double)(t0 - t1) / 1e3;
    check(gdr_get_info(g, mh, &info), "gdr_get_info");
    t1 = vr_now_ns();
    times[API_INFO] = (double)(t1 - t0) / 1e3;
    check(gdr_unmap(g, mh, map, size), "gdr_unmap");
    t0 = vr_now_ns();
    times[API_UNMAP] = (double)(t0 - t1) / 1e3;
    check(gdr_unpin_buffer(g, mh), "gdr_unpin_buffer");
    t1 = vr_now_ns();
    times[API_UNPIN] = (double)(t1 - t0) / 1e3;
}

/* n doubles, or the program ends (out of memory). */
static double *samples_of(unsigned long n)
{
    double *p = malloc(n * sizeof(double));

    if (!p)
        die(prog, "out of memory");
    return p;
}

/* One row of the table: the call, the size it was timed at ("-" for none), its figures. */
static void print_row(const char *fn, const char *size, const struct stats *st)
{
    printf("%-20s %10s %12.3f %10.3f %10.3f %10.3f\n", fn, size, st->avg, st->min, st->p50,
           st->p99);
}

/* gdr_open and gdr_close of instances beside g: each open may set up a GPU context of its
 * own, so 20 samples are enough. */
static void time_open_close(const struct opts *o, struct stats *open_st, struct stats *close_st)
{
    unsigned long nopen = o->iters < 20 ? o->iters : 20;
    double *osamp = samples_of(nopen), *csamp = samples_of(nopen);

    for (unsigned long i = 0; i < nopen; i++) {
        uint64_t t0 = vr_now_ns();
        gdr_t g2 = gdr_open();

        osamp[i] = (double)(vr_now_ns() - t0) / 1e3;
        if (!g2)
            die(prog, "gdr_open failed: %s", vramio_last_error());
        t0 = vr_now_ns();
        gdr_close(g2);
        csamp[i] = (double)(vr_now_ns() - t0) / 1e3;
    }
    stats_compute(osamp, nopen, open_st);
    stats_compute(csamp, nopen, close_st);
    free(osamp);
    free(csamp);
}

/* The pin-map-info-unmap-unpin cycle at each size from a GPU page up to o->size, doubling:
 * a row per call and size, and the "results" array of the JSON report. */
static void time_cycles(gdr_t g, const struct opts *o, uint64_t dptr, struct json *j)
{
    double *samples[API_COUNT], times[API_COUNT];
    struct stats st;
    char col[32];

    for (int k = 0; k < API_COUNT; k++)
        samples[k] = samples_of(o->iters);
    json_arr(j, "results");
    for (size_t size = GPU_PAGE_SIZE; size <= o->size; size <<= 1) {
        for (unsigned long i = 0; i < o->warmup; i++)
            cycle(g, dptr, size, times);
        for (unsigned long i = 0; i < o->iters; i++) {
            cycle(g, dptr, size, times);
            for (int k = 0; k < API_COUNT; k++)
                samples[k][i] = times[k];
        }
        json_obj(j, NULL);
        json_int(j, "size", (long long)size);
        snprintf(col, sizeof(col), "%zu", size);
        for (int k = 0; k < API_COUNT; k++) {
            stats_compute(samples[k], o->iters, &st);
            print_row(api_names[k], col, &st);
            json_stats(j, api_names[k], &st);
        }
        json_end(j);
    }
    json_end(j);
    for (int k = 0; k < API_COUNT; k++)
        free(samples[k]);
}

int main(int argc, char **argv)
{
    struct opts o;
    struct gm_buf buf;
    struct json j;
    struct stats open_st, close_st;
    vramio_backend_t be = VRAMIO_BACKEND_NONE;
    double first_open;
    uint64_t t0;
    gdr_t g;

    tool_enable_backends();

    parse(argc, argv, &o);
    if (json_open(&j, o.json))
        die(prog, "cannot write %s: %s", o.json, strerror(errno));
    tool_gpu_setup(prog, o.co.kind, o.co.gpu, 0);
    tool_alloc(prog, o.co.kind, o.size, &buf, 0);

    /* The first open pays for backend setup: reported apart from the others. */
    t0 = vr_now_ns();
    g = gdr_open();
    first_open = (double)(vr_now_ns() - t0) / 1e3;
    if (!g)
        die(prog, "gdr_open failed: %s (run gdrcopy_info)", vramio_last_error());
    vramio_get_backend(g, &be);
    printf("backend: %s\n", vramio_backend_name(be));
    time_open_close(&o, &open_st, &close_st);

    json_str(&j, "tool", "apiperf");
    json_str(&j, "backend", vramio_backend_name(be));
    json_str(&j, "kind", gm_kind_name((enum gm_kind)o.co.kind));
    json_str(&j, "unit", "us");
    json_num(&j, "first_gdr_open", first_open);
    json_stats(&j, "gdr_open", &open_st);
    json_stats(&j, "gdr_close", &close_st);
    printf("first gdr_open: %.1f us\n", first_open);
    printf("%-20s %10s %12s %10s %10s %10s\n", "Function", "Size(B)", "Avg.Time(us)", "Min(us)",
           "P50(us)", "P99(us)");
    print_row("gdr_open", "-", &open_st);
    print_row("gdr_close", "-", &close_st);
    time_cycles(g, &o, buf.dptr, &j);
    if (json_close(&j))
        die(prog, "writing %s failed", o.json);
    check(gdr_close(g), "gdr_close");
    gm_free(&buf);
    return 0;
}

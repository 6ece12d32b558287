/* SPDX-License-Identifier: MIT */
/*
 * gdrcopy_copylat - latency of gdr_copy_to_mapping / gdr_copy_from_mapping for sizes from 1 B
 * up to the buffer size, beside the raw reference (the same copy done by a plain loop on the
 * same mapping, timed in batches alternating with the library's) and, with -c, cuMemcpy from
 * pinned host memory.
 *
 * Output keeps GDRCopy 2.6's table lines ("gdr_copy_to_mapping <size> <avg us>") and adds
 * min/p50/p99 columns. Small reads move through the buffer (a 4 KiB stride) so that no read is
 * answered by the CPU's streaming-load buffer from a previous one.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdrapi.h"
#include "vramio.h"
#include "cuda_loader.h"
#include "common/gpumem.h"
#include "common/measure.h"
#include "common/numa.h"
#include "common/rawcopy.h"
#include "common/stats.h"
#include "common/util.h"

static const char *prog = "gdrcopy_copylat";

struct opts {
    size_t size;
    unsigned long witers, riters;
    int cumemcpy;
    int with_auto;          /* -A: also vramio_copy_*_mapping_auto */
    struct common_opts co;
    double budget_s;
    const char *json;
};

struct ctx {
    gdr_mh_t mh;
    char *dev;          /* the buffer in the mapping */
    size_t span;        /* bytes of the mapping that reads may move through */
    char *src, *dst;    /* host buffers */
    size_t n;
    uint64_t dptr;
    const struct vr_cuda *cu;
    enum raw_write raw_w;   /* the raw write sequence of this size (pick_raw_write) */
};

/* Reads move by 4 KiB + 64 B per operation, wrapping inside the buffer. */
static size_t read_offset(const struct ctx *c, size_t i)
{
    size_t room = c->span > c->n ? c->span - c->n : 0;

    return room ? (i * (4096 + 64)) % room & ~(size_t)63 : 0;
}

static void op_lib_write(void *p, size_t i)
{
    struct ctx *c = p;

    gdr_copy_to_mapping(c->mh, c->dev, c->src, c->n);
}

static void op_raw_write(void *p, size_t i)
{
    struct ctx *c = p;

    raw_write(c->raw_w, c->dev, c->src, c->n);
}

static void op_lib_read(void *p, size_t i)
{
    struct ctx *c = p;

    gdr_copy_from_mapping(c->mh, c->dst, c->dev + read_offset(c, i), c->n);
}

static void op_raw_read(void *p, size_t i)
{
    struct ctx *c = p;

    raw_read_nt(c->dst, c->dev + read_offset(c, i), c->n);
}

static void op_auto_write(void *p, size_t i)
{
    struct ctx *c = p;

    vramio_copy_to_mapping_auto(c->mh, c->dev, c->src, c->n);
}

static void op_auto_read(void *p, size_t i)
{
    struct ctx *c = p;

    vramio_copy_from_mapping_auto(c->mh, c->dst, c->dev + read_offset(c, i), c->n);
}

static void op_cu_h2d(void *p, size_t i)
{
    struct ctx *c = p;

    c->cu->cuMemcpyHtoD((CUdeviceptr)c->dptr, c->src, c->n);
}

static void op_cu_d2h(void *p, size_t i)
{
    struct ctx *c = p;

    c->cu->cuMemcpyDtoH(c->dst, (CUdeviceptr)c->dptr, c->n);
}

static void usage(void)
{
    printf("Usage: %s [-h] [-s SIZE] [-w ITERS] [-r ITERS] [-c] [-A] [-C CPU] [-d GPU] [-a KIND]\n"
           "       [-M TYPE] [--json FILE]\n"
           "Latency of gdr_copy_to_mapping / gdr_copy_from_mapping for sizes 1 B .. SIZE.\n\n"
           "Options:\n"
           "  -h          print this help and exit\n"
           "  -s SIZE     buffer size, the largest copy (default 16M; K, M, G suffixes)\n"
           "  -w ITERS    write iterations per size (default 10000)\n"
           "  -r ITERS    read iterations per size (default 100)\n"
           "  -c          also measure cuMemcpy (H2D, D2H from pinned memory) and print the ratio\n"
           "  -A          also measure vramio_copy_*_mapping_auto (the copy engine above its\n"
           "              crossover, which is printed)\n"
           "  -C CPU      bind the measuring thread to this CPU (default: the first CPU\n"
           "              local to the GPU, from sysfs; printed as 'CPU binding')\n"
           "  -d GPU      CUDA device ordinal (default 0)\n"
           "  -a KIND     GPU memory: %s\n"
           "              (default vramio; upstream's cuMemAlloc and cuMemCreate are accepted)\n"
           "  -M TYPE     mapping type to request: default, wc, cache, device (default: default)\n"
           "  --json FILE write the results as JSON to FILE ('-' for stdout)\n"
           "  --budget S  stop each size after S seconds even if ITERS are not done (default 0.5)\n\n"
           "Each size is also measured with the raw reference: the same copy by a plain loop\n"
           "(writes up to 4 KiB: the fastest in this run of 8-byte stores + sfence, one\n"
           "64-byte non-temporal store per line and MOVDIR64B; NT stores above; reads:\n"
           "streaming loads),\n"
           "called the same way as the library, in batches alternating with the library's.\n",
           prog, gm_kind_help());
}

static void parse(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        { "help", no_argument, NULL, 'h' }, { "json", required_argument, NULL, 'J' },
        { "budget", required_argument, NULL, 'B' }, { 0 },
    };
    int c;

    *o = (struct opts){ .size = 16u << 20, .witers = 10000, .riters = 100,
                        .co = { .cpu = -1, .kind = GM_VRAMIO }, .budget_s = 0.5 };
    while ((c = getopt_long(argc, argv, "hs:w:r:cAC:d:a:M:", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': usage(); exit(0);
        case 's':
            if (parse_size(optarg, &o->size) || o->size == 0)
                usage_error(prog, "-s needs a size such as 4096 or 16M, not '%s'", optarg);
            break;
        case 'w': o->witers = count_opt(prog, c, optarg, 1ul << 32); break;
        case 'r': o->riters = count_opt(prog, c, optarg, 1ul << 32); break;
        case 'c': o->cumemcpy = 1; break;
        case 'A': o->with_auto = 1; break;
        case 'C': case 'd': case 'a': case 'M': common_opt(prog, c, optarg, &o->co); break;
        case 'J': o->json = optarg; break;
        case 'B':
            o->budget_s = strtod(optarg, NULL);
            if (o->budget_s <= 0)
                usage_error(prog, "--budget needs a positive number of seconds, not '%s'", optarg);
            break;
        default: usage_error(prog, "invalid option");
        }
    }
    if (optind < argc)
        usage_error(prog, "unexpected argument '%s'", argv[optind]);
}

struct row {
    size_t size;
    enum raw_write raw_w;   /* writes: which raw sequence was the fastest at this size */
    struct stats lib, raw, cu, au;
    double ratio;   /* median of the per-round ratios lib/raw (measure_latency_pair) */
    double ratio_q1, ratio_q3;  /* their p25 and p75: the spread of the ratio */
};

static void print_header(const char *title, unsigned long iters)
{
    printf("\n%s num iters for each size: %lu\n", title, iters);
    printf("Test \t\t\t Size(B) \t Avg.Time(us) \t Min(us) \t P50(us) \t P99(us)\n");
}

static void print_row(const char *name, size_t size, const struct stats *st)
{
    printf("%s \t %8zu \t %11.4f \t %8.4f \t %8.4f \t %8.4f\n", name, size, st->avg, st->min,
           st->p50, st->p99);
}

static void json_rows(struct json *j, const char *key, const struct row *rows, int n, int with_cu,
                      int write, int with_auto)
{
    json_arr(j, key);
    for (int i = 0; i < n; i++) {
        json_obj(j, NULL);
        json_int(j, "size", (long long)rows[i].size);
        json_stats(j, "vramio", &rows[i].lib);
        json_stats(j, "raw", &rows[i].raw);
        json_num(j, "ratio", rows[i].ratio);
        json_num(j, "ratio_p25", rows[i].ratio_q1);
        json_num(j, "ratio_p75", rows[i].ratio_q3);
        if (write)
            json_str(j, "raw_seq", raw_write_name(rows[i].raw_w));
        if (with_cu)
            json_stats(j, "cumemcpy", &rows[i].cu);
        if (with_auto)
            json_stats(j, "auto", &rows[i].au);
        json_end(j);
    }
    json_end(j);
}

/* Up to this size a write's raw reference is the fastest of the raw sequences that apply
 * (rawcopy.h), timed here in the same run; above it the link is the limit and it is the NT
 * loop. Each candidate is timed as the reference itself is, in alternating batches with the
 * library's copy (measure_latency_pair): on the H200 short batches of small WC writes run in
 * another regime (measure.c), so a choice made there need not be the fastest here. The
 * fastest is the one against which the library's copy is slowest (the largest median ratio
 * of the same rounds, which drift and noise hit alike). */
#define PICK_RAW_MAX 4096

static enum raw_write pick_raw_write(struct ctx *c, const struct opts *o)
{
    enum raw_write best = c->n >= 256 ? RAW_W_NT : RAW_W_ST8;
    double best_r = 0;

    if (c->n > PICK_RAW_MAX)
        return best;
    for (int w = 0; w < RAW_W_COUNT; w++) {
        struct stats sr, sl;
        double r;

        if (!raw_write_usable((enum raw_write)w, c->n))
            continue;
        c->raw_w = (enum raw_write)w;
        measure_latency_pair(op_raw_write, op_lib_write, c, o->witers / 4 + 1, o->budget_s / 4,
                             &sr, &sl, &r);
        if (r > best_r) {
            best_r = r;
            best = (enum raw_write)w;
        }
    }
    return best;
}

/* One direction: every size, the library and the raw reference side by side (alternating
 * batches), then cuMemcpy; tables in upstream's shape. */
static int sweep(struct ctx *c, const struct opts *o, int write, struct row *rows)
{
    op_fn lib = write ? op_lib_write : op_lib_read, raw = write ? op_raw_write : op_raw_read;
    op_fn cu = write ? op_cu_h2d : op_cu_d2h;
    unsigned long iters = write ? o->witers : o->riters;
    int n = 0;

    for (size_t sz = 1; sz <= o->size; sz <<= 1, n++) {
        c->n = sz;
        rows[n].size = sz;
        if (write)
            c->raw_w = pick_raw_write(c, o);
        rows[n].raw_w = c->raw_w;
        {
            double q[3];

            measure_latency_pair_q(raw, lib, c, iters, o->budget_s, &rows[n].raw, &rows[n].lib, q);
            rows[n].ratio_q1 = q[0];
            rows[n].ratio = q[1];
            rows[n].ratio_q3 = q[2];
        }
        if (o->cumemcpy && c->cu)
            measure_latency(cu, c, iters, o->budget_s, &rows[n].cu);
        if (o->with_auto)
            measure_latency(write ? op_auto_write : op_auto_read, c, iters, o->budget_s,
                            &rows[n].au);
    }
    print_header(write ? "gdr_copy_to_mapping" : "gdr_copy_from_mapping", iters);
    if (write)
        printf("WARNING: Measuring the issue overhead as observed by the CPU. Data might not be "
               "ordered all the way to the GPU internal visibility.\n");
    for (int i = 0; i < n; i++)
        print_row(write ? "gdr_copy_to_mapping" : "gdr_copy_from_mapping", rows[i].size, &rows[i].lib);
    print_header(write ? "raw_copy_to_mapping" : "raw_copy_from_mapping", iters);
    for (int i = 0; i < n; i++)
        print_row(write ? "raw_copy_to_mapping" : "raw_copy_from_mapping", rows[i].size, &rows[i].raw);
    if (o->cumemcpy && c->cu) {
        print_header(write ? "cuMemcpy_H2D" : "cuMemcpy_D2H", iters);
        for (int i = 0; i < n; i++)
            print_row(write ? "cuMemcpy_H2D" : "cuMemcpy_D2H", rows[i].size, &rows[i].cu);
    }
    if (o->with_auto) {
        const char *name = write ? "vramio_copy_to_mapping_auto" : "vramio_copy_from_mapping_auto";

        print_header(name, iters);
        for (int i = 0; i < n; i++)
            print_row(name, rows[i].size, &rows[i].au);
    }
    printf("\n%s summary (p50; vramio/raw is the median of the ratios of alternating batches):\n"
           "  Size(B)   vramio(us)   raw(us)   vramio/raw (p25-p75)%s%s\n",
           write ? "write" : "read", o->cumemcpy && c->cu ? "   cuMemcpy(us)   cuMemcpy/vramio" : "",
           write ? "   raw seq" : "");
    for (int i = 0; i < n; i++) {
        printf("  %7zu   %10.4f   %7.4f   %10.3f (%.3f-%.3f)", rows[i].size, rows[i].lib.p50,
               rows[i].raw.p50, rows[i].ratio, rows[i].ratio_q1, rows[i].ratio_q3);
        if (o->cumemcpy && c->cu)
            printf("   %12.4f   %14.1fx", rows[i].cu.p50,
                   rows[i].lib.p50 > 0 ? rows[i].cu.p50 / rows[i].lib.p50 : 0);
        if (write)
            printf("   %s", raw_write_name(rows[i].raw_w));
        printf("\n");
    }
    return n;
}

int main(int argc, char **argv)
{
    char binding[400];
    struct opts o;
    struct ctx c = { 0 };
    struct tool_map m;
    struct gm_buf buf;
    struct json j;
    struct row wrows[64], rrows[64];
    int nw, nr;
    vramio_backend_t be = VRAMIO_BACKEND_NONE;
    size_t xr = 0, xw = 0;

    tool_enable_backends();

    parse(argc, argv, &o);
    if (json_open(&j, o.json))
        die(prog, "cannot write %s: %s", o.json, strerror(errno));
    numa_bind_for_gpu(o.co.gpu, o.co.cpu, binding, sizeof(binding));
    printf("CPU binding: %s\n", binding);
    tool_gpu_setup(prog, o.co.kind, o.co.gpu, 0);
    tool_alloc(prog, o.co.kind, o.size, &buf, 0);
    if (o.cumemcpy && !gm_kind_is_cuda((enum gm_kind)o.co.kind))
        die(prog, "-c needs CUDA memory (-a cuda, vmm-rdma, vmm-fd or vramio)");
    c.cu = gm_kind_is_cuda((enum gm_kind)o.co.kind) ? gm_cuda() : NULL;
    c.src = tool_host_alloc(prog, o.size);
    c.dst = tool_host_alloc(prog, o.size);
    memset(c.src, 0xa5, o.size);
    memset(c.dst, 0, o.size);
    c.dptr = buf.dptr;
    tool_map_open(&m, prog, buf.dptr, o.size, o.co.map_flags, 0);
    vramio_handle_backend(m.g, m.mh, &be);
    c.mh = m.mh;
    c.dev = m.ptr;
    c.span = o.size;
    printf("copy kernel: %s, raw reference: %s\n", vramio_copy_kernel(), raw_kernel_name());

    if (o.with_auto) {
        /* The first large _auto copy of each direction measures the crossover: not inside the
         * timed loops. */
        size_t n = o.size < (1u << 20) ? o.size : 1u << 20;

        vramio_copy_to_mapping_auto(c.mh, c.dev, c.src, n);
        vramio_copy_from_mapping_auto(c.mh, c.dst, c.dev, n);
        vramio_copy_auto_crossover(c.mh, &xr, &xw);
        printf("vramio_copy_*_mapping_auto: the copy engine from %zu B (reads), %zu B (writes)%s\n",
               xr, xw, xr == SIZE_MAX || xw == SIZE_MAX ? " (SIZE_MAX: never)" : "");
    }
    nw = sweep(&c, &o, 1, wrows);
    nr = sweep(&c, &o, 0, rrows);

    json_str(&j, "tool", "copylat");
    json_str(&j, "backend", vramio_backend_name(be));
    json_str(&j, "kind", gm_kind_name((enum gm_kind)o.co.kind));
    json_str(&j, "cpu_binding", binding);
    json_str(&j, "copy_kernel", vramio_copy_kernel());
    json_str(&j, "raw_kernel", raw_kernel_name());
    json_str(&j, "unit", "us");
    json_rows(&j, "write", wrows, nw, o.cumemcpy && c.cu, 1, o.with_auto);
    json_rows(&j, "read", rrows, nr, o.cumemcpy && c.cu, 0, o.with_auto);
    if (o.with_auto) {
        json_obj(&j, "dma_crossover");
        json_num(&j, "read", xr == SIZE_MAX ? -1 : (double)xr);
        json_num(&j, "write", xw == SIZE_MAX ? -1 : (double)xw);
        json_end(&j);
    }
    if (json_close(&j))
        die(prog, "writing %s failed", o.json);

    tool_map_close(&m, prog, 0);
    tool_host_free(c.src);
    tool_host_free(c.dst);
    gm_free(&buf);
    return 0;
}

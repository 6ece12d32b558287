/* SPDX-License-Identifier: MIT */
/*
 * gdrcopy_copybw - bandwidth of gdr_copy_to_mapping / gdr_copy_from_mapping, beside the raw
 * reference (non-temporal stores, streaming loads on the same mapping) and cuMemcpy from
 * pinned host memory. Prints GDRCopy 2.6's "write BW: X MB/s" / "read BW: X MB/s" lines
 * (MB = 2^20 bytes); -l sweeps copy sizes for the benchmark report.
 */
#include <errno.h>
#include <getopt.h>
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

static const char *prog = "gdrcopy_copybw";

struct opts {
    size_t size, copy, offset;
    unsigned long witers, riters;
    int sweep;
    struct common_opts co;
    const char *json;
};

struct ctx {
    gdr_mh_t mh;
    char *dev, *host;
    size_t n;
    uint64_t dptr;
    const struct vr_cuda *cu;
    const struct gm_buf *buf;
    size_t offset;
};

static void op_lib_write(void *p, size_t i) { struct ctx *c = p; gdr_copy_to_mapping(c->mh, c->dev, c->host, c->n); }
static void op_raw_write(void *p, size_t i) { struct ctx *c = p; raw_write_nt(c->dev, c->host, c->n); }
static void op_lib_read(void *p, size_t i) { struct ctx *c = p; gdr_copy_from_mapping(c->mh, c->host, c->dev, c->n); }
static void op_raw_read(void *p, size_t i) { struct ctx *c = p; raw_read_nt(c->host, c->dev, c->n); }
static void op_cu_h2d(void *p, size_t i) { struct ctx *c = p; c->cu->cuMemcpyHtoD((CUdeviceptr)c->dptr, c->host, c->n); }
static void op_cu_d2h(void *p, size_t i) { struct ctx *c = p; c->cu->cuMemcpyDtoH(c->host, (CUdeviceptr)c->dptr, c->n); }

static void usage(void)
{
    printf("Usage: %s [-h] [-s SIZE] [-c COPY] [-o OFFSET] [-l] [-w ITERS] [-r ITERS] [-d GPU]\n"
           "       [-a KIND] [-M TYPE] [-C CPU] [--json FILE]\n"
           "Bandwidth of gdr_copy_to_mapping / gdr_copy_from_mapping (MB = 2^20 bytes).\n\n"
           "Options:\n"
           "  -h          print this help and exit\n"
           "  -s SIZE     buffer size (default 128K; K, M, G suffixes)\n"
           "  -c COPY     bytes per copy (default: the buffer size)\n"
           "  -o OFFSET   offset of the copy in the buffer, a multiple of 4 (default 0)\n"
           "  -l          sweep copy sizes: every power of two from 4K to the buffer size\n"
           "  -w ITERS    write iterations (default 10000)\n"
           "  -r ITERS    read iterations (default 100)\n"
           "  -d GPU      CUDA device ordinal (default 0)\n"
           "  -a KIND     GPU memory: %s\n"
           "              (default vramio; upstream's cuMemAlloc and cuMemCreate are accepted)\n"
           "  -M TYPE     mapping type to request: default, wc, cache, device (default: default)\n"
           "  -C CPU      bind the measuring thread to this CPU (default: the first CPU\n"
           "              local to the GPU, from sysfs; printed as 'CPU binding')\n"
           "  --json FILE write the results as JSON to FILE ('-' for stdout)\n\n"
           "Each size is also measured with the raw reference (non-temporal stores + sfence,\n"
           "streaming loads, on the same mapping) and with cuMemcpy from pinned host memory;\n"
           "they take turns in 5 rounds of ITERS/5 copies and the median round is printed.\n",
           prog, gm_kind_help());
}

static void parse(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        { "help", no_argument, NULL, 'h' }, { "json", required_argument, NULL, 'J' }, { 0 },
    };
    int c;

    *o = (struct opts){ .size = 128 << 10, .witers = 10000, .riters = 100,
                        .co = { .kind = GM_VRAMIO, .cpu = -1 } };
    while ((c = getopt_long(argc, argv, "hs:c:o:lw:r:d:a:M:C:", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': usage(); exit(0);
        case 's':
            if (parse_size(optarg, &o->size) || !o->size)
                usage_error(prog, "-s needs a size such as 65536 or 1M, not '%s'", optarg);
            break;
        case 'c':
            if (parse_size(optarg, &o->copy) || !o->copy)
                usage_error(prog, "-c needs a size, not '%s'", optarg);
            break;
        case 'o':
            if (parse_size(optarg, &o->offset))
                usage_error(prog, "-o needs a byte offset, not '%s'", optarg);
            break;
        case 'l': o->sweep = 1; break;
        case 'w': o->witers = count_opt(prog, c, optarg, 1ul << 32); break;
        case 'r': o->riters = count_opt(prog, c, optarg, 1ul << 32); break;
        case 'C': case 'd': case 'a': case 'M': common_opt(prog, c, optarg, &o->co); break;
        case 'J': o->json = optarg; break;
        default: usage_error(prog, "invalid option");
        }
    }
    if (optind < argc)
        usage_error(prog, "unexpected argument '%s'", argv[optind]);
    if (o->offset % 4)
        usage_error(prog, "offset must be a multiple of 4 bytes");
    if (o->offset >= o->size)
        usage_error(prog, "offset must lie inside the buffer");
    if (!o->copy) /* upstream: the whole buffer; a sweep goes up to what fits after the offset */
        o->copy = o->sweep ? o->size - o->offset : o->size;
    if (o->copy > o->size - o->offset)
        usage_error(prog, "offset + copy size run past the end of the buffer");
}

struct bw {
    size_t size;
    double lib_w, raw_w, cu_w, lib_r, raw_r, cu_r;
};

/* Fewer iterations for big copies, so that a sweep stays within seconds (at least 10). */
static size_t iters_for(unsigned long iters, size_t n, double bytes_budget)
{
    double cap = bytes_budget / (double)n;

    return (size_t)(cap < (double)iters ? (cap < 10 ? 10 : cap) : (double)iters);
}

/* What gdr_copy_to_mapping wrote must be in GPU memory: read it back through the allocation
 * kind's own path (cuMemcpy or the emulated provider), not through the mapping. */
static void check_written(const struct ctx *c, size_t n)
{
    char *back = malloc(n);

    if (!back)
        die(prog, "out of memory");
    if (gm_read(c->buf, c->offset, back, n))
        die(prog, "reading the GPU buffer back failed");
    if (memcmp(back, c->host, n))
        die(prog, "data check failed: the GPU buffer differs from what was written");
    free(back);
}

#define ROUNDS 5

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The library and the raw reference (and cuMemcpy) take turns, ROUNDS times, each round a
 * fifth of the iterations; the median round is reported. Taking turns keeps a noisy
 * neighbour or a clock change from landing on one side only. */
static void rounds(struct ctx *c, op_fn ops[3], size_t iters, size_t cu_iters, double out[3])
{
    double bw[3][ROUNDS];
    size_t per = iters / ROUNDS ? iters / ROUNDS : 1, cu_per = cu_iters / ROUNDS ? cu_iters / ROUNDS : 1;

    for (int r = 0; r < ROUNDS; r++)
        for (int k = 0; k < 3; k++)
            bw[k][r] = ops[k] ? measure_bandwidth(ops[k], c, c->n, k == 2 ? cu_per : per, NULL) : 0;
    for (int k = 0; k < 3; k++) {
        qsort(bw[k], ROUNDS, sizeof(double), cmp_double);
        out[k] = bw[k][ROUNDS / 2];
    }
}

static void measure_size(struct ctx *c, const struct opts *o, size_t n, struct bw *r)
{
    size_t wi = o->sweep ? iters_for(o->witers, n, 4e9) : o->witers;
    size_t ri = o->sweep ? iters_for(o->riters, n, 2e8) : o->riters;
    op_fn wops[3] = { op_lib_write, op_raw_write, c->cu ? op_cu_h2d : NULL };
    op_fn rops[3] = { op_lib_read, op_raw_read, c->cu ? op_cu_d2h : NULL };
    double w[3], rd[3];

    c->n = n;
    r->size = n;
    printf("writing test, size=%zu offset=%zu num_iters=%zu\n", n, o->offset, wi);
    if (gm_fill(c->buf, 0))  /* so that the data check sees only this size's writes */
        die(prog, "clearing the GPU buffer failed");
    measure_bandwidth(op_lib_write, c, n, 1, NULL);
    check_written(c, n);
    rounds(c, wops, wi, wi < 2000 ? wi : 2000, w);
    r->lib_w = w[0], r->raw_w = w[1], r->cu_w = w[2];
    printf("write BW: %.2f MB/s\n", r->lib_w);
    printf("raw write BW: %.2f MB/s (%.1f%% of raw)\n", r->raw_w, 100 * r->lib_w / r->raw_w);
    if (c->cu)
        printf("cuMemcpy H2D BW: %.2f MB/s\n", r->cu_w);
    printf("reading test, size=%zu offset=%zu num_iters=%zu\n", n, o->offset, ri);
    rounds(c, rops, ri, ri, rd);
    r->lib_r = rd[0], r->raw_r = rd[1], r->cu_r = rd[2];
    printf("read BW: %.2f MB/s\n", r->lib_r);
    printf("raw read BW: %.2f MB/s (%.1f%% of raw)\n", r->raw_r, 100 * r->lib_r / r->raw_r);
    if (c->cu)
        printf("cuMemcpy D2H BW: %.2f MB/s\n", r->cu_r);
}

static void json_results(struct json *j, const struct bw *r, int n)
{
    json_arr(j, "results");
    for (int i = 0; i < n; i++) {
        json_obj(j, NULL);
        json_int(j, "size", (long long)r[i].size);
        json_num(j, "write_vramio", r[i].lib_w);
        json_num(j, "write_raw", r[i].raw_w);
        json_num(j, "write_cumemcpy", r[i].cu_w);
        json_num(j, "read_vramio", r[i].lib_r);
        json_num(j, "read_raw", r[i].raw_r);
        json_num(j, "read_cumemcpy", r[i].cu_r);
        json_end(j);
    }
    json_end(j);
}

int main(int argc, char **argv)
{
    char binding[400];
    struct opts o;
    struct ctx c = { 0 };
    struct tool_map m;
    struct gm_buf buf;
    struct json j;
    struct bw res[64];
    int n = 0;
    vramio_backend_t be = VRAMIO_BACKEND_NONE;

    tool_enable_backends();

    parse(argc, argv, &o);
    if (json_open(&j, o.json))
        die(prog, "cannot write %s: %s", o.json, strerror(errno));
    numa_bind_for_gpu(o.co.gpu, o.co.cpu, binding, sizeof(binding));
    printf("CPU binding: %s\n", binding);
    tool_gpu_setup(prog, o.co.kind, o.co.gpu, 0);
    printf("testing size: %zu\n", o.size);
    tool_alloc(prog, o.co.kind, o.size, &buf, 0);
    c.cu = gm_kind_is_cuda((enum gm_kind)o.co.kind) ? gm_cuda() : NULL;
    c.host = tool_host_alloc(prog, o.size);
    for (size_t i = 0; i < o.size; i++)
        c.host[i] = (char)((i * 2654435761u) >> 24);
    c.dptr = buf.dptr + o.offset;
    c.buf = &buf;
    c.offset = o.offset;
    tool_map_open(&m, prog, buf.dptr, o.size, o.co.map_flags, 0);
    vramio_handle_backend(m.g, m.mh, &be);
    c.mh = m.mh;
    c.dev = m.ptr + o.offset;
    printf("copy kernel: %s, raw reference: %s\n", vramio_copy_kernel(), raw_kernel_name());

    if (o.sweep) {
        for (size_t sz = 4096; sz <= o.size - o.offset && n < 64; sz <<= 1)
            measure_size(&c, &o, sz, &res[n++]);
    } else {
        measure_size(&c, &o, o.copy, &res[n++]);
    }

    json_str(&j, "tool", "copybw");
    json_str(&j, "backend", vramio_backend_name(be));
    json_str(&j, "kind", gm_kind_name((enum gm_kind)o.co.kind));
    json_str(&j, "cpu_binding", binding);
    json_str(&j, "copy_kernel", vramio_copy_kernel());
    json_str(&j, "raw_kernel", raw_kernel_name());
    json_str(&j, "unit", "MiB/s");
    json_results(&j, res, n);
    if (json_close(&j))
        die(prog, "writing %s failed", o.json);
    tool_map_close(&m, prog, 0);
    tool_host_free(c.host);
    gm_free(&buf);
    return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * gdrcopy_pplat - CPU <-> GPU ping-pong latency. The CPU writes a sequence number into GPU
 * memory and a spinning GPU kernel answers into mapped host memory; the CPU waits for the
 * answer. Modes, measured in the same run:
 *   gdr     the CPU writes with gdr_copy_to_mapping through a gdr mapping (what users do)
 *   rawmap  the CPU writes with an inline store + sfence through the same mapping
 *   host    the raw ping-pong through mapped host memory both ways (no GPU-memory mapping)
 * Prints min/p50/p99 round trips in microseconds. The GPU kernel (tools/pplat_kernel.cu) is
 * built with nvcc; a build without it says so and exits 77.
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
#include "common/rawcopy.h"
#include "common/stats.h"
#include "common/numa.h"
#include "common/util.h"

extern const char pplat_kernel_missing[];
extern const unsigned char pplat_fatbin[];
extern const size_t pplat_fatbin_len;

static const char *prog = "gdrcopy_pplat";

enum { MODE_GDR = 1, MODE_RAWMAP = 2, MODE_HOST = 4, MODE_ALL = 7 };

struct opts {
    unsigned long iters, timeout_s, size, blocks, threads, delay_ns;
    int mode;
    struct common_opts co;
    const char *json;
};

static void usage(void)
{
    printf("Usage: %s [-h] [-t ITERS] [-u TIMEOUT] [-s SIZE] [-B BLOCKS] [-T THREADS] [-m MODE]\n"
           "       [-G KIND] [-C CPU] [-D NS] [-d GPU] [--json FILE]\n"
           "CPU -> GPU -> CPU ping-pong latency through a gdr mapping, and the raw references.\n\n"
           "Options:\n"
           "  -h          print this help and exit\n"
           "  -t ITERS    round trips per mode (default 10000)\n"
           "  -u TIMEOUT  give up after TIMEOUT seconds without an answer, 0 = never (default 10)\n"
           "  -s SIZE     bytes the CPU writes per round trip, 4..4096, the flag last (default 4)\n"
           "  -B BLOCKS   thread blocks of the GPU kernel (default 1; only thread 0 answers)\n"
           "  -T THREADS  threads per block (default 1; the others only poll the flag)\n"
           "  -m MODE     gdr, rawmap, host or all (default all)\n"
           "  -G KIND     GPU memory for the flag: %s\n"
           "              (default vramio)\n"
           "  -C CPU      bind the CPU thread to this CPU (default: the first CPU\n"
           "              local to the GPU, from sysfs; printed as 'CPU binding')\n"
           "  -D NS       pause NS nanoseconds between round trips (default 0)\n"
           "  -d GPU      CUDA device ordinal (default 0)\n"
           "  --json FILE write the results as JSON to FILE ('-' for stdout)\n"
           "Exit status 77 when this build has no GPU kernel (nvcc was missing).\n",
           prog, gm_kind_help());
}

static unsigned long num_arg(const char *opt, const char *s, unsigned long lo, unsigned long hi)
{
    unsigned long v;

    if (parse_uint(s, hi, &v) || v < lo)
        usage_error(prog, "%s needs a number from %lu to %lu, not '%s'", opt, lo, hi, s);
    return v;
}

static void parse(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        { "help", no_argument, NULL, 'h' }, { "json", required_argument, NULL, 'J' }, { 0 },
    };
    int c;

    *o = (struct opts){ .iters = 10000, .timeout_s = 10, .size = 4, .blocks = 1, .threads = 1,
                        .mode = MODE_ALL, .co = { .kind = GM_VRAMIO, .cpu = -1 } };
    while ((c = getopt_long(argc, argv, "ht:u:s:B:T:m:G:C:D:d:", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': usage(); exit(0);
        case 't': o->iters = num_arg("-t", optarg, 1, 1ul << 30); break;
        case 'u': o->timeout_s = num_arg("-u", optarg, 0, 86400); break;
        case 's': o->size = num_arg("-s", optarg, 4, 4096); break;
        case 'B': o->blocks = num_arg("-B", optarg, 1, 65535); break;
        case 'T': o->threads = num_arg("-T", optarg, 1, 1024); break;
        case 'm':
            if (strcmp(optarg, "gdr") == 0) o->mode = MODE_GDR;
            else if (strcmp(optarg, "rawmap") == 0) o->mode = MODE_RAWMAP;
            else if (strcmp(optarg, "host") == 0) o->mode = MODE_HOST;
            else if (strcmp(optarg, "all") == 0) o->mode = MODE_ALL;
            else usage_error(prog, "-m needs gdr, rawmap, host or all, not '%s'", optarg);
            break;
        case 'G':
            common_opt(prog, 'a', optarg, &o->co);
            if (!gm_kind_is_cuda((enum gm_kind)o->co.kind))
                usage_error(prog, "-G: '%s' is not a CUDA allocation kind", optarg);
            break;
        case 'C': case 'd': common_opt(prog, c, optarg, &o->co); break;
        case 'D': o->delay_ns = num_arg("-D", optarg, 0, 1000000000); break;
        case 'J': o->json = optarg; break;
        default: usage_error(prog, "invalid option");
        }
    }
    if (optind < argc)
        usage_error(prog, "unexpected argument '%s'", argv[optind]);
}

struct pp {
    const struct vr_cuda *cu;
    CUfunction fn;
    const struct opts *o;
    volatile uint32_t *ack;     /* host memory the GPU answers into */
    CUdeviceptr ack_dev;
};

static void cu_check(CUresult rc, const char *what)
{
    if (rc != CUDA_SUCCESS)
        die(prog, "%s failed: %s", what, vr_cuda_errstr(rc));
}

static void spin_ns(unsigned long ns)
{
    uint64_t end = vr_now_ns() + ns;

    while (vr_now_ns() < end)
        ;
}

/* Send: write i (and the message bytes before it) where the GPU polls. */
typedef void (*send_fn)(void *arg, uint32_t i);

struct send_gdr { gdr_mh_t mh; char *p; unsigned char msg[4096]; size_t size; };
static void send_gdr(void *arg, uint32_t i)
{
    struct send_gdr *s = arg;

    memcpy(s->msg + s->size - 4, &i, 4);
    gdr_copy_to_mapping(s->mh, s->p, s->msg, s->size);
}
static void send_raw(void *arg, uint32_t i)
{
    struct send_gdr *s = arg;

    /* the message bytes first, then the flag, then sfence: the flag is never ahead of them */
    if (s->size > 4)
        memcpy(s->p, s->msg, s->size - 4);
    *(volatile uint32_t *)(s->p + s->size - 4) = i;
    raw_sfence();
}
static void send_host(void *arg, uint32_t i)
{
    struct send_gdr *s = arg;

    if (s->size > 4)
        memcpy(s->p, s->msg, s->size - 4);
    __atomic_store_n((uint32_t *)(s->p + s->size - 4), i, __ATOMIC_RELEASE);
}

/* One mode: launch the kernel polling `req_dev`, then ping-pong o->iters times. */
static void run_mode(struct pp *pp, CUdeviceptr req_dev, send_fn send, void *arg, struct stats *st)
{
    const struct opts *o = pp->o;
    uint32_t iters = (uint32_t)o->iters;
    void *params[] = { &req_dev, &pp->ack_dev, &iters };
    double *samples = malloc(o->iters * sizeof(double));
    uint64_t deadline_ns = o->timeout_s * 1000000000ull;

    if (!samples)
        die(prog, "out of memory");
    *pp->ack = 0;
    cu_check(pp->cu->cuLaunchKernel(pp->fn, (unsigned)o->blocks, 1, 1, (unsigned)o->threads, 1, 1,
                                    0, NULL, params, NULL), "cuLaunchKernel");
    for (uint32_t i = 1; i <= iters; i++) {
        uint64_t t0 = vr_now_ns(), t;

        send(arg, i);
        while (__atomic_load_n(pp->ack, __ATOMIC_ACQUIRE) != i) {
            if (deadline_ns && vr_now_ns() - t0 > deadline_ns)
                die(prog, "TIMEOUT: no answer to round trip %u after %lu s (kernel state: %s)", i,
                    o->timeout_s, vr_cuda_errstr(pp->cu->cuStreamQuery(NULL)));
        }
        t = vr_now_ns();
        samples[i - 1] = (double)(t - t0) / 1e3;
        if (o->delay_ns)
            spin_ns(o->delay_ns);
    }
    cu_check(pp->cu->cuStreamSynchronize(NULL), "cuStreamSynchronize");
    stats_compute(samples, o->iters, st);
    free(samples);
}

/* The ping-pong kernel of pplat_kernel.cu, loaded from the embedded fatbin into pp->fn. */
static CUmodule load_kernel(struct pp *pp)
{
    CUmodule mod;
    char why[256];

    if (vr_cuda_require(pp->cu, cuModuleLoadData, why, sizeof(why)) ||
        vr_cuda_require(pp->cu, cuModuleGetFunction, why, sizeof(why)) ||
        vr_cuda_require(pp->cu, cuModuleUnload, why, sizeof(why)) ||
        vr_cuda_require(pp->cu, cuLaunchKernel, why, sizeof(why)) ||
        vr_cuda_require(pp->cu, cuStreamQuery, why, sizeof(why)) ||
        vr_cuda_require(pp->cu, cuStreamSynchronize, why, sizeof(why)))
        die(prog, "%s", why);
    cu_check(pp->cu->cuModuleLoadData(&mod, pplat_fatbin), "cuModuleLoadData");
    cu_check(pp->cu->cuModuleGetFunction(&pp->fn, mod, "pplat_pingpong"), "cuModuleGetFunction");
    return mod;
}

/* A zeroed page of host memory the GPU reaches at *dev (the answer, the host mode's request). */
static void *mapped_host_page(const struct vr_cuda *cu, CUdeviceptr *dev)
{
    void *p;

    cu_check(cu->cuMemHostAlloc(&p, 4096, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
             "cuMemHostAlloc");
    cu_check(cu->cuMemHostGetDevicePointer(dev, p, 0), "cuMemHostGetDevicePointer");
    memset(p, 0, 4096);
    return p;
}

/* Each mode asked for: the GPU polls its request flag (the last 4 bytes of the message) in
 * the pinned page (gdr, rawmap) or in host memory (host); its round trips printed and kept. */
static void run_modes(struct pp *pp, const struct tool_map *m, CUdeviceptr gpu_req,
                      void *hreq, CUdeviceptr hreq_dev, struct json *j)
{
    static const char *const names[] = { "gdr", "rawmap", "host" };
    struct send_gdr s_dev, s_host;
    const struct opts *o = pp->o;
    struct stats st[3];

    s_dev = (struct send_gdr){ .mh = m->mh, .p = m->ptr, .size = o->size };
    s_host = (struct send_gdr){ .p = hreq, .size = o->size };
    memset(s_dev.msg, 0x77, sizeof(s_dev.msg));
    memset(s_host.msg, 0x77, sizeof(s_host.msg));
    memset(st, 0, sizeof(st));
    for (int k = 0; k < 3; k++) {
        CUdeviceptr req = (k == 2 ? hreq_dev : gpu_req) + o->size - 4;

        if (!(o->mode & (1 << k)))
            continue;
        if (k == 0)
            run_mode(pp, req, send_gdr, &s_dev, &st[k]);
        else if (k == 1)
            run_mode(pp, req, send_raw, &s_dev, &st[k]);
        else
            run_mode(pp, req, send_host, &s_host, &st[k]);
        if (k < 2) /* the next mode starts from 0 again */
            memset(m->ptr, 0, o->size), raw_sfence();
        printf("%-7s round trip: min %.3f us, p50 %.3f us, p99 %.3f us, avg %.3f us\n",
               names[k], st[k].min, st[k].p50, st[k].p99, st[k].avg);
        json_stats(j, names[k], &st[k]);
    }
    if (o->mode & MODE_GDR)
        printf("Round-trip latency per iteration is %.3f us\n", st[0].avg);
    if ((o->mode & MODE_GDR) && (o->mode & MODE_HOST))
        printf("gdr p50 / host ping-pong p50: %.3f\n", st[0].p50 / st[2].p50);
}

int main(int argc, char **argv)
{
    char binding[400];
    struct opts o;
    struct pp pp = { .o = &o };
    struct gm_buf buf;
    struct tool_map m;
    struct json j;
    CUmodule mod;
    void *hreq, *hack;
    CUdeviceptr hreq_dev;
    vramio_backend_t be = VRAMIO_BACKEND_NONE;

    tool_enable_backends();

    parse(argc, argv, &o);
    if (pplat_fatbin_len == 0) {
        printf("%s: %s\n", prog, pplat_kernel_missing);
        return 77;
    }
    if (json_open(&j, o.json))
        die(prog, "cannot write %s: %s", o.json, strerror(errno));
    numa_bind_for_gpu(o.co.gpu, o.co.cpu, binding, sizeof(binding));
    printf("CPU binding: %s\n", binding);
    tool_gpu_setup(prog, o.co.kind, o.co.gpu, 0);
    pp.cu = gm_cuda();
    mod = load_kernel(&pp);
    hack = mapped_host_page(pp.cu, &pp.ack_dev);
    pp.ack = hack;
    hreq = mapped_host_page(pp.cu, &hreq_dev);

    tool_alloc(prog, o.co.kind, GPU_PAGE_SIZE, &buf, 0);
    cu_check(pp.cu->cuMemsetD8((CUdeviceptr)buf.dptr, 0, GPU_PAGE_SIZE), "cuMemsetD8");
    cu_check(pp.cu->cuCtxSynchronize(), "cuCtxSynchronize");
    tool_map_open(&m, prog, buf.dptr, GPU_PAGE_SIZE, GDR_MAP_FLAG_DEFAULT, 0);
    vramio_handle_backend(m.g, m.mh, &be);

    printf("Running %lu iterations per mode with data size %lu bytes, kernel %lux%lu.\n",
           o.iters, o.size, o.blocks, o.threads);
    json_str(&j, "tool", "pplat");
    json_str(&j, "backend", vramio_backend_name(be));
    json_str(&j, "kind", gm_kind_name((enum gm_kind)o.co.kind));
    json_str(&j, "cpu_binding", binding);
    json_str(&j, "unit", "us");
    json_int(&j, "size", (long long)o.size);
    run_modes(&pp, &m, (CUdeviceptr)buf.dptr, hreq, hreq_dev, &j);
    if (json_close(&j))
        die(prog, "writing %s failed", o.json);
    tool_map_close(&m, prog, 0);
    pp.cu->cuModuleUnload(mod);
    pp.cu->cuMemFreeHost(hack);
    pp.cu->cuMemFreeHost(hreq);
    gm_free(&buf);
    return 0;
}

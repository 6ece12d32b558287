/* SPDX-License-Identifier: MIT */
/* util.c - argument parsing, CPU binding, device listing and mapping setup for the tools. */
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_loader.h"
#include "vramio.h"
#include "gpumem.h"

int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    unsigned long v;

    if (!s || !*s || *s == '-')
        return EINVAL;
    errno = 0;
    v = strtoul(s, &end, 0);
    if (errno || *end || v > max)
        return EINVAL;
    *out = v;
    return 0;
}

int parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v;
    unsigned shift = 0;

    if (!s || !*s || *s == '-')
        return EINVAL;
    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno || end == s)
        return EINVAL;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: return EINVAL;
    }
    if (*end == 'i' || *end == 'B') /* accept KiB, KB */
        end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
    if (*end || (shift && v > (~0ull >> shift)))
        return EINVAL;
    *out = (size_t)(v << shift);
    return 0;
}

int parse_map_flag(const char *s, int *flags)
{
    static const struct { const char *name; int flag; } names[] = {
        { "default", GDR_MAP_FLAG_DEFAULT }, { "wc", GDR_MAP_FLAG_REQ_WC_MAPPING },
        { "cache", GDR_MAP_FLAG_REQ_CACHE_MAPPING }, { "caching", GDR_MAP_FLAG_REQ_CACHE_MAPPING },
        { "device", GDR_MAP_FLAG_REQ_DEVICE_MAPPING },
    };
    unsigned long v;

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(s, names[i].name) == 0) {
            *flags = names[i].flag;
            return 0;
        }
    }
    if (parse_uint(s, GDR_MAP_FLAG_REQ_DEVICE_MAPPING, &v) == 0) {
        *flags = (int)v;
        return 0;
    }
    return EINVAL;
}

void usage_error(const char *prog, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s -h' for the list of options.\n", prog);
    exit(2);
}

void die(const char *prog, const char *fmt, ...)
{
    va_list ap;

    fflush(stdout);
    fprintf(stderr, "%s: ERROR: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

int bind_cpu(int cpu)
{
    cpu_set_t set;

    if (cpu < 0)
        return 0;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

int print_gpus(int selected)
{
    const struct vr_cuda *cu = vr_cuda_load(NULL, 0);
    int n = 0;

    if (!cu || cu->cuDeviceGetCount(&n) != CUDA_SUCCESS)
        return 0;
    for (int i = 0; i < n; i++) {
        CUdevice dev;
        char name[256] = "?";
        int dom = 0, bus = 0, devid = 0;

        if (cu->cuDeviceGet(&dev, i) != CUDA_SUCCESS)
            continue;
        cu->cuDeviceGetName(name, sizeof(name), dev);
        cu->cuDeviceGetAttribute(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev);
        cu->cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev);
        cu->cuDeviceGetAttribute(&devid, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev);
        printf("GPU id:%d; name: %s; Bus id: %04x:%02x:%02x\n", i, name, dom, bus, devid);
    }
    printf("selecting device %d\n", selected);
    return n;
}

void tool_enable_backends(void)
{
    setenv("VRAMIO_ENABLE_VULKAN", "1", 0);
}

static void why_no_backend(const char *prog)
{
    fprintf(stderr, "%s: ERROR: gdr_open() failed: no backend can map GPU memory here\n", prog);
    for (int b = VRAMIO_BACKEND_GDRDRV; b < VRAMIO_BACKEND_COUNT; b++) {
        char why[256] = "";

        vramio_backend_probe((vramio_backend_t)b, why, sizeof(why));
        fprintf(stderr, "  %-7s %s\n", vramio_backend_name((vramio_backend_t)b), why);
    }
    fprintf(stderr, "Run gdrcopy_info for details.\n");
    exit(1);
}

void tool_map_open(struct tool_map *m, const char *prog, uint64_t dptr, size_t size,
                   int map_flags, int quiet)
{
    const char *type = "?";
    vramio_backend_t be = VRAMIO_BACKEND_NONE;
    int rc;

    memset(m, 0, sizeof(*m));
    m->g = gdr_open();
    if (!m->g)
        why_no_backend(prog);
    rc = gdr_pin_buffer_v2(m->g, dptr, size, GDR_PIN_FLAG_DEFAULT, &m->mh);
    if (rc)
        die(prog, "gdr_pin_buffer_v2(0x%" PRIx64 ", %zu) failed: %s (%s)", dptr, size,
            vramio_strerror(rc), vramio_last_error());
    rc = gdr_get_info(m->g, m->mh, &m->info);
    if (rc)
        die(prog, "gdr_get_info failed: %s", vramio_strerror(rc));
    /* Map the whole pinned range: a buffer that does not start on a page still fits. */
    m->size = m->info.mapped_size;
    rc = gdr_map_v2(m->g, m->mh, &m->map, m->size, map_flags);
    if (rc)
        die(prog, "gdr_map_v2(size %zu, flags %d) failed: %s (%s)", m->size, map_flags,
            vramio_strerror(rc), vramio_last_error());
    gdr_get_info(m->g, m->mh, &m->info);
    m->ptr = (char *)m->map + (dptr - m->info.va);
    gdr_get_mapping_type_string(m->info.mapping_type, &type);
    vramio_handle_backend(m->g, m->mh, &be);
    if (quiet)
        return;
    printf("backend: %s\n", vramio_backend_name(be));
    printf("map_d_ptr: %p\n", m->map);
    printf("info.va: %" PRIx64 "\n", m->info.va);
    printf("info.mapped_size: %" PRIu64 "\n", m->info.mapped_size);
    printf("info.page_size: %u\n", m->info.page_size);
    printf("info.mapped: %u\n", m->info.mapped);
    printf("info.wc_mapping: %u\n", m->info.wc_mapping);
    printf("info.mapping_type: %s\n", type);
    printf("page offset: %" PRIu64 "\n", dptr - m->info.va);
    printf("user-space pointer: %p\n", (void *)m->ptr);
}

void tool_map_close(struct tool_map *m, const char *prog, int quiet)
{
    int rc;

    if (!quiet)
        printf("unmapping buffer\n");
    rc = gdr_unmap(m->g, m->mh, m->map, m->size);
    if (rc)
        die(prog, "gdr_unmap failed: %s", vramio_strerror(rc));
    if (!quiet)
        printf("unpinning buffer\n");
    rc = gdr_unpin_buffer(m->g, m->mh);
    if (rc)
        die(prog, "gdr_unpin_buffer failed: %s", vramio_strerror(rc));
    if (!quiet)
        printf("closing gdrdrv\n");
    rc = gdr_close(m->g);
    if (rc)
        die(prog, "gdr_close failed: %s", vramio_strerror(rc));
}

void tool_gpu_setup(const char *prog, int kind, int gpu, int quiet)
{
    char why[512];
    int rc = gm_init((enum gm_kind)kind, gpu, why, sizeof(why));

    if (rc)
        die(prog, "cannot use %s memory on GPU %d: %s", gm_kind_name((enum gm_kind)kind), gpu, why);
    if (!quiet && gm_kind_is_cuda((enum gm_kind)kind))
        print_gpus(gpu);
}

void tool_alloc(const char *prog, int kind, size_t size, struct gm_buf *buf, int quiet)
{
    char why[512];

    if (gm_alloc((enum gm_kind)kind, size, buf, why, sizeof(why)))
        die(prog, "%s", why);
    if (!quiet) {
        printf("gpu alloc fn: %s\n", gm_kind_name((enum gm_kind)kind));
        printf("device ptr: 0x%" PRIx64 "\n", buf->dptr);
        printf("allocated size: %zu\n", buf->alloc_size);
    }
}

void *tool_host_alloc(const char *prog, size_t size)
{
    const struct vr_cuda *cu = gm_cuda();
    void *p = NULL;

    if (cu && cu->cuMemAllocHost(&p, size) == CUDA_SUCCESS)
        return p;
    if (posix_memalign(&p, 4096, size))
        die(prog, "out of host memory (%zu bytes)", size);
    return p;
}

void tool_host_free(void *p)
{
    const struct vr_cuda *cu = gm_cuda();

    if (!cu || cu->cuMemFreeHost(p) != CUDA_SUCCESS)
        free(p);
}

void common_opt(const char *prog, int c, const char *arg, struct common_opts *co)
{
    enum gm_kind kind;
    unsigned long v;

    switch (c) {
    case 'd':
        if (parse_uint(arg, 1024, &v))
            usage_error(prog, "-d needs a GPU ordinal, not '%s'", arg);
        co->gpu = (int)v;
        break;
    case 'a':
        if (gm_kind_parse(arg, &kind))
            usage_error(prog, "unknown allocation kind '%s' (one of: %s)", arg, gm_kind_help());
        co->kind = (int)kind;
        break;
    case 'M':
        if (parse_map_flag(arg, &co->map_flags))
            usage_error(prog, "-M needs default, wc, cache or device, not '%s'", arg);
        break;
    case 'C':
        if (parse_uint(arg, 65535, &v))
            usage_error(prog, "-C needs a CPU number, not '%s'", arg);
        co->cpu = (int)v;
        break;
    default:
        usage_error(prog, "invalid option");
    }
}

unsigned long count_opt(const char *prog, int c, const char *arg, unsigned long max)
{
    unsigned long v;

    if (parse_uint(arg, max, &v) || v == 0)
        usage_error(prog, "-%c needs a positive count, not '%s'", c, arg);
    return v;
}

/* SPDX-License-Identifier: MIT */
/*
 * gdrcopy_info - what a user runs first: the CPU's copy kernels, whether each backend can map
 * GPU memory here and exactly why not, the GPUs, and what to do next.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gdrapi.h"
#include "vramio.h"
#include "cuda_loader.h"
#include "common/numa.h"
#include "common/stats.h"
#include "common/util.h"

static const char *prog = "gdrcopy_info";

static void usage(void)
{
    printf("Usage: %s [-h] [--json FILE]\n"
           "Show whether this machine can map GPU memory for the CPU, and why not.\n\n"
           "Options:\n"
           "  -h, --help     print this help and exit\n"
           "  --json FILE    also write the findings as JSON to FILE ('-' for stdout)\n", prog);
}

#if defined(__x86_64__)
#include <cpuid.h>

static int has_movdir64b(void)
{
    unsigned a, b, c, d;

    /* CPUID.(EAX=7,ECX=0):ECX bit 28 */
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 28));
}
#endif

static void cpu_section(struct json *j)
{
    char line[512], model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");

    while (f && fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');

        if (colon && strncmp(line, "model name", 10) == 0) {
            snprintf(model, sizeof(model), "%s", colon + 2);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    }
    if (f)
        fclose(f);
    printf("CPU\n  model:        %s\n", model);
    printf("  copy kernel:  %s (used by gdr_copy_to_mapping / gdr_copy_from_mapping)\n",
           vramio_copy_kernel());
#if defined(__x86_64__)
    __builtin_cpu_init();
    printf("  features:    %s%s%s%s\n", __builtin_cpu_supports("sse4.1") ? " sse4.1" : "",
           __builtin_cpu_supports("avx2") ? " avx2" : "",
           __builtin_cpu_supports("avx512f") ? " avx512f" : "",
           has_movdir64b() ? " movdir64b" : "");
#endif
    json_obj(j, "cpu");
    json_str(j, "model", model);
    json_str(j, "copy_kernel", vramio_copy_kernel());
    json_end(j);
}

/* Facts the library's probe may not spell out, to help the user act on it. */
static void backend_hints(vramio_backend_t b)
{
    struct stat st;

    if (b == VRAMIO_BACKEND_GDRDRV) {
        if (stat("/dev/gdrdrv", &st) == 0)
            printf("             /dev/gdrdrv: mode %03o, uid %u, gid %u%s\n", st.st_mode & 0777,
                   st.st_uid, st.st_gid,
                   access("/dev/gdrdrv", R_OK | W_OK) ? " (not accessible to this user)" : "");
        else if (stat("/sys/module/gdrdrv", &st) == 0)
            printf("             gdrdrv is loaded but /dev/gdrdrv is missing\n");
        else
            printf("             the gdrdrv kernel module is not loaded (/sys/module/gdrdrv absent)\n");
    }
}

/* A backend gdr_open leaves out by policy (not a failure): its reason starts so. */
static int usable_not_enabled(const char *why)
{
    return strncmp(why, "usable, not enabled", 19) == 0;
}

static int backends_section(struct json *j, int *held_back)
{
    int usable = 0;

    printf("\nBackends (probing order)\n");
    json_arr(j, "backends");
    for (int b = VRAMIO_BACKEND_GDRDRV; b < VRAMIO_BACKEND_COUNT; b++) {
        char why[512] = "";
        int rc = vramio_backend_probe((vramio_backend_t)b, why, sizeof(why));
        const char *name = vramio_backend_name((vramio_backend_t)b);

        if (rc && usable_not_enabled(why)) {
            printf("  %-8s  %s\n", name, why);
            (*held_back)++;
        } else {
            printf("  %-8s  %s%s%s\n", name, rc ? "unusable: " : "usable",
                   rc ? "" : (why[0] ? ": " : ""), why[0] ? why : (rc ? vramio_strerror(rc) : ""));
        }
        if (rc)
            backend_hints((vramio_backend_t)b);
        usable += rc == 0;
        json_obj(j, NULL);
        json_str(j, "name", name);
        json_int(j, "usable", rc == 0);
        json_int(j, "needs_opt_in", rc != 0 && usable_not_enabled(why));
        json_str(j, "reason", why);
        json_end(j);
    }
    json_end(j);
    return usable;
}

/* NVML's answer (libnvidia-ml.so.1, loaded only here): BAR1 total of the GPU at busid, or 0. */
static unsigned long long bar1_from_nvml(const char *busid)
{
    struct { unsigned long long total, free, used; } bar1 = { 0, 0, 0 };
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL), *dev = NULL;
    int (*init)(void), (*by_bus)(const char *, void **), (*get_bar1)(void *, void *);

    if (!lib)
        return 0;
    init = (int (*)(void))dlsym(lib, "nvmlInit_v2");
    by_bus = (int (*)(const char *, void **))dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    get_bar1 = (int (*)(void *, void *))dlsym(lib, "nvmlDeviceGetBAR1MemoryInfo");
    if (init && by_bus && get_bar1 && init() == 0 && by_bus(busid, &dev) == 0)
        get_bar1(dev, &bar1);
    /* NVML stays loaded: unloading it under a live CUDA context is not worth the risk. */
    return bar1.total;
}

/* BAR1 is resource 1 of the GPU's PCI function; its size bounds what can be mapped at once.
 * sysfs first; NVML where sysfs does not show it (virtual machines). */
static unsigned long long bar1_size(const char *busid)
{
    char path[256], line[256];
    unsigned long long start = 0, end = 0, flags;
    FILE *f;

    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", busid);
    for (char *p = path; *p; p++)
        if (*p >= 'A' && *p <= 'F')
            *p = (char)(*p - 'A' + 'a');
    f = fopen(path, "r");
    if (!f)
        return bar1_from_nvml(busid);
    /* line 0 is BAR0 (registers), line 1 is BAR1 */
    if (!fgets(line, sizeof(line), f) || !fgets(line, sizeof(line), f))
        line[0] = '\0';
    if (sscanf(line, "%llx %llx %llx", &start, &end, &flags) != 3 || end <= start)
        start = end = 0;
    fclose(f);
    return end ? end - start + 1 : bar1_from_nvml(busid);
}

static void print_bytes(const char *what, size_t x, const char *env)
{
    if (x == SIZE_MAX)
        printf("%s never", what);
    else if (x >= (1u << 20) && x % (1u << 20) == 0)
        printf("%s %zu MiB", what, x >> 20);
    else if (x >= 1024 && x % 1024 == 0)
        printf("%s %zu KiB", what, x >> 10);
    else
        printf("%s %zu B", what, x);
    if (getenv(env))
        printf(" (%s)", env);
}

/* The crossover of vramio_copy_*_mapping_auto on GPU gpu: measured by their first large copies
 * (on a buffer of our own), or set from the environment. */
static void crossover_line(int gpu, struct json *j)
{
    const size_t n = 1u << 20, alloc = 2u << 20;
    unsigned long long d = 0;
    size_t r = 0, w = 0;
    gdr_t g = NULL;
    gdr_mh_t mh = { 0 };
    void *m = NULL;
    char *h = calloc(1, n);
    int rc = h ? vramio_alloc(gpu, alloc, &d) : ENOMEM, pinned = 0, mapped = 0, set_env;

    /* Our buffer is vramio_alloc memory, which the vulkan backend serves: opt in for it. */
    set_env = !getenv("VRAMIO_ENABLE_VULKAN") && !setenv("VRAMIO_ENABLE_VULKAN", "1", 0);

    if (!rc)
        rc = (g = gdr_open()) ? 0 : ENODEV;
    if (set_env)
        unsetenv("VRAMIO_ENABLE_VULKAN");
    if (!rc)
        pinned = !(rc = gdr_pin_buffer_v2(g, (unsigned long)d, alloc, 0, &mh));
    if (!rc)
        mapped = !(rc = gdr_map(g, mh, &m, alloc));
    if (!rc)
        rc = vramio_copy_to_mapping_auto(mh, m, h, n);
    if (!rc)
        rc = vramio_copy_from_mapping_auto(mh, h, m, n);
    if (!rc)
        rc = vramio_copy_auto_crossover(mh, &r, &w);
    if (rc) {
        printf("    copy engine (vramio_copy_*_auto): not measured: %s\n",
               vramio_last_error()[0] ? vramio_last_error() : vramio_strerror(rc));
    } else {
        print_bytes("    copy engine (vramio_copy_*_auto) from: reads", r,
                    "VRAMIO_DMA_CROSSOVER_READ");
        print_bytes(", writes", w, "VRAMIO_DMA_CROSSOVER_WRITE");
        printf("\n");
        json_num(j, "dma_crossover_read", r == SIZE_MAX ? -1 : (double)r);
        json_num(j, "dma_crossover_write", w == SIZE_MAX ? -1 : (double)w);
    }
    if (mapped)
        gdr_unmap(g, mh, m, alloc);
    if (pinned)
        gdr_unpin_buffer(g, mh);
    if (g)
        gdr_close(g);
    if (d)
        vramio_free(d);
    free(h);
}

static int gpus_section(struct json *j, int usable)
{
    char why[512] = "";
    const struct vr_cuda *cu = NULL;
    int n = 0, rc = vr_cuda_init(&cu, why, sizeof(why));

    printf("\nGPUs\n");
    json_arr(j, "gpus");
    if (!rc && !cu->cuDeviceGetCount) {
        snprintf(why, sizeof(why), "the CUDA driver lacks cuDeviceGetCount");
        rc = ENOSYS;
    }
    if (!rc && cu->cuDeviceGetCount(&n) != CUDA_SUCCESS)
        n = 0;
    if (rc || n == 0) {
        int nvdev = access("/dev/nvidia0", F_OK) == 0;

        printf("  No GPU is present%s: %s\n", nvdev ? " to CUDA" : "",
               rc ? why : "CUDA reports no device");
        json_end(j);
        json_str(j, "no_gpu_reason", rc ? why : "CUDA reports no device");
        return 0;
    }
    for (int i = 0; i < n; i++) {
        CUdevice dev;
        char name[256] = "?", bus[64] = "?";
        size_t mem = 0;
        int drv = 0;
        unsigned long long bar1;
        char bdf[64];
        struct gpu_numa nu;

        /* A function the driver lacks (NULL from the loader) leaves its field unknown: this
         * report is what people run when something is wrong. */
        dev = i;
        if (cu->cuDeviceGet)
            cu->cuDeviceGet(&dev, i);
        if (cu->cuDeviceGetName)
            cu->cuDeviceGetName(name, sizeof(name), dev);
        if (cu->cuDeviceGetPCIBusId)
            cu->cuDeviceGetPCIBusId(bus, sizeof(bus), dev);
        if (cu->cuDeviceTotalMem)
            cu->cuDeviceTotalMem(&mem, dev);
        if (cu->cuDriverGetVersion)
            cu->cuDriverGetVersion(&drv);
        bar1 = bar1_size(bus);
        printf("  GPU %d: %s, PCI %s, %.1f GiB memory, BAR1 %s", i, name, bus,
               (double)mem / (1 << 30), bar1 ? "" : "unknown");
        if (bar1)
            printf("%.0f MiB%s", (double)bar1 / (1 << 20),
                   bar1 < mem ? " (smaller than the GPU memory: only part of it can be mapped at once)" : "");
        printf(", CUDA driver %d.%d\n", drv / 1000, drv % 1000 / 10);
        numa_bdf_from_busid(bus, bdf, sizeof(bdf));
        numa_of_bdf(bdf, &nu);
        if (nu.node >= 0)
            printf("    NUMA node %d", nu.node);
        else
            printf("    no NUMA node reported");
        printf(", local CPUs %s\n", nu.cpus[0] ? nu.cpus : "unknown");
        json_obj(j, NULL);
        json_int(j, "numa_node", nu.node);
        json_str(j, "local_cpus", nu.cpus);
        if (usable)
            crossover_line(i, j);
        json_str(j, "name", name);
        json_str(j, "pci", bus);
        json_num(j, "memory_bytes", (double)mem);
        json_num(j, "bar1_bytes", (double)bar1);
        json_int(j, "cuda_driver", drv);
        json_end(j);
    }
    json_end(j);
    return n;
}

static void next_steps(int gpus, int usable, int held_back)
{
    printf("\nWhat to do next\n");
    if (!usable && held_back) {
        printf("  Programs that pin ordinary cudaMalloc memory (UCX, NVSHMEM, libfabric, ...) get\n"
               "  NULL from gdr_open here, as with upstream GDRCopy and no module, and fall back.\n"
               "  Set VRAMIO_ENABLE_VULKAN=1 for programs whose memory is VMM or stream-ordered\n"
               "  pool memory with a POSIX-fd handle (NCCL, vramio_alloc), or run them under\n"
               "  vramio-run; the gdrcopy_* tools set it themselves. Or load the gdrdrv module\n"
               "  for every kind of memory.\n");
        return;
    }
    if (usable) {
        printf("  Check the installation with gdrcopy_sanity, then measure with gdrcopy_copylat and\n"
               "  gdrcopy_copybw (add -c to copylat to compare with cuMemcpy).\n");
        return;
    }
    if (!gpus) {
        printf("  This machine has no usable NVIDIA GPU, so nothing can be mapped here. Run vramio on a\n"
               "  machine with an NVIDIA GPU and its driver (libcuda.so.1) installed.\n");
        return;
    }
    printf("  No backend can map GPU memory yet. Any one of these is enough:\n"
           "   - load the kernel module as root: modprobe gdrdrv (check /dev/gdrdrv permissions);\n"
           "   - install the Vulkan loader (libvulkan1) with NVIDIA's Vulkan driver (vulkan backend,\n"
           "     no module needed; pin memory from vramio_alloc or VMM with a POSIX-fd handle);\n"
           "   - use a driver that allows dma-buf mmap on this GPU (R610 / CUDA 13.3 or newer).\n"
           "  Set GDRCOPY_ENABLE_LOGGING=1 GDRCOPY_LOG_LEVEL=1 to see each probe in detail.\n");
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "help", no_argument, NULL, 'h' }, { "json", required_argument, NULL, 'J' }, { 0 },
    };
    const char *json_path = NULL;
    struct json j;
    int c, gpus, usable, held_back = 0, major = 0, minor = 0;

    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': usage(); return 0;
        case 'J': json_path = optarg; break;
        default: usage_error(prog, "invalid option");
        }
    }
    if (optind < argc)
        usage_error(prog, "unexpected argument '%s'", argv[optind]);
    if (json_open(&j, json_path))
        die(prog, "cannot write %s: %s", json_path, strerror(errno));
    gdr_runtime_get_version(&major, &minor);
    printf("vramio %s: libgdrapi API %d.%d (GDRCopy %d.%d compatible)\n\n", VRAMIO_VERSION_STRING,
           major, minor, GDR_API_MAJOR_VERSION, GDR_API_MINOR_VERSION);
    json_str(&j, "version", VRAMIO_VERSION_STRING);
    cpu_section(&j);
    usable = backends_section(&j, &held_back);
    gpus = gpus_section(&j, usable + held_back);
    next_steps(gpus, usable, held_back);
    json_int(&j, "usable_backends", usable);
    json_int(&j, "gpu_count", gpus);
    if (json_close(&j))
        die(prog, "writing %s failed", json_path);
    return 0;
}

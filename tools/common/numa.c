/* SPDX-License-Identifier: MIT */
/* numa.c - a GPU's NUMA node and local CPUs from sysfs, and the benchmarks' binding (numa.h). */
#include "numa.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_loader.h"
#include "util.h"

static const char *sysfs_root(void)
{
    const char *r = getenv("VRAMIO_SYSFS_ROOT");

    return r && *r ? r : "/sys";
}

/* The first line of a file, without its newline; 0 or an errno. */
static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    int ok;

    if (!f)
        return errno;
    ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        return EIO;
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

void numa_bdf_from_busid(const char *busid, char *bdf, size_t len)
{
    const char *p = busid;
    size_t i = 0;

    /* CUDA writes an 8-digit domain; sysfs names use 4. */
    if (strlen(busid) == 16 && strncmp(busid, "0000", 4) == 0)
        p += 4;
    for (; *p && i + 1 < len; p++)
        bdf[i++] = (char)tolower((unsigned char)*p);
    if (len)
        bdf[i < len ? i : len - 1] = '\0';
}

int numa_first_allowed(const char *cpulist)
{
    cpu_set_t allowed;
    const char *p = cpulist;
    int have_mask = sched_getaffinity(0, sizeof(allowed), &allowed) == 0;

    while (*p) {
        char *end;
        long a = strtol(p, &end, 10), b;

        if (end == p || a < 0)
            return -1;
        b = a;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1 || b < a)
                return -1;
            p = end;
        }
        for (long c = a; c <= b && c < CPU_SETSIZE; c++)
            if (!have_mask || CPU_ISSET((int)c, &allowed))
                return (int)c;
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    return -1;
}

void numa_of_bdf(const char *bdf, struct gpu_numa *out)
{
    char path[512], line[256];

    *out = (struct gpu_numa){ .node = -1, .cpus = "", .first_cpu = -1 };
    snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/numa_node", sysfs_root(), bdf);
    if (read_line(path, line, sizeof(line)) == 0) {
        char *end;
        long n = strtol(line, &end, 10);

        if (end != line && *end == '\0' && n >= 0 && n < 1 << 20)
            out->node = (int)n;
    }
    snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/local_cpulist", sysfs_root(), bdf);
    if (read_line(path, line, sizeof(line)) != 0) {
        /* Older kernels lack local_cpulist: the node's own list then. */
        line[0] = '\0';
        snprintf(path, sizeof(path), "%s/devices/system/node/node%d/cpulist", sysfs_root(),
                 out->node);
        if (out->node < 0 || read_line(path, line, sizeof(line)) != 0)
            line[0] = '\0';
    }
    snprintf(out->cpus, sizeof(out->cpus), "%s", line);
    out->first_cpu = out->cpus[0] ? numa_first_allowed(out->cpus) : -1;
}

int numa_bind_for_gpu(int gpu, int cpu, char *desc, size_t len)
{
    const struct vr_cuda *cu;
    char busid[64] = "", bdf[64];
    struct gpu_numa nu;
    CUdevice dev;

    if (cpu >= 0) {
        if (bind_cpu(cpu)) {
            snprintf(desc, len, "none (cannot bind to CPU %d)", cpu);
            return -1;
        }
        snprintf(desc, len, "CPU %d (-C)", cpu);
        return cpu;
    }
    /* A driver without cuDeviceGetPCIBusId (the loader leaves a name it lacks NULL) gives no
     * address to place the thread by: the thread stays where it is, as with no sysfs entry. */
    if (vr_cuda_init(&cu, NULL, 0) || !cu->cuDeviceGet || !cu->cuDeviceGetPCIBusId ||
        cu->cuDeviceGet(&dev, gpu) != CUDA_SUCCESS ||
        cu->cuDeviceGetPCIBusId(busid, sizeof(busid), dev) != CUDA_SUCCESS) {
        snprintf(desc, len, "none (the PCI address of GPU %d is unknown)", gpu);
        return -1;
    }
    numa_bdf_from_busid(busid, bdf, sizeof(bdf));
    numa_of_bdf(bdf, &nu);
    if (nu.first_cpu < 0) {
        snprintf(desc, len, "none (sysfs gives no local CPU for GPU %d at %s)", gpu, bdf);
        return -1;
    }
    if (bind_cpu(nu.first_cpu)) {
        snprintf(desc, len, "none (cannot bind to CPU %d)", nu.first_cpu);
        return -1;
    }
    if (nu.node >= 0)
        snprintf(desc, len, "CPU %d (local to GPU %d, NUMA node %d, local CPUs %s)",
                 nu.first_cpu, gpu, nu.node, nu.cpus);
    else
        snprintf(desc, len, "CPU %d (local to GPU %d, no NUMA node, local CPUs %s)",
                 nu.first_cpu, gpu, nu.cpus);
    return nu.first_cpu;
}

/* SPDX-License-Identifier: MIT */
/*
 * numa.h - where a GPU sits: its NUMA node and the CPUs local to it, from sysfs
 * (<root>/bus/pci/devices/<bdf>/numa_node and local_cpulist), and the CPU the benchmarks bind
 * to by default. A thread on the GPU's own socket reaches its BAR without crossing the
 * inter-socket link, so copylat, copybw and pplat bind there unless -C says otherwise.
 *
 * The sysfs root is "/sys", or $VRAMIO_SYSFS_ROOT (for tests with a fake tree).
 */
#ifndef TOOLS_NUMA_H
#define TOOLS_NUMA_H

#include <stddef.h>

struct gpu_numa {
    int node;            /* NUMA node; -1 when none is known (no file, or the kernel says -1) */
    char cpus[256];      /* local CPUs as a cpulist ("0-7,16-23"), "" when unknown */
    int first_cpu;       /* the first local CPU this process may run on; -1 when none */
};

/* Lower-case PCI address "0000:00:06.0" from a CUDA bus id such as "00000000:00:06.0". */
void numa_bdf_from_busid(const char *busid, char *bdf, size_t len);

/* What sysfs says about the PCI function bdf. Always fills out. */
void numa_of_bdf(const char *bdf, struct gpu_numa *out);

/* First CPU of a cpulist that is also in this process's affinity mask; -1 when none (or the
 * list does not parse). */
int numa_first_allowed(const char *cpulist);

/* The default binding of the benchmarks: when cpu >= 0 (-C given) that CPU; else the first
 * local CPU of CUDA device gpu. Binds the calling thread, writes a one-line description
 * ("CPU 3 (local to GPU 0, NUMA node 0)") to desc, and returns the CPU bound to or -1 when
 * none (desc says why). */
int numa_bind_for_gpu(int gpu, int cpu, char *desc, size_t len);

#endif /* TOOLS_NUMA_H */

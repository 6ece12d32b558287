/* SPDX-License-Identifier: MIT */
/*
 * soak.c - the GPU soak (tests/gpu/run_soak_on_gpu.sh runs it under vramio-run): several worker
 * processes, each with several threads, run a random mix for a fixed time (soak_ops.c): CUDA
 * allocations (from vramio-run's pool) and frees, pins of random sub-ranges, CPU copies both
 * ways checked against what the GPU wrote and read, _auto copies, GPU writes, vramio_alloc's
 * own calls, long-lived pins, forked children that use or drop the parent's mapping and leave
 * by exit() or _exit(); pairs of workers trade CUDA IPC handles (soak_proc.c); worker 0 starts
 * holders of pins and kills them with SIGKILL. Then the limits part (soak_limits.c).
 *
 * Counted before and after: each worker's descriptors and GPU mappings (after its warm-up, and
 * once it gave everything back), its pool (empty after vramio_pool_trim), the GPU's free
 * memory (cuMemGetInfo in a fresh process, where the driver has it) and BAR1 in use
 * (nvidia-smi, where there is one). Passes with no error but the expected refusals, every CPU
 * read checked, every count back where it started. Prints the operations per second.
 *
 *   soak [--seconds S] [--procs N] [--threads T] [--no-limits]   (SOAK_SECONDS: S, default 300)
 *   soak --limits | --holder | --meminfo                          (its parts, run by itself)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "soak.h"
#include "t.h"

#define MAX_PROCS 32

int soak_smi(struct soak_smi *s)
{
    FILE *f = popen("nvidia-smi -q -d MEMORY 2>/dev/null", "r");
    char line[256];
    long v, *total = NULL, *used = NULL;
    int n = 0;

    *s = (struct soak_smi){ -1, -1, -1, -1 };
    while (f && fgets(line, sizeof(line), f)) {
        if (strstr(line, "FB Memory Usage"))
            total = &s->fb_total, used = &s->fb_used;
        else if (strstr(line, "BAR1 Memory Usage"))
            total = &s->bar1_total, used = &s->bar1_used;
        else if (strstr(line, "Memory Usage"))
            total = used = NULL;
        else if (total && sscanf(line, " Total : %ld", &v) == 1)
            *total = v, n++;
        else if (used && sscanf(line, " Used : %ld", &v) == 1)
            *used = v, n++;
    }
    if (f)
        pclose(f);
    return n == 4 ? 0 : -1;
}

/* The GPU's free memory, asked by a fresh process of this program (so that none of this
 * process's own is counted): bytes, or 0 where the driver cannot say. */
static size_t gpu_free(void)
{
    char cmd[64];
    unsigned long long v = 0;
    FILE *f;

    snprintf(cmd, sizeof(cmd), "/proc/%d/exe --meminfo", (int)getpid());
    f = popen(cmd, "r");
    if (f && fscanf(f, "%llu", &v) != 1)
        v = 0;
    if (f)
        pclose(f);
    return (size_t)v;
}

static int meminfo(void)
{
    size_t fr = 0, total = 0;

    if (soak_cuda_start() || !cu.meminfo || cu.meminfo(&fr, &total) != CUDA_SUCCESS)
        return 1;
    printf("%zu %zu\n", fr, total);
    return 0;
}

/* ---- the parent: workers, then the report ---------------------------------------------- */
static void report(const struct soak_cfg *cfg, struct soak_stats *st, int n, double secs)
{
    struct soak_stats all = { 0 };
    unsigned long total = 0;
    char line[1024], name[64];
    size_t used = 0;

    for (int w = 0; w < n; w++) {
        struct soak_stats *s = &st[w];

        for (int i = 0; i < SOAK_NOPS; i++)
            all.ops[i] += s->ops[i];
        all.reads_checked += s->reads_checked;
        all.bytes_checked += s->bytes_checked;
        all.refusals += s->refusals;
        all.errors += s->errors;
        all.fork_exit += s->fork_exit;
        all.fork_quick_exit += s->fork_quick_exit;
        if (s->errors)
            printf("# worker %d: %lu errors, the first: %s\n", w, s->errors, s->first_error);
        snprintf(name, sizeof(name), "soak/worker%d/descriptors_back", w);
        t_check(s->fds1 == s->fds0, name, "%d, %d after its warm-up", s->fds1, s->fds0);
        snprintf(name, sizeof(name), "soak/worker%d/gpu_mappings_back", w);
        t_check(s->maps1 == s->maps0, name, "%d, %d after its warm-up", s->maps1, s->maps0);
        snprintf(name, sizeof(name), "soak/worker%d/pool_empty", w);
        t_check(!s->pool.slabs && !s->pool.small_allocs && !s->pool.large_allocs, name,
                "%zu slabs, %zu small and %zu large allocations left", s->pool.slabs,
                s->pool.small_allocs, s->pool.large_allocs);
    }
    for (int i = 0; i < SOAK_NOPS; i++) {
        total += all.ops[i];
        used += (size_t)snprintf(line + used, sizeof(line) - used, " %s %lu (%.0f/s)",
                                 soak_op_names[i], all.ops[i], all.ops[i] / secs);
    }
    printf("# soak: %d processes x %d threads, %.0f s: %lu operations, %.0f per second;%s\n",
           cfg->procs, cfg->threads, secs, total, total / secs, line);
    printf("# soak: %lu CPU reads checked (%.1f GiB), %lu expected refusals in %lu forked "
           "children (%lu left by exit(), %lu by _exit())\n", all.reads_checked,
           all.bytes_checked / 1073741824.0, all.refusals,
           all.fork_exit + all.fork_quick_exit, all.fork_exit, all.fork_quick_exit);
    t_check(all.errors == 0, "soak/no_errors", "%lu errors (the first of each worker above)",
            all.errors);
    t_check(all.reads_checked > 0 && all.fork_exit > 0 &&
                all.fork_quick_exit > 0 && (all.ops[OP_HOLDER] > 0 || cfg->seconds < 8) &&
                (all.ops[OP_IPC] > 0 || cfg->procs < 2),
            "soak/every_kind_ran", "reads %lu, IPC %lu, children by exit() %lu and _exit() "
            "%lu, holders %lu", all.reads_checked, all.ops[OP_IPC], all.fork_exit,
            all.fork_quick_exit, all.ops[OP_HOLDER]);
}

static int run_workers(const struct soak_cfg *cfg, struct soak_stats *st)
{
    int report_fd[MAX_PROCS], pair[MAX_PROCS][2], alive = 0;
    pid_t pid[MAX_PROCS];

    for (int w = 0; w + 1 < cfg->procs; w += 2)
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair[w]))
            return t_fail("soak/start", "socketpair: %s", strerror(errno)), -1;
    for (int w = 0; w < cfg->procs; w++) {
        int p[2], ipc = w % 2 ? pair[w - 1][1] : w + 1 < cfg->procs ? pair[w][0] : -1;

        if (pipe2(p, O_CLOEXEC))
            return t_fail("soak/start", "pipe: %s", strerror(errno)), -1;
        fflush(NULL);
        pid[w] = fork();
        if (pid[w] == 0) {
            close(p[0]);
            _exit(soak_worker(cfg, w, ipc, p[1]));
        }
        close(p[1]);
        report_fd[w] = p[0];
        alive += pid[w] > 0;
    }
    for (int w = 0; w + 1 < cfg->procs; w += 2)
        close(pair[w][0]), close(pair[w][1]);
    for (int w = 0; w < cfg->procs; w++) {
        int status = -1;
        ssize_t n;

        /* Bounded: the load, the end of an IPC pair, the giving back. */
        if (pid[w] > 0 && t_wait_bounded(pid[w], &status, (unsigned)cfg->seconds + 240) != 0)
            t_fail("soak/worker_ended", "worker %d did not end in time: killed", w);
        n = read(report_fd[w], &st[w], sizeof(st[w]));
        close(report_fd[w]);
        if (n != (ssize_t)sizeof(st[w]) || !WIFEXITED(status) || WEXITSTATUS(status)) {
            t_fail("soak/worker_ended", "worker %d: status %#x, %zd bytes of report", w, status, n);
            memset(&st[w], 0, sizeof(st[w]));
            st[w].errors = 1;
        }
    }
    return alive == cfg->procs ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct soak_cfg cfg = { .seconds = 300, .procs = 4, .threads = 4, .limits = 1 };
    struct soak_stats st[MAX_PROCS];
    struct soak_smi before, after;
    size_t free0, free1;
    double t0;
    int smi0;

    if (argc == 2 && !strcmp(argv[1], "--holder"))
        return soak_holder();
    if (argc == 2 && !strcmp(argv[1], "--meminfo"))
        return meminfo();
    if (argc == 2 && !strcmp(argv[1], "--limits")) {
        soak_limits();
        return t_status();
    }
    if (getenv("SOAK_SECONDS"))
        cfg.seconds = atof(getenv("SOAK_SECONDS"));
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            cfg.seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--procs") && i + 1 < argc)
            cfg.procs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            cfg.threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-limits"))
            cfg.limits = 0;
        else
            return fprintf(stderr, "usage: soak [--seconds S] [--procs N] [--threads T] "
                           "[--no-limits] | --limits | --holder | --meminfo\n"), 2;
    }
    if (cfg.procs < 1 || cfg.procs > MAX_PROCS || cfg.threads < 1 || cfg.seconds <= 0)
        return fprintf(stderr, "soak: 1..%d processes, 1 thread or more, S > 0\n", MAX_PROCS), 2;
    /* This process never starts CUDA: its children (fork without exec) do. */
    free0 = gpu_free();
    smi0 = soak_smi(&before);
    t0 = soak_now();
    run_workers(&cfg, st);
    report(&cfg, st, cfg.procs, soak_now() - t0);
    free1 = gpu_free();
    if (free0 && free1)
        t_check(free1 + (64u << 20) >= free0, "soak/gpu_memory_back", "%zu MiB free, %zu before",
                free1 >> 20, free0 >> 20);
    else
        t_skip("soak/gpu_memory_back", "the driver has no cuMemGetInfo (a stand-in)");
    if (!smi0 && !soak_smi(&after)) {
        printf("# nvidia-smi: FB used %ld -> %ld MiB, BAR1 used %ld -> %ld MiB of %ld\n",
               before.fb_used, after.fb_used, before.bar1_used, after.bar1_used,
               after.bar1_total);
        t_check(after.bar1_used <= before.bar1_used + 16, "soak/bar1_back",
                "BAR1 used %ld MiB, %ld before", after.bar1_used, before.bar1_used);
    } else {
        t_skip("soak/bar1_back", "no nvidia-smi here");
    }
    if (cfg.limits) {
        char cmd[64];

        fflush(NULL);
        snprintf(cmd, sizeof(cmd), "/proc/%d/exe --limits", (int)getpid());
        if (system(cmd) != 0)
            t_fail("soak/limits", "the limits part failed (its lines above)");
    }
    return t_status();
}

/* SPDX-License-Identifier: MIT */
/*
 * tools_selftest.c - the tools' own helpers, without a GPU: size parsing, percentiles, the JSON
 * writer, the raw reference loops (every size and misalignment against memcpy, on host
 * memory) and the paired latency measurement. Prints one ok / not ok line per check.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/gpumem.h"
#include "common/measure.h"
#include "common/numa.h"
#include "common/rawcopy.h"
#include "common/stats.h"
#include "common/util.h"
#include "t.h"

static void test_parse(void)
{
    size_t v = 0;
    unsigned long u = 0;

    t_check(parse_size("4096", &v) == 0 && v == 4096, "parse_size/plain", "4096");
    t_check(parse_size("64K", &v) == 0 && v == 65536, "parse_size/K", "64K");
    t_check(parse_size("16M", &v) == 0 && v == 16u << 20, "parse_size/M", "16M");
    t_check(parse_size("1GiB", &v) == 0 && v == 1u << 30, "parse_size/GiB", "1GiB");
    t_check(parse_size("0x1000", &v) == 0 && v == 4096, "parse_size/hex", "0x1000");
    t_check(parse_size("4X", &v) != 0 && parse_size("", &v) != 0 && parse_size("-1", &v) != 0 &&
            parse_size("abc", &v) != 0, "parse_size/rejects", "4X, empty, -1, abc accepted");
    t_check(parse_uint("10", 5, &u) != 0 && parse_uint("5", 5, &u) == 0 && u == 5,
            "parse_uint/bounds", "max not enforced");
}

static void test_stats(void)
{
    double s[200];
    struct stats st;

    for (int i = 0; i < 200; i++)
        s[i] = 200 - i; /* 200 .. 1, unsorted */
    stats_compute(s, 200, &st);
    t_check(st.min == 1 && st.max == 200 && st.p50 == 100 && st.p99 == 198 && st.avg == 100.5,
            "stats/percentiles", "nearest-rank p50/p99 of 1..200 must be 100/198");
    stats_compute(s, 0, &st);
    t_check(st.n == 0 && st.p50 == 0, "stats/empty", "no samples must give zeros");
}

static void test_json(void)
{
    char path[] = "/tmp/tools_selftest_XXXXXX", buf[512] = "";
    struct json j;
    struct stats st = { .n = 2, .min = 1, .p50 = 1.5, .p99 = 2, .max = 2, .avg = 1.5 };
    FILE *f;
    int fd = mkstemp(path);

    if (fd < 0) {
        t_check(0, "json/output", "mkstemp failed");
        return;
    }
    close(fd);
    json_open(&j, path);
    json_str(&j, "tool", "t\"x");
    json_arr(&j, "rows");
    json_int(&j, NULL, 1);
    json_obj(&j, NULL);
    json_stats(&j, "s", &st);
    json_end(&j);
    json_end(&j);
    json_close(&j);
    f = fopen(path, "r");
    if (f) {
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    unlink(path);
    t_check(strcmp(buf, "{\"tool\":\"t\\\"x\",\"rows\":[1,{\"s\":{\"min\":1,\"p50\":1.5,\"p99\":2,"
                      "\"max\":2,\"avg\":1.5,\"n\":2}}]}\n") == 0, "json/output", "%s", buf);
}

static void test_raw(void)
{
    static unsigned char src[8192] __attribute__((aligned(4096)));
    static unsigned char dst[8192 + 64];
    int bad = 0;

    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (unsigned char)(i * 131 + 7);
    for (int off = 0; off < 130 && !bad; off++) {
        for (size_t n = 0; n < 1200 && !bad; n += n < 140 ? 1 : 61) {
            memset(dst, 0, sizeof(dst));
            raw_read_nt(dst, src + off, n);
            bad |= memcmp(dst, src + off, n) != 0 || dst[n] != 0;
            memset(dst, 0, sizeof(dst));
            raw_write_nt(dst + off, src, n);
            bad |= memcmp(dst + off, src, n) != 0 || dst[off + n] != 0;
            memset(dst, 0, sizeof(dst));
            raw_store_small(dst + off, src, n);
            bad |= memcmp(dst + off, src, n) != 0 || dst[off + n] != 0;
        }
    }
    t_check(!bad, "rawcopy/every-size-and-offset", "%s", raw_kernel_name());

    /* The write sequences copylat picks from, at a 64-byte aligned place, every size each
     * applies to (whole lines for MOVDIR64B, where this CPU has it). */
    static unsigned char line_dst[8192 + 64] __attribute__((aligned(64)));
    char tried[64] = "";

    for (int w = 0; w < RAW_W_COUNT; w++) {
        int used = 0;

        for (size_t n = 1; n <= 4096 && !bad; n += n < 140 ? 1 : 61) {
            if (!raw_write_usable((enum raw_write)w, n))
                continue;
            used = 1;
            memset(line_dst, 0, sizeof(line_dst));
            raw_write((enum raw_write)w, line_dst, src, n);
            bad |= memcmp(line_dst, src, n) != 0 || line_dst[n] != 0;
        }
        if (used)
            snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried), " %s",
                     raw_write_name((enum raw_write)w));
    }
    t_check(!bad && strstr(tried, "st8") && strstr(tried, "nt"), "rawcopy/write-sequences", "%s", tried);
}

/* measure_latency_pair: two busy-waits, the second twice as long, give a ratio near 2, both
 * ran equally often, and the order turns: after the warm-up (4 pairs) and the estimate (8 of
 * each), the rounds a^L b^L, b^L a^L, ... merge into runs of 2L, where a fixed order gives runs
 * of L. Short operations get batches of 200 (as iters allows), long ones batches of 1. */
#define PAIR_SEQ 4096
struct pair_ctx {
    uint64_t ns;                /* op a's time; op b's is twice that */
    size_t max_index[3], min_index[3];
    unsigned long runs[3];
    size_t len;
    char seq[PAIR_SEQ];
};

static void spin_op(struct pair_ctx *c, int who, size_t i)
{
    uint64_t t0 = vr_now_ns();

    if (i > c->max_index[who])
        c->max_index[who] = i;
    if (i < c->min_index[who])
        c->min_index[who] = i;
    while (vr_now_ns() - t0 < c->ns * (uint64_t)who)
        ;
    c->runs[who]++;
    if (c->len < PAIR_SEQ)
        c->seq[c->len++] = (char)who;
}

static void op_a(void *p, size_t i)
{
    spin_op(p, 1, i);
}

static void op_b(void *p, size_t i)
{
    spin_op(p, 2, i);
}

static void test_measure_pair(const char *name, uint64_t ns, size_t iters, size_t want_batch)
{
    static struct pair_ctx c;
    struct stats a, b;
    double r = 0;
    size_t done, i = 24, first = 0, run, doubled = 0, interior = 0;
    char what[64], why[240];

    memset(&c, 0, sizeof(c));
    c.ns = ns;
    c.min_index[1] = c.min_index[2] = (size_t)-1;
    done = measure_latency_pair(op_a, op_b, &c, iters, 5.0, &a, &b, &r);
    snprintf(why, sizeof(why), "ratio %.3f, p50 %.3f / %.3f us, runs %lu / %lu, done %zu", r,
             a.p50, b.p50, c.runs[1], c.runs[2], done);
    snprintf(what, sizeof(what), "measure/pair-ratio/%s", name);
    t_check(r > 1.6 && r < 2.4 && a.p50 >= ns / 1e3 && b.p50 >= 2 * ns / 1e3, what, "%s", why);
    /* Runs after the estimate: the first is one batch; interior ones should be two. */
    while (i < c.len) {
        for (run = 0; i + run < c.len && c.seq[i + run] == c.seq[i]; run++)
            ;
        if (!first)
            first = run;
        else if (i + run < c.len) {
            interior++;
            doubled += run == 2 * first;
        }
        i += run;
    }
    snprintf(why + strlen(why), sizeof(why) - strlen(why), ", batch %zu (want %zu), %zu of %zu "
             "later runs of two batches", first, want_batch, doubled, interior);
    snprintf(what, sizeof(what), "measure/pair-alternates/%s", name);
    t_check(done > 0 && c.runs[1] == c.runs[2] && first == want_batch && interior > 4 &&
          doubled == interior, what, "%s", why);
    /* Indices pick addresses: a's and b's must not meet. */
    snprintf(why, sizeof(why), "a used %zu..%zu, b %zu..%zu", c.min_index[1], c.max_index[1],
             c.min_index[2], c.max_index[2]);
    snprintf(what, sizeof(what), "measure/pair-indices/%s", name);
    t_check(c.max_index[1] < c.min_index[2], what, "%s", why);
}

/* The installed tools know the emu kind by name but do not carry it (only the guest build
 * links tests/kernel/emu/gpumem_emu.c); using it says so instead of opening /dev/nvp2p_emu. */
static void test_kinds(void)
{
    enum gm_kind k = GM_CUDA;
    char why[256] = "";
    struct gm_buf b;

    t_check(gm_kind_parse("emu", &k) == 0 && k == GM_EMU && !gm_kind_is_cuda(k),
            "gpumem/emu_known_by_name", "emu not parsed as a non-CUDA kind");
    t_check(gm_init(GM_EMU, 0, why, sizeof(why)) == ENODEV && strstr(why, "QEMU guest"),
          "gpumem/emu_not_linked", "%s", why);
    t_check(gm_alloc(GM_EMU, 4096, &b, why, sizeof(why)) == EINVAL && gm_free(&b) == 0,
          "gpumem/emu_alloc_refused", "%s", why);
    t_check(gm_kind_parse("cuMemCreate", &k) == 0 && k == GM_VMM_RDMA &&
            gm_kind_parse("nope", &k) == EINVAL, "gpumem/kind_names", "alias or unknown name");
}

/* A file under the fake sysfs root, its directories made first. */
static void put(const char *root, const char *rel, const char *text)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* The GPU's NUMA node and local CPUs from a fake sysfs tree (VRAMIO_SYSFS_ROOT). */
static void test_numa(void)
{
    char root[] = "/tmp/vramio-sysfs-XXXXXXXX", list[64], bdf[32], cmd[600];
    struct gpu_numa nu;
    cpu_set_t set;
    int me = -1;

    if (!mkdtemp(root) || sched_getaffinity(0, sizeof(set), &set)) {
        t_check(0, "numa/setup", "no temporary directory or affinity mask");
        return;
    }
    for (int c = 0; c < CPU_SETSIZE && me < 0; c++)
        if (CPU_ISSET(c, &set))
            me = c;
    setenv("VRAMIO_SYSFS_ROOT", root, 1);
    numa_of_bdf("0000:00:01.0", &nu);
    t_check(nu.node == -1 && !nu.cpus[0] && nu.first_cpu == -1, "numa/no_files", "found something");
    put(root, "bus/pci/devices/0000:00:02.0/numa_node", "0\n");
    snprintf(list, sizeof(list), "%d\n", me);
    put(root, "bus/pci/devices/0000:00:02.0/local_cpulist", list);
    numa_of_bdf("0000:00:02.0", &nu);
    t_check(nu.node == 0 && nu.first_cpu == me, "numa/one_node", "wrong node or CPU");
    put(root, "bus/pci/devices/0000:00:03.0/numa_node", "-1\n");
    put(root, "bus/pci/devices/0000:00:03.0/local_cpulist", list);
    numa_of_bdf("0000:00:03.0", &nu);
    t_check(nu.node == -1 && nu.first_cpu == me, "numa/minus_one", "wrong node or CPU");
    /* Several nodes: the GPU on node 1, whose CPUs come from the node's own list (no
     * local_cpulist), ranges and CPUs this process may not use skipped. */
    put(root, "bus/pci/devices/0000:00:04.0/numa_node", "1\n");
    put(root, "devices/system/node/node0/cpulist", "4000-4001\n");
    snprintf(list, sizeof(list), "4090-4093,%d-%d\n", me, me + 1);
    put(root, "devices/system/node/node1/cpulist", list);
    numa_of_bdf("0000:00:04.0", &nu);
    t_check(nu.node == 1 && nu.first_cpu == me && strncmp(nu.cpus, "4090-4093,", 10) == 0,
            "numa/several_nodes", "wrong node, list or CPU");
    put(root, "bus/pci/devices/0000:00:05.0/numa_node", "zero\n");
    put(root, "bus/pci/devices/0000:00:05.0/local_cpulist", "0-x\n");
    numa_of_bdf("0000:00:05.0", &nu);
    t_check(nu.node == -1 && nu.first_cpu == -1, "numa/garbage", "parsed");
    t_check(numa_first_allowed("") == -1 && numa_first_allowed("3-1") == -1,
            "numa/bad_lists", "accepted");
    numa_bdf_from_busid("00000000:AB:06.0", bdf, sizeof(bdf));
    t_check(strcmp(bdf, "0000:ab:06.0") == 0, "numa/bdf_from_cuda_busid", "%s", bdf);
    unsetenv("VRAMIO_SYSFS_ROOT");
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    if (system(cmd))
        t_check(0, "numa/cleanup", "%s", root);
}

int main(void)
{
    test_numa();
    test_parse();
    test_kinds();
    test_stats();
    test_json();
    test_raw();
    test_measure_pair("2us", 1000, 1000, 1);
    test_measure_pair("0.4us", 200, 20000, 200);
    return t_status();
}

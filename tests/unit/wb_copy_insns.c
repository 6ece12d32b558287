// SPDX-License-Identifier: MIT
/*
 * wb_copy_insns.c - white-box test of the fences a copy issues on arm64 and ppc64 (the
 * contract at the top of src/copy/copy.h; the instructions are src/arch/fence.h's), by the
 * instructions the library runs, as wb_copy_fences.c does on x86 with ptrace: here qemu-user
 * runs a child of this program one instruction at a time and logs each one it executes
 * (-singlestep -d in_asm,exec,nochain, limited to this program's code, where the library is
 * linked in statically), and this program reads the log.
 *
 *  - write_ends_with_store_fence: every copy to a mapping, of every type (CACHING included:
 *    a coherent GPU is an observer of ordinary cached stores too), through gdr_copy_to_mapping
 *    and vramio_copy_to_mapping_auto (its BAR part: no CUDA here), ends with arm64's DMB OSHST
 *    or ppc64's SYNC after its last store and its last call out of the library (memcpy for
 *    CACHING), with no store after it;
 *  - read_begins_with_full_fence: with the mapping made inaccessible, the first access of a
 *    read faults; a full fence (DMB SY, SYNC: not ppc64's LWSYNC, which does not order
 *    caching-inhibited storage) must have run before it, since the call began.
 *
 * Runs where VRAMIO_TEST_LAUNCHER names qemu-aarch64 or qemu-ppc64le (tests/cross/
 * cross_user.sh); elsewhere a skip (x86-64: wb_copy_fences.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "t.h"
#include "gdrapi.h"
#include "vramio.h"
#include "wb/copy_calls.h"
#include "wb/hooks.h"

#define AREA (80u << 10)

static const struct { int type; const char *name; } types[] = {
    { GDR_MAPPING_TYPE_WC, "WC" }, { GDR_MAPPING_TYPE_CACHING, "CACHING" },
    { GDR_MAPPING_TYPE_DEVICE, "DEVICE" }, { GDR_MAPPING_TYPE_NONE, "NONE" },
};
#define N_TYPES (sizeof(types) / sizeof(types[0]))

/* Odd sizes and places: within a line, straddling lines and a page, whole lines; 64 KiB of
 * WC only (the other types' code is the same at any size). */
static const struct { size_t n, off; } shapes[] = {
    { 1, 0 }, { 3, 62 }, { 8, 0 }, { 8, 60 }, { 64, 0 }, { 100, 50 }, { 4109, 4089 },
    { 65536, 0 },
};
#define N_SHAPES (sizeof(shapes) / sizeof(shapes[0]))

static int case_runs(size_t t, size_t s)
{
    return shapes[s].n < 65536 || types[t].type == GDR_MAPPING_TYPE_WC;
}

/* ---- the child, under qemu's log: every case, type by type, between the markers --------- */

static sigjmp_buf fault_jmp;

/* Where a case begins (its copy is the first call after this returns) and where a read's
 * first access lands. Each is a function of its own, so its first instruction marks the log. */
__attribute__((noinline)) static void case_begins(void)
{
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void on_fault(int sig)
{
    siglongjmp(fault_jmp, 1);
}

static unsigned char host[AREA];

/* One case: 0, or the child's exit status for a setup that failed. */
static int run_case(gdr_mh_t mh, unsigned char *area, size_t e, size_t s)
{
    unsigned char *map = area + shapes[s].off;
    volatile int rc = 0;

    if (!entries[e].to_map && mprotect(area, AREA, PROT_NONE) != 0)
        return 91;
    if (!sigsetjmp(fault_jmp, 1)) {
        case_begins();
        rc = entries[e].to_map ? entries[e].fn(mh, map, host, shapes[s].n)
                               : entries[e].fn(mh, host, map, shapes[s].n);
    }
    if (!entries[e].to_map && mprotect(area, AREA, PROT_READ | PROT_WRITE) != 0)
        return 91;
    return rc ? 93 : 0;
}

/* One type's pin at a time: while mappings of two types are live, every copy ends with the
 * full fence of mixed mappings (wb_copy_fences.c checks that), which would hide the others. */
static int child(void)
{
    unsigned char *area = mmap(NULL, AREA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                               -1, 0);
    struct sigaction sa;
    int rc;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_fault;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    if (area == MAP_FAILED)
        return 92;
    for (size_t t = 0; t < N_TYPES; t++) {
        unsigned long tok = 0;
        gdr_mh_t mh;

        if (vr_handles_test_insert(area, AREA, types[t].type, &tok))
            return 92;
        mh.h = tok;
        for (size_t e = 0; e < N_ENTRIES; e++)
            for (size_t s = 0; s < N_SHAPES; s++)
                if (case_runs(t, s) && (rc = run_case(mh, area, e, s)) != 0)
                    return rc;
        vr_handles_test_remove(tok);
    }
    return 0;
}

/* ---- the parent: the log, read back -------------------------------------------------- */

enum kind { K_OTHER, K_STORE, K_CALL, K_STORE_FENCE, K_FULL_FENCE, K_WEAK_FENCE };

struct insn {
    uint64_t pc;
    enum kind kind;
    char text[48];
};

static struct insn *insns;      /* every instruction of the log, sorted by pc */
static size_t n_insns, cap_insns;
static uint64_t *trace;         /* the pcs executed, in order */
static size_t n_trace, cap_trace;

/* What an instruction is, from qemu's disassembly: mnemonic and operands. */
static enum kind classify(const char *mn, const char *ops)
{
#if defined(__aarch64__)
    if (!strcmp(mn, "dmb") || !strcmp(mn, "dsb")) {
        if (!strcmp(ops, "sy"))
            return K_FULL_FENCE;
        if (!strcmp(ops, "oshst") || !strcmp(ops, "osh") || !strcmp(ops, "st"))
            return K_STORE_FENCE;
        return K_WEAK_FENCE;
    }
    if (!strncmp(mn, "st", 2) || !strcmp(mn, "dc"))
        return K_STORE;
    if (!strcmp(mn, "bl") || !strcmp(mn, "blr") || !strcmp(mn, "br"))
        return K_CALL;
#elif defined(__powerpc64__)
    if (!strcmp(mn, "sync") || !strcmp(mn, "hwsync"))
        return !*ops || !strcmp(ops, "0") ? K_FULL_FENCE : K_WEAK_FENCE;
    if (!strcmp(mn, "lwsync") || !strcmp(mn, "eieio") || !strcmp(mn, "isync"))
        return K_WEAK_FENCE;
    /* Stores, and what the disassembler does not know (newer vector stores among them). */
    if (!strncmp(mn, "st", 2) || !strcmp(mn, "dcbz") || !strcmp(mn, ".byte"))
        return K_STORE;
    if (!strcmp(mn, "bl") || !strcmp(mn, "bctrl") || !strcmp(mn, "bctr") || !strcmp(mn, "blrl"))
        return K_CALL;
#else
    (void)mn;
    (void)ops;
#endif
    return K_OTHER;
}

static int by_pc(const void *a, const void *b)
{
    const struct insn *x = a, *y = b;

    return x->pc < y->pc ? -1 : x->pc > y->pc;
}

static const struct insn *insn_at(uint64_t pc)
{
    struct insn key = { .pc = pc };

    return bsearch(&key, insns, n_insns, sizeof(*insns), by_pc);
}

static int grow(void **p, size_t *cap, size_t need, size_t each)
{
    void *q;

    if (need <= *cap)
        return 0;
    *cap = *cap ? *cap * 2 : 4096;
    q = realloc(*p, *cap * each);
    if (!q)
        return -1;
    *p = q;
    return 0;
}

/* "0x%lx:  %08x  mnemonic operands" after "IN:", and "Trace 0: 0x... [x/pc/flags/cflags]". */
static int read_log(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[512];

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        unsigned long long pc, a;
        unsigned word;
        char mn[32] = "", ops[96] = "";
        const char *br;

        if (sscanf(line, "0x%llx: %x %31s %95[^\n]", &pc, &word, mn, ops) >= 3) {
            for (size_t e = strlen(ops); e && ops[e - 1] == ' '; e--)
                ops[e - 1] = '\0';
            if (grow((void **)&insns, &cap_insns, n_insns + 1, sizeof(*insns)))
                break;
            insns[n_insns].pc = pc;
            insns[n_insns].kind = classify(mn, ops);
            snprintf(insns[n_insns].text, sizeof(insns[n_insns].text), "%s %s", mn, ops);
            n_insns++;
        } else if (!strncmp(line, "Trace ", 6) && (br = strchr(line, '[')) &&
                   sscanf(br, "[%llx/%llx/", &a, &pc) == 2) {
            if (grow((void **)&trace, &cap_trace, n_trace + 1, sizeof(*trace)))
                break;
            trace[n_trace++] = pc;
        }
    }
    fclose(f);
    qsort(insns, n_insns, sizeof(*insns), by_pc);
    return 0;
}

/* The i-th case's window in the trace: from the first instruction of its copy call to the
 * instruction at that call's return address, or to the fault handler. */
struct window {
    size_t from, to;
    int faulted;
};

static int find_window(size_t *at, struct window *w)
{
    const uint64_t begin = (uint64_t)(uintptr_t)case_begins, fault = (uint64_t)(uintptr_t)on_fault;
    size_t i = *at, j;
    uint64_t ret = 0;

    while (i < n_trace && trace[i] != begin)
        i++;
    /* The first call after the marker's own return is the copy's. */
    for (j = i + 1; j < n_trace && trace[j] != begin; j++) {
        const struct insn *k = insn_at(trace[j]);

        if (k && k->kind == K_CALL) {
            ret = trace[j] + 4;
            break;
        }
    }
    if (!ret)
        return -1;
    w->from = j + 1;
    for (j = w->from; j < n_trace && trace[j] != ret && trace[j] != fault && trace[j] != begin;
         j++)
        ;
    w->to = j;
    w->faulted = j < n_trace && trace[j] == fault;
    *at = j;
    return 0;
}

/* A write: the last store fence (or full fence) of the window comes after every store and
 * every call out of the library. */
static void check_write(const char *name, const struct window *w)
{
    long fence = -1, last = -1;
    const char *after = "";

    for (size_t j = w->from; j < w->to; j++) {
        const struct insn *k = insn_at(trace[j]);

        if (!k)
            continue;
        if (k->kind == K_STORE_FENCE || k->kind == K_FULL_FENCE)
            fence = (long)(j - w->from);
        if (k->kind == K_STORE || k->kind == K_CALL) {
            last = (long)(j - w->from);
            after = k->text;
        }
    }
    t_check(!w->faulted && fence >= 0 && fence > last, name,
            "%zu instructions; last store fence at %ld, last store or call out at %ld (%s)",
            w->to - w->from, fence, last, after);
}

/* A read: a full fence ran before its first access (the fault). */
static void check_read(const char *name, const struct window *w)
{
    long full = -1, weak = -1;

    for (size_t j = w->from; j < w->to; j++) {
        const struct insn *k = insn_at(trace[j]);

        if (k && k->kind == K_FULL_FENCE)
            full = (long)(j - w->from);
        if (k && k->kind == K_WEAK_FENCE)
            weak = (long)(j - w->from);
    }
    t_check(w->faulted && full >= 0, name,
            "%s after %zu instructions; last full fence at %ld, last weaker fence at %ld",
            w->faulted ? "first access" : "no access", w->to - w->from, full, weak);
}

/* This program's code, [lo, hi): qemu-user places it at the same guest address every run. */
static int text_range(unsigned long *lo, unsigned long *hi)
{
    char line[512], self[4096], path[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    FILE *f = fopen("/proc/self/maps", "r");
    unsigned long a, b;

    *lo = *hi = 0;
    if (n <= 0 || !f) {
        if (f)
            fclose(f);
        return -1;
    }
    self[n] = '\0';
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "%lx-%lx r-xp %*s %*s %*s %4095s", &a, &b, path) == 3 &&
            !strcmp(path, self)) {
            *lo = a;
            *hi = b;
        }
    fclose(f);
    return *lo < *hi ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *mode = t_child_mode(argc, argv), *launcher = getenv("VRAMIO_TEST_LAUNCHER");
    static char out[1 << 16];
    char log[256], filter[96], logvar[300];
    const char *env[] = { "QEMU_SINGLESTEP=1", "QEMU_LOG=in_asm,exec,nochain", logvar, filter,
                          NULL };
    unsigned long lo, hi;
    size_t at = 0;
    int rc, sig = 0;

    if (mode)
        return child();
#if !defined(__aarch64__) && !defined(__powerpc64__)
    t_skip("copy_insns", "the instructions are checked for arm64 and ppc64 (x86-64: "
           "wb_copy_fences)");
    return 0;
#endif
    if (!launcher || !strstr(launcher, "qemu-")) {
        t_skip("copy_insns", "needs qemu-user's instruction log (tests/cross/cross_user.sh)");
        return 0;
    }
    if (!t_check(text_range(&lo, &hi) == 0, "text", "this program's code not in its maps"))
        return t_status();
    snprintf(log, sizeof(log), "%s/vramio-insns-%d.log",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    snprintf(logvar, sizeof(logvar), "QEMU_LOG_FILENAME=%s", log);
    snprintf(filter, sizeof(filter), "QEMU_DFILTER=0x%lx..0x%lx", lo, hi - 1);
    rc = t_run_self("trace", env, out, sizeof(out), &sig);
    if (!t_check(rc == 0, "child", "exit %d, signal %d: %s", rc, sig, out) ||
        !t_check(read_log(log) == 0 && n_trace > 0, "log", "no instructions logged in %s "
                 "(%zu)", log, n_trace)) {
        unlink(log);
        return t_status();
    }
    unlink(log);
    for (size_t t = 0; t < N_TYPES; t++)
        for (size_t e = 0; e < N_ENTRIES; e++)
            for (size_t s = 0; s < N_SHAPES; s++) {
                struct window w = { 0, 0, 0 };
                char name[160];

                if (!case_runs(t, s))
                    continue;
                snprintf(name, sizeof(name), "%s/%s/%s/%zu@%zu", entries[e].to_map ?
                         "write_ends_with_store_fence" : "read_begins_with_full_fence",
                         entries[e].name, types[t].name, shapes[s].n, shapes[s].off);
                if (find_window(&at, &w) != 0) {
                    t_fail(name, "its call not found in the log");
                    return t_status();
                }
                if (entries[e].to_map)
                    check_write(name, &w);
                else
                    check_read(name, &w);
            }
    free(insns);
    free(trace);
    return t_status();
}

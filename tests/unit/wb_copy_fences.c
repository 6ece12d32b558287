// SPDX-License-Identifier: MIT
/*
 * wb_copy_fences.c - white-box test of the fences a copy issues (the contract at the top of
 * src/copy/copy.h), by watching the instructions the library runs: a child process makes one
 * copy through the public API on a pin of host memory (the hooks' vr_handles_test_insert),
 * single-stepped by this process with ptrace.
 *
 *  - first_access_after_mfence: with the mapping made inaccessible, the first access to it
 *    faults; an MFENCE must have run before it, since the call began. For every copy kernel
 *    (one child process each, GDRCOPY_COPY_KERNEL), read shapes of 1 byte to 64 KiB at odd
 *    places, through gdr_copy_from_mapping and vramio_copy_from_mapping_auto (its BAR part:
 *    there is no CUDA here). A read without it may be answered from a streaming-load buffer
 *    an earlier read filled (arch/fence.h).
 *  - mixed_ends_with_mfence: while mappings of two types are live, a copy of either direction,
 *    through either API, ends with an MFENCE after its last non-temporal access.
 *
 * x86-64 only (the instructions are decoded here); a system that refuses ptrace is a skip.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>
#include "t.h"
#include "gdrapi.h"
#include "vramio.h"
#include "wb/hooks.h"

#define AREA      (80u << 10)
#define MAX_STEPS 2000000

#if defined(__x86_64__)
enum insn { I_OTHER, I_MFENCE, I_LFENCE, I_SFENCE, I_NT };

/* What the instruction at b is, as far as this test cares. */
static enum insn classify(const unsigned char *b)
{
    int i = 0;

    while (i < 4 && (b[i] == 0x66 || b[i] == 0xf2 || b[i] == 0xf3 || (b[i] & 0xf0) == 0x40))
        i++;
    if (b[i] == 0x0f && b[i + 1] == 0xae && i == 0) {
        if (b[2] == 0xf0)
            return I_MFENCE;
        if (b[2] == 0xe8)
            return I_LFENCE;
        if (b[2] == 0xf8)
            return I_SFENCE;
    }
    if (b[i] == 0x0f && (b[i + 1] == 0xe7 || b[i + 1] == 0xc3))         /* movntdq, movnti */
        return I_NT;
    if (b[i] == 0x0f && b[i + 1] == 0x38 && (b[i + 2] == 0x2a || b[i + 2] == 0xf8))
        return I_NT;                                      /* movntdqa, movdir64b */
    if (b[0] == 0xc5 && b[2] == 0xe7)                     /* vmovntdq, two-byte VEX */
        return I_NT;
    if (b[0] == 0xc4 && (((b[1] & 0x1f) == 2 && b[3] == 0x2a) ||
                         ((b[1] & 0x1f) == 1 && b[3] == 0xe7)))
        return I_NT;                                      /* vmovntdqa, vmovntdq */
    if (b[0] == 0x62 && (((b[1] & 3) == 2 && b[4] == 0x2a) || ((b[1] & 3) == 1 && b[4] == 0xe7)))
        return I_NT;                                      /* EVEX forms */
    return I_OTHER;
}

struct trace {
    int refused;          /* ptrace not allowed here */
    int faulted;          /* the first access to the protected mapping faulted */
    int mfence_before;    /* MFENCEs that ran before that fault */
    int last_fence;       /* enum insn of the last fence that ran */
    long last_nt, last_mfence;   /* step numbers (-1: none) */
    long steps;
};

typedef int (*copy_call)(gdr_mh_t, void *, const void *, size_t);

/* One copy, made by the traced child on a pin of its own (a pin does not follow a fork): n
 * bytes at off in the mapping 'area', to or from 'host'; with 'mixed', while a CACHING pin
 * is live as well. */
struct call {
    copy_call fn;
    int to_map, mixed;
    unsigned char *area;
    size_t n, off;
};

static unsigned char host[AREA], cached[4096];

static void child_copy(const struct call *c, int protect)
{
    unsigned long tok = 0, other = 0;
    gdr_mh_t mh;
    unsigned char *map = c->area + c->off;

    if (vr_handles_test_insert(c->area, AREA, GDR_MAPPING_TYPE_WC, &tok) ||
        (c->mixed && vr_handles_test_insert(cached, sizeof(cached), GDR_MAPPING_TYPE_CACHING,
                                            &other)))
        _exit(92);
    mh.h = tok;
    if (protect && mprotect(c->area, AREA, PROT_NONE) != 0)
        _exit(91);
    raise(SIGSTOP);
    if (c->to_map)
        c->fn(mh, map, host, c->n);
    else
        c->fn(mh, host, map, c->n);
    raise(SIGSTOP);
    _exit(0);
}

/* Run c in a child, single-stepped from just before the call to just after it. */
static void trace_call(const struct call *c, int protect, struct trace *tr)
{
    unsigned char code[24];
    int st;
    pid_t pid;

    memset(tr, 0, sizeof(*tr));
    tr->last_nt = tr->last_mfence = -1;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
            _exit(90);
        child_copy(c, protect);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st)) {
        tr->refused = 1;
        if (pid > 0)
            t_wait_bounded(pid, &st, 5);
        return;
    }
    for (tr->steps = 0; tr->steps < MAX_STEPS; tr->steps++) {
        struct user_regs_struct regs;
        enum insn cur;
        size_t k;

        if (ptrace(PTRACE_GETREGS, pid, NULL, &regs) != 0)
            break;
        for (k = 0; k < sizeof(code); k += sizeof(long)) {
            long w = ptrace(PTRACE_PEEKTEXT, pid, (void *)(regs.rip + k), NULL);

            memcpy(code + k, &w, sizeof(w));
        }
        cur = classify(code);
        if (ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) != 0 || waitpid(pid, &st, 0) != pid ||
            !WIFSTOPPED(st))
            break;
        if (WSTOPSIG(st) == SIGSEGV || WSTOPSIG(st) == SIGBUS) {
            tr->faulted = 1;
            break;
        }
        if (WSTOPSIG(st) != SIGTRAP)
            break;          /* the SIGSTOP after the call */
        if (cur == I_NT)
            tr->last_nt = tr->steps;
        if (cur == I_MFENCE || cur == I_LFENCE || cur == I_SFENCE)
            tr->last_fence = cur;
        if (cur == I_MFENCE) {
            tr->last_mfence = tr->steps;
            tr->mfence_before++;
        }
    }
    kill(pid, SIGKILL);
    t_wait_bounded(pid, &st, 5);
}

/* The four entry points as one type: (handle, destination, source, bytes). */
static int read_lib(gdr_mh_t mh, void *dst, const void *src, size_t n)
{
    return gdr_copy_from_mapping(mh, dst, src, n);
}

static int read_auto(gdr_mh_t mh, void *dst, const void *src, size_t n)
{
    return vramio_copy_from_mapping_auto(mh, dst, src, n);
}

static int write_lib(gdr_mh_t mh, void *dst, const void *src, size_t n)
{
    return gdr_copy_to_mapping(mh, dst, src, n);
}

static int write_auto(gdr_mh_t mh, void *dst, const void *src, size_t n)
{
    return vramio_copy_to_mapping_auto(mh, dst, src, n);
}

static const struct {
    const char *name;
    copy_call fn;
    int to_map;
} entries[] = {
    { "gdr_copy_from_mapping", read_lib, 0 },
    { "from_mapping_auto", read_auto, 0 },
    { "gdr_copy_to_mapping", write_lib, 1 },
    { "to_mapping_auto", write_auto, 1 },
};

/* Odd sizes and places: within a line, straddling lines and a page, whole lines, 64 KiB. The
 * mixed runs trace whole copies, so they take the shapes up to the page-straddling one. */
static const struct { size_t n, off; } shapes[] = {
    { 1, 0 }, { 3, 62 }, { 8, 0 }, { 8, 60 }, { 16, 0 }, { 31, 17 }, { 64, 0 }, { 64, 32 },
    { 100, 50 }, { 255, 3 }, { 4109, 4089 }, { 65536, 0 }, { 65535, 1 },
};
#define MIXED_SHAPES 11

static void run_kernel(const char *kernel)
{
    unsigned char *area = mmap(NULL, AREA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                               -1, 0);
    char name[160];
    struct trace tr;
    size_t s, e;

    if (area == MAP_FAILED) {
        t_fail("setup", "mmap: %s", strerror(errno));
        return;
    }
    for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
        for (e = 0; e < 2; e++) {
            struct call c = { entries[e].fn, 0, 0, area, shapes[s].n, shapes[s].off };

            snprintf(name, sizeof(name), "first_access_after_mfence/%s/%s/%zu@%zu", kernel,
                     entries[e].name, shapes[s].n, shapes[s].off);
            trace_call(&c, 1, &tr);
            if (tr.refused) {
                t_skip(name, "ptrace is not allowed here");
                return;
            }
            t_check(tr.faulted && tr.mfence_before > 0, name,
                    "%s after %ld instructions, %d MFENCE before it", tr.faulted ?
                    "first access" : "no access", tr.steps, tr.mfence_before);
        }
    for (s = 0; s < MIXED_SHAPES; s++)
        for (e = 0; e < sizeof(entries) / sizeof(entries[0]); e++) {
            struct call c = { entries[e].fn, entries[e].to_map, 1, area, shapes[s].n,
                              shapes[s].off };

            snprintf(name, sizeof(name), "mixed_ends_with_mfence/%s/%s/%zu@%zu", kernel,
                     entries[e].name, shapes[s].n, shapes[s].off);
            trace_call(&c, 0, &tr);
            t_check(tr.last_fence == I_MFENCE && tr.last_mfence > tr.last_nt, name,
                    "last fence %d (MFENCE is %d) at step %ld, last non-temporal access at %ld",
                    tr.last_fence, I_MFENCE, tr.last_mfence, tr.last_nt);
        }
    munmap(area, AREA);
}

int main(int argc, char **argv)
{
    static const char *const kernels[] = { "avx512", "avx2", "sse41", "movdir64b", "c" };
    const char *mode = t_child_mode(argc, argv);
    size_t i;

    if (mode) {
        char name[64];

        snprintf(name, sizeof(name), "kernel/%s", mode);
        if (strcmp(vramio_copy_kernel(), mode) != 0) {
            t_skip(name, "this CPU cannot run the %s kernel", mode);
            return 0;
        }
        run_kernel(mode);
        return t_status();
    }
    for (i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++) {
        static char out[1 << 18];
        char var[64];
        const char *env[] = { var, NULL };
        int rc, sig = 0;

        snprintf(var, sizeof(var), "GDRCOPY_COPY_KERNEL=%s", kernels[i]);
        rc = t_run_self(kernels[i], env, out, sizeof(out), &sig);
        fputs(out, stdout);
        snprintf(var, sizeof(var), "kernel_child/%s", kernels[i]);
        t_check(rc == 0, var, "exit %d, signal %d", rc, sig);
    }
    return t_status();
}
#else
int main(void)
{
    t_skip("copy_fences", "the instructions are decoded for x86-64 only");
    return 0;
}
#endif

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
 *  - write_ends_with_store_fence: with one mapping type live, a write to a WC or a CACHING
 *    mapping, through either API, ends with SFENCE (or MFENCE) after its last non-temporal
 *    store and its last call out of the library (memcpy, for CACHING).
 *  - mixed_ends_with_mfence: while mappings of two types are live, a copy of either direction,
 *    through either API, ends with an MFENCE after its last non-temporal access.
 *  - auto_mixed_ends_with_mfence: the same for the _auto copies that the copy engine's side
 *    moves, against the stand-in driver (tests/fake/fake_cuda_dmabuf.c, its "device memory"
 *    host memory): a first write of 64 KiB, 256 KiB or 1 MiB, which the crossover's
 *    measurement writes whole, a first read of 64 KiB (measured, then moved), and writes and
 *    reads of 64 KiB with the crossover set, which the engine moves. Calls out of this
 *    program (the driver, libc) run untraced to their return and count as an access each:
 *    the MFENCE must come after the last of them.
 *
 * x86-64 only (the instructions are decoded here); a system that refuses ptrace is a skip.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
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
#include "core/pins.h"
#include "wb/copy_calls.h"
#include "wb/hooks.h"

#define AREA      (80u << 10)
#define MAX_STEPS 2000000

#if defined(__SANITIZE_ADDRESS__)
#define TESTS_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TESTS_UNDER_ASAN 1
#endif
#endif
#ifndef TESTS_UNDER_ASAN
#define TESTS_UNDER_ASAN 0
#endif

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
    int broken;           /* the trace stopped for another reason than the call's end */
    int mfence_before;    /* MFENCEs that ran before that fault */
    int last_fence;       /* enum insn of the last fence that ran */
    long last_nt, last_mfence, last_out;  /* step numbers (-1: none); last_out: a call out */
    long last_store_fence;                /* the last SFENCE or MFENCE */
    long steps, outs;
    int status;           /* the child's exit status after the call (-1: none) */
};

/* This program's code (the library is linked in statically): [text_lo, text_hi). A call that
 * leaves it (libc, the stand-in driver) is not stepped through but run to its return. */
static uintptr_t text_lo, text_hi;

static void find_text(void)
{
    char line[512], self[PATH_MAX], path[PATH_MAX];
    unsigned long lo, hi;
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    FILE *f = fopen("/proc/self/maps", "r");

    if (n <= 0 || !f) {
        if (f)
            fclose(f);
        return;
    }
    self[n] = '\0';
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "%lx-%lx r-xp %*s %*s %*s %4095s", &lo, &hi, path) == 3 &&
            strcmp(path, self) == 0) {
            text_lo = lo;
            text_hi = hi;
        }
    fclose(f);
}

/* The child left this program's code at a call: run it to the return address on its stack
 * (a breakpoint there). Lazy binding is off in the child (LD_BIND_NOW), so the first
 * instruction outside is the callee's and the return address is on the stack's top. 0 when
 * back at that address, else the signal that stopped it first (SIGSTOP: the call out was the
 * raise after the copy), or -1. */
static int run_out(pid_t pid, struct user_regs_struct *regs)
{
    long ret, orig;
    int st, sig;

    errno = 0;
    ret = ptrace(PTRACE_PEEKDATA, pid, (void *)regs->rsp, NULL);
    if (errno || (uintptr_t)ret < text_lo || (uintptr_t)ret >= text_hi)
        return -1;
    orig = ptrace(PTRACE_PEEKTEXT, pid, (void *)ret, NULL);
    if (errno || ptrace(PTRACE_POKETEXT, pid, (void *)ret, (void *)((orig & ~0xffL) | 0xcc)) ||
        ptrace(PTRACE_CONT, pid, NULL, NULL) || waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st))
        return -1;
    sig = WSTOPSIG(st);
    if (ptrace(PTRACE_POKETEXT, pid, (void *)ret, (void *)orig) || sig != SIGTRAP)
        return sig;
    if (ptrace(PTRACE_GETREGS, pid, NULL, regs))
        return -1;
    regs->rip = (unsigned long)ret;
    return ptrace(PTRACE_SETREGS, pid, NULL, regs) ? -1 : 0;
}

/* One copy, made by the traced child on a pin of its own (a pin does not follow a fork): n
 * bytes at off in the mapping 'area', to or from 'host'; with 'mixed', while a CACHING pin
 * is live as well. */
struct call {
    copy_call fn;
    int to_map, mixed;
    int caching;          /* the copy's mapping is CACHING (else WC) */
    unsigned char *area;
    size_t n, off;
    size_t len;           /* of area; 0: AREA */
    unsigned char *host;  /* NULL: host[] */
};

static unsigned char host[AREA], cached[4096];

/* The stand-in driver's count of copy-engine copies (auto mode), else NULL. */
static int (*engine_copies)(void);

/* Exits 0 after the call, or 3 in auto mode when the copy engine's side moved nothing. */
static void child_copy(const struct call *c, int protect)
{
    unsigned long tok = 0, other = 0;
    size_t len = c->len ? c->len : AREA;
    unsigned char *map = c->area + c->off, *h = c->host ? c->host : host;
    gdr_mh_t mh;
    int before;

    if (vr_handles_test_insert(c->area, len, c->caching ? GDR_MAPPING_TYPE_CACHING
                                                        : GDR_MAPPING_TYPE_WC, &tok) ||
        (c->mixed && vr_handles_test_insert(cached, sizeof(cached), GDR_MAPPING_TYPE_CACHING,
                                            &other)))
        _exit(92);
    mh.h = tok;
    /* The hook's pin is one the engine cannot reach; this one is the stand-in's memory. */
    if (engine_copies)
        vr_pin_set_dma_dev(mh, VR_DMA_DEV_UNKNOWN);
    if (protect && mprotect(c->area, len, PROT_NONE) != 0)
        _exit(91);
    before = engine_copies ? engine_copies() : 0;
    raise(SIGSTOP);
    if (c->to_map)
        c->fn(mh, map, h, c->n);
    else
        c->fn(mh, h, map, c->n);
    raise(SIGSTOP);
    _exit(engine_copies && engine_copies() == before ? 3 : 0);
}

/* Run c in a child, single-stepped from just before the call to just after it. */
static void trace_call(const struct call *c, int protect, struct trace *tr)
{
    unsigned char code[24];
    int st;
    pid_t pid;

    memset(tr, 0, sizeof(*tr));
    tr->last_nt = tr->last_mfence = tr->last_out = tr->last_store_fence = -1;
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
    /* Stopped inside raise: step to its return into this program, untraced. */
    for (long k = 0; k < 100000; k++) {
        struct user_regs_struct regs;

        if (ptrace(PTRACE_GETREGS, pid, NULL, &regs) != 0 ||
            (regs.rip >= text_lo && regs.rip < text_hi) ||
            ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) != 0 || waitpid(pid, &st, 0) != pid ||
            !WIFSTOPPED(st))
            break;
    }
    for (tr->steps = 0; tr->steps < MAX_STEPS; tr->steps++) {
        struct user_regs_struct regs;
        enum insn cur;
        size_t k;

        if (ptrace(PTRACE_GETREGS, pid, NULL, &regs) != 0)
            break;
        if (regs.rip < text_lo || regs.rip >= text_hi) {
            int r = run_out(pid, &regs);

            if (r == SIGSTOP) {
                st = W_STOPCODE(SIGSTOP);
                break;          /* the raise after the call */
            }
            if (r != 0) {
                tr->faulted = r == SIGSEGV || r == SIGBUS;
                tr->broken = !tr->faulted;
                break;
            }
            tr->last_out = tr->steps;
            tr->outs++;
            continue;
        }
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
        if (cur == I_MFENCE || cur == I_SFENCE)
            tr->last_store_fence = tr->steps;
        if (cur == I_MFENCE) {
            tr->last_mfence = tr->steps;
            tr->mfence_before++;
        }
    }
    /* Stopped after the call: let the child tell its exit status. */
    tr->status = -1;
    if (!tr->faulted && !tr->broken && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP &&
        ptrace(PTRACE_CONT, pid, NULL, NULL) == 0 && t_wait_bounded(pid, &st, 5) == 0 &&
        WIFEXITED(st))
        tr->status = WEXITSTATUS(st);
    kill(pid, SIGKILL);
    t_wait_bounded(pid, &st, 5);
}


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
            struct call c = { .fn = entries[e].fn, .area = area, .n = shapes[s].n,
                              .off = shapes[s].off };

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
        for (e = 2; e < N_ENTRIES; e++)
            for (int caching = 0; caching < 2; caching++) {
                struct call c = { .fn = entries[e].fn, .to_map = 1, .caching = caching,
                                  .area = area, .n = shapes[s].n, .off = shapes[s].off };

                snprintf(name, sizeof(name), "write_ends_with_store_fence/%s/%s/%s/%zu@%zu",
                         kernel, entries[e].name, caching ? "CACHING" : "WC", shapes[s].n,
                         shapes[s].off);
                trace_call(&c, 0, &tr);
                t_check((tr.last_fence == I_SFENCE || tr.last_fence == I_MFENCE) &&
                        tr.last_store_fence > tr.last_nt && tr.last_store_fence > tr.last_out,
                        name, "last fence %d (SFENCE %d, MFENCE %d) at step %ld, last "
                        "non-temporal store at %ld, last call out at %ld", tr.last_fence,
                        I_SFENCE, I_MFENCE, tr.last_store_fence, tr.last_nt, tr.last_out);
            }
    for (s = 0; s < MIXED_SHAPES; s++)
        for (e = 0; e < N_ENTRIES; e++) {
            struct call c = { .fn = entries[e].fn, .to_map = entries[e].to_map, .mixed = 1,
                              .area = area, .n = shapes[s].n, .off = shapes[s].off };

            snprintf(name, sizeof(name), "mixed_ends_with_mfence/%s/%s/%zu@%zu", kernel,
                     entries[e].name, shapes[s].n, shapes[s].off);
            trace_call(&c, 0, &tr);
            t_check(tr.last_fence == I_MFENCE && tr.last_mfence > tr.last_nt, name,
                    "last fence %d (MFENCE is %d) at step %ld, last non-temporal access at %ld",
                    tr.last_fence, I_MFENCE, tr.last_mfence, tr.last_nt);
        }
    munmap(area, AREA);
}

/*
 * The stand-in driver (fake_cuda_dmabuf.c, found on LD_LIBRARY_PATH): a context current and
 * n bytes of its "device memory", which is host memory at its own device address. NULL when
 * it is not there.
 */
static unsigned char *fake_device_memory(size_t n)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    int (*init)(unsigned), (*retain)(void **, int), (*set)(void *);
    int (*alloc)(unsigned long long *, size_t);
    unsigned long long d = 0;
    void *ctx = NULL;

#define SYM(var, name) (var = lib ? (__typeof__(var))dlsym(lib, name) : NULL)
    if (!SYM(init, "cuInit") || !SYM(retain, "cuDevicePrimaryCtxRetain") ||
        !SYM(set, "cuCtxSetCurrent") || !SYM(alloc, "cuMemAlloc_v2") ||
        !SYM(engine_copies, "fake_cuda_dma_calls"))
        return NULL;
#undef SYM
    if (init(0) || retain(&ctx, 0) || set(ctx) || alloc(&d, n))
        return NULL;
    return (unsigned char *)(uintptr_t)d;
}

/* The _auto copies of the copy engine's side, each a fresh process (the crossover is measured
 * once per process): 'measured' (no setting) or 'set' (both crossovers 8 KiB). */
static void run_auto(const char *mode)
{
    static const struct { int set, to_map; size_t n; } cases[] = {
        { 0, 1, 64u << 10 }, { 0, 1, 256u << 10 }, { 0, 1, 1u << 20 }, { 0, 0, 64u << 10 },
        { 1, 1, 64u << 10 }, { 1, 0, 64u << 10 },
    };
    const int set = strcmp(mode, "auto_set") == 0;
    unsigned char *area = fake_device_memory(1u << 20), *h = malloc(1u << 20);
    char name[160];
    struct trace tr;

    if (!t_check(area && h, "auto/setup", "the stand-in driver (%s) gave no device memory",
                 getenv("LD_LIBRARY_PATH")))
        return;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        /* Instrumented, the measurement of a 256 KiB or 1 MiB write runs past MAX_STEPS: under
         * AddressSanitizer the 64 KiB one stands for them (the same code, in fewer steps). */
        const int too_long = TESTS_UNDER_ASAN && cases[i].n > (64u << 10);
        struct call c = { .fn = cases[i].to_map ? write_auto : read_auto,
                          .to_map = cases[i].to_map, .mixed = 1, .area = area,
                          .n = cases[i].n, .len = 1u << 20, .host = h };

        if (cases[i].set != set || too_long)
            continue;
        snprintf(name, sizeof(name), "auto_mixed_ends_with_mfence/%s/%s/%zu", mode,
                 cases[i].to_map ? "to_mapping_auto" : "from_mapping_auto", cases[i].n);
        trace_call(&c, 0, &tr);
        if (tr.refused) {
            t_skip(name, "ptrace is not allowed here");
            return;
        }
        t_check(!tr.broken && tr.status == 0 && tr.last_fence == I_MFENCE &&
                tr.last_mfence > tr.last_nt && tr.last_mfence > tr.last_out, name,
                "child status %d (3: no engine copy), trace %s; last fence %d (MFENCE is %d) "
                "at step %ld, last non-temporal access at %ld, last of %ld calls out at %ld",
                tr.status, tr.broken ? "broken" : "whole", tr.last_fence, I_MFENCE,
                tr.last_mfence, tr.last_nt, tr.outs, tr.last_out);
    }
    free(h);
}

int main(int argc, char **argv)
{
    static const char *const kernels[] = { "avx512", "avx2", "sse41", "movdir64b", "c" };
    static const char *const autos[] = { "auto_measured", "auto_set" };
    const char *mode = t_child_mode(argc, argv);
    char dir[PATH_MAX], lib_path[PATH_MAX + 32];
    size_t i;

    if (mode) {
        char name[64];

        find_text();
        if (!t_check(text_lo < text_hi, "text", "this program's code not found in its maps"))
            return t_status();
        if (strncmp(mode, "auto_", 5) == 0) {
            run_auto(mode);
            return t_status();
        }
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
        const char *env[] = { var, "LD_BIND_NOW=1", NULL };
        int rc, sig = 0;

        snprintf(var, sizeof(var), "GDRCOPY_COPY_KERNEL=%s", kernels[i]);
        rc = t_run_self(kernels[i], env, out, sizeof(out), &sig);
        fputs(out, stdout);
        snprintf(var, sizeof(var), "kernel_child/%s", kernels[i]);
        t_check(rc == 0, var, "exit %d, signal %d", rc, sig);
    }
    if (!t_fake_cuda_dir("cuda-dmabuf", dir, sizeof(dir))) {
        t_skip("auto", "no stand-in driver at %s (make fake-drivers)", dir);
        return t_status();
    }
    snprintf(lib_path, sizeof(lib_path), "LD_LIBRARY_PATH=%s", dir);
    for (i = 0; i < sizeof(autos) / sizeof(autos[0]); i++) {
        static char out[1 << 16];
        char name[64];
        /* auto_set's crossovers last: auto_measured's list ends before them. */
        const char *env[] = { lib_path, "LD_BIND_NOW=1", "FAKE_CUDA_VERSION=13030",
                              "VRAMIO_DMA_CROSSOVER_READ=8K", "VRAMIO_DMA_CROSSOVER_WRITE=8K",
                              NULL };
        int rc, sig = 0;

        if (strcmp(autos[i], "auto_measured") == 0)
            env[3] = NULL;

        rc = t_run_self(autos[i], env, out, sizeof(out), &sig);
        fputs(out, stdout);
        snprintf(name, sizeof(name), "auto_child/%s", autos[i]);
        t_check(rc == 0, name, "exit %d, signal %d", rc, sig);
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

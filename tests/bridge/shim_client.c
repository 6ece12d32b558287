// SPDX-License-Identifier: MIT
/*
 * shim_client.c - the programs of test_shim.sh, which looks at vramio-run's libcuda.so.1 shim
 * (bridge/shim.c, bridge/shim_entry.S) from inside a program that dlopens libcuda.so.1, as
 * the CUDA runtime does. Roles:
 *   step        (x86_64) one call of a replaced name's entry, single-stepped with the trap
 *               flag: at each of the entry's instructions backtrace() must see the callers
 *               (unwind_inner < unwind_outer < unwind_driver), as a profiler's sample or a
 *               crash handler there would need
 *   sample      the same from samples: a thread signals the program while it calls the entry
 *               in a loop, and the samples that land in the entry are unwound (an emulator
 *               has no single-step; qemu-user delivers signals where a translated block
 *               starts, and the entry is one)
 *   lost PROG [ARGS...]
 *               once the shim is loaded, remove vramio-run's directory (the first entry of
 *               LD_LIBRARY_PATH), then fork and run PROG twice: the programs started now get
 *               the driver alone, and this process's shim must say so, once
 *   load        say which libcuda.so.1 the loader gave: "shim", "driver" or "none"
 * Built with -rdynamic, so that dladdr names the callers. Prints ok/not ok lines; exits 0
 * when the role ran (whatever it found), 2 when it could not.
 */
#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define ENTRY "cuMemGetAddressRange_v2"
#define MAXF 64
#define MAXS 64

typedef int (*entry_fn)(unsigned long long *, size_t *, unsigned long long);

struct sample {
    uintptr_t pc;
    int n;
    void *f[MAXF];
};

static entry_fn entry;
static uintptr_t lo, hi;             /* the entry's bytes */
static struct sample samples[MAXS];
static volatile sig_atomic_t nsamples, stepping, entered, step_mode;
static volatile long traps;
static volatile int sink;

static uintptr_t pc_of(void *uc)
{
#if defined(__x86_64__)
    return (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)((ucontext_t *)uc)->uc_mcontext.pc;
#elif defined(__powerpc64__)
    return (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gp_regs[32]; /* PT_NIP */
#else
    (void)uc;
    return 0;
#endif
}

/* A sample in the entry: the stack as backtrace() sees it from there. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
    uintptr_t pc = pc_of(uc);
    struct sample *s;

    (void)sig;
    (void)si;
    if (pc >= lo && pc < hi) {
        entered = 1;
        if (nsamples < MAXS) {
            s = &samples[nsamples];
            s->pc = pc;
            s->n = backtrace(s->f, MAXF);
            nsamples = nsamples + 1;
        }
    }
#if defined(__x86_64__)
    /* Single-stepping: stop once the entry has been left (or after far too many steps). */
    if (stepping && ((entered && (pc < lo || pc >= hi)) || ++traps > 100000)) {
        ((ucontext_t *)uc)->uc_mcontext.gregs[REG_EFL] &= ~0x100LL;
        stepping = 0;
    }
#endif
}

#if defined(__x86_64__)
/* The trap flag: a SIGTRAP after every instruction from here on. Its own function, so that
 * the push does not land in a caller's red zone. */
__attribute__((noinline)) static void trap_flag_on(void)
{
    __asm__ volatile("pushfq; orq $0x100, (%%rsp); popfq" ::: "memory", "cc");
}
#endif

/* The callers that every unwind from the entry must show. Exported, so dladdr names them;
 * no arguments, so that no specialised copy under another name is made of them. */
__attribute__((noinline)) void unwind_inner(void)
{
#if defined(__x86_64__)
    if (step_mode) {
        stepping = 1;
        trap_flag_on();
    }
#endif
    sink += entry(NULL, NULL, 0); /* not a tail call: the add comes after */
}

__attribute__((noinline)) void unwind_outer(void)
{
    unwind_inner();
    sink++;
}

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One call single-stepped, or calls until 16 samples landed in the entry (30 s at most). */
__attribute__((noinline)) void unwind_driver(void)
{
    double end;
    int i;

    if (step_mode) {
        unwind_outer();
    } else {
        for (end = now() + 30; nsamples < 16 && now() < end;)
            for (i = 0; i < 1000; i++)
                unwind_outer();
    }
    sink++;
}

static const char *name_of(void *a)
{
    Dl_info di;

    return dladdr(a, &di) && di.dli_sname ? di.dli_sname : "?";
}

/* Each sample: the entry's frame, then unwind_inner, unwind_outer and unwind_driver. 1 when
 * all are. */
static int check(const char *test)
{
    static const char *const want[] = { "unwind_inner", "unwind_outer", "unwind_driver" };
    char got[512];
    size_t used;
    int i, j, k;

    if (!nsamples) {
        printf("not ok %s: no sample landed in %s's entry\n", test, ENTRY);
        return 0;
    }
    for (i = 0; i < nsamples; i++) {
        struct sample *s = &samples[i];

        for (k = 0; k < s->n && ((uintptr_t)s->f[k] < lo || (uintptr_t)s->f[k] >= hi); k++)
            ;
        for (j = 0; k < s->n && j < 3 && k + 1 + j < s->n; j++)
            if (strcmp(name_of(s->f[k + 1 + j]), want[j]))
                break;
        if (j == 3)
            continue;
        used = 0;
        for (j = 0; j < s->n && used < sizeof(got) - 1; j++)
            used += (size_t)snprintf(got + used, sizeof(got) - used, "%s%s", j ? " < " : "",
                                     (uintptr_t)s->f[j] >= lo && (uintptr_t)s->f[j] < hi
                                         ? "[entry]" : name_of(s->f[j]));
        printf("not ok %s: at %s+%lu, backtrace() gives %d frames: %s\n", test, ENTRY,
               (unsigned long)(s->pc - lo), s->n, got);
        return 0;
    }
    printf("%s: %d samples in the entry (%lu bytes), each unwound to unwind_inner < "
           "unwind_outer < unwind_driver\n", test, (int)nsamples, (unsigned long)(hi - lo));
    printf("ok %s\n", test);
    return 1;
}

static void *sampler(void *arg)
{
    pthread_t main_thread = *(pthread_t *)arg;
    struct timespec t = { 0, 20000 };

    for (;;) {
        if (pthread_kill(main_thread, SIGPROF))
            break;
        nanosleep(&t, NULL);
    }
    return NULL;
}

static int unwind(int step)
{
    struct sigaction sa;
    ElfW(Sym) *sym = NULL;
    Dl_info di;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *warm[4];
    pthread_t self = pthread_self(), th;

    if (!h || !dlsym(h, "vramio_cuda_shim_driver")) {
        fprintf(stderr, "shim_client: libcuda.so.1 is not vramio's shim\n");
        return 2;
    }
    *(void **)&entry = dlsym(h, ENTRY);
    if (!entry || !dladdr1((void *)entry, &di, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
        !sym->st_size) {
        fprintf(stderr, "shim_client: no size for %s\n", ENTRY);
        return 2;
    }
    lo = (uintptr_t)entry;
    hi = lo + sym->st_size;
    backtrace(warm, 4); /* loads the unwinder now, not in the signal handler */
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (step) {
#if defined(__x86_64__)
        sigaction(SIGTRAP, &sa, NULL);
        step_mode = 1;
        unwind_driver();
        if (!entered) {
            printf("skip shim/unwind_step: no trap came from the trap flag here\n");
            return 0;
        }
        check("shim/unwind_step");
        return 0;
#else
        printf("skip shim/unwind_step: single-stepping with the trap flag is x86_64's\n");
        return 0;
#endif
    }
#if !defined(__x86_64__) && !defined(__aarch64__)
    printf("skip shim/unwind_sample: the entries are C here, unwound by the compiler's own "
           "information (shim_entry.S is x86_64's and AArch64's)\n");
    return 0;
#endif
    sigaction(SIGPROF, &sa, NULL);
    if (pthread_create(&th, NULL, sampler, &self))
        return 2;
    unwind_driver();
    pthread_cancel(th);
    pthread_join(th, NULL);
    signal(SIGPROF, SIG_IGN);
    check("shim/unwind_sample");
    return 0;
}

static const char *which(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

    return !h ? "none" : dlsym(h, "vramio_cuda_shim_driver") ? "shim" : "driver";
}

/* The directory gone under a process that has the shim, which then starts programs. */
static int lost(char **prog)
{
    static const char *const names[] = { "libcuda.so.1", "libcuda.so", "libcuda.so.1.real" };
    const char *llp = getenv("LD_LIBRARY_PATH");
    char dir[4096], path[4200];
    size_t n, i;
    int round, st;
    pid_t pid;

    if (strcmp(which(), "shim") || !llp || !prog[0]) {
        fprintf(stderr, "shim_client: not under vramio-run's shim, or no program to run\n");
        return 2;
    }
    n = strcspn(llp, ":");
    if (n == 0 || n >= sizeof(dir))
        return 2;
    memcpy(dir, llp, n);
    dir[n] = '\0';
    for (i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        unlink(path);
    }
    if (rmdir(dir)) {
        perror("shim_client: rmdir");
        return 2;
    }
    fflush(stdout);
    for (round = 0; round < 2; round++) {
        pid = fork();
        if (pid == 0) {
            execv(prog[0], prog);
            _exit(127);
        }
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
            return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *role = argc > 1 ? argv[1] : "";

    alarm(120);
    if (!strcmp(role, "step") || !strcmp(role, "sample"))
        return unwind(!strcmp(role, "step"));
    if (!strcmp(role, "lost"))
        return lost(argv + 2);
    if (!strcmp(role, "load")) {
        printf("%s\n", which());
        return 0;
    }
    fprintf(stderr, "usage: shim_client step|sample|lost PROG [ARGS...]|load\n");
    return 2;
}

// SPDX-License-Identifier: MIT
/*
 * fuzz_ioctl_test.c - a fuzzer of gdrdrv's ioctls, mmap and lifetimes inside the QEMU guest,
 * driven by the syzkaller descriptions of driver/syzkaller/ (their call table, made by
 * syz_table.awk: tests/kernel/guest.mk): for a bounded time, several threads and forked
 * children make calls as the descriptions allow them (each field of each struct from its
 * kind: any number, a constant, a set of values, a range, a resource that an earlier call
 * made), beside what the descriptions leave to the fuzzer (opening and closing the devices,
 * mmap of a pin by its handle, munmap whole or in part, touching mappings, fork, a child
 * killed with SIGKILL while it holds pins) and the rig's knobs (the module's
 * use_persistent_mapping and per-file and per-user limits, the provider's failure injection
 * and callback delay). Values outside the descriptions come now and then too.
 *
 * Every answer of the kernel may be an error; what fails the test is what the kernel reports
 * about itself. At the end everything is given back, then: gdrdrv holds no pin
 * (/proc/driver/gdrdrv/params), the provider holds no more page tables than at the start, the
 * kernel log has no KASAN, UBSAN, KFENCE, lockdep, list-debug, hung-task, WARNING or BUG report
 * from the run, lockdep is still on, and kmemleak (a scan after the 5 s it waits for) reports no
 * object of the modules. It prints what it did: calls, pins and mappings made, children.
 *
 *   fuzz_ioctl_test [SECONDS [SEED]]   default: 45 s on a kernel with lockdep (the debug
 *                                       kernel), 15 s elsewhere; a seed from the clock
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"
#include "syz_table.h"
#include "t.h"

#define NTHREADS  3
#define NFDS      8
#define NHANDLES  64
#define NVAS      16
#define NMAPS     32
#define PAGE      4096u
#define PARAMS    "/sys/module/gdrdrv/parameters/"
#define KMEMLEAK  "/sys/kernel/debug/kmemleak"

/* ---- shared state: what the calls made, under one lock ----------------------------------- */
struct res_fd { int fd, res; };
struct res_handle { uint64_t h; int fd; };          /* fd: the descriptor that made it */
struct res_va { uint64_t va, size; };
struct mapping { void *p; size_t len; };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct res_fd fds[NFDS];
static struct res_handle handles[NHANDLES];
static struct res_va vas[NVAS];
static struct mapping maps[NMAPS];
static double deadline;
static int in_child;     /* a forked child: makes no GPU allocation (the parent frees those) */
static unsigned long calls[SYZ_NCALLS][2], pins_made, maps_made, touches, faults, children,
                     killed, extra_ops;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- randomness: one xorshift state per thread ------------------------------------------- */
static __thread uint64_t rng;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int one_in(unsigned n) { return rnd() % n == 0; }

/* Numbers a kernel's checks meet at their edges. */
static uint64_t interesting(void)
{
    static const uint64_t v[] = { 0, 1, 2, 7, 8, 63, 64, 4095, 4096, 4097, 65535, 65536, 65537,
                                  0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ULL,
                                  0x7fffffffffffffffULL, 0x8000000000000000ULL,
                                  0xfffffffffffff000ULL, 0xffffffffffffffffULL };

    switch (rnd() % 4) {
    case 0: return v[rnd() % (sizeof(v) / sizeof(v[0]))];
    case 1: return rnd() % 64;
    case 2: return (rnd() % 64 + 1) * 65536 - (one_in(4) ? rnd() % 4096 : 0);
    default: return rnd();
    }
}

/* ---- resources ---------------------------------------------------------------------------- */
/* A value of resource r for an input field: one a call made, a special one, or anything.
 * For a GPU address of an allocation, *room is what the allocation holds from there. */
static uint64_t pick_res(int r, int *made_on_fd, uint64_t *room)
{
    const struct syz_resource *res = &syz_resources[r];
    uint64_t v = 0, off;
    int i;

    *made_on_fd = -1;
    *room = 0;
    if (res->nspecial && one_in(8))
        return res->special[rnd() % (unsigned)res->nspecial];
    if (one_in(16))
        return interesting();
    pthread_mutex_lock(&lock);
    if (r == SYZ_RES_gdrdrv_handle) {
        i = (int)(rnd() % NHANDLES);
        v = handles[i].h;
        *made_on_fd = handles[i].fd;
    } else if (r == SYZ_RES_gdrdrv_gpu_va) {
        i = (int)(rnd() % NVAS);
        off = (one_in(4) ? (rnd() % 4) * 65536 : 0) + (one_in(8) ? rnd() % 4096 : 0);
        v = vas[i].va + off;
        *room = vas[i].va && off < vas[i].size ? vas[i].size - off : 0;
    }
    pthread_mutex_unlock(&lock);
    return v;
}

/* A descriptor of resource r (opened here when none is), or -1. */
static int pick_fd(int r)
{
    int i, fd = -1, k = (int)(rnd() % NFDS);

    pthread_mutex_lock(&lock);
    for (i = 0; i < NFDS; i++)
        if (fds[(k + i) % NFDS].fd > 0 && fds[(k + i) % NFDS].res == r) {
            fd = fds[(k + i) % NFDS].fd;
            break;
        }
    pthread_mutex_unlock(&lock);
    if (fd < 0 && syz_resources[r].dev) {
        fd = open(syz_resources[r].dev, O_RDWR | O_CLOEXEC);
        pthread_mutex_lock(&lock);
        if (fd >= 0 && fds[k].fd <= 0)
            fds[k] = (struct res_fd){ fd, r };
        else if (fd >= 0)
            close(fd), fd = -1;
        pthread_mutex_unlock(&lock);
    }
    return fd;
}

/* ---- one described call ------------------------------------------------------------------- */
static void put_field(unsigned char *buf, int off, int size, uint64_t v)
{
    memcpy(buf + off, &v, (size_t)size);    /* little-endian guests: the low bytes */
}

static uint64_t get_field(const unsigned char *buf, int off, int size)
{
    uint64_t v = 0;

    memcpy(&v, buf + off, (size_t)size);
    return v;
}

/* The value of an input field, as its kind allows (and now and then what it does not). */
static uint64_t field_value(const struct syz_field *f, int *made_on_fd, uint64_t *room)
{
    const struct syz_set *s;
    uint64_t v;

    *made_on_fd = -1;
    *room = 0;
    switch (f->kind) {
    case SYZ_K_CONST:
        return one_in(32) ? interesting() : f->a;
    case SYZ_K_FLAGS:
        s = &syz_sets[f->set];
        if (one_in(16))
            return interesting();
        v = s->values[rnd() % s->count];
        if (one_in(4))
            v |= s->values[rnd() % s->count];
        return v;
    case SYZ_K_RANGE:
        if (one_in(16))
            return interesting();
        return f->a + f->step * (rnd() % ((f->b - f->a) / f->step + 1));
    case SYZ_K_RES:
        return pick_res(f->res, made_on_fd, room);
    default:
        return interesting();
    }
}

static void record_made(const struct syz_call *c, const unsigned char *buf, const int *offs,
                        int fd, uint64_t size)
{
    const struct syz_struct *st = &syz_structs[c->st];

    for (int i = 0; i < st->nfields; i++) {
        const struct syz_field *f = &st->fields[i];
        uint64_t v = get_field(buf, offs[i], f->size);
        int k;

        if (f->kind != SYZ_K_RES || !f->out)
            continue;
        pthread_mutex_lock(&lock);
        if (f->res == SYZ_RES_gdrdrv_handle) {
            k = (int)(rnd() % NHANDLES);
            handles[k] = (struct res_handle){ v, fd };
            pins_made++;
        } else if (f->res == SYZ_RES_gdrdrv_gpu_va) {
            k = (int)(rnd() % NVAS);
            if (vas[k].va)          /* the slot's allocation goes: free it, as a program would */
                emu_free(vas[k].va);
            vas[k] = (struct res_va){ v, size };
        }
        pthread_mutex_unlock(&lock);
    }
}

static void described_call(void)
{
    unsigned idx = (unsigned)(rnd() % SYZ_NCALLS);
    const struct syz_call *c = &syz_calls[idx];
    const struct syz_struct *st;
    _Alignas(8) unsigned char buf[128];
    int offs[16], off = 0, fd, made_on = -1, m, rc, size_at = -1;
    uint64_t size = 0, room = 0, r;

    if (in_child && c->cmd == NVP2P_EMU_IOC_ALLOC)
        c = &syz_calls[idx = (idx + 1) % SYZ_NCALLS];
    st = &syz_structs[c->st];
    memset(buf, 0, sizeof(buf));
    for (int i = 0; i < st->nfields && i < 16; i++) {
        const struct syz_field *f = &st->fields[i];
        uint64_t v;

        off = (off + f->size - 1) & ~(f->size - 1);
        offs[i] = off;
        if (f->out && c->dir != SYZ_IN) {
            v = one_in(2) ? 0 : rnd();      /* what the kernel will write over */
        } else {
            v = field_value(f, &m, &r);
            if (m >= 0)
                made_on = m;
            room = r ? r : room;
        }
        if (!strcmp(f->name, "size")) {
            size = v;
            size_at = i;
        }
        put_field(buf, off, f->size, v);
        off += f->size;
    }
    /* A pin of an allocation mostly fits in it (the descriptions' sizes do not know it). */
    if (room && size_at >= 0 && size > room && !one_in(4)) {
        size = room;
        put_field(buf, offs[size_at], st->fields[size_at].size, size);
    }
    /* Mostly on the descriptor that made the handle it names: another's refuses it. */
    fd = made_on >= 0 && !one_in(4) ? made_on : pick_fd(c->fd_res);
    if (fd < 0)
        return;
    rc = ioctl(fd, c->cmd, one_in(64) ? (void *)interesting() : buf) ? errno : 0;
    __atomic_add_fetch(&calls[idx][rc == 0], 1, __ATOMIC_RELAXED);
    if (rc)
        return;
    record_made(c, buf, offs, fd, size);
    if (c->cmd == NVP2P_EMU_IOC_FREE) {
        pthread_mutex_lock(&lock);
        for (int i = 0; i < NVAS; i++)
            if (vas[i].va == get_field(buf, 0, 8))
                vas[i].va = 0;
        pthread_mutex_unlock(&lock);
    }
}

/* ---- what the descriptions leave to the fuzzer ------------------------------------------- */
static __thread sigjmp_buf touch_jmp;
static __thread volatile int touching;

static void on_fault(int sig)
{
    if (touching)
        siglongjmp(touch_jmp, 1);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Read or write a byte of a mapping: a pin freed under it faults (SIGBUS), which is allowed. */
static void touch(void)
{
    struct mapping m;

    pthread_mutex_lock(&lock);
    m = maps[rnd() % NMAPS];
    pthread_mutex_unlock(&lock);
    if (!m.p)
        return;
    touches++;
    touching = 1;
    if (sigsetjmp(touch_jmp, 1) == 0) {
        volatile unsigned char *q = (unsigned char *)m.p + rnd() % m.len;
        if (one_in(2))
            *q = (unsigned char)rnd();
        else
            (void)*q;
    } else {
        __atomic_add_fetch(&faults, 1, __ATOMIC_RELAXED);
    }
    touching = 0;
}

static void do_mmap(void)
{
    int dummy, fd = pick_fd(SYZ_RES_fd_gdrdrv), k = (int)(rnd() % NMAPS);
    uint64_t room, h = pick_res(SYZ_RES_gdrdrv_handle, &dummy, &room);
    size_t len = one_in(4) ? (rnd() % 64 + 1) * PAGE : (rnd() % 4 + 1) * 65536;
    off_t off = (off_t)((h + (one_in(8) ? rnd() % 32 : 0)) * PAGE);
    void *p;

    if (fd < 0)
        return;
    p = mmap(NULL, len, PROT_READ | (one_in(4) ? 0 : PROT_WRITE),
             one_in(8) ? MAP_PRIVATE : MAP_SHARED, fd, one_in(32) ? (off_t)interesting() : off);
    if (p == MAP_FAILED)
        return;
    pthread_mutex_lock(&lock);
    if (maps[k].p)
        munmap(maps[k].p, maps[k].len);
    maps[k] = (struct mapping){ p, len };
    maps_made++;
    pthread_mutex_unlock(&lock);
}

/* Unmap a mapping whole, or its first page (which splits it), or move it. */
static void do_munmap(void)
{
    struct mapping *m;

    pthread_mutex_lock(&lock);
    m = &maps[rnd() % NMAPS];
    if (m->p && m->len > PAGE && one_in(3)) {
        munmap(m->p, PAGE);
        m->p = (char *)m->p + PAGE;
        m->len -= PAGE;
    } else if (m->p && one_in(8)) {
        void *q = mremap(m->p, m->len, m->len + (one_in(2) ? PAGE : 0), MREMAP_MAYMOVE);
        if (q != MAP_FAILED)
            m->p = q;
    } else if (m->p) {
        munmap(m->p, m->len);
        m->p = NULL;
    }
    pthread_mutex_unlock(&lock);
}

static void do_close(void)
{
    int k = (int)(rnd() % NFDS), fd, dup_fd = -1;

    pthread_mutex_lock(&lock);
    fd = fds[k].fd;
    if (fd > 0 && one_in(4))        /* a second descriptor of the same file */
        dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    else
        fds[k].fd = 0;
    if (dup_fd >= 0)
        fds[(k + 1) % NFDS].fd > 0 ? close(dup_fd) : (fds[(k + 1) % NFDS] = (struct res_fd){
                                                             dup_fd, fds[k].res }, 0);
    pthread_mutex_unlock(&lock);
    if (fd > 0 && dup_fd < 0)
        close(fd);
}

static void write_param(const char *name, unsigned long v)
{
    char path[128], val[32];

    snprintf(path, sizeof(path), PARAMS "%s", name);
    snprintf(val, sizeof(val), "%lu", v);
    t_write_file(path, val);            /* a knob the kernel refuses stays as it was */
}

static unsigned long read_param(const char *name)
{
    char path[128];
    long v;

    snprintf(path, sizeof(path), PARAMS "%s", name);
    v = t_read_long(path);
    return v < 0 ? 0 : (unsigned long)v;
}

static const char *const knobs[] = { "use_persistent_mapping", "max_pins_per_file",
                                     "max_pins_per_user", "max_pinned_mib_per_user" };
static unsigned long knob_start[4];

static void do_knob(void)
{
    static const unsigned what[] = { NVP2P_EMU_FAIL_GET_PAGES, NVP2P_EMU_FAIL_GET_PAGES_PERSISTENT,
                                     NVP2P_EMU_FAIL_ALLOC };
    static const int errs[] = { ENOMEM, EINVAL, EFAULT, EIO, ENOSPC };
    int k = (int)(rnd() % 6);

    if (k == 0)
        write_param(knobs[0], rnd() % 2);
    else if (k < 4)     /* a limit near what the fuzzer holds (now and then), or the start's */
        write_param(knobs[k], !one_in(4) ? knob_start[k] : one_in(2) ? 0 : rnd() % 8 + 1);
    else if (k == 4)
        emu_inject(what[rnd() % 3], (unsigned)(rnd() % 3), errs[rnd() % 5]);
    else
        emu_cb_delay(one_in(2) ? 0 : (unsigned)(rnd() % 4));
}

/* ---- threads and children ----------------------------------------------------------------- */
static void one_op(void)
{
    unsigned op = (unsigned)(rnd() % 32);

    if (op < 20)
        described_call();
    else if (op < 23)
        do_mmap();
    else if (op < 25)
        do_munmap();
    else if (op < 28)
        touch();
    else if (op < 30)
        do_close();
    else
        do_knob();
    if (op >= 20)
        __atomic_add_fetch(&extra_ops, 1, __ATOMIC_RELAXED);
}

static void *worker(void *arg)
{
    rng = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ULL | 1;
    while (now() < deadline)
        one_op();
    return NULL;
}

/* A child of this process: the parent's descriptors, handles and mappings are not its own (the
 * module refuses them, mappings are not inherited); it opens its own, pins, maps, and ends by
 * exit() or is killed with SIGKILL, holding them. */
static void child_run(void)
{
    double end = now() + 0.05 + (double)(rnd() % 100) / 1000;

    pthread_mutex_unlock(&lock);    /* held by the forking thread: this thread, here */
    in_child = 1;
    memset(fds, 0, one_in(2) ? sizeof(fds) : 0);
    while (now() < end)
        one_op();
    _exit(0);
}

static void fork_child(void)
{
    pid_t pid;
    int status;

    pthread_mutex_lock(&lock);
    pid = fork();
    if (pid == 0)
        child_run();
    pthread_mutex_unlock(&lock);
    if (pid < 0)
        return;
    children++;
    if (one_in(2)) {
        usleep((useconds_t)(rnd() % 50000));
        kill(pid, SIGKILL);
        killed++;
    }
    if (t_wait_bounded(pid, &status, 30) != 0)
        t_fail("child_ended", "a child did not end within 30 s");
}

/* ---- the end: everything given back, then what the kernel says ---------------------------- */
static void give_back(void)
{
    for (int i = 0; i < NMAPS; i++)
        if (maps[i].p)
            munmap(maps[i].p, maps[i].len);
    for (int i = 0; i < NFDS; i++)
        if (fds[i].fd > 0)
            close(fds[i].fd);
    for (int i = 0; i < NVAS; i++)
        if (vas[i].va)
            emu_free(vas[i].va);
    for (int k = 0; k < 4; k++)
        write_param(knobs[k], knob_start[k]);
    emu_cb_delay(0);
    for (unsigned w = NVP2P_EMU_FAIL_GET_PAGES; w <= NVP2P_EMU_FAIL_ALLOC; w++)
        emu_inject(w, 0, ENOMEM);
}

static long gdrdrv_pins(void)
{
    FILE *f = fopen("/proc/driver/gdrdrv/params", "re");
    char line[128];
    long pins = -1;

    while (f && fgets(line, sizeof(line), f))
        sscanf(line, "pins: %ld", &pins);
    if (f)
        fclose(f);
    return pins;
}

/* The kernel's reports since kmsg_fd was opened (and moved to its end): 0 when none. */
static int kernel_reports(int kmsg_fd, char *first, size_t len)
{
    static const char *const bad[] = { "BUG:", "WARNING:", "Oops", "KASAN:", "KFENCE:", "UBSAN:",
        "ODEBUG:", "list_add corruption", "list_del corruption", "blocked for more than",
        "possible circular locking", "inconsistent lock state", "sleeping function called",
        "possible recursive locking", "suspicious RCU usage", "nvp2p_emu: leaked",
        "nvp2p_emu: put_pages" };
    char rec[2048];
    ssize_t n;
    int count = 0;

    first[0] = '\0';
    while ((n = read(kmsg_fd, rec, sizeof(rec) - 1)) > 0 || (n < 0 && errno == EPIPE)) {
        if (n <= 0)
            continue;
        rec[n] = '\0';
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
            if (strstr(rec, bad[i])) {
                if (!count++)
                    snprintf(first, len, "%.400s", strchr(rec, ';') ? strchr(rec, ';') + 1 : rec);
                break;
            }
    }
    return count;
}

/* A kmemleak scan: the addresses of the unreferenced objects whose allocation trace names a
 * module of ours (or a module address), at most max of them in out; -1 without kmemleak. The
 * run's are those of the scan at its end that the scan at its start did not have (an earlier
 * test's leak is not this one's; the guest's /init reports every leak at its end). */
#define MAXLEAKS 256
static int kmemleak_ours(unsigned long long *out, int max)
{
    FILE *f = fopen(KMEMLEAK, "we");
    char line[512];
    unsigned long long obj = 0;
    int n = 0, hit = 0;

    if (!f)
        return -1;
    fputs("scan", f);
    fclose(f);
    f = fopen(KMEMLEAK, "re");
    while (f && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "unreferenced object 0x%llx", &obj) == 1) {
            hit = 0;
        } else if (!hit && (strstr(line, "gdrdrv") || strstr(line, "nvp2p") ||
                            strstr(line, "[<ffffffffa") || strstr(line, "[<ffffffffc"))) {
            hit = 1;
            if (n < max)
                out[n++] = obj;
        }
    }
    if (f)
        fclose(f);
    return n;
}

static int new_leaks(const unsigned long long *before, int nb, const unsigned long long *after,
                     int na)
{
    int fresh = 0;

    for (int i = 0; i < na; i++) {
        int seen = 0;

        for (int k = 0; k < nb && !seen; k++)
            seen = after[i] == before[k];
        fresh += !seen;
    }
    return fresh;
}

int main(int argc, char **argv)
{
    int lockdep = access("/proc/lockdep_stats", R_OK) == 0;
    double secs = argc > 1 ? atof(argv[1]) : lockdep ? 45 : 15, t0 = now();
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
    uint64_t live0 = emu_live_pins();
    struct nvp2p_emu_stats st0 = { 0 }, st1 = { 0 };
    int kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC), n, leaks;
    unsigned long total = 0, ok = 0;
    pthread_t th[NTHREADS];
    struct sigaction sa = { .sa_handler = on_fault };
    char first[512];
    long pins;
    unsigned long long leak0[MAXLEAKS], leak1[MAXLEAKS];
    int nleak0;

    if (emu_fd() < 0 || access("/dev/gdrdrv", R_OK | W_OK) != 0) {
        printf("no /dev/gdrdrv or /dev/nvp2p_emu\n");
        return T_SKIP;
    }
    if (kmsg >= 0)
        lseek(kmsg, 0, SEEK_END);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);
    for (int k = 0; k < 4; k++)
        knob_start[k] = read_param(knobs[k]);
    nleak0 = kmemleak_ours(leak0, MAXLEAKS);
    emu_stats(&st0);

    rng = seed | 1;
    deadline = t0 + secs;
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(seed + (uint64_t)i + 1));
    while (now() < deadline) {
        one_op();
        if (one_in(200))
            fork_child();
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    give_back();
    for (size_t c = 0; c < SYZ_NCALLS; c++) {
        total += calls[c][0] + calls[c][1];
        ok += calls[c][1];
    }
    /* First: the guest's /init shows a passing test's first notes. */
    printf("# %lu described calls (%lu worked) and %lu others in %.1f s: %lu pins, %lu mappings "
           "made, %lu touches (%lu faulted), %lu children (%lu killed); seed %#llx\n", total, ok,
           extra_ops, now() - t0, pins_made, maps_made, touches, faults, children, killed,
           (unsigned long long)seed);
    /* Then each call, worked of made, on one line (the guest shows five lines). */
    printf("# worked/made:");
    for (size_t c = 0; c < SYZ_NCALLS; c++)
        printf(" %s %lu/%lu", strchr(syz_calls[c].name, '$') + 1, calls[c][1],
               calls[c][0] + calls[c][1]);
    printf("\n");
    t_check(pins_made > 0 && maps_made > 0, "ran", "%lu calls made %lu pins, %lu mappings",
            total, pins_made, maps_made);
    pins = gdrdrv_pins();
    t_check(pins == 0 || pins == -1, "pins_released", "gdrdrv still holds %ld pins", pins);
    t_check(emu_live_pins() == live0, "provider_pins", "the provider's live page tables went from "
            "%llu to %llu", (unsigned long long)live0, (unsigned long long)emu_live_pins());
    emu_stats(&st1);
    t_check(st1.live_allocs == st0.live_allocs, "provider_allocations", "the provider's live "
            "allocations went from %llu to %llu", (unsigned long long)st0.live_allocs,
            (unsigned long long)st1.live_allocs);
    if (kmsg >= 0) {
        n = kernel_reports(kmsg, first, sizeof(first));
        t_check(n == 0, "kernel_log", "%d reports, the first: %s", n, first);
    }
    if (lockdep) {
        FILE *f = fopen("/proc/lockdep_stats", "re");
        char line[128];
        int on = 0;

        while (f && fgets(line, sizeof(line), f))
            on |= strstr(line, "debug_locks:") && strstr(line, " 1");
        if (f)
            fclose(f);
        t_check(on, "lockdep_still_on", "lockdep turned itself off during the run");
    }
    if (nleak0 >= 0) {
        sleep(6);                   /* an object is reported once unreferenced for 5 s */
        leaks = new_leaks(leak0, nleak0, leak1, kmemleak_ours(leak1, MAXLEAKS));
        t_check(leaks == 0, "kmemleak", "%d objects allocated by the modules leaked", leaks);
    }
    printf("# %.1f s in all, the checks after the run included\n", now() - t0);
    return t_status();
}

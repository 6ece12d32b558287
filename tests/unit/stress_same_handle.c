/* SPDX-License-Identifier: MIT */
/*
 * stress_same_handle.c - calls that race on the SAME pin handle and the SAME gdr_t, round after
 * round, each round's threads let go at one instant with a random head start each:
 *   double_unpin    two threads gdr_unpin_buffer one handle: one gets 0, the other EINVAL;
 *   unpin_vs_calls  gdr_unpin_buffer against gdr_map, gdr_unmap, gdr_get_info /
 *                   gdr_get_callback_flag and the copies (plain and _auto) on that handle: each
 *                   call succeeds whole (its bytes, its info) or is refused with EINVAL;
 *   close_vs_users  gdr_close (sometimes two at once) against _auto copies through a pin of the
 *                   gdr_t and a thread that pins, maps and unpins through it; afterwards every
 *                   call on the closed gdr_t or its handles is EINVAL.
 * After every round nothing may be left: no pin or mapping in the backend, no live pin slot of
 * the gdr_t, no mapping in the library's census. The backend is a fake defined here (no GPU),
 * that also holds the core to its side of backend.h: never two ops at once on one pin, none on
 * a pin after its unpin, none on a mapping that is not there.
 *
 * Its "device memory" is static and stays readable after an unmap: a copy that passed its
 * handle check just before the unpin finishes into memory that still exists (with real BAR
 * mappings that copy is the caller's bug, handles.h); what is tested is that the library
 * answers each call clearly and keeps its own state whole.
 *
 * Each scenario runs in a child process: a round whose calls have not all returned within
 * ROUND_WAIT_S is a hang (a deadlock in the library) that the child reports in a line of its
 * own; a crash, or a hang anywhere else (the child's alarm()), is reported by the parent in a
 * line that names the scenario. Never a hung test.
 * Built as the wb_ tests are (tests/tests.mk), and also under TSan.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "t.h"
#include "gdrapi.h"
#include "vramio.h"
#include "core/core.h"

#define NAME(s) "stress_same_handle/" s

/* Wall time of each scenario's rounds; a child still running after CHILD_BOUND_S is hung. */
#define SCENARIO_SECONDS 2.0
#define MAX_ROUNDS       200000u
#define CHILD_BOUND_S    30

/* One pin is one region of two GPU pages: 64 KiB copies fit, the size from which an _auto write
 * takes its own path (the pin's range looked up under its lock) instead of the plain copy. */
#define REGION   (2 * GPU_PAGE_SIZE)
#define AUTO_BIG (REGION / 2)
#define NREGIONS 2
#define FAKE_VA  (1UL << 40)

/* A random head start of up to this many empty loop turns, so that a round's racing call lands
 * before, inside or after the other one (an unpin takes a few microseconds here). */
#define JITTER 6000u

/* ---- the fake backend -------------------------------------------------------------------- */

static unsigned char vram[NREGIONS][REGION] __attribute__((aligned(4096)));

struct fake_pin {
    _Atomic int pinned, mapped, in_op;
};
static struct fake_pin fake_pins[NREGIONS];
static _Atomic int live_pins, live_maps, live_ctx, contract_breaches;
static char first_breach[200];
static pthread_mutex_t breach_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((format(printf, 1, 2)))
static void breach(const char *fmt, ...)
{
    va_list ap;

    if (atomic_fetch_add(&contract_breaches, 1) != 0)
        return;
    pthread_mutex_lock(&breach_lock);
    va_start(ap, fmt);
    vsnprintf(first_breach, sizeof(first_breach), fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&breach_lock);
}

static int region_of(const struct fake_pin *p)
{
    return (int)(p - fake_pins);
}

/* Every op on a pin enters here: the core serialises the ops of one pin and makes none after
 * its unpin. The yield keeps the op inside long enough that a second one would overlap it. */
static struct fake_pin *op_enter(void *pin, const char *op)
{
    struct fake_pin *p = pin;

    if (!atomic_load(&p->pinned))
        breach("%s on region %d, which is not pinned", op, region_of(p));
    if (atomic_fetch_add(&p->in_op, 1) != 0)
        breach("%s on region %d while another op ran on it", op, region_of(p));
    sched_yield();
    return p;
}

static void op_leave(struct fake_pin *p)
{
    atomic_fetch_sub(&p->in_op, 1);
}

static int fake_probe(char *why, size_t len)
{
    return 0;
}

static int fake_open(void **ctx, char *why, size_t len)
{
    *ctx = NULL;
    live_ctx++;
    return 0;
}

static void fake_close(void *ctx)
{
    live_ctx--;
}

static int fake_pin(void *ctx, const struct vr_pin_req *req, void **pin, struct vr_pin_info *info,
                    char *why, size_t len)
{
    uint64_t r = (req->va - FAKE_VA) / REGION;

    if (req->va < FAKE_VA || (req->va - FAKE_VA) % REGION || r >= NREGIONS || req->len != REGION) {
        snprintf(why, len, "the fake serves its %d regions whole", NREGIONS);
        return ENOTSUP;
    }
    if (atomic_exchange(&fake_pins[r].pinned, 1))
        breach("region %d pinned while pinned", (int)r);
    *pin = &fake_pins[r];
    *info = (struct vr_pin_info){ .va = req->va, .mapped_size = REGION,
                                  .page_size = GPU_PAGE_SIZE, .tm_cycles = 1,
                                  .cycles_per_ms = 1000 };
    live_pins++;
    return 0;
}

static int fake_unpin(void *ctx, void *pin)
{
    struct fake_pin *p = op_enter(pin, "unpin");

    if (atomic_load(&p->mapped))
        breach("unpin of region %d while it is mapped", region_of(p));
    atomic_store(&p->pinned, 0);
    live_pins--;
    op_leave(p);
    return 0;
}

static int fake_map(void *ctx, void *pin, size_t size, gdr_mapping_type_t want, void **ptr,
                    gdr_mapping_type_t *granted, char *why, size_t len)
{
    struct fake_pin *p = op_enter(pin, "map");

    if (atomic_exchange(&p->mapped, 1))
        breach("map of region %d, which is mapped", region_of(p));
    *ptr = vram[region_of(p)];
    *granted = want == GDR_MAPPING_TYPE_NONE ? GDR_MAPPING_TYPE_WC : want;
    live_maps++;
    op_leave(p);
    return 0;
}

static int fake_unmap(void *ctx, void *pin, void *ptr, size_t size)
{
    struct fake_pin *p = op_enter(pin, "unmap");

    if (!atomic_exchange(&p->mapped, 0))
        breach("unmap of region %d, which is not mapped", region_of(p));
    if (ptr != vram[region_of(p)])
        breach("unmap of region %d at %p, not where it was mapped", region_of(p), ptr);
    live_maps--;
    op_leave(p);
    return 0;
}

static int fake_flag(void *ctx, void *pin, int *flag)
{
    struct fake_pin *p = op_enter(pin, "callback_flag");

    *flag = 0;
    op_leave(p);
    return 0;
}

static const struct vr_backend_ops fake_ops = {
    .id = VRAMIO_BACKEND_GDRDRV, .name = "fake", .probe = fake_probe, .open = fake_open,
    .close = fake_close, .pin = fake_pin, .unpin = fake_unpin, .map = fake_map,
    .unmap = fake_unmap, .callback_flag = fake_flag,
};
/* The other two places of the table: no probe, so the defaults (backend_ops.c) refuse. */
static const struct vr_backend_ops no_dmabuf = { .id = VRAMIO_BACKEND_DMABUF, .name = "none2" };
static const struct vr_backend_ops no_vulkan = { .id = VRAMIO_BACKEND_VULKAN, .name = "none3" };

/* A gdr_t whose only usable backend is the fake, opened as gdr_open opens one. */
static gdr_t open_fake_gdr(void)
{
    static const struct vr_backend_ops *const only_fake[VRAMIO_BACKEND_COUNT] = {
        [VRAMIO_BACKEND_GDRDRV] = &fake_ops, [VRAMIO_BACKEND_DMABUF] = &no_dmabuf,
        [VRAMIO_BACKEND_VULKAN] = &no_vulkan,
    };
    struct vr_gdr *inst = NULL;

    if (vr_instance_open(only_fake, &inst) != 0)
        return NULL;
    return (gdr_t)(uintptr_t)inst->token;
}

/* ---- what a round must leave behind ------------------------------------------------------ */

static void count_slot(struct vr_slot *s, void *arg)
{
    (*(int *)arg)++;
    vr_slot_unlock(s);
}

/* 1 when nothing is held: no pin or mapping in the fake, no live pin handle made through g (the
 * library's table), no mapping counted in its census; else 0 and what is left in why. */
static int nothing_left(gdr_t g, char *why, size_t len)
{
    int owned = 0, pins = live_pins, maps = live_maps;
    uint64_t census = atomic_load(&vr_map_census);

    vr_slot_foreach_owned(&vr_pins, (unsigned long)(uintptr_t)g, count_slot, &owned);
    if (!owned && !pins && !maps && !census)
        return 1;
    snprintf(why, len, "left: %d pins and %d mappings in the backend, %d live handles of the "
             "gdr_t, mapping census %#llx", pins, maps, owned, (unsigned long long)census);
    return 0;
}

/* ---- rounds: a crew of threads, a start gate, call spans, a tally of what went wrong ----- */

/*
 * The threads of a scenario live for all its rounds, each kept to a core of its own where there
 * are enough (else they share them in turn): left to the scheduler, the two threads of a round
 * were woken on one core, where the one that left the gate first ran its calls until the next
 * tick, and the round seldom raced. Each round the main thread wakes them and sleeps until
 * they are done; they meet at the gate and, the last one there opening it, leave together.
 */
#define CREW_MAX     4
#define ROUND_WAIT_S 10   /* a round whose calls have not returned by then hangs */

struct gate {
    _Atomic int ready, open;
};

static struct {
    int n;
    void (*role)(int who);
    pthread_t t[CREW_MAX];
    sem_t start[CREW_MAX], done;
    _Atomic int quit;
    struct gate gate;
    int ncpus, cpus[CPU_SETSIZE];   /* the cores this process may run on */
} crew;

/* The spin yields now and then: the round may have more threads than the machine has cores. */
static void gate_pass(struct gate *gt, int threads)
{
    unsigned spins = 0;

    if (atomic_fetch_add(&gt->ready, 1) + 1 == threads)
        atomic_store(&gt->open, 1);
    while (!atomic_load(&gt->open))
        if (++spins % 256 == 0)
            sched_yield();
}

static void *crew_member(void *arg)
{
    int who = (int)(intptr_t)arg;
    cpu_set_t one;

    if (crew.ncpus > 1) {
        CPU_ZERO(&one);
        CPU_SET(crew.cpus[who % crew.ncpus], &one);
        pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    }
    for (;;) {
        while (sem_wait(&crew.start[who]) != 0)
            ;
        if (atomic_load(&crew.quit))
            return NULL;
        /* The library's last error of this thread, emptied, is this round's when set. */
        vr_fail_at(VR_LOG_DEBUG, 0, "%s", "");
        gate_pass(&crew.gate, crew.n);
        crew.role(who);
        sem_post(&crew.done);
    }
}

static void crew_hire(int n, void (*role)(int who))
{
    cpu_set_t allowed;
    int i;

    crew.ncpus = 0;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
        for (i = 0; i < CPU_SETSIZE; i++)
            if (CPU_ISSET(i, &allowed))
                crew.cpus[crew.ncpus++] = i;
    crew.n = n;
    crew.role = role;
    atomic_store(&crew.quit, 0);
    sem_init(&crew.done, 0, 0);
    for (i = 0; i < n; i++) {
        sem_init(&crew.start[i], 0, 0);
        pthread_create(&crew.t[i], NULL, crew_member, (void *)(intptr_t)i);
    }
}

/* One round: every member plays its role once. A round that does not end is a hang: said in
 * the line no_hang, and the child ends there (its threads are stuck in the library). */
static void crew_round(const char *no_hang)
{
    int i;

    crew.gate = (struct gate){ 0 };
    for (i = 0; i < crew.n; i++)
        sem_post(&crew.start[i]);
    for (i = 0; i < crew.n; i++)
        if (t_sem_wait(&crew.done, ROUND_WAIT_S) != 0) {
            t_fail(no_hang, "a round's calls had not returned after %d s: hung", ROUND_WAIT_S);
            _exit(T_FAIL);
        }
}

static void crew_dismiss(void)
{
    int i;

    atomic_store(&crew.quit, 1);
    for (i = 0; i < crew.n; i++)
        sem_post(&crew.start[i]);
    for (i = 0; i < crew.n; i++) {
        pthread_join(crew.t[i], NULL);
        sem_destroy(&crew.start[i]);
    }
    sem_destroy(&crew.done);
}

static void head_start(unsigned turns)
{
    while (turns--)
        __asm__ volatile("" ::: "memory");
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* When a thread's last calls ran, so that the round can tell afterwards whether one of them
 * was in progress during another thread's call: that the round raced, not merely took turns
 * (which a pass alone would not show). */
#define SPANS 256
struct spans {
    unsigned n;
    uint64_t start[SPANS], end[SPANS];
};

static void span_begin(struct spans *s)
{
    s->start[s->n % SPANS] = now_ns();
}

static void span_end(struct spans *s)
{
    s->end[s->n % SPANS] = now_ns();
    s->n++;
}

/* Whether one of the recorded calls overlapped [start, end). */
static int spans_overlap(const struct spans *s, uint64_t start, uint64_t end)
{
    unsigned i, kept = s->n < SPANS ? s->n : SPANS;

    for (i = 0; i < kept; i++)
        if (s->start[i] < end && start < s->end[i])
            return 1;
    return 0;
}

struct tally {
    _Atomic unsigned bad;
    char first[256];
    pthread_mutex_t lock;
};

__attribute__((format(printf, 3, 4)))
static void tally_bad(struct tally *t, unsigned round, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (atomic_fetch_add(&t->bad, 1) != 0)
        return;
    pthread_mutex_lock(&t->lock);
    n = snprintf(t->first, sizeof(t->first), "round %u: ", round);
    va_start(ap, fmt);
    vsnprintf(t->first + n, sizeof(t->first) - (size_t)n, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&t->lock);
}

/* The verdict on a tally: a pass, or how many rounds went wrong and how the first did. */
static void tally_check(struct tally *t, const char *name)
{
    t_check(t->bad == 0, name, "%u bad rounds; the first: %s", (unsigned)t->bad, t->first);
}

/* Rounds go on until the scenario's time is up. */
static int more_rounds(unsigned round, uint64_t t0)
{
    return round < MAX_ROUNDS && now_ns() - t0 < (uint64_t)(SCENARIO_SECONDS * 1e9);
}

/* Wait until flag is set (the round's bound bounds this too). */
static void await_flag(_Atomic int *flag)
{
    while (!atomic_load(flag))
        sched_yield();
}

/* At the end of a scenario that kept one gdr_t: its close, and the fake's verdict. */
static void finish_gdr(const char *scenario, gdr_t g)
{
    char name[96];
    int rc = gdr_close(g);

    snprintf(name, sizeof(name), NAME("%s_closes_clean"), scenario);
    t_check(rc == 0 && live_ctx == 0, name, "gdr_close %d, %d contexts", rc, (int)live_ctx);
    snprintf(name, sizeof(name), NAME("%s_backend_contract"), scenario);
    t_check(contract_breaches == 0, name, "%d breaches, first: %s", (int)contract_breaches,
            first_breach);
}

static gdr_mh_t pin_region(gdr_t g, int r, int *rc)
{
    gdr_mh_t mh = { 0 };

    *rc = gdr_pin_buffer_v2(g, FAKE_VA + (unsigned long)r * REGION, REGION, 0, &mh);
    return mh;
}

/* ---- 1: two unpins of one handle --------------------------------------------------------- */

static struct {
    gdr_t g;
    gdr_mh_t mh;
    unsigned delay[2];
    int rc[2];
    struct spans span[2];
    char why[2][160];   /* each thread's last error after its call */
} du;

static void double_unpin_role(int who)
{
    head_start(du.delay[who]);
    span_begin(&du.span[who]);
    du.rc[who] = gdr_unpin_buffer(du.g, du.mh);
    span_end(&du.span[who]);
    snprintf(du.why[who], sizeof(du.why[who]), "%s", vramio_last_error());
}

static void double_unpin(void)
{
    static struct tally wrong = { .lock = PTHREAD_MUTEX_INITIALIZER };
    static struct tally left = { .lock = PTHREAD_MUTEX_INITIALIZER };
    unsigned seed = 11, round, first_won = 0, overlapped = 0;
    uint64_t t0 = now_ns();
    char why[200];

    du.g = open_fake_gdr();
    if (!t_check(du.g != NULL, NAME("double_unpin_open"), "%s", vramio_last_error()))
        return;
    crew_hire(2, double_unpin_role);
    for (round = 0; more_rounds(round, t0); round++) {
        void *map;
        int rc, winner;

        du.mh = pin_region(du.g, 0, &rc);
        /* Every other round mapped, so that the winner also tears a mapping down. */
        if (rc == 0 && round % 2)
            rc = gdr_map(du.g, du.mh, &map, REGION);
        if (rc) {
            tally_bad(&wrong, round, "setup: pin or map returned %d: %s", rc, vramio_last_error());
            break;
        }
        du.delay[0] = (unsigned)rand_r(&seed) % JITTER;
        du.delay[1] = (unsigned)rand_r(&seed) % JITTER;
        du.span[0].n = du.span[1].n = 0;
        crew_round(NAME("double_unpin_no_hang"));
        winner = du.rc[0] == 0 ? 0 : 1;
        first_won += winner == 0;
        overlapped += spans_overlap(&du.span[0], du.span[1].start[0], du.span[1].end[0]);
        if (du.rc[winner] != 0 || du.rc[!winner] != EINVAL)
            tally_bad(&wrong, round, "the two unpins returned %d and %d (want one 0, one EINVAL)",
                      du.rc[0], du.rc[1]);
        else if (!strstr(du.why[!winner], "gdr_unpin_buffer"))
            tally_bad(&wrong, round, "the refused unpin's reason does not name it: '%s'",
                      du.why[!winner]);
        if (!nothing_left(du.g, why, sizeof(why)))
            tally_bad(&left, round, "%s", why);
    }
    crew_dismiss();
    t_ok(NAME("double_unpin_no_hang"));
    printf("# double_unpin: %u rounds, the two calls overlapped in %u, the first thread won %u\n",
           round, overlapped, first_won);
    tally_check(&wrong, NAME("double_unpin_one_wins"));
    tally_check(&left, NAME("double_unpin_nothing_left"));
    t_check(overlapped > 0, NAME("double_unpin_raced"), "in none of %u rounds were both unpins "
            "in progress at once", round);
    finish_gdr("double_unpin", du.g);
}

/* ---- 2: unpin against another call on the handle ----------------------------------------- */

enum race { RACE_MAP, RACE_UNMAP, RACE_INFO, RACE_COPY_TO, RACE_COPY_FROM, RACES };
static const char *const race_name[RACES] = {
    "gdr_map", "gdr_unmap", "gdr_get_info/callback_flag", "copy_to_mapping", "copy_from_mapping",
};

static unsigned char pattern[REGION];

static struct {
    gdr_t g;
    gdr_mh_t mh;
    unsigned char *map;          /* the pin's mapping; NULL in RACE_MAP, which makes it */
    enum race race;
    unsigned round;
    unsigned delay[2];
    _Atomic int unpinned;        /* the unpin has returned */
    int unpin_rc;
    struct spans unpin_span, call_spans;
    unsigned ok, refused;        /* the racing calls' results */
    size_t wrote;                /* the longest copy into the mapping that returned 0 */
    unsigned char *back;         /* where the reads land */
    struct tally wrong;
} ur = { .wrong = { .lock = PTHREAD_MUTEX_INITIALIZER } };

/* One call of a looping race (info, copies), the i-th: its result, having checked what a
 * success gave. Odd turns of the copies take the _auto entry points, at a size that reaches
 * their own path (the range looked up under the pin's lock), even turns the plain copies. */
static int loop_call(unsigned i)
{
    gdr_info_v2_t info;
    size_t n = i % 2 ? AUTO_BIG : 256;
    int rc, flag = -1;

    switch (ur.race) {
    case RACE_INFO:
        if (i % 2) {
            rc = gdr_get_callback_flag(ur.g, ur.mh, &flag);
            if (rc == 0 && flag != 0)
                tally_bad(&ur.wrong, ur.round, "callback flag %d", flag);
            return rc;
        }
        rc = gdr_get_info_v2(ur.g, ur.mh, &info);
        /* The pin was mapped when the round began, and the unpin takes the mapping away
         * together with the handle: a live handle's info is whole and says mapped. */
        if (rc == 0 && (info.va != FAKE_VA || info.mapped_size != REGION || !info.mapped ||
                        info.mapping_type != GDR_MAPPING_TYPE_WC))
            tally_bad(&ur.wrong, ur.round, "info of a live handle: va %#llx size %llu mapped %d "
                      "type %d", (unsigned long long)info.va,
                      (unsigned long long)info.mapped_size, (int)info.mapped,
                      (int)info.mapping_type);
        return rc;
    case RACE_COPY_TO:
        rc = i % 2 ? vramio_copy_to_mapping_auto(ur.mh, ur.map, pattern, n)
                   : gdr_copy_to_mapping(ur.mh, ur.map, pattern, n);
        if (rc == 0 && n > ur.wrote)
            ur.wrote = n;
        return rc;
    default:
        memset(ur.back, 0, n);
        rc = i % 2 ? vramio_copy_from_mapping_auto(ur.mh, ur.back, ur.map, n)
                   : gdr_copy_from_mapping(ur.mh, ur.back, ur.map, n);
        if (rc == 0 && memcmp(ur.back, pattern, n) != 0)
            tally_bad(&ur.wrong, ur.round, "a read of %zu bytes returned 0 with other bytes", n);
        return rc;
    }
}

/* Sort one racing call's result: 0 or EINVAL with a reason, and never 0 again once refused
 * (a handle does not come back). */
static void note_result(const char *call, int rc)
{
    if (rc == 0 && ur.refused)
        tally_bad(&ur.wrong, ur.round, "%s returned 0 after it had been refused", call);
    else if (rc != 0 && rc != EINVAL)
        tally_bad(&ur.wrong, ur.round, "%s returned %d", call, rc);
    else if (rc == EINVAL && !ur.refused && !vramio_last_error()[0])
        tally_bad(&ur.wrong, ur.round, "%s refused without a reason", call);
    if (rc == 0)
        ur.ok++;
    else
        ur.refused++;
}

static void unpin_side(void)
{
    head_start(ur.delay[0]);
    span_begin(&ur.unpin_span);
    ur.unpin_rc = gdr_unpin_buffer(ur.g, ur.mh);
    span_end(&ur.unpin_span);
    atomic_store(&ur.unpinned, 1);
}

static void call_side(void)
{
    const char *call = race_name[ur.race];
    void *va = NULL;
    unsigned i;
    int rc, after;

    head_start(ur.delay[1]);
    switch (ur.race) {
    case RACE_MAP:
        span_begin(&ur.call_spans);
        rc = gdr_map(ur.g, ur.mh, &va, REGION);
        span_end(&ur.call_spans);
        if (rc == 0 && va != vram[0])
            tally_bad(&ur.wrong, ur.round, "gdr_map returned 0 and %p, not the mapping", va);
        note_result(call, rc);
        break;
    case RACE_UNMAP:
        span_begin(&ur.call_spans);
        rc = gdr_unmap(ur.g, ur.mh, ur.map, REGION);
        span_end(&ur.call_spans);
        note_result(call, rc);
        break;
    default:
        /* Until a call that began after the unpin returned, which must be refused. Once one
         * is refused, the next waits for the unpin to return: the calls in between would
         * only be refused again. */
        for (i = 0;; i++) {
            after = atomic_load(&ur.unpinned);
            span_begin(&ur.call_spans);
            rc = loop_call(i);
            span_end(&ur.call_spans);
            note_result(call, rc);
            if (after) {
                if (rc != EINVAL)
                    tally_bad(&ur.wrong, ur.round, "%s after the unpin returned %d", call, rc);
                break;
            }
            if (rc)
                await_flag(&ur.unpinned);
        }
    }
}

static void unpin_race_role(int who)
{
    if (who == 0)
        unpin_side();
    else
        call_side();
}

static void unpin_vs_calls(void)
{
    static struct tally left = { .lock = PTHREAD_MUTEX_INITIALIZER };
    unsigned before[RACES] = { 0 }, after[RACES] = { 0 }, during[RACES] = { 0 };
    unsigned seed = 23, round, k;
    uint64_t t0 = now_ns();
    char why[200], orders[400] = "";
    size_t used = 0;
    int all = 1;

    ur.g = open_fake_gdr();
    if (!t_check(ur.g != NULL, NAME("unpin_vs_calls_open"), "%s", vramio_last_error()))
        return;
    ur.back = malloc(AUTO_BIG);
    t_pattern(pattern, sizeof(pattern), 5);
    crew_hire(2, unpin_race_role);
    for (round = 0; more_rounds(round, t0); round++) {
        void *map = NULL;
        int rc;

        ur.race = (enum race)(round % RACES);
        ur.round = round;
        /* What the device holds: the pattern for the reads to find, else zeros for the
         * writes to fill. */
        if (ur.race == RACE_COPY_FROM)
            memcpy(vram[0], pattern, REGION);
        else
            memset(vram[0], 0, REGION);
        ur.mh = pin_region(ur.g, 0, &rc);
        if (rc == 0 && ur.race != RACE_MAP)
            rc = gdr_map(ur.g, ur.mh, &map, REGION);
        if (rc) {
            tally_bad(&ur.wrong, round, "setup: pin or map returned %d: %s", rc,
                      vramio_last_error());
            break;
        }
        ur.map = map;
        ur.delay[0] = (unsigned)rand_r(&seed) % JITTER;
        ur.delay[1] = (unsigned)rand_r(&seed) % JITTER;
        atomic_store(&ur.unpinned, 0);
        ur.unpin_rc = -1;
        ur.unpin_span.n = ur.call_spans.n = 0;
        ur.ok = ur.refused = 0;
        ur.wrote = 0;
        crew_round(NAME("unpin_vs_calls_no_hang"));
        if (ur.unpin_rc != 0)
            tally_bad(&ur.wrong, round, "the unpin against %s returned %d", race_name[ur.race],
                      ur.unpin_rc);
        if (ur.wrote && memcmp(vram[0], pattern, ur.wrote) != 0)
            tally_bad(&ur.wrong, round, "a write of %zu bytes returned 0, its bytes are not there",
                      ur.wrote);
        if (!nothing_left(ur.g, why, sizeof(why)))
            tally_bad(&left, round, "after %s: %s", race_name[ur.race], why);
        before[ur.race] += ur.ok > 0;
        after[ur.race] += ur.ok == 0;
        during[ur.race] += spans_overlap(&ur.call_spans, ur.unpin_span.start[0],
                                         ur.unpin_span.end[0]);
    }
    crew_dismiss();
    t_ok(NAME("unpin_vs_calls_no_hang"));
    free(ur.back);
    for (k = 0; k < RACES; k++) {
        all &= before[k] && after[k] && during[k];
        used += (size_t)snprintf(orders + used, sizeof(orders) - used, "%s%s %u/%u/%u",
                                 k ? ", " : "", race_name[k], before[k], during[k], after[k]);
    }
    printf("# unpin_vs_calls: %u rounds; rounds whose calls had a success / overlapped the "
           "unpin / were all refused: %s\n", round, orders);
    tally_check(&ur.wrong, NAME("unpin_vs_calls_clear_results"));
    tally_check(&left, NAME("unpin_vs_calls_nothing_left"));
    /* A race that always fell on one side of the unpin, or never met it, tested less. */
    t_check(all, NAME("unpin_vs_calls_raced"), "rounds whose calls had a success / overlapped "
            "the unpin / were all refused: %s", orders);
    finish_gdr("unpin_vs_calls", ur.g);
}

/* ---- 3: gdr_close against its users ------------------------------------------------------ */

static struct {
    gdr_t g;
    gdr_mh_t mh;                 /* the copier's pin (region 0), mapped at map */
    unsigned char *map;
    unsigned round;
    int two_closers;             /* this round closes from two threads at once */
    unsigned delay[CREW_MAX];
    _Atomic int progress;        /* calls of the users that succeeded */
    _Atomic int closed;          /* a gdr_close of g has returned 0 */
    int close_rc[2];
    uint64_t close_start, close_end;
    struct spans copies, cycles;
    unsigned char *back;
    struct tally wrong;
} cr = { .wrong = { .lock = PTHREAD_MUTEX_INITIALIZER } };

/* _auto copies through the pin, each direction at the sizes of each of their paths, until one
 * that began after gdr_close returned (once one is refused, the next waits for that). */
static void copier(void)
{
    /* Below the _auto floor (4 KiB), above it, and at the size of an _auto write's own path. */
    static const size_t sizes[] = { 64, 8192, AUTO_BIG };
    int rc, after, dead = 0;
    unsigned i;

    for (i = 0;; i++) {
        size_t n = sizes[(i / 2) % 3];

        after = atomic_load(&cr.closed);
        span_begin(&cr.copies);
        if (i % 2) {
            rc = vramio_copy_from_mapping_auto(cr.mh, cr.back, cr.map, n);
            if (rc == 0 && memcmp(cr.back, pattern, n) != 0)
                tally_bad(&cr.wrong, cr.round, "an _auto read of %zu bytes returned 0 with "
                          "other bytes", n);
        } else {
            rc = vramio_copy_to_mapping_auto(cr.mh, cr.map, pattern, n);
        }
        span_end(&cr.copies);
        if (rc != 0 && rc != EINVAL)
            tally_bad(&cr.wrong, cr.round, "an _auto copy of %zu bytes returned %d", n, rc);
        else if (rc == 0 && dead)
            tally_bad(&cr.wrong, cr.round, "an _auto copy returned 0 after one was refused");
        else if (rc == EINVAL && !dead && !vramio_last_error()[0])
            tally_bad(&cr.wrong, cr.round, "an _auto copy refused without a reason");
        if (after) {
            if (rc != EINVAL)
                tally_bad(&cr.wrong, cr.round, "an _auto copy after gdr_close returned %d", rc);
            return;
        }
        if (rc == 0)
            cr.progress++;
        dead |= rc != 0;
        if (dead)
            await_flag(&cr.closed);
        else
            sched_yield();   /* with fewer cores than threads, the closer shares this one */
    }
}

/* Pin, map, copy and unpin region 1 through g until a pin is refused: the gdr_t is closing. */
static void pin_cycler(void)
{
    void *va;
    int rc, after;

    for (;;) {
        gdr_mh_t mh;

        after = atomic_load(&cr.closed);
        span_begin(&cr.cycles);
        mh = pin_region(cr.g, 1, &rc);
        span_end(&cr.cycles);
        if (rc != 0) {
            if (rc != EINVAL || mh.h != 0 || !vramio_last_error()[0])
                tally_bad(&cr.wrong, cr.round, "a pin while closing returned %d, handle %#lx, "
                          "reason '%s'", rc, mh.h, vramio_last_error());
            return;
        }
        if (after)
            tally_bad(&cr.wrong, cr.round, "a pin after gdr_close returned 0");
        cr.progress++;
        /* Each step may find the gdr_t closed under it (its pin released by gdr_close). */
        span_begin(&cr.cycles);
        rc = gdr_map(cr.g, mh, &va, REGION);
        if (rc == 0)
            rc = gdr_copy_to_mapping(mh, va, pattern, 64);
        span_end(&cr.cycles);
        if (rc != 0 && rc != EINVAL)
            tally_bad(&cr.wrong, cr.round, "map or copy while closing returned %d", rc);
        span_begin(&cr.cycles);
        rc = gdr_unpin_buffer(cr.g, mh);
        span_end(&cr.cycles);
        if (rc != 0 && rc != EINVAL)
            tally_bad(&cr.wrong, cr.round, "an unpin while closing returned %d", rc);
    }
}

/* The closers wait until the users have got going (a few calls done), so that the close lands
 * among their calls rather than before the first; for at most 100 ms, in case they cannot. */
static void closer(int which)
{
    uint64_t until = now_ns() + 100000000u;
    int rc;

    while (atomic_load(&cr.progress) < 1 + (int)(cr.round % 4) && now_ns() < until)
        sched_yield();
    head_start(cr.delay[2 + which]);
    if (which == 0)
        cr.close_start = now_ns();
    rc = gdr_close(cr.g);
    if (which == 0)
        cr.close_end = now_ns();
    cr.close_rc[which] = rc;
    if (rc == 0)
        atomic_store(&cr.closed, 1);
}

/* Members 0 and 2, 1 and 3 share a core where there are two: each pair has one that yields
 * in every call (the copier here, the fake's ops for the pin cycler). */
static void close_race_role(int who)
{
    if (who == 0)
        copier();
    else if (who == 1)
        pin_cycler();
    else if (who == 2)
        closer(0);
    else if (cr.two_closers)
        closer(1);
}

#define REFUSED(call) do { if ((call) != EINVAL) return #call; } while (0)

/* The first call on the closed g, or on a handle made through it, that is not refused with
 * EINVAL; NULL when every one is. */
static const char *closed_gdr_accepts(gdr_t g, gdr_mh_t mh, unsigned char *map)
{
    static unsigned char buf[AUTO_BIG];
    gdr_mh_t fresh;
    gdr_info_v2_t info;
    vramio_backend_t be;
    size_t rd, wr;
    char reason[64];
    void *va;
    int v, major, minor;

    REFUSED(gdr_pin_buffer_v2(g, FAKE_VA, REGION, 0, &fresh));
    REFUSED(gdr_pin_buffer(g, FAKE_VA, REGION, 0, 0, &fresh));
    REFUSED(gdr_map(g, mh, &va, REGION));
    REFUSED(gdr_unmap(g, mh, map, REGION));
    REFUSED(gdr_get_info_v2(g, mh, &info));
    REFUSED(gdr_get_callback_flag(g, mh, &v));
    REFUSED(vramio_handle_backend(g, mh, &be));
    REFUSED(gdr_unpin_buffer(g, mh));
    REFUSED(gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &v));
    REFUSED(gdr_driver_get_version(g, &major, &minor));
    REFUSED(vramio_get_backend(g, &be));
    REFUSED(vramio_backend_status(g, VRAMIO_BACKEND_GDRDRV, reason, sizeof(reason)));
    REFUSED(gdr_copy_to_mapping(mh, map, buf, 64));
    REFUSED(gdr_copy_from_mapping(mh, buf, map, 64));
    REFUSED(vramio_copy_to_mapping_auto(mh, map, buf, AUTO_BIG));
    REFUSED(vramio_copy_from_mapping_auto(mh, buf, map, AUTO_BIG));
    REFUSED(vramio_copy_auto_crossover(mh, &rd, &wr));
    REFUSED(gdr_close(g));
    return NULL;
}

static void close_vs_users(void)
{
    static struct tally left = { .lock = PTHREAD_MUTEX_INITIALIZER };
    static struct tally accepted = { .lock = PTHREAD_MUTEX_INITIALIZER };
    unsigned seed = 37, round, overlapped = 0;
    uint64_t t0 = now_ns();
    char why[200];
    int i;

    cr.back = malloc(AUTO_BIG);
    t_pattern(pattern, sizeof(pattern), 9);
    crew_hire(4, close_race_role);
    for (round = 0; more_rounds(round, t0); round++) {
        const char *call;
        void *map = NULL;
        int rc;

        cr.round = round;
        cr.two_closers = round % 2;
        memcpy(vram[0], pattern, REGION);
        cr.g = open_fake_gdr();
        if (!cr.g) {
            tally_bad(&cr.wrong, round, "setup: open: %s", vramio_last_error());
            break;
        }
        cr.mh = pin_region(cr.g, 0, &rc);
        if (rc == 0)
            rc = gdr_map(cr.g, cr.mh, &map, REGION);
        if (rc) {
            tally_bad(&cr.wrong, round, "setup: pin or map returned %d: %s", rc,
                      vramio_last_error());
            gdr_close(cr.g);
            break;
        }
        cr.map = map;
        for (i = 0; i < CREW_MAX; i++)
            cr.delay[i] = (unsigned)rand_r(&seed) % JITTER;
        atomic_store(&cr.progress, 0);
        atomic_store(&cr.closed, 0);
        cr.close_rc[0] = cr.close_rc[1] = -1;
        cr.copies.n = cr.cycles.n = 0;
        crew_round(NAME("close_vs_users_no_hang"));
        overlapped += spans_overlap(&cr.copies, cr.close_start, cr.close_end) ||
                      spans_overlap(&cr.cycles, cr.close_start, cr.close_end);
        if (cr.two_closers ? (cr.close_rc[0] == 0) + (cr.close_rc[1] == 0) != 1 ||
                             (cr.close_rc[0] != EINVAL && cr.close_rc[1] != EINVAL)
                           : cr.close_rc[0] != 0)
            tally_bad(&cr.wrong, round, "gdr_close returned %d%s%d", cr.close_rc[0],
                      cr.two_closers ? " and " : "", cr.two_closers ? cr.close_rc[1] : 0);
        if (!nothing_left(cr.g, why, sizeof(why)) || live_ctx != 0)
            tally_bad(&left, round, "%d contexts; %s", (int)live_ctx, why);
        if ((call = closed_gdr_accepts(cr.g, cr.mh, cr.map)))
            tally_bad(&accepted, round, "%s was not refused with EINVAL", call);
    }
    crew_dismiss();
    t_ok(NAME("close_vs_users_no_hang"));
    free(cr.back);
    printf("# close_vs_users: %u rounds, a user's call was in progress during gdr_close in %u\n",
           round, overlapped);
    tally_check(&cr.wrong, NAME("close_vs_users_clear_results"));
    tally_check(&left, NAME("close_vs_users_nothing_left"));
    tally_check(&accepted, NAME("closed_gdr_refuses_every_call"));
    t_check(overlapped > 0, NAME("close_vs_users_raced"), "in none of %u rounds was a user's "
            "call in progress during gdr_close", round);
    t_check(contract_breaches == 0, NAME("close_vs_users_backend_contract"),
            "%d breaches, first: %s", (int)contract_breaches, first_breach);
}

/* ---- the parent: each scenario in a child of its own ------------------------------------- */

static const struct {
    const char *name;
    void (*run)(void);
} scenarios[] = {
    { "double_unpin", double_unpin },
    { "unpin_vs_calls", unpin_vs_calls },
    { "close_vs_users", close_vs_users },
};
#define NSCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

static int run_child(const char *mode)
{
    size_t i;

    /* Default action: the child dies of SIGALRM, which the parent reports as a hang. */
    alarm(CHILD_BOUND_S);
    for (i = 0; i < NSCENARIOS; i++)
        if (strcmp(mode, scenarios[i].name) == 0) {
            scenarios[i].run();
            return t_status();
        }
    fprintf(stderr, "no scenario %s\n", mode);
    return 2;
}

int main(int argc, char **argv)
{
    static char out[1 << 16];
    const char *mode = t_child_mode(argc, argv);
    char name[96];
    int failed = 0, rc, sig;
    size_t i;

    if (mode)
        return run_child(mode);
    for (i = 0; i < NSCENARIOS; i++) {
        sig = 0;
        rc = t_run_self(scenarios[i].name, NULL, out, sizeof(out), &sig);
        fputs(out, stdout);   /* the child's own result lines, and anything a sanitizer said */
        snprintf(name, sizeof(name), NAME("%s_ended"), scenarios[i].name);
        failed |= rc != 0;
        /* A child that failed a check ended by itself, and said so in a line of its own. */
        if (rc == T_FAIL && strstr(out, "not ok "))
            t_ok(name);
        else if (rc < 0 && sig == SIGALRM)
            t_fail(name, "still running after %d s: hung (a deadlock?)", CHILD_BOUND_S);
        else if (rc < 0)
            t_fail(name, "killed by signal %d (%s)", sig, sig ? strsignal(sig) : "or not run");
        else if (rc == T_FAIL)
            t_fail(name, "exited %d without a failing result line", rc);
        else
            t_check(rc == 0, name, "exited %d (a sanitizer's report above?)", rc);
    }
    return failed ? T_FAIL : t_status();
}

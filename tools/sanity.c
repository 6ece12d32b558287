/* SPDX-License-Identifier: MIT */
/*
 * gdrcopy_sanity - GDRCopy 2.6's sanity suite and vramio's own tests, through the public API.
 *
 * Every test runs once per allocation kind (cuda, vmm-rdma, vmm-fd, vramio, emu), each in its
 * own child process, so a crash or a leak stays inside one test. A kind that cannot be used
 * here (no CUDA, no emulated provider) or that the backend does not serve is skipped with the
 * reason. Output: one line per test in the test runner's protocol (ok / not ok / skip), then a
 * summary; the exit status is 0 when nothing failed, 1 on any failure, 2 when it cannot run.
 */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/gpumem.h"
#include "common/util.h"
#include "sanity/harness.h"

static const char *prog = "gdrcopy_sanity";

/* The tests that the test files registered with T_CASE (tools/sanity/harness.h), in the order
 * of their file names, then of their lines: the same order however the linker laid them out. */
extern const struct t_case *const __start_t_cases[];
extern const struct t_case *const __stop_t_cases[];
static const struct t_case **cases;
static size_t ncases;

static int case_order(const void *a, const void *b)
{
    const struct t_case *x = *(const struct t_case *const *)a;
    const struct t_case *y = *(const struct t_case *const *)b;
    int c = strcmp(x->file, y->file);

    return c ? c : (x->line > y->line) - (x->line < y->line);
}

static void load_cases(void)
{
    ncases = (size_t)(__stop_t_cases - __start_t_cases);
    cases = malloc(ncases * sizeof(*cases));
    if (!cases && ncases)
        die(prog, "out of memory");
    for (size_t i = 0; i < ncases; i++)
        cases[i] = __start_t_cases[i];
    qsort(cases, ncases, sizeof(*cases), case_order);
}

struct opts {
    int verbose, silent, gpu, extended, list;
    unsigned kinds;           /* bit per gm_kind */
    const char *filters[64];
    int nfilters;
    unsigned timeout_s;
};

struct tally {
    int pass, fail, skip;
};

static void usage(void)
{
    printf("Usage: %s [-h] [-v] [-s] [-l] [-e] [-t NAME]... [-d GPU] [--kind LIST]\n"
           "Check that libgdrapi pins, maps and copies GPU memory correctly here.\n\n"
           "Options:\n"
           "  -h          print this help and exit\n"
           "  -v          verbose: print what each test does\n"
           "  -s          silent: print only failures and the summary\n"
           "  -l          list the tests (with upstream GDRCopy's names for them) and exit;\n"
           "              with -t, list the NAME.KIND runs that -t selects\n"
           "  -t NAME     run only tests matching NAME (a test name, NAME.KIND, upstream's\n"
           "              NAME_cumemalloc (kind cuda) or NAME_vmmalloc (the VMM kinds), or a\n"
           "              shell pattern such as 'data_*'); may be repeated\n"
           "  -d GPU      CUDA device ordinal to allocate on (default 0)\n"
           "  -e          also run the extended tests (as upstream's -e)\n"
           "  --kind LIST comma-separated allocation kinds to test (default: all):\n"
           "              %s\n"
           "  --timeout S seconds before a test is killed (default 120)\n\n"
           "Each test runs once per allocation kind, in its own process, and prints\n"
           "'ok NAME.KIND', 'not ok NAME.KIND: why' or 'skip NAME.KIND: why', then a summary.\n"
           "Exit status: 0 all passed or skipped, 1 a test failed, 2 nothing could run.\n",
           prog, gm_kind_help());
}

static void parse_kinds(struct opts *o, const char *list)
{
    char buf[256], *save = NULL;

    snprintf(buf, sizeof(buf), "%s", list);
    o->kinds = 0;
    for (char *k = strtok_r(buf, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
        enum gm_kind kind;

        if (gm_kind_parse(k, &kind))
            usage_error(prog, "unknown allocation kind '%s' (one of: %s)", k, gm_kind_help());
        o->kinds |= 1u << kind;
    }
}

static void parse_args(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        { "help", no_argument, NULL, 'h' }, { "kind", required_argument, NULL, 'K' },
        { "timeout", required_argument, NULL, 'T' }, { 0 },
    };
    unsigned long v;
    int c;

    *o = (struct opts){ .kinds = (1u << GM_KIND_COUNT) - 1, .timeout_s = 120 };
    while ((c = getopt_long(argc, argv, "hvslet:d:", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': usage(); exit(0);
        case 'v': o->verbose = 1; break;
        case 's': o->silent = 1; break;
        case 'l': o->list = 1; break;
        case 'e': o->extended = 1; break;
        case 't':
            if (o->nfilters == (int)(sizeof(o->filters) / sizeof(o->filters[0])))
                usage_error(prog, "too many -t options");
            o->filters[o->nfilters++] = optarg;
            break;
        case 'd':
            if (parse_uint(optarg, 1024, &v))
                usage_error(prog, "-d needs a GPU ordinal, not '%s'", optarg);
            o->gpu = (int)v;
            break;
        case 'K': parse_kinds(o, optarg); break;
        case 'T':
            if (parse_uint(optarg, 86400, &v) || v == 0)
                usage_error(prog, "--timeout needs a number of seconds, not '%s'", optarg);
            o->timeout_s = (unsigned)v;
            break;
        default: usage_error(prog, "invalid option");
        }
    }
    if (optind < argc)
        usage_error(prog, "unexpected argument '%s'", argv[optind]);
}

/* Upstream's name of a test on a kind: NAME_cumemalloc on cuda, NAME_vmmalloc on the VMM
 * kinds (cuMemCreate), so that scripts written for upstream select the same tests. */
static const char *upstream_name(const char *name, int kind, char *buf, size_t len)
{
    const char *suffix = kind == GM_CUDA ? "_cumemalloc" :
                         kind == GM_VMM_RDMA || kind == GM_VMM_FD ? "_vmmalloc" : NULL;

    if (!suffix)
        return NULL;
    snprintf(buf, len, "%s%s", name, suffix);
    return buf;
}

/* kind < 0: a test that runs once (no kind). Extended tests run only with -e. */
static int selected(const struct opts *o, const struct t_case *tc, const char *full, int kind)
{
    char ubuf[128];
    const char *up = kind >= 0 ? upstream_name(tc->name, kind, ubuf, sizeof(ubuf)) : NULL;

    if ((tc->flags & T_EXTENDED) && !o->extended)
        return 0;
    if (!o->nfilters)
        return 1;
    for (int i = 0; i < o->nfilters; i++)
        if (fnmatch(o->filters[i], tc->name, 0) == 0 || fnmatch(o->filters[i], full, 0) == 0 ||
            (up && fnmatch(o->filters[i], up, 0) == 0))
            return 1;
    return 0;
}

/* The reports of a test and of its children, each ended by a NUL on the pipe (a report may
 * span lines), joined with "; " into why. */
static size_t join_reports(const char *raw, size_t got, char *why, size_t len)
{
    size_t n = 0;

    for (size_t i = 0; i < got && n + 1 < len; i++) {
        if (raw[i] != '\0')
            why[n++] = raw[i];
        else if (i + 1 < got && n && n + 3 < len)
            n += (size_t)snprintf(why + n, len - n, "; ");
    }
    why[n] = '\0';
    return n;
}

/* Run fn in a child with its report pipe; returns 0 pass, 77 skip, else fail, and the
 * reported line in why. */
static int run_child(void (*fn)(void *), void *arg, const struct opts *o, char *why, size_t len)
{
    char raw[1024];
    int pfd[2], status;
    size_t got = 0;
    ssize_t n;
    pid_t pid;

    if (pipe(pfd))
        die(prog, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid = fork();
    if (pid < 0)
        die(prog, "fork: %s", strerror(errno));
    if (pid == 0) {
        close(pfd[0]);
        T.report_fd = pfd[1];
        alarm(o->timeout_s);
        fn(arg);
        /* the normal exit path, as a program using the library takes it */
        exit(t_report_recorded() ? 1 : 0);
    }
    close(pfd[1]);
    while (got < sizeof(raw) && (n = read(pfd[0], raw + got, sizeof(raw) - got)) > 0)
        got += (size_t)n;
    close(pfd[0]);
    got = join_reports(raw, got, why, len);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED(status)) {
        snprintf(why + got, len - got, "%skilled by signal %d (%s)%s", got ? " [" : "",
                 WTERMSIG(status), WTERMSIG(status) == SIGALRM ? "timed out" : strsignal(WTERMSIG(status)),
                 got ? "]" : "");
        return 128 + WTERMSIG(status);
    }
    if (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 77 && !got)
        snprintf(why, len, "exited with status %d", WEXITSTATUS(status));
    if (WEXITSTATUS(status) == 77 && !got)
        snprintf(why, len, "skipped without a reason");
    return WEXITSTATUS(status);
}

/* -l: every test with its upstream names; with -t, the NAME.KIND runs the filters select. */
static void list_tests(const struct opts *o)
{
    for (size_t i = 0; i < ncases; i++) {
        const struct t_case *tc = cases[i];

        if (o->nfilters) {
            if (tc->flags & T_ONCE) {
                if (selected(o, tc, tc->name, -1))
                    printf("%s\n", tc->name);
                continue;
            }
            for (int k = 0; k < GM_KIND_COUNT; k++) {
                char full[128];

                snprintf(full, sizeof(full), "%s.%s", tc->name, gm_kind_name((enum gm_kind)k));
                if ((o->kinds & (1u << k)) && selected(o, tc, full, k))
                    printf("%s\n", full);
            }
            continue;
        }
        printf("%-50s %s%s%s\n", tc->name, tc->what, tc->flags & T_ONCE ? " (once)" : " (per kind)",
               tc->flags & T_EXTENDED ? " [extended: -e]" : "");
        if (tc->flags & T_UPSTREAM)
            printf("%-50s   upstream: %s_cumemalloc, %s_vmmalloc\n", "", tc->name, tc->name);
    }
}

static void result(const struct opts *o, struct tally *t, const char *name, int rc, const char *why)
{
    if (rc == 0) {
        t->pass++;
        if (!o->silent)
            printf("ok %s\n", name);
    } else if (rc == 77) {
        t->skip++;
        if (!o->silent)
            printf("skip %s: %s\n", name, why);
    } else {
        t->fail++;
        printf("not ok %s: %s\n", name, why);
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    struct opts o;
    struct tally t = { 0 };
    char kind_skip[GM_KIND_COUNT][1100];
    char why[1024];
    int rc, first_kind = -1;

    tool_enable_backends();

    parse_args(argc, argv, &o);
    load_cases();
    if (o.list) {
        list_tests(&o);
        return 0;
    }
    T.verbose = o.verbose;
    T.gpu = o.gpu;

    rc = run_child(t_child_backend, NULL, &o, why, sizeof(why));
    if (rc != 0) {
        fprintf(stderr, "%s: cannot run: %s\nRun gdrcopy_info for details.\n", prog, why);
        return 2;
    }
    if (!o.silent)
        printf("# %s: backend %s\n", prog, why);

    /* Which kinds can be used here; each unusable kind's tests are skipped with the reason. */
    for (int k = 0; k < GM_KIND_COUNT; k++) {
        kind_skip[k][0] = '\0';
        if (!(o.kinds & (1u << k)))
            continue;
        T.kind = (enum gm_kind)k;
        rc = run_child(t_child_kind, NULL, &o, why, sizeof(why));
        if (rc)
            snprintf(kind_skip[k], sizeof(kind_skip[k]), "%s%s", rc == 77 ? "" : "kind probe failed: ", why);
        else if (first_kind < 0)
            first_kind = k;
        if (!o.silent)
            printf("# kind %-8s %s\n", gm_kind_name((enum gm_kind)k), rc ? kind_skip[k] : "usable");
    }

    for (size_t i = 0; i < ncases; i++) {
        const struct t_case *tc = cases[i];

        if (tc->flags & T_ONCE) {
            if (!selected(&o, tc, tc->name, -1))
                continue;
            T.kind = first_kind >= 0 ? (enum gm_kind)first_kind : GM_EMU;
            rc = run_child(t_child_case, (void *)tc, &o, why, sizeof(why));
            result(&o, &t, tc->name, rc, why);
            continue;
        }
        for (int k = 0; k < GM_KIND_COUNT; k++) {
            char full[128];

            if (!(o.kinds & (1u << k)))
                continue;
            snprintf(full, sizeof(full), "%s.%s", tc->name, gm_kind_name((enum gm_kind)k));
            if (!selected(&o, tc, full, k))
                continue;
            if (kind_skip[k][0]) {
                result(&o, &t, full, 77, kind_skip[k]);
                continue;
            }
            T.kind = (enum gm_kind)k;
            rc = run_child(t_child_case, (void *)tc, &o, why, sizeof(why));
            result(&o, &t, full, rc, why);
        }
    }
    printf("%s summary: %d tests, %d passed, %d failed, %d skipped\n", prog,
           t.pass + t.fail + t.skip, t.pass, t.fail, t.skip);
    if (t.pass + t.fail + t.skip == 0)
        fprintf(stderr, "%s: no test matched the -t filter\n", prog);
    return t.fail ? 1 : 0;
}

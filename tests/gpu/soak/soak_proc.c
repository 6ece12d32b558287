/* SPDX-License-Identifier: MIT */
/*
 * soak_proc.c - a worker process of the soak: its own CUDA context and gdr_t, a warm-up that
 * makes what lives as long as the process (the Vulkan device, the copy engine's buffers, the
 * bridge's IPC server), then its descriptors and GPU mappings counted; its threads run the mix
 * (soak_ops.c) until the deadline; its first thread also trades CUDA IPC handles with the
 * worker it is paired with (the even one exports a buffer it filled, the odd one opens it,
 * checks it, writes it and closes it, the exporter checks that write), and worker 0's starts
 * a holder of pins now and then and kills it with SIGKILL. At the end everything is given back
 * and counted again; the counts go to the parent through report_fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "soak.h"
#include "t.h"

extern char **environ;

#define IPC_OFFER 1
#define IPC_REPLY 2
#define IPC_DONE  3

struct ipc_msg {
    uint32_t type, seed, status, pad;
    uint64_t size;
    CUipcMemHandle h;
};

static double deadline;
static const struct soak_cfg *config;
static int ipc_fd = -1, worker_index;
static volatile int peer_done;      /* the exporter said that it is done */
static gdr_t g;

static uint8_t ipc_byte(uint32_t seed, size_t i)
{
    return (uint8_t)((i * 131 + seed) ^ (seed >> 11));
}

/* Whether [d, d + n) holds ipc_byte(seed, i) everywhere (read back by the GPU's copy). */
static int ipc_holds(CUdeviceptr d, size_t n, uint32_t seed)
{
    unsigned char *h = malloc(n);
    int ok = h && cu.dtoh(h, d, n) == CUDA_SUCCESS;

    for (size_t i = 0; ok && i < n; i++)
        ok = h[i] == ipc_byte(seed, i);
    free(h);
    return ok;
}

static int ipc_fill(CUdeviceptr d, size_t n, uint32_t seed)
{
    unsigned char *h = malloc(n);
    int ok = h != NULL;

    for (size_t i = 0; ok && i < n; i++)
        h[i] = ipc_byte(seed, i);
    ok = ok && cu.htod(d, h, n) == CUDA_SUCCESS && cu.sync() == CUDA_SUCCESS;
    free(h);
    return ok;
}

static int recv_within(struct ipc_msg *m, int ms)
{
    struct pollfd pf = { .fd = ipc_fd, .events = POLLIN };

    return poll(&pf, 1, ms) == 1 && recv(ipc_fd, m, sizeof(*m), 0) == (ssize_t)sizeof(*m);
}

/* The exporter's round: a buffer of its own, filled, offered, then checked for the importer's
 * write. */
static void ipc_export(struct soak_thread *t)
{
    struct ipc_msg m = { .type = IPC_OFFER, .seed = (uint32_t)rand_r(&t->seed) };
    CUdeviceptr d = 0;

    m.size = ((size_t)1 << 20) + (size_t)rand_r(&t->seed) % (64u << 10);
    t->st.ops[OP_IPC]++;
    if (cu.alloc(&d, m.size) != CUDA_SUCCESS || !ipc_fill(d, m.size, m.seed) ||
        cu.ipc_get(&m.h, d) != CUDA_SUCCESS) {
        soak_error(&t->st, "IPC: a buffer to export: %s", vramio_last_error());
    } else if (send(ipc_fd, &m, sizeof(m), 0) != (ssize_t)sizeof(m) ||
               !recv_within(&m, 30000) || m.type != IPC_REPLY) {
        soak_error(&t->st, "IPC: no answer of the importer within 30 s");
    } else if (m.status || !ipc_holds(d, m.size, m.seed)) {
        soak_error(&t->st, "IPC: %s", m.status ? "the importer failed (its report says)" :
                   "the importer's write is not in the exported buffer");
    }
    if (d && cu.free(d) != CUDA_SUCCESS)
        soak_error(&t->st, "IPC: cuMemFree of the exported buffer");
}

/* The importer: serve one offer if one comes within ms. 1 when the exporter said it is done. */
static int ipc_serve(struct soak_thread *t, int ms)
{
    struct ipc_msg m;
    CUdeviceptr p = 0;
    uint32_t seed2 = (uint32_t)rand_r(&t->seed);

    if (peer_done || !recv_within(&m, ms))
        return peer_done;
    if (m.type == IPC_DONE)
        return peer_done = 1;
    t->st.ops[OP_IPC]++;
    m.status = 1;
    if (cu.ipc_open(&p, m.h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS)
        soak_error(&t->st, "IPC: cuIpcOpenMemHandle failed");
    else if (!ipc_holds(p, m.size, m.seed))
        soak_error(&t->st, "IPC: the opened buffer does not hold what the exporter wrote");
    else if (!ipc_fill(p, m.size, seed2))
        soak_error(&t->st, "IPC: the write into the opened buffer failed");
    else
        m.status = 0;
    if (p && cu.ipc_close(p) != CUDA_SUCCESS)
        soak_error(&t->st, "IPC: cuIpcCloseMemHandle failed");
    m.type = IPC_REPLY;
    m.seed = seed2;
    if (send(ipc_fd, &m, sizeof(m), 0) != (ssize_t)sizeof(m))
        soak_error(&t->st, "IPC: the reply could not be sent");
    return 0;
}

/* ---- the holder of pins, killed with SIGKILL -------------------------------------------- */
int soak_holder(void)
{
    gdr_t hg;
    int held = 0;

    if (soak_cuda_start() || !(hg = gdr_open()))
        return 1;
    for (int i = 0; i < 3; i++) {
        CUdeviceptr d;
        gdr_mh_t mh;
        void *map;
        static unsigned char data[65536];

        if (cu.alloc(&d, (size_t)8 << 20) == CUDA_SUCCESS &&
            gdr_pin_buffer_v2(hg, d, (size_t)8 << 20, 0, &mh) == 0 &&
            gdr_map(hg, mh, &map, (size_t)8 << 20) == 0 &&
            gdr_copy_to_mapping(mh, map, data, sizeof(data)) == 0)
            held++;
    }
    printf(held == 3 ? "holding\n" : "not holding: %s\n", vramio_last_error());
    fflush(stdout);
    sleep(120);             /* until killed */
    return 0;
}

int soak_kill_holder(char *why, size_t len)
{
    char *argv[] = { "soak", "--holder", NULL }, line[256] = "";
    posix_spawn_file_actions_t fa;
    struct pollfd pf;
    int p[2], status;
    ssize_t n = 0;
    pid_t pid;

    if (pipe2(p, O_CLOEXEC))
        return snprintf(why, len, "pipe: %s", strerror(errno)), -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    status = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (status) {
        close(p[0]);
        return snprintf(why, len, "posix_spawn: %s", strerror(status)), -1;
    }
    pf = (struct pollfd){ .fd = p[0], .events = POLLIN };
    if (poll(&pf, 1, 60000) == 1)
        n = read(p[0], line, sizeof(line) - 1);
    close(p[0]);
    line[n > 0 ? n : 0] = '\0';
    kill(pid, SIGKILL);
    if (t_wait_bounded(pid, &status, 30) != 0)
        return snprintf(why, len, "the holder did not end after SIGKILL"), -1;
    if (strncmp(line, "holding", 7))
        return snprintf(why, len, "the holder never held its pins: %s", line), -1;
    return 0;
}

/* ---- the threads ---------------------------------------------------------------------------- */
static void *thread_main(void *arg)
{
    struct soak_thread *t = arg;
    double next_holder = soak_now();
    char why[256];
    unsigned long n = 0;

    soak_cuda_thread();
    while (soak_now() < deadline) {
        soak_op(t, 1);
        if (t->index == 0 && ipc_fd >= 0) {
            if (worker_index % 2 == 0 && ++n % 16 == 0 && soak_now() < deadline - 3)
                ipc_export(t);
            else if (worker_index % 2)
                ipc_serve(t, 0);
        }
        if (t->index == 0 && worker_index == 0 && soak_now() >= next_holder &&
            soak_now() < deadline - 3) {
            t->st.ops[OP_HOLDER]++;
            if (soak_kill_holder(why, sizeof(why)))
                soak_error(&t->st, "holder: %s", why);
            next_holder = soak_now() + 20;
        }
    }
    soak_thread_end(t);
    return NULL;
}

static void merge(struct soak_stats *all, const struct soak_stats *s)
{
    for (int i = 0; i < SOAK_NOPS; i++)
        all->ops[i] += s->ops[i];
    all->reads_checked += s->reads_checked;
    all->bytes_checked += s->bytes_checked;
    all->refusals += s->refusals;
    all->fork_exit += s->fork_exit;
    all->fork_quick_exit += s->fork_quick_exit;
    if (s->errors && !all->errors)
        memcpy(all->first_error, s->first_error, sizeof(all->first_error));
    all->errors += s->errors;
}

/* The process's descriptors once the count holds still for 50 ms (at most 2 s): the bridge's
 * IPC server closes its end of an answered request, and the exported fd, a moment after the
 * peer has its answer, so a count taken right after the warm-up's IPC round can include them
 * (seen once in a loaded CI run: "descriptors_back: 9, 11 after its warm-up"). */
static int settled_fds(void)
{
    int was = t_count_fds(), now;

    for (int i = 0; i < 40; i++) {
        usleep(50000);
        now = t_count_fds();
        if (now == was)
            return now;
        was = now;
    }
    return was;
}

int soak_worker(const struct soak_cfg *cfg, int index, int fd, int report_fd)
{
    struct soak_thread *ts = calloc((size_t)cfg->threads, sizeof(*ts)), warm = { 0 };
    struct soak_stats all = { 0 };
    pthread_t *th = calloc((size_t)cfg->threads, sizeof(*th));
    struct ipc_msg done = { .type = IPC_DONE };
    double end_by;

    config = cfg;
    ipc_fd = fd;
    worker_index = index;
    if (!ts || !th || soak_cuda_start() || !(g = gdr_open())) {
        snprintf(all.first_error, sizeof(all.first_error), "start: %s", vramio_last_error());
        all.errors = 1;
        goto report;
    }
    /* Warm-up: one of each, and one IPC round, before the counts are taken. */
    warm = (struct soak_thread){ .seed = 77u + (unsigned)index, .proc = index, .g = g };
    for (int i = 0; i < 64; i++)
        soak_op(&warm, 0);
    if (ipc_fd >= 0 && index % 2 == 0)
        ipc_export(&warm);
    else if (ipc_fd >= 0)
        ipc_serve(&warm, 30000);
    soak_thread_end(&warm);
    merge(&all, &warm.st);
    vramio_pool_trim(-1);
    all.fds0 = settled_fds();
    all.maps0 = soak_count_gpu_maps();
    deadline = soak_now() + cfg->seconds;
    for (int i = 0; i < cfg->threads; i++) {
        ts[i] = (struct soak_thread){ .seed = 1000u * (unsigned)index + (unsigned)i + 1,
                                      .proc = index, .index = i, .g = g };
        pthread_create(&th[i], NULL, thread_main, &ts[i]);
    }
    for (int i = 0; i < cfg->threads; i++) {
        pthread_join(th[i], NULL);
        merge(&all, &ts[i].st);
    }
    /* The pair ends together: the exporter says so, the importer serves until it does. */
    if (ipc_fd >= 0 && index % 2 == 0) {
        if (send(ipc_fd, &done, sizeof(done), 0) != (ssize_t)sizeof(done))
            soak_error(&all, "IPC: the end could not be said");
    } else if (ipc_fd >= 0) {
        struct soak_thread tail = { .seed = 99u, .proc = index, .g = g };

        for (end_by = soak_now() + 30; soak_now() < end_by && !ipc_serve(&tail, 1000);)
            ;
        merge(&all, &tail.st);      /* what it served after its threads ended */
    }
    if (gdr_close(g))
        soak_error(&all, "gdr_close: %s", vramio_last_error());
    vramio_pool_trim(-1);
    vramio_pool_stats(-1, &all.pool);
    /* What another thread gives back a moment later (the bridge's IPC server closes its end
     * of the last open after answering) is not left behind: up to 2 s for the counts. */
    for (int i = 0; i < 40; i++) {
        all.fds1 = t_count_fds();
        all.maps1 = soak_count_gpu_maps();
        if (all.fds1 == all.fds0 && all.maps1 == all.maps0)
            break;
        usleep(50000);
    }
report:
    if (write(report_fd, &all, sizeof(all)) != (ssize_t)sizeof(all))
        return 1;
    free(ts);
    free(th);
    return 0;
}

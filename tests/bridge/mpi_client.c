// SPDX-License-Identifier: MIT
/*
 * mpi_client.c - an MPI program's ranks under vramio-run, run by test_bridge_mpi.sh against
 * the stand-in driver through a real launcher (mpirun: its daemons, its environment handling).
 * Each rank does what a CUDA-aware MPI library does for a small message in GPU memory, through
 * libgdrapi as UCX's gdr_copy transport would: allocate device memory (one block before
 * MPI_Init, as programs that pick their GPU first do, one after), pin and map it, and carry a
 * message between the ranks through the mappings: rank 0 writes its block through its mapping
 * and reads it back out, sends the bytes; rank 1 writes them into its own block through its
 * mapping and checks the block's bytes (host memory in the stand-in). Rank 0 prints one result
 * line per rank and check: every rank's blocks must come from vramio's pool
 * (vramio_alloc_range) and pin, or, with "plain" (no vramio-run: the test's control), must not.
 * Arguments: [plain|bridged [LABEL]]: what to expect (default bridged), and the name that the
 * result lines carry after "mpi/" (default: the first argument).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>

#include "t.h"
#include "vramio.h"

#define MSG 4096
#define WHY 200

struct rank_result {
    int before_pooled, after_pooled;   /* the blocks came from vramio's pool */
    int pinned;                        /* libgdrapi pinned and mapped the block made after */
    int carried;                       /* rank 1: the message arrived through the mappings */
    char why[WHY];
};

static int pooled(CUdeviceptr d)
{
    unsigned long long base = 0;

    return vramio_alloc_range(d, &base, NULL) == 0;
}

struct pin {
    gdr_t g;
    gdr_mh_t mh;
    void *map;
    size_t off, len;
};

static int pin_map(CUdeviceptr d, size_t n, struct pin *p, char *why)
{
    gdr_info_t info;

    memset(p, 0, sizeof(*p));
    p->g = gdr_open();
    if (!p->g) {
        snprintf(why, WHY, "gdr_open: %s", vramio_last_error());
        return -1;
    }
    if (gdr_pin_buffer(p->g, (unsigned long)d, n, 0, 0, &p->mh)) {
        snprintf(why, WHY, "pin refused: %s", vramio_last_error());
        gdr_close(p->g);
        p->g = NULL;
        return -1;
    }
    /* The mapping starts at the pin's first GPU page, which may lie before d: map it all. */
    if (gdr_get_info(p->g, p->mh, &info) || gdr_map(p->g, p->mh, &p->map, info.mapped_size)) {
        snprintf(why, WHY, "map: %s", vramio_last_error());
        gdr_unpin_buffer(p->g, p->mh);
        gdr_close(p->g);
        p->g = NULL;
        return -1;
    }
    p->off = d - info.va;
    p->len = info.mapped_size;
    return 0;
}

static void unpin(struct pin *p)
{
    if (!p->g)
        return;
    gdr_unmap(p->g, p->mh, p->map, p->len);
    gdr_unpin_buffer(p->g, p->mh);
    gdr_close(p->g);
}

int main(int argc, char **argv)
{
    int plain = argc > 1 && !strcmp(argv[1], "plain");
    const char *mode = argc > 2 ? argv[2] : plain ? "plain" : "bridged";
    struct rank_result me = {0}, *all = NULL;
    unsigned char msg[MSG], got[MSG];
    CUdeviceptr before = 0, after = 0;
    struct pin p = {0};
    CUdevice dev;
    CUcontext ctx;
    int rank, size, i, failed = 0;

    /* The GPU picked and one block allocated before MPI_Init. */
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || cuMemAlloc(&before, MSG)) {
        fprintf(stderr, "not ok mpi/cuda_setup: the driver refused\n");
        return 1;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (cuMemAlloc(&after, MSG)) {
        snprintf(me.why, WHY, "cuMemAlloc after MPI_Init refused");
    } else {
        me.before_pooled = pooled(before);
        me.after_pooled = pooled(after);
        me.pinned = pin_map(after, MSG, &p, me.why) == 0;
    }

    /* Rank 0 -> rank 1 through both mappings (gdr_copy's eager path, in miniature). */
    if (size >= 2 && rank < 2) {
        int ok = me.pinned;

        if (rank == 0) {
            if (ok) {
                t_pattern(msg, MSG, 0x4d5049);
                gdr_copy_to_mapping(p.mh, (char *)p.map + p.off, msg, MSG);
                gdr_copy_from_mapping(p.mh, got, (char *)p.map + p.off, MSG);
            } else {
                memset(got, 0, MSG);
            }
            MPI_Send(got, MSG, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
        } else {
            MPI_Recv(got, MSG, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            t_pattern(msg, MSG, 0x4d5049);
            if (ok) {
                gdr_copy_to_mapping(p.mh, (char *)p.map + p.off, got, MSG);
                me.carried = !memcmp((void *)(uintptr_t)after, msg, MSG);
                if (!me.carried)
                    snprintf(me.why, WHY, "the block's bytes are not rank 0's message");
            }
        }
    }
    unpin(&p);

    if (rank == 0)
        all = calloc(size, sizeof(*all));
    MPI_Gather(&me, sizeof(me), MPI_BYTE, all, sizeof(me), MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (i = 0; i < size; i++) {
            struct rank_result *r = &all[i];
            int want = !plain;

#define CHECK(name, cond, ...)                                                      \
    do {                                                                            \
        if (cond) {                                                                 \
            printf("ok mpi/%s/rank%d/%s\n", mode, i, name);                         \
        } else {                                                                    \
            printf("not ok mpi/%s/rank%d/%s: ", mode, i, name);                      \
            printf(__VA_ARGS__);                                                    \
            printf("\n");                                                           \
            failed = 1;                                                             \
        }                                                                           \
    } while (0)
            CHECK(want ? "block_before_init_pooled" : "block_before_init_drivers",
                  r->before_pooled == want, "%s vramio's pool",
                  r->before_pooled ? "from" : "not from");
            CHECK(want ? "block_after_init_pooled" : "block_after_init_drivers",
                  r->after_pooled == want, "%s vramio's pool",
                  r->after_pooled ? "from" : "not from");
            CHECK(want ? "pinned_and_mapped" : "pin_refused", r->pinned == want, "%s (%s)",
                  r->pinned ? "pinned" : "not pinned", r->why[0] ? r->why : "no reason given");
            if (i == 1 && want)
                CHECK("message_through_the_mappings", r->carried, "%s", r->why);
#undef CHECK
        }
        printf("# %d ranks\n", size);
        free(all);
    }
    cuMemFree(after);
    cuMemFree(before);
    MPI_Finalize();
    return failed;
}

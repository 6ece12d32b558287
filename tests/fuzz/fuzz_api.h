/* SPDX-License-Identifier: MIT */
/*
 * fuzz_api.h - what the API fuzz target's two files share (fuzz_api.c: start, the end of
 * each input and its checks; fuzz_api_ops.c: the operations): the state of one input.
 */
#ifndef VRAMIO_FUZZ_API_H
#define VRAMIO_FUZZ_API_H

#include <stddef.h>
#include <stdint.h>
#include "fuzz_common.h"
#include "vramio.h"

#ifndef FUZZ_STANDIN
#error "FUZZ_STANDIN: cuda-dmabuf or cuda-vmm (tests/fuzz/fuzz.mk)"
#endif
/* 1 over the VMM stand-in and the Vulkan one, 0 over the dma-buf stand-in. */
#define FZ_VMM (FUZZ_STANDIN[5] == 'v')

#define FZ_OPS       64     /* operations per input at most */
#define FZ_NG        4      /* gdr_t slots */
#define FZ_NH        16     /* handle slots */
#define FZ_NA        8      /* vramio_alloc slots */
#define FZ_NGPU      8      /* the stand-ins' own GPU memory */
#define FZ_HOST_SIZE ((size_t)4 << 20)
#define FZ_GPU_PAGE  ((uint64_t)1 << 16)

struct fz_gdr {
    gdr_t g;                /* the last value of the slot: stale once closed */
    int open;
};

struct fz_handle {
    gdr_mh_t mh;            /* the last value of the slot: stale once unpinned */
    int g;                  /* its gdr_t's slot */
    int live;               /* pinned, neither unpinned nor closed with its gdr_t */
    uint64_t addr, size;    /* as pinned */
    uint64_t va, mapped_size, page_size;   /* as gdr_get_info_v2 said after the pin */
    void *map, *old_map;    /* the mapping (NULL: none), and the last one it had */
    size_t map_size;
    gdr_mapping_type_t map_type;
    int gpu_gone;           /* the memory under it was freed: no comparison with it */
};

struct fz_alloc {
    unsigned long long d;   /* 0: free slot */
    size_t size;
};

struct fz_gpu {
    uintptr_t base;
    size_t size;
};

struct fz_state {
    struct fz_gdr gdrs[FZ_NG];
    struct fz_handle hs[FZ_NH];
    struct fz_alloc allocs[FZ_NA];
    int faults;             /* a fault of a stand-in was set: driver calls may fail */
};

extern struct fz_state fz;
extern unsigned char *fz_host;          /* FZ_HOST_SIZE + 4096 bytes */
extern struct fz_gpu fz_gpus[FZ_NGPU];  /* the gdrdrv window, the stand-in's allocations */
extern int fz_ngpus;

/* fuzz_api_ops.c: one operation of the input */
void fz_op(struct fz_in *in);
/* The slots an operation works on: a gdr_t (an open or stale slot's value, NULL or a made-up
 * one; *slot its index or -1), a handle slot and the gdr_t to use it with (mostly its own:
 * *own says whether that is its open gdr_t). */
gdr_t fz_pick_g(struct fz_in *in, int *slot);
struct fz_handle *fz_pick_h(struct fz_in *in, gdr_t *g, int *own);
/* Whether mh is the value of a live pin (a stale value reused would be one). */
int fz_h_live_value(gdr_mh_t mh);
/* A finding when info disagrees with what the slot knows of the pin. */
void fz_check_info(const struct fz_handle *h, const gdr_info_v2_t *info, const char *when);
/* fuzz_api_copy.c */
void fz_op_copy(struct fz_in *in, int to_map, int automatic);
void fz_op_query(struct fz_in *in);
void fz_op_instance(struct fz_in *in);
void fz_op_alloc(struct fz_in *in);
void fz_op_free(struct fz_in *in);
/* One round of every kind of call, so that what lives as long as the process exists before
 * the counters that each input must give back are first taken. */
void fz_warm_up(void);
/* Every fault of the stand-ins off. */
void fz_faults_clear(void);

#endif /* VRAMIO_FUZZ_API_H */

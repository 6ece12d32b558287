/* SPDX-License-Identifier: MIT */
/* fuzz_ipc.h - what the two files of the IPC handle fuzzer share: fuzz_ipc_world.c (the
 * stand-ins, the input, the other process) and fuzz_ipc_handle.c (the operations and what
 * must hold). */
#ifndef VRAMIO_TESTS_BRIDGE_FUZZ_IPC_H
#define VRAMIO_TESTS_BRIDGE_FUZZ_IPC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "bridge_ipc.h"

#define SLAB_SMALL (2u << 20)
#define SLAB_LARGE (4u << 20)
#define SLAB_CHUNKED (6u << 20)  /* a pool block of three chunks of 2 MiB (alloc.c) */
#define NSLABS 3
#define NONCE_OTHER 0x0f0e0d0c0b0a0908ull /* the other process's server */
#define MAX_OPS 32                        /* operations of one input */
#define NBLOCKS 6

/* A check of the fuzzer: abort() (a crash to libFuzzer) with why. */
#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "fuzz_ipc_handle: %s:%d: ", __FILE__, __LINE__);                   \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

/* The pool: slabs of the stand-in's VMM memory (1 and 2 may be freed and made again), blocks
 * in them, which an input may free and allocate again (a new identity each time). Slab 2 is
 * a block of chunks: three allocations side by side in one reservation, the block whole. */
struct slab { CUdeviceptr base; size_t size; uint64_t id; unsigned chunks; };
struct block { int slab; uint64_t off, size; int live; };
extern struct slab slabs[NSLABS];
extern struct block blocks[NBLOCKS];
extern int exported[NSLABS];  /* the server holds a record of slab i (fuzz_ipc_handle.c) */
CUdeviceptr block_base(unsigned k);
void block_alloc(unsigned k);
void block_free(unsigned k);
void slab_make(struct slab *s, size_t size, unsigned chunks);
void slab_remake(unsigned i);

/* The input, read from its start; past its end every byte reads 0. */
struct in { const uint8_t *p; size_t n; };
uint8_t u8(struct in *in);
uint64_t u64(struct in *in);
uint64_t edge(struct in *in); /* a value at the edge of what the fields mean */
/* Change one of the fields f (offsets and widths) of obj, or one of its len bytes. */
struct field { size_t off, width; };
void mutate(struct in *in, void *obj, size_t len, const struct field *f, size_t nf);
#define NHANDLE_FIELDS 10
#define NREQ_FIELDS 8
extern const struct field handle_fields[NHANDLE_FIELDS], req_fields[NREQ_FIELDS];

/* The other process: how it answers the connections of the next open (from the input). */
void script_read(struct in *in);
void responder_start(void);
extern int busy;              /* connections the responder holds (atomic) */
extern int all_honest;        /* every answer of this input so far was the bridge's own */
extern unsigned long pipes[MAX_OPS * 2]; /* inodes of the pipes it sent in this input */
extern unsigned npipes;

/* Sockets and memfds open (a pipe the responder sent still open: abort). */
int fd_count(void);
/* A counter of the stand-in driver (fake_vmm_live, ...). */
int fake_int(const char *name);

#endif /* VRAMIO_TESTS_BRIDGE_FUZZ_IPC_H */

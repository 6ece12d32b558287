/* SPDX-License-Identifier: MIT */
/*
 * syz_types.h - the types of the call table that syz_table.awk makes from the syzkaller
 * descriptions (driver/syzkaller/), for the guest's ioctl fuzzer (fuzz_ioctl_test.c).
 */
#ifndef VRAMIO_SYZ_TYPES_H
#define VRAMIO_SYZ_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* What a field of a struct holds, as the description says. */
enum syz_kind {
    SYZ_K_INT,      /* any number of its size */
    SYZ_K_CONST,    /* the value a */
    SYZ_K_FLAGS,    /* one of set's values */
    SYZ_K_RANGE,    /* a, a + step, ..., b */
    SYZ_K_RES,      /* a resource: given (in), or made by the call (out) */
};

/* The direction of an ioctl's argument. */
enum syz_dir { SYZ_IN, SYZ_OUT, SYZ_INOUT };

struct syz_field {
    const char *name;
    enum syz_kind kind;
    int size;               /* bytes: 1, 2, 4 or 8; fields lie at their natural alignment */
    uint64_t a, b, step;
    int set;                /* SYZ_K_FLAGS: index in syz_sets */
    int res;                /* SYZ_K_RES: index in syz_resources */
    int out;                /* written by the call */
};

struct syz_struct {
    const char *name;
    const struct syz_field *fields;
    int nfields;
};

struct syz_set {
    const char *name;
    const uint64_t *values;
    size_t count;
};

struct syz_resource {
    const char *name;
    int is_fd;              /* a file descriptor, opened from dev */
    const char *dev;
    const uint64_t *special;    /* values a fuzzer tries beside the made ones */
    int nspecial;
};

struct syz_call {
    const char *name;
    unsigned long cmd;
    int fd_res;             /* the resource its descriptor is */
    enum syz_dir dir;
    int st;                 /* its argument's struct */
};

#endif /* VRAMIO_SYZ_TYPES_H */

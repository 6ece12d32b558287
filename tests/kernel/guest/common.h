/* SPDX-License-Identifier: MIT */
/*
 * common.h - helpers of the QEMU guest test programs: result lines in the tests/run.sh
 * protocol (ok NAME / not ok NAME: why / skip NAME: why) and wrappers of the emulated
 * provider's control device (tests/kernel/nvp2p_emu.h). The programs are linked statically
 * and run inside the guest only.
 */
#ifndef VRAMIO_GUEST_COMMON_H
#define VRAMIO_GUEST_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nvp2p_emu.h"

extern int t_failures;

void t_ok(const char *name);
void t_fail(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void t_skip(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ok when cond holds, else not ok with the formatted reason; returns cond. */
int t_check(int cond, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Exit status for a program that printed its own result lines. */
int t_exit_status(void);

/* The provider's control device; each returns 0 or a positive errno. */
int emu_fd(void);
int emu_alloc(uint64_t size, unsigned int page_kind, unsigned int flags, uint64_t *va);
int emu_free(uint64_t va);
int emu_write(uint64_t va, const void *buf, size_t len);
int emu_read(uint64_t va, void *buf, size_t len);
int emu_stats(struct nvp2p_emu_stats *st);
int emu_inject(unsigned int what, unsigned int count, int errno_value);
int emu_cb_delay(unsigned int ms);
int emu_phys(uint64_t va, uint64_t *phys);    /* physical address behind va */
int emu_pte(const void *addr, uint64_t *pfn, uint32_t *cache_mode); /* our PTE of addr */
int emu_hold(uint64_t va, uint64_t len, unsigned mode); /* another owner's PAT entry */
int emu_release(uint64_t va);

/* Whether the provider is in its coherent mode (NVP2P_EMU_COHERENT_PARAM says Y). */
int emu_coherent(void);

/* The leak counter and the number of free callbacks fired so far (0 if unreadable). */
uint64_t emu_live_pins(void);
uint64_t emu_callbacks_fired(void);

/* Wait for a child; returns its exit status, or 128 + signal number. */
int wait_child(pid_t pid);

/* 1 when reading the byte at p raises SIGBUS, 0 when it reads. */
int read_faults(const volatile void *p);

/* Deterministic fill pattern: byte i of a buffer tagged `seed`. */
void fill_pattern(void *buf, size_t len, uint32_t seed);

/* Pass fd with a 64-bit handle over a UNIX socket (SCM_RIGHTS): 0 or -1. */
int send_fd(int sock, int fd, uint64_t handle);
/* Receive what send_fd sent: the fd, or -1 (also when no fd came with the message). */
int recv_fd(int sock, uint64_t *handle);

#endif /* VRAMIO_GUEST_COMMON_H */

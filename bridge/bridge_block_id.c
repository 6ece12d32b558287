/* SPDX-License-Identifier: MIT */
/*
 * bridge_block_id.c - the identities of pool blocks: the BUFFER_ID the bridge answers for a
 * block (bridge_attr.c) and the block_id its IPC handle carries (bridge_ipc.h).
 *
 * An exporter sends a slab's fds to a peer whose handle names a live block with its identity
 * (bridge_ipc.c, block_still_there). Every other field of a handle can be learnt or guessed by
 * another process of the same user, even one that may not ptrace the exporter: the server's
 * nonce is in /proc/net/unix, slab addresses and the driver's BUFFER_IDs are small and near
 * each other, offsets follow the pool's layout. So the identity is what must not be guessed:
 * were ids counted up by one, a peer sent one block's handle could name the next block and be
 * given memory it was never shared (tests/bridge/ipc_client.c, neighbour).
 *
 * So the id of a process's n-th block is n through a keyed block cipher, with a key the
 * process draws from the kernel's random bytes at its first id:
 *   - unique per allocation: a cipher is a permutation, and a permutation of the counts never
 *     repeats an id (the count wraps after 2^63 allocations, centuries away);
 *   - in the top half of the 64-bit space, as before: the driver's BUFFER_IDs count up from 1,
 *     and a block's must never equal a slab's. The cipher maps 64-bit blocks; its outputs are
 *     encrypted again until one lies below 2^63 (cycle walking: this restricts the permutation
 *     to the 63-bit counts, two encryptions on average), and the id is that with bit 63 set;
 *   - unpredictable without the key, from other ids too;
 *   - cheap: no system call but the key's; two encryptions of 27 rounds on average, well under
 *     a microsecond on the allocation path.
 * The cipher is Speck64/128 as its designers specify it (a 64-bit block of two 32-bit words,
 * a key of four, 27 rounds of add, rotate and xor): written here from that description, and
 * checked against their test vector (key 1b1a1918 13121110 0b0a0908 03020100, plaintext
 * 3b726574 7475432d, ciphertext 8c6fa548 454e028b).
 *
 * The state is guarded by bridge_attr.c's lock, which every caller holds and which a fork
 * takes (bridge_fork.c); this file takes no lock of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "bridge.h"
#include "nocancel.h"   /* util/: calls that are no cancellation points */

#define ROUNDS 27
#define TOP (1ull << 63)

static uint32_t round_keys[ROUNDS];
static uint64_t count;      /* ids made so far in this process */
static int keyed;           /* round_keys are this process's: 0 before its first id and forks */

static uint32_t ror32(uint32_t v, unsigned s) { return v >> s | v << (32 - s); }
static uint32_t rol32(uint32_t v, unsigned s) { return v << s | v >> (32 - s); }

/* Speck64/128's key schedule: key[0] is the first round key, key[1..3] the words that feed
 * the others (the designers write the key as key[3] key[2] key[1] key[0]). */
static void schedule(uint32_t rk[ROUNDS], const uint32_t key[4])
{
    uint32_t k = key[0], l[ROUNDS + 2] = { key[1], key[2], key[3] };
    unsigned i;

    for (i = 0; i + 1 < ROUNDS; i++) {
        rk[i] = k;
        l[i + 3] = (k + ror32(l[i], 8)) ^ i;
        k = rol32(k, 3) ^ l[i + 3];
    }
    rk[ROUNDS - 1] = k;
}

/* Speck64/128's encryption of the block b (its high word the designers' first, x). */
static uint64_t encrypt(const uint32_t rk[ROUNDS], uint64_t b)
{
    uint32_t x = (uint32_t)(b >> 32), y = (uint32_t)b;
    unsigned i;

    for (i = 0; i < ROUNDS; i++) {
        x = (ror32(x, 8) + y) ^ rk[i];
        y = rol32(y, 3) ^ x;
    }
    return (uint64_t)x << 32 | y;
}

/* 16 bytes of /dev/urandom: for kernels before getrandom (3.17), or a seccomp filter that
 * refuses it. 1 when read. */
static int from_urandom(void *key, size_t len)
{
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC | O_NOCTTY);
    size_t got = 0;
    ssize_t n;

    if (fd < 0)
        return 0;
    while (got < len) {
        n = read(fd, (char *)key + got, len - got);
        if (n > 0)
            got += (size_t)n;
        else if (n == 0 || errno != EINTR)
            break;
    }
    close(fd);
    return got == len;
}

/*
 * The last resort, where neither the kernel's call nor its device gives bytes (a sandbox
 * without /dev, no descriptor left): the 16 random bytes the kernel put in this process's
 * memory at exec (AT_RANDOM), which another process cannot read without ptrace (the auxiliary
 * vector in /proc gives their address, not them), as a key that encrypts the clock, the pid
 * and the count. It never fails. Its weakness: a process forked from this one (or the one
 * this was forked from) has the same bytes, and is left to guess the clock's nanoseconds.
 */
static void from_auxv(uint32_t key[4])
{
    const void *at = (const void *)getauxval(AT_RANDOM);
    uint32_t seed[4] = { 0 }, rk[ROUNDS];
    struct timespec ts = { 0, 0 };
    uint64_t a, b;

    if (at)
        memcpy(seed, at, sizeof(seed));
    schedule(rk, seed);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    a = encrypt(rk, (uint64_t)ts.tv_sec << 32 ^ (uint64_t)ts.tv_nsec);
    b = encrypt(rk, (uint64_t)getpid() << 32 ^ count);
    memcpy(key, &a, sizeof(a));
    memcpy(key + 2, &b, sizeof(b));
}

/* A new key from the kernel's random bytes. GRND_NONBLOCK: a program started before the
 * kernel's pool is ready (early boot) takes /dev/urandom's bytes rather than wait there with
 * the caller's lock held. */
static void draw(uint32_t key[4])
{
    if (getrandom(key, 4 * sizeof(key[0]), GRND_NONBLOCK) != (ssize_t)(4 * sizeof(key[0])) &&
        !from_urandom(key, 4 * sizeof(key[0])))
        from_auxv(key);
}

/* The key's calls are cancellation points, made with the caller's lock held: cancellation is
 * off meanwhile (util/nocancel.h). */
static void rekey(void)
{
    uint32_t key[4];
    int old = vr_nocancel_begin();

    draw(key);
    vr_nocancel_end(old);
    schedule(round_keys, key);
    keyed = 1;
}

unsigned long long vb_block_id_next(void)
{
    uint64_t b = count++ & ~TOP;

    if (!keyed)
        rekey();
    do
        b = encrypt(round_keys, b);
    while (b & TOP);
    return b | TOP;
}

/*
 * After a fork, each side draws a new key before its next id. The child has a copy of the
 * parent's key and count: kept, its next ids would be the parent's next ones, so a peer given
 * the child's handle of its n-th block would know the id of the parent's n-th (a block it was
 * never shared); and each side would know the other's ids to come (a child that goes on to run
 * less trusted code, a sandbox's worker, has the parent's key in its memory, and the parent the
 * child's). The count goes on. The blocks the child kept keep their ids: they are the same
 * memory on both sides, so a handle of one names nothing in the other process that the handle
 * did not give in this one.
 * Ids of one key never repeat; one of the new key may equal one of the old that a block still
 * holds, with a chance of (blocks held) x (ids made since) / 2^63: one in ten million for a
 * million of each. That is accepted: two live blocks would answer one BUFFER_ID, and a handle
 * would still name one of them (it names the block's address too).
 */
void vb_block_id_forked(void)
{
    keyed = 0;
}

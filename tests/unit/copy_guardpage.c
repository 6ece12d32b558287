// SPDX-License-Identifier: MIT
/*
 * copy_guardpage.c - no copy path touches a byte outside [src, src+n) or [dst, dst+n).
 *
 * A BAR mapping may end exactly where the copied range ends, and an access past it faults;
 * a head that reads an aligned-down block, or a tail that reads a rounded-up one, would
 * do so. Here both the mapping and the host buffer sit in the middle page of three whose
 * outer pages are PROT_NONE, and each range starts at the middle page's first byte, ends
 * at its last byte, or both; sizes 0 to a page, so the misalignment of a range that ends at
 * the boundary takes every value. A stray access raises SIGSEGV, caught and reported.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "copy_test.h"

static sigjmp_buf fault_jmp;
static unsigned char *map, *host;
static size_t page;

static const struct vr_copy_kernel *copy_table_extra(const char *name)
{
    return NULL;
}

static void on_fault(int sig)
{
    siglongjmp(fault_jmp, 1);
}

/* Three pages; the outer two made inaccessible. Returns the middle page. */
static unsigned char *guarded_page(size_t page)
{
    unsigned char *p = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED)
        return NULL;
    if (mprotect(p, page, PROT_NONE) || mprotect(p + 2 * page, page, PROT_NONE))
        return NULL;
    return p + page;
}

/* Runs one copy; 0 if it finished without a fault. */
static int guarded_copy(const struct copy_direction *dir, gdr_mapping_type_t type, void *dst,
                        const void *src, size_t n)
{
    if (sigsetjmp(fault_jmp, 1))
        return 1;
    dir->fn(type, dst, src, n);
    return 0;
}

/* Proves the harness can fail: a read of the guard page must be caught. */
static int self_check(const unsigned char *page)
{
    if (sigsetjmp(fault_jmp, 1))
        return 1;
    (void)*(const volatile unsigned char *)(page - 1);
    return 0;
}

/* The kernel this process got, every direction and mapping type. */
static void run_kernel(const struct vr_copy_kernel *own)
{
    size_t d, t, n, where;

    for (d = 0; d < COPY_N_DIRECTIONS; d++)
        for (t = 0; t < COPY_N_TYPES; t++) {
            const struct copy_direction *dir = &copy_directions[d];
            char first[160] = "", name[128];
            unsigned long bad = 0;

            for (n = 0; n <= page; n++)
                for (where = 0; where < 4; where++) {
                    /* bit 0: mapping range at the page end, bit 1: host range there */
                    unsigned char *m = (where & 1) ? map + page - n : map;
                    unsigned char *h = (where & 2) ? host + page - n : host;
                    unsigned char *dst = dir->to_map ? m : h;
                    unsigned char *src = dir->to_map ? h : m;
                    const char *why = NULL;
                    size_t b;

                    for (b = 0; b < n; b++)
                        src[b] = (unsigned char)(b * 13 + n);
                    if (guarded_copy(dir, copy_types[t].type, dst, src, n))
                        why = "access outside the range (SIGSEGV)";
                    else if (memcmp(dst, src, n) != 0)
                        why = "wrong bytes";
                    if (why && bad++ == 0)
                        snprintf(first, sizeof(first), "n=%zu mapping at page %s, host at "
                                 "page %s: %s", n, (where & 1) ? "end" : "start",
                                 (where & 2) ? "end" : "start", why);
                }
            /* Small reads (1-64 B, the small_read path) at every place in the first and
             * the last two lines of the page: with the guard page before and after. */
            for (n = 1; n <= 64 && !dir->to_map; n++)
                for (where = 0; where < 256; where++) {
                    size_t off = where < 128 ? where : page - n - (where - 128);
                    const char *why = NULL;
                    size_t b;

                    for (b = 0; b < n; b++)
                        map[off + b] = (unsigned char)(b * 7 + n + where);
                    memset(host, 0, 64);
                    if (guarded_copy(dir, copy_types[t].type, host, map + off, n))
                        why = "access outside the page (SIGSEGV)";
                    else if (memcmp(host, map + off, n) != 0)
                        why = "wrong bytes";
                    if (why && bad++ == 0)
                        snprintf(first, sizeof(first), "small read n=%zu at page offset %zu:"
                                 " %s", n, off, why);
                }
            snprintf(name, sizeof(name), "copy_guardpage/%s/%s/%s", vr_copy_kernel_name(),
                     dir->name, copy_types[t].name);
            t_check(!bad, name, "%lu cases failed, first: %s", bad, first);
        }
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    int rc;

    page = (size_t)sysconf(_SC_PAGESIZE);
    map = guarded_page(page);
    host = guarded_page(page);
    if (!map || !host) {
        t_fail("copy_guardpage", "cannot set up guard pages");
        return t_status();
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_fault;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    if (!t_child_mode(argc, argv))
        t_check(self_check(map), "copy_guardpage/self-check",
                "a read of the guard page was not caught");
    rc = copy_test_each_kernel("copy_guardpage", argc, argv, NULL, run_kernel);
    return rc >= 0 ? rc : t_status();
}

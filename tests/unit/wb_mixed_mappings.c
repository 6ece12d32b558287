/* SPDX-License-Identifier: MIT */
/*
 * wb_mixed_mappings.c - white-box test of the mapping census (src/core/handles.c) behind the
 * mixed-mappings fence rule: vr_mappings_mixed() holds exactly while mappings of two or more
 * types are live, through map and unmap in any order, unpin of a mapped pin, many threads
 * mapping and unmapping at once, and a fork (the child starts with no mappings); copies still
 * move the bytes while the rule is in force. Built also under TSan.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "t.h"
#include "gdrapi.h"
#include "core/handles.h"
#include "wb/hooks.h"

static char area[4][4096];

static unsigned long map_as(int i, gdr_mapping_type_t type)
{
    unsigned long tok = 0;

    if (vr_handles_test_insert(area[i], sizeof(area[i]), type, &tok) != 0)
        t_check(0, "insert", "vr_handles_test_insert(%d) failed", i);
    return tok;
}

static void test_transitions(void)
{
    unsigned long wc, wc2, cached, dev;

    t_check(!vr_mappings_mixed(), "none_not_mixed", "mixed with no mapping");
    wc = map_as(0, GDR_MAPPING_TYPE_WC);
    wc2 = map_as(1, GDR_MAPPING_TYPE_WC);
    t_check(!vr_mappings_mixed(), "one_type_not_mixed", "two WC mappings count as mixed");
    cached = map_as(2, GDR_MAPPING_TYPE_CACHING);
    t_check(vr_mappings_mixed(), "wc_and_caching_mixed", "WC + CACHING not mixed");
    vr_handles_test_remove(wc);
    t_check(vr_mappings_mixed(), "still_mixed", "one WC of two gone: still WC + CACHING");
    vr_handles_test_remove(wc2);
    t_check(!vr_mappings_mixed(), "caching_alone_not_mixed", "only CACHING left, still mixed");
    dev = map_as(0, GDR_MAPPING_TYPE_DEVICE);
    t_check(vr_mappings_mixed(), "caching_and_device_mixed", "CACHING + DEVICE not mixed");
    vr_handles_test_remove(cached);
    vr_handles_test_remove(dev);
    t_check(!vr_mappings_mixed() && vr_map_census == 0, "all_gone_clean",
            "census 0x%llx after every mapping went", (unsigned long long)vr_map_census);
}

/* Data still moves, in both directions, through the fenced path. */
static void test_copies_while_mixed(void)
{
    unsigned long wc = map_as(0, GDR_MAPPING_TYPE_WC), cached = map_as(1, GDR_MAPPING_TYPE_CACHING);
    gdr_mh_t hw = { wc }, hc = { cached };
    char in[300], out[300];
    int rc;

    for (size_t i = 0; i < sizeof(in); i++)
        in[i] = (char)(i * 7 + 1);
    rc = gdr_copy_to_mapping(hw, area[0] + 3, in, sizeof(in)) |
         gdr_copy_to_mapping(hc, area[1] + 5, in, sizeof(in));
    memset(out, 0, sizeof(out));
    rc |= gdr_copy_from_mapping(hc, out, area[1] + 5, sizeof(out));
    t_check(vr_mappings_mixed() && !rc && !memcmp(in, area[0] + 3, sizeof(in)) &&
            !memcmp(in, out, sizeof(out)), "copies_while_mixed", "rc %d, data differs", rc);
    vr_handles_test_remove(wc);
    vr_handles_test_remove(cached);
}

/* Threads map and unmap two types at once: the census ends at zero, never negative. */
static void *flip(void *arg)
{
    long id = (long)arg;
    static char mem[8][64];

    for (int i = 0; i < 2000; i++) {
        unsigned long tok = 0;

        if (vr_handles_test_insert(mem[id], sizeof(mem[id]),
                                   (id & 1) ? GDR_MAPPING_TYPE_CACHING : GDR_MAPPING_TYPE_WC, &tok) == 0)
            vr_handles_test_remove(tok);
    }
    return NULL;
}

static void test_threads(void)
{
    pthread_t t[8];

    for (long i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, flip, (void *)i);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    t_check(vr_map_census == 0, "threads_census_back_to_zero", "census 0x%llx",
            (unsigned long long)vr_map_census);
}

/* A forked child inherits no mappings of the library (handles.c resets them): not mixed. */
static void test_fork(void)
{
    unsigned long wc = map_as(0, GDR_MAPPING_TYPE_WC), cached = map_as(1, GDR_MAPPING_TYPE_CACHING);
    pid_t pid = fork();
    int status = -1;

    if (pid == 0)
        exit(vr_mappings_mixed() || vr_map_census != 0);
    waitpid(pid, &status, 0);
    t_check(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork_child_not_mixed",
            "status 0x%x", status);
    t_check(vr_mappings_mixed(), "fork_parent_still_mixed", "the parent lost its census");
    vr_handles_test_remove(wc);
    vr_handles_test_remove(cached);
}

int main(void)
{
    test_transitions();
    test_copies_while_mixed();
    test_threads();
    test_fork();
    return t_status();
}

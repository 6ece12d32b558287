/* SPDX-License-Identifier: MIT */
/*
 * test_fork.c - a child of fork() that uses its parent's gdr_t and handles (as some MPI
 * launchers and test harnesses do) gets errors or results, never a crash or a hang, and the
 * parent's instance keeps working. Forks also while other threads are inside the library.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "t.h"
#include "vramio.h"

static gdr_t g;
static _Atomic int stop;

/* Everything a child might call on an inherited instance; the results do not matter here. */
static void use_everything(gdr_t gg)
{
    char buf[256];
    int v, major, minor;
    void *va;
    gdr_info_t info;
    vramio_backend_t be;
    gdr_mh_t mh = { 0 };

    gdr_pin_buffer(gg, (unsigned long)buf, sizeof(buf), 0, 0, &mh);
    gdr_get_info_v2(gg, mh, &info);
    gdr_map(gg, mh, &va, 65536);
    gdr_copy_to_mapping(mh, buf, buf + 64, 64);
    gdr_unpin_buffer(gg, mh);
    gdr_get_attribute(gg, GDR_ATTR_USE_PERSISTENT_MAPPING, &v);
    gdr_driver_get_version(gg, &major, &minor);
    vramio_get_backend(gg, &be);
    vramio_backend_status(gg, VRAMIO_BACKEND_VULKAN, buf, sizeof(buf));
}

static void *busy(void *arg)
{
    while (!stop)
        use_everything(g);
    return NULL;
}

/* Fork; the child runs use_everything, closes g, and leaves through exit() (the library's
 * and the C runtime's exit path) or _exit(). 0 when it exited 0 in time. */
static int fork_child(int through_exit)
{
    int status;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        alarm(30);
        use_everything(g);
        gdr_close(g);
        use_everything(g); /* still refused in the child */
        if (through_exit)
            exit(0);
        _exit(0);
    }
    if (t_wait_bounded(pid, &status, 60) != 0)
        return -1;
    if (WIFSIGNALED(status))
        printf("# child killed by signal %d\n", WTERMSIG(status));
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(void)
{
    pthread_t t[3];
    int i, bad = 0, v;

    g = gdr_open();
    if (!g)
        printf("# no usable backend: the child inherits a NULL gdr_t\n");
    t_check(fork_child(1) == 0, "child_uses_parent_gdr_exit", "the child crashed, hung or failed");
    t_check(fork_child(0) == 0, "child_uses_parent_gdr__exit", "the child crashed, hung or failed");
    if (g)
        t_check(gdr_get_attribute(g, GDR_ATTR_USE_PERSISTENT_MAPPING, &v) == 0,
                "parent_gdr_still_works", "the parent's instance broke");

    for (i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, busy, NULL);
    for (i = 0; i < 10; i++) {
        usleep(2000);
        bad += fork_child(i % 2) != 0;
    }
    stop = 1;
    for (i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    t_check(bad == 0, "fork_while_threads_in_library", "%d of 10 children failed", bad);
    if (g)
        t_check(gdr_close(g) == 0, "parent_close", "gdr_close failed");
    else
        t_check(gdr_close(g) == EINVAL, "parent_close_null", "not EINVAL");
    return t_status();
}

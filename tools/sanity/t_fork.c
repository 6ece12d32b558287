/* SPDX-License-Identifier: MIT */
/*
 * t_fork.c - a gdr_t, its pins and mappings across fork() and across processes (GDRCopy 2.6's
 * invalidation_fork_* and invalidation_unix_sock_shared_fd_* tests). gdrdrv refuses ioctls
 * and mmap from any process but the opener, and its mappings are not inherited; every backend
 * must refuse the parent's gdr_t in a child with an error, never a crash.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "uapi/gdrdrv.h"

#define FORK_SIZE GPU_PAGE_SIZE

void t_access_after_free(gdr_t g, struct gm_buf *b);

struct fork_arg {
    gdr_t g;
    gdr_mh_t mapped, unmapped;
    char *p;
    vramio_backend_t backend;
    uint64_t addr;
};

static int child_after_map(void *arg)
{
    struct fork_arg *a = arg;
    gdr_mh_t mh;
    void *map = NULL;

    /* No backend's mapping is inherited (gdrdrv: VM_DONTCOPY; the user-space backends mark
     * theirs MADV_DONTFORK): the address is empty in the child, which faults. */
    if (t_access(a->p, 0) == 0)
        t_fail_exit("the child could read the parent's %s mapping",
                    vramio_backend_name(a->backend));
    if (t_access(a->p, 1) == 0)
        t_fail_exit("the child could write the parent's %s mapping",
                    vramio_backend_name(a->backend));
    T_ASSERT_EQ_ERR(gdr_map(a->g, a->unmapped, &map, FORK_SIZE), EACCES);
    T_ASSERT_EQ_ERR(gdr_pin_buffer_v2(a->g, a->addr, FORK_SIZE, 0, &mh), EACCES);
    return 0;
}

T_CASE(invalidation_fork_after_gdr_map, T_UPSTREAM,
       "a forked child cannot use its parent's gdr_t or mappings")
{
    struct fork_arg a = { 0 };
    struct gm_buf b;
    void *map;
    size_t map_size;
    uint32_t v = 0xf0f0f0f0;
    int st;

    t_alloc(2 * FORK_SIZE, &b);
    a.g = t_open();
    a.addr = b.dptr;
    a.p = t_pin_map(a.g, b.dptr, FORK_SIZE, &a.mapped, &map, &map_size);
    T_ASSERT_OK(vramio_handle_backend(a.g, a.mapped, &a.backend));
    T_ASSERT_OK(gdr_pin_buffer_v2(a.g, b.dptr + FORK_SIZE, FORK_SIZE, 0, &a.unmapped));
    /* The child leaves through exit() (its C runtime and the drivers' exit path), then
     * another through _exit(): neither may crash, hang, or disturb the parent. */
    st = t_in_child_ending(child_after_map, &a, 1);
    T_ASSERT(st == 0, "the child (exit()) ended with status %d", st);
    st = t_in_child_ending(child_after_map, &a, 0);
    T_ASSERT(st == 0, "the child (_exit()) ended with status %d", st);
    /* The parent's mapping is untouched by the child's attempts and exit. */
    T_ASSERT_OK(gdr_copy_to_mapping(a.mapped, a.p, &v, sizeof(v)));
    t_check_gpu(&b, 0, &v, sizeof(v), "parent's mapping after the child");
    T_ASSERT_OK(gdr_unpin_buffer(a.g, a.unmapped));
    t_unmap_unpin(a.g, a.mapped, map, map_size);
    T_ASSERT_OK(gdr_close(a.g));
    t_free(&b);
}

static int child_maps_parent_pin(void *arg)
{
    struct fork_arg *a = arg;
    void *map = NULL;
    int rc = gdr_map(a->g, a->unmapped, &map, FORK_SIZE);

    if (rc == 0)
        t_fail_exit("the child mapped its parent's pin");
    T_ASSERT(rc == EACCES, "the child's gdr_map of its parent's pin returned %d, expected EACCES",
             rc);
    return 0;
}

T_CASE(invalidation_fork_child_gdr_map_parent, T_UPSTREAM,
       "a child's refused gdr_map leaves the parent's pin usable")
{
    struct fork_arg a = { 0 };
    struct gm_buf b;
    uint32_t v = 0x0badf00d;
    void *map;
    gdr_info_t info;
    int st;

    t_alloc(FORK_SIZE, &b);
    a.g = t_open();
    T_ASSERT_OK(gdr_pin_buffer_v2(a.g, b.dptr, FORK_SIZE, 0, &a.unmapped));
    st = t_in_child(child_maps_parent_pin, &a);
    T_ASSERT(st == 0, "the child ended with status %d", st);
    /* The refused attempt left the pin unmapped and mappable by its owner. */
    T_ASSERT_OK(gdr_get_info(a.g, a.unmapped, &info));
    T_ASSERT(!info.mapped, "the pin is marked mapped after the child's refused gdr_map");
    T_ASSERT_OK(gdr_map(a.g, a.unmapped, &map, info.mapped_size));
    T_ASSERT_OK(gdr_copy_to_mapping(a.unmapped, (char *)map + (b.dptr - info.va), &v, sizeof(v)));
    t_check_gpu(&b, 0, &v, sizeof(v), "parent maps after the child's attempt");
    t_unmap_unpin(a.g, a.unmapped, map, info.mapped_size);
    T_ASSERT_OK(gdr_close(a.g));
    t_free(&b);
}

static int child_exits(void *arg)
{
    return 0;
}

T_CASE(invalidation_fork_access_after_free, T_UPSTREAM,
       "a child's exit spares the parent; then free under the mapping")
{
    struct gm_buf b;
    gdr_t g;
    int st;

    t_alloc(FORK_SIZE, &b);
    g = t_open();
    /* A child that exits at once (running the library's exit path) must not disturb the
     * parent; then the parent frees the memory under its mapping. */
    st = t_in_child(child_exits, NULL);
    T_ASSERT(st == 0, "the child ended with status %d", st);
    t_access_after_free(g, &b);
    T_ASSERT_OK(gdr_close(g));
}

static int child_opens_own(void *arg)
{
    const struct gm_buf *b = arg;
    unsigned char want[256];
    gdr_mh_t mh;
    void *map;
    size_t map_size;
    char *p;
    gdr_t g = t_open();

    p = t_pin_map(g, b->dptr, FORK_SIZE, &mh, &map, &map_size);
    t_pattern(want, sizeof(want), 31);
    T_ASSERT_OK(gdr_copy_to_mapping(mh, p, want, sizeof(want)));
    t_check_gpu(b, 0, want, sizeof(want), "the child's own mapping");
    t_unmap_unpin(g, mh, map, map_size);
    T_ASSERT_OK(gdr_close(g));
    return 0;
}

T_CASE(invalidation_fork_child_gdr_open, 0, "a forked child opens its own gdr_t and maps")
{
    struct gm_buf b;
    int st;

    if (gm_kind_is_cuda(T.kind))
        t_skip_exit("CUDA cannot be used in a child forked after cuInit, so a forked child cannot "
                    "pin %s memory of its own", gm_kind_name(T.kind));
    t_alloc(FORK_SIZE, &b);
    st = t_in_child(child_opens_own, &b);
    T_ASSERT(st == 0, "the child ended with status %d", st);
    t_free(&b);
}

/* The /dev/gdrdrv descriptor the library opened, found through /proc (no private headers). */
static int find_gdrdrv_fd(void)
{
    char path[300], target[PATH_MAX];
    struct dirent *e;
    DIR *d = opendir("/proc/self/fd");
    int fd = -1;

    while (d && (e = readdir(d)) != NULL) {
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        n = readlink(path, target, sizeof(target) - 1);
        if (n > 0) {
            target[n] = '\0';
            if (strcmp(target, "/dev/gdrdrv") == 0) {
                fd = atoi(e->d_name);
                break;
            }
        }
    }
    if (d)
        closedir(d);
    return fd;
}

static int send_fd(int sock, int fd)
{
    char byte = 'F', ctl[CMSG_SPACE(sizeof(int))];
    struct iovec iov = { &byte, 1 };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
                          .msg_controllen = sizeof(ctl) };
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    return sendmsg(sock, &msg, 0) == 1 ? 0 : errno;
}

static int recv_fd(int sock)
{
    char byte, ctl[CMSG_SPACE(sizeof(int))];
    struct iovec iov = { &byte, 1 };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
                          .msg_controllen = sizeof(ctl) };
    struct cmsghdr *c;
    int fd = -1;

    if (recvmsg(sock, &msg, 0) != 1)
        return -1;
    c = CMSG_FIRSTHDR(&msg);
    if (c && c->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(c), sizeof(int));
    return fd;
}

/* The receiving process: the descriptor arrives, and the module must refuse its use. */
static void receiver(int sock, uint64_t addr, int try_mmap)
{
    struct gdrdrv_pin_buffer pin = { .addr = addr, .size = FORK_SIZE };
    int fd = recv_fd(sock);

    if (fd < 0)
        t_fail_exit("no descriptor received over the UNIX socket");
    if (ioctl(fd, GDRDRV_IOC_PIN_BUFFER, &pin) == 0)
        t_fail_exit("gdrdrv pinned memory for a process that did not open it");
    if (errno != EACCES)
        t_fail_exit("PIN_BUFFER from another process failed with %s, expected EACCES",
                    strerror(errno));
    if (try_mmap) {
        /* Whatever the parent's handle is, no offset may map in this process. */
        for (unsigned long h = 0; h < 64; h++) {
            void *m = mmap(NULL, FORK_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                           (off_t)(h << 12));
            if (m != MAP_FAILED)
                t_fail_exit("gdrdrv mapped offset handle %lu for a process that did not open it",
                            h);
        }
    }
    _exit(0);
}

static void shared_fd(int try_mmap)
{
    struct gm_buf b;
    gdr_mh_t mh;
    void *map;
    size_t map_size;
    int sv[2], fd, status;
    pid_t pid;
    gdr_t g;

    t_alloc(FORK_SIZE, &b);
    T_ASSERT(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0, "socketpair: %s", strerror(errno));
    /* The receiver is forked before gdr_open: it never inherited the descriptor. */
    fflush(NULL);
    pid = fork();
    T_ASSERT(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        close(sv[0]);
        alarm(60);
        receiver(sv[1], b.dptr, try_mmap);
    }
    close(sv[1]);
    g = t_open();
    t_pin_map(g, b.dptr, FORK_SIZE, &mh, &map, &map_size);
    fd = find_gdrdrv_fd();
    if (fd < 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        t_skip_exit("the %s backend holds no /dev/gdrdrv descriptor to share", t_backend(g));
    }
    T_ASSERT_OK(send_fd(sv[0], fd));
    T_ASSERT(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
    T_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the receiving process failed");
    t_unmap_unpin(g, mh, map, map_size);
    T_ASSERT_OK(gdr_close(g));
    t_free(&b);
    close(sv[0]);
}

T_CASE(invalidation_unix_sock_shared_fd_gdr_pin_buffer, T_UPSTREAM,
       "a /dev/gdrdrv fd passed to another process cannot pin")
{
    shared_fd(0);
}

T_CASE(invalidation_unix_sock_shared_fd_gdr_map, T_UPSTREAM,
       "a /dev/gdrdrv fd passed to another process cannot map")
{
    shared_fd(1);
}

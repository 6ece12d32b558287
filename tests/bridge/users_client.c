// SPDX-License-Identifier: MIT
/*
 * users_client.c - the programs of test_bridge_users.sh, which attacks vramio-run as a second
 * local user. It loads libcuda.so.1 with dlopen (so that a planted library, whatever it
 * defines, gets loaded and can say so) and takes one role:
 *   load          say which libcuda.so.1 the loader gave: "shim" or "driver"
 *   export        (under vramio-run) allocate a block, fill it with 0xa1, print its IPC handle
 *                 in hex and exit: the exporter is gone, its socket's name is free
 *   serve HANDLE  (as the other user) bind the socket name that HANDLE names and answer the
 *                 first request with a memfd of our own, as the stand-in driver's memory
 *                 (filled with 0xee); a request about a block of chunks (bridge/bridge.h,
 *                 VB_IPC_CHUNKS) with three of them as its chunks; prints "ready" once bound
 *   open HANDLE   (under vramio-run) open HANDLE: "refused N" or "opened BYTE"
 *   secure        print getauxval(AT_SECURE): 1 where this copy runs with privileges that
 *                 its caller lacks (set-user-ID, file capabilities), else 0
 * Exit 0 when the role ran (whatever it found), 2 when it could not.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cuda.h>

#include "fake_gpu.h"       /* FAKE_GPU_MEMFD_PREFIX: what the stand-in driver imports */
#include "hex.h"

/* The fields of a bridge handle that name its exporter (bridge/bridge_ipc.h, struct
 * vb_ipc_handle: magic, pid, nonce, the slab's base and id, the block's id, offset, size, uid,
 * the slab's size). */
#define H_PID   4
#define H_NONCE 8
#define H_UID   56
#define SLAB    (2u << 20)
/* The request's flags (struct vb_ipc_req) and the answer about chunks (struct
 * vb_ipc_chunks_reply: status, count, chunk size) of bridge/bridge.h. */
#define REQ_FLAGS  48
#define REQ_CHUNKS 2u
struct chunks_reply { int32_t status; uint32_t nfd; uint64_t chunk; };

static void *cuda;

static void *fn(const char *name)
{
    void *f = cuda ? dlsym(cuda, name) : NULL;

    if (!f) {
        fprintf(stderr, "users_client: no %s in libcuda.so.1\n", name);
        exit(2);
    }
    return f;
}

static int export_one(void)
{
    CUresult (*alloc)(CUdeviceptr *, size_t) = fn("cuMemAlloc_v2");
    CUresult (*get)(CUipcMemHandle *, CUdeviceptr) = fn("cuIpcGetMemHandle");
    CUipcMemHandle h;
    CUdeviceptr d = 0;
    char hex[2 * sizeof(h) + 1];

    if (alloc(&d, 4096) || get(&h, d)) {
        fprintf(stderr, "users_client: no block or no handle\n");
        return 2;
    }
    memset((void *)(uintptr_t)d, 0xa1, 4096);
    to_hex(&h, sizeof(h), hex);
    printf("%s\n", hex);
    return 0;
}

/* The squatter: the exporter's socket name, answered with our own memory. */
static int serve(const unsigned char *h)
{
    uint32_t uid, pid;
    uint64_t nonce;
    struct sockaddr_un a;
    char cbuf[CMSG_SPACE(3 * sizeof(int))], req[64];
    struct chunks_reply r = { 0, 3, SLAB };
    struct iovec iov = { &r, sizeof(r.status) };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                        .msg_controllen = sizeof(cbuf) };
    struct cmsghdr *cm;
    int s, c, mfd, fds[3], n = 1;
    uint32_t flags = 0;
    void *p;
    socklen_t alen;

    memcpy(&pid, h + H_PID, 4);
    memcpy(&nonce, h + H_NONCE, 8);
    memcpy(&uid, h + H_UID, 4);
    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
                       (size_t)snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1,
                                        "vramio-ipc-%u-%u-%016llx", uid, pid,
                                        (unsigned long long)nonce));
    mfd = memfd_create(FAKE_GPU_MEMFD_PREFIX "0", MFD_CLOEXEC);
    s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (mfd < 0 || ftruncate(mfd, SLAB) || s < 0 || bind(s, (struct sockaddr *)&a, alen) ||
        listen(s, 4)) {
        fprintf(stderr, "users_client: cannot squat: %s\n", strerror(errno));
        return 2;
    }
    p = mmap(NULL, SLAB, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (p == MAP_FAILED)
        return 2;
    memset(p, 0xee, SLAB);
    printf("ready\n");
    fflush(stdout);
    c = accept(s, NULL, NULL);
    if (c < 0 || recv(c, req, sizeof(req), 0) <= REQ_FLAGS)
        return 2;
    memcpy(&flags, req + REQ_FLAGS, sizeof(flags));
    fds[0] = fds[1] = fds[2] = mfd;
    if (flags & REQ_CHUNKS) { /* our memory as three chunks of a 6 MiB block */
        iov.iov_len = sizeof(r);
        n = 3;
    }
    m.msg_controllen = CMSG_SPACE(n * sizeof(int));
    cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(n * sizeof(int));
    memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
    sendmsg(c, &m, MSG_NOSIGNAL);
    close(c);
    return 0;
}

static int open_one(const unsigned char *hb)
{
    CUresult (*open)(CUdeviceptr *, CUipcMemHandle, unsigned int) = fn("cuIpcOpenMemHandle_v2");
    CUipcMemHandle h;
    CUdeviceptr d = 0;
    CUresult r;

    memcpy(&h, hb, sizeof(h));
    r = open(&d, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (r != CUDA_SUCCESS)
        printf("refused %d\n", (int)r);
    else
        printf("opened %02x\n", *(const unsigned char *)(uintptr_t)d);
    return 0;
}

int main(int argc, char **argv)
{
    unsigned char h[sizeof(CUipcMemHandle)];
    const char *role = argc > 1 ? argv[1] : "";

    alarm(30);
    if (!strcmp(role, "secure")) {
        printf("%lu\n", getauxval(AT_SECURE));
        return 0;
    }
    if (!strcmp(role, "serve"))
        return from_hex(argc > 2 ? argv[2] : NULL, h, sizeof(h)) ? 2 : serve(h);
    cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!strcmp(role, "load")) {
        printf("%s\n", !cuda ? "none" : dlsym(cuda, "vramio_cuda_shim_driver") ? "shim" : "driver");
        return 0;
    }
    if (!cuda || ((CUresult (*)(unsigned))fn("cuInit"))(0))
        return 2;
    if (!strcmp(role, "export"))
        return export_one();
    if (!strcmp(role, "open") && !from_hex(argc > 2 ? argv[2] : NULL, h, sizeof(h)))
        return open_one(h);
    fprintf(stderr, "usage: users_client load|export|serve HANDLE|open HANDLE|secure\n");
    return 2;
}

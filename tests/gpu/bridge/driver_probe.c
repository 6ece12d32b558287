// SPDX-License-Identifier: MIT
/*
 * driver_probe.c - what the CUDA driver does with plain cuMemAlloc memory and with VMM memory
 * where the bridge must answer alike (run by tests/gpu/run_bridge_on_gpu.sh, without and under
 * vramio-run; it prints figures, '#' lines, and asserts only what the bridge promises):
 *   - synchronous memory operations (pageable cuMemcpyHtoD, cuMemsetD8, cuMemcpyDtoD): how
 *     often the legacy stream still has the operation in flight when the call returns, on
 *     plain memory, plain memory with SYNC_MEMOPS set, and VMM memory (cuMemCreate);
 *   - the SYNC_MEMOPS attribute: set, read back (and how many bytes the driver writes);
 *   - cuMemGetAddressRange of a freed allocation; cuMemFree during stream capture;
 *   - memory allocated before cuDevicePrimaryCtxReset, used after it;
 *   - CONTEXT of cuMemAlloc memory opened from its IPC handle in another process (this
 *     program run again with --open HANDLE): the context it was opened in, alone and among
 *     the four attributes UCX's memory-type check asks at once (a NULL there makes UCX take
 *     the memory for stream-ordered memory and stage every message through host memory).
 * Built with the C compiler against the toolkit's cuda.h and libcuda; links libgdrapi only
 * for the result lines' kit.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "hex.h"
#include "t.h"
#include "ucx_attrs.h"

#define BIG (64u << 20)
#define REPS 20

static CUdeviceptr vmm_alloc(size_t size, CUmemGenericAllocationHandle *h)
{
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;
    CUdeviceptr p = 0;

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    memset(&acc, 0, sizeof(acc));
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (cuMemCreate(h, size, &prop, 0) || cuMemAddressReserve(&p, size, 0, 0, 0) ||
        cuMemMap(p, size, 0, *h, 0) || cuMemSetAccess(p, size, &acc, 1))
        return 0;
    return p;
}

/* How many of REPS calls returned with the legacy stream still busy. */
static int in_flight(int op, CUdeviceptr d, CUdeviceptr other, void *host, size_t n)
{
    int i, busy = 0;

    for (i = 0; i < REPS; i++) {
        CUresult r = CUDA_SUCCESS;

        if (op == 0)
            r = cuMemcpyHtoD(d, host, n);
        else if (op == 1)
            r = cuMemsetD8(d, (unsigned char)i, n);
        else
            r = cuMemcpyDtoD(d, other, n);
        if (r != CUDA_SUCCESS)
            return -1;
        busy += cuStreamQuery(CU_STREAM_LEGACY) == CUDA_ERROR_NOT_READY;
        cuCtxSynchronize();
    }
    return busy;
}

/* How many of the operations returned with the work in flight, and the figures. */
static int ordering(const char *kind, CUdeviceptr d, CUdeviceptr other, void *host)
{
    static const char *const ops[] = { "htod_pageable", "memset", "dtod" };
    int op, small, big, total = 0;

    for (op = 0; op < 3; op++) {
        small = in_flight(op, d, other, host, 4096);
        big = in_flight(op, d, other, host, BIG);
        printf("# ordering %s %s: 4 KiB %d/%d in flight, 64 MiB %d/%d in flight\n", kind,
               ops[op], small, REPS, big, REPS);
        total += (small < 0 ? REPS : small) + (big < 0 ? REPS : big);
    }
    return total;
}

static void sync_memops(void)
{
    CUdeviceptr plain = 0, psync = 0, other = 0, vmm;
    CUmemGenericAllocationHandle h = 0;
    unsigned int one = 1;
    unsigned char bytes[8];
    void *host = malloc(BIG);
    CUresult r;
    int i;

    if (!host || cuMemAlloc(&plain, BIG) || cuMemAlloc(&psync, BIG) || cuMemAlloc(&other, BIG))
        return;
    memset(host, 1, BIG);
    r = cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, psync);
    t_check(r == CUDA_SUCCESS, "probe/sync_memops_set_on_cuMemAlloc", "error %d", (int)r);
    memset(bytes, 0xaa, sizeof(bytes));
    r = cuPointerGetAttribute(bytes, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, psync + 100);
    printf("# SYNC_MEMOPS read back: error %d, bytes", (int)r);
    for (i = 0; i < 8; i++)
        printf(" %02x", bytes[i]);
    printf("\n");
    t_check(r == CUDA_SUCCESS && bytes[0] == 1, "probe/sync_memops_reads_1", "error %d byte %u",
            (int)r, bytes[0]);
    ordering("cuMemAlloc", plain, other, host);
    i = ordering("cuMemAlloc+SYNC_MEMOPS", psync, other, host);
    t_check(i == 0, "probe/sync_memops_operations_complete_on_return", "%d in flight", i);
    vmm = vmm_alloc(BIG, &h);
    if (vmm) {
        r = cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, vmm);
        printf("# SYNC_MEMOPS set on cuMemCreate memory: error %d\n", (int)r);
        ordering("cuMemCreate", vmm, other, host);
    }
    cuMemFree(plain);
    cuMemFree(psync);
    cuMemFree(other);
    free(host);
}

static void freed_range(void)
{
    CUdeviceptr d = 0, b = 0;
    size_t s = 0;
    CUresult r;

    if (cuMemAlloc(&d, 4096))
        return;
    cuMemFree(d);
    r = cuMemGetAddressRange(&b, &s, d);
    printf("# cuMemGetAddressRange of a freed cuMemAlloc pointer: error %d\n", (int)r);
    t_check(r != CUDA_SUCCESS, "probe/freed_range_fails", "base %#llx size %zu",
            (unsigned long long)b, s);
}

static void capture(void)
{
    static const CUstreamCaptureMode modes[] = { CU_STREAM_CAPTURE_MODE_GLOBAL,
                                                 CU_STREAM_CAPTURE_MODE_RELAXED };
    CUstream s;
    CUgraph g;
    int m;

    if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING))
        return;
    for (m = 0; m < 2; m++) {
        CUdeviceptr d = 0;
        CUresult a = cuMemAlloc(&d, 4096), f, e;

        if (a)
            continue;
        g = NULL;
        cuStreamBeginCapture(s, modes[m]);
        f = cuMemFree(d);
        e = cuStreamEndCapture(s, &g);
        printf("# cuMemFree during %s capture: error %d; end of capture: error %d\n",
               m ? "relaxed" : "global", (int)f, (int)e);
        if (g)
            cuGraphDestroy(g);
        if (f != CUDA_SUCCESS)
            cuMemFree(d);
    }
    cuStreamDestroy(s);
}

static void reset(void)
{
    CUdeviceptr before = 0, after = 0;
    CUcontext ctx;
    unsigned char v = 0;
    CUresult r1, r2, r3;

    if (cuMemAlloc(&before, 4096))
        return;
    cuDevicePrimaryCtxReset(0);
    cuDevicePrimaryCtxRetain(&ctx, 0);
    cuCtxSetCurrent(ctx);
    r1 = cuMemsetD8(before, 5, 4096);
    r2 = cuMemAlloc(&after, 4096);
    r3 = r2 ? r2 : cuMemsetD8(after, 6, 4096);
    if (!r3)
        r3 = cuMemcpyDtoH(&v, after + 10, 1);
    printf("# after cuDevicePrimaryCtxReset: memset of an earlier block: error %d; new block: "
           "alloc error %d, use error %d, value %u\n", (int)r1, (int)r2, (int)r3, v);
    t_check(r2 == CUDA_SUCCESS && r3 == CUDA_SUCCESS && v == 6, "probe/alloc_after_reset_works",
            "alloc %d use %d value %u", (int)r2, (int)r3, v);
}

/* The opening side (a process of its own, as CUDA IPC wants): the handle in hex. */
static int ipc_open(const char *hex)
{
    struct ucx_attrs four = { CUDA_ERROR_UNKNOWN, 0, ~0u, -1, NULL };
    CUcontext cur = NULL, one = NULL;
    CUipcMemHandle h;
    CUdeviceptr p = 0;
    CUresult r, r1 = CUDA_ERROR_UNKNOWN;

    if (from_hex(hex, h.reserved, sizeof(h.reserved)))
        return 2;
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&cur, 0) || cuCtxSetCurrent(cur))
        return 3;
    r = cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (r == CUDA_SUCCESS) {
        r1 = cuPointerGetAttribute(&one, CU_POINTER_ATTRIBUTE_CONTEXT, p + 8);
        four = ucx_attrs_of(p);
    }
    printf("# ipc: cuMemAlloc memory opened from its handle: open %d; CONTEXT alone: result %d, "
           "%s; with three others: result %d, %s (type %u, managed %u)\n", (int)r, (int)r1,
           one == cur ? "the opener's" : one ? "another context" : "NULL", (int)four.result,
           four.ctx == cur ? "the opener's" : four.ctx ? "another context" : "NULL", four.type,
           four.managed);
    t_check(r == CUDA_SUCCESS && r1 == CUDA_SUCCESS && one == cur &&
            four.result == CUDA_SUCCESS && four.ctx == cur,
            "probe/ipc_opened_context_is_the_openers",
            "open %d; alone %d %p, four %d %p, current %p", (int)r, (int)r1, (void *)one,
            (int)four.result, (void *)four.ctx, (void *)cur);
    if (r == CUDA_SUCCESS)
        cuIpcCloseMemHandle(p);
    return t_status();
}

/* cuMemAlloc memory, its IPC handle opened by this program run again. */
static void ipc_context(const char *self)
{
    char hex[2 * sizeof(((CUipcMemHandle *)0)->reserved) + 1];
    CUipcMemHandle h;
    CUdeviceptr d = 0;
    int st = -1;
    pid_t pid;

    if (cuMemAlloc(&d, 4096) || cuIpcGetMemHandle(&h, d)) {
        t_fail("probe/ipc_handle", "cuMemAlloc or cuIpcGetMemHandle failed");
        if (d)
            cuMemFree(d);
        return;
    }
    to_hex(h.reserved, sizeof(h.reserved), hex);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        execl(self, self, "--open", hex, (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        waitpid(pid, &st, 0);
    t_check(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) <= 1, "probe/ipc_opener_ran",
            "status %#x", st);
    cuMemFree(d);
}

int main(int argc, char **argv)
{
    CUcontext ctx;

    if (argc == 3 && !strcmp(argv[1], "--open"))
        return ipc_open(argv[2]);
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx)) {
        printf("not ok probe/init\n");
        return 1;
    }
    sync_memops();
    freed_range();
    capture();
    ipc_context("/proc/self/exe");
    reset();
    return t_status();
}

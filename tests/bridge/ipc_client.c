// SPDX-License-Identifier: MIT
/*
 * ipc_client.c - CUDA IPC of bridged memory (bridge/bridge_ipc.c), run by test_bridge.sh
 * under vramio-run against the stand-in driver (fake_cuda_vmm.c, whose device memory is
 * shared memfds, so two processes see each other's writes).
 *
 * The exporter allocates two small blocks (one slab) and a large one (a slab of its own),
 * fills them, makes IPC handles (one from an address inside a block) and runs itself again as
 * the importer, which opens them, reads each block's bytes at the address it got, writes into
 * one, opens one twice, closes each as often as it opened it, and checks that the last close
 * unmapped everything (four threads open and close one handle at once meanwhile); the
 * exporter then sees the importer's bytes in its block. A second
 * importer without vramio-run (the driver alone) must get a clean error for the same handle.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda.h>

#include "hex.h"
#include "t.h"
#include "vramio.h"

int fake_vmm_live(void);
int fake_imports(void);

#define SMALL 4096u
#define LARGE (3u << 20)

static int all_are(CUdeviceptr p, size_t n, unsigned char v)
{
    const unsigned char *b = (const unsigned char *)(uintptr_t)p;
    size_t i;

    for (i = 0; i < n; i++)
        if (b[i] != v)
            return 0;
    return 1;
}

/* Threads opening and closing one handle at once while the importer holds it open too. */
struct churn {
    CUipcMemHandle h;
    CUdeviceptr want;
    int bad;
};

static void *churn_thread(void *arg)
{
    struct churn *c = arg;
    CUdeviceptr p;
    int i;

    for (i = 0; i < 200; i++) {
        p = 0;
        if (cuIpcOpenMemHandle(&p, c->h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS ||
            p != c->want || cuIpcCloseMemHandle(p) != CUDA_SUCCESS)
            __atomic_add_fetch(&c->bad, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static int churn(CUipcMemHandle h, CUdeviceptr want)
{
    struct churn c = { h, want, 0 };
    pthread_t th[4];
    int i, n = 0;

    for (i = 0; i < 4; i++)
        n += pthread_create(&th[i], NULL, churn_thread, &c) == 0;
    for (i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    return n == 4 ? c.bad : -1;
}

static int handle_env(const char *name, CUipcMemHandle *h)
{
    return from_hex(getenv(name), h, sizeof(*h));
}

/* The importer, under vramio-run: the handles come in IPC_A, IPC_B, IPC_C and IPC_BAD. */
static void importer(void)
{
    CUipcMemHandle ha, hb, hc, bad;
    CUdeviceptr pa = 0, pb = 0, pb2 = 0, pc = 0, pbad = 0;
    long dist = atol(getenv("IPC_DIST") ? getenv("IPC_DIST") : "0");
    CUresult ra, rb, rc, r2, rbad, c1, c2, c3, ca, cc;
    int bad_churn;

    alarm(30);
    if (handle_env("IPC_A", &ha) || handle_env("IPC_B", &hb) || handle_env("IPC_C", &hc) ||
        handle_env("IPC_BAD", &bad)) {
        t_fail("bridge/ipc/handles_passed", "no handles in the environment");
        return;
    }
    ra = cuIpcOpenMemHandle(&pa, ha, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    rb = cuIpcOpenMemHandle(&pb, hb, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    rc = cuIpcOpenMemHandle(&pc, hc, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (!t_check(ra == CUDA_SUCCESS && rb == CUDA_SUCCESS && rc == CUDA_SUCCESS,
                 "bridge/ipc/open", "results %d %d %d", (int)ra, (int)rb, (int)rc))
        return;
    t_check(all_are(pa, SMALL, 0xa1) && all_are(pb, SMALL, 0xb2) && all_are(pc, LARGE, 0xc3),
            "bridge/ipc/each_block_reads_its_own_bytes", "a %d b %d c %d",
            all_are(pa, SMALL, 0xa1), all_are(pb, SMALL, 0xb2), all_are(pc, LARGE, 0xc3));
    t_check((long)(pb - pa) == dist, "bridge/ipc/blocks_of_one_slab_keep_their_distance",
            "%ld here, %ld in the exporter", (long)(pb - pa), dist);
    t_check(fake_imports() == 2, "bridge/ipc/one_import_per_slab", "%d imports",
            fake_imports());
    r2 = cuIpcOpenMemHandle(&pb2, hb, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    t_check(r2 == CUDA_SUCCESS && pb2 == pb, "bridge/ipc/second_open_same_address",
            "result %d, %#llx vs %#llx", (int)r2, (unsigned long long)pb2,
            (unsigned long long)pb);
    memset((void *)(uintptr_t)pb, 0x5c, 16);
    bad_churn = churn(hb, pb);
    t_check(bad_churn == 0, "bridge/ipc/threads_open_and_close_at_once",
            "%d of 800 open/close pairs went wrong", bad_churn);
    rbad = cuIpcOpenMemHandle(&pbad, bad, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    t_check(rbad != CUDA_SUCCESS, "bridge/ipc/handle_of_no_process_refused", "it opened");
    c1 = cuIpcCloseMemHandle(pb);
    c2 = cuIpcCloseMemHandle(pb);
    c3 = cuIpcCloseMemHandle(pb);
    t_check(c1 == CUDA_SUCCESS && c2 == CUDA_SUCCESS && c3 != CUDA_SUCCESS,
            "bridge/ipc/closes_count_opens", "closes %d %d, third %d", (int)c1, (int)c2,
            (int)c3);
    ca = cuIpcCloseMemHandle(pa);
    cc = cuIpcCloseMemHandle(pc);
    t_check(ca == CUDA_SUCCESS && cc == CUDA_SUCCESS && fake_vmm_live() == 0,
            "bridge/ipc/last_close_unmaps", "closes %d %d, %d allocations still held",
            (int)ca, (int)cc, fake_vmm_live());
}

/* The importer without vramio-run: the driver alone must refuse the bridge's handle. */
static void importer_plain(void)
{
    CUipcMemHandle hb;
    CUdeviceptr p = 0;
    CUresult r;

    alarm(30);
    if (handle_env("IPC_B", &hb)) {
        t_fail("bridge/ipc/plain_importer_refused", "no handle in the environment");
        return;
    }
    r = cuIpcOpenMemHandle(&p, hb, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    t_check(r != CUDA_SUCCESS, "bridge/ipc/plain_importer_refused", "it opened at %#llx",
            (unsigned long long)p);
}

static void exporter(const char *fake_dir)
{
    char va[160], vb[160], vc[160], vbad[160], vdist[64], vlib[4200], out[8192];
    const char *env[7];
    CUipcMemHandle ha, hb, hc, bad;
    CUdeviceptr a = 0, b = 0, c = 0;
    unsigned long long base;
    size_t size;
    int cap = -1, sig = 0, st;
    CUresult r;

    if (cuMemAlloc(&a, SMALL) || cuMemAlloc(&b, SMALL) || cuMemAlloc(&c, LARGE)) {
        t_fail("bridge/ipc/alloc", "cuMemAlloc failed");
        return;
    }
    if (!t_check(!vramio_alloc_range(a, &base, &size) && !vramio_alloc_range(c, &base, &size),
                 "bridge/ipc/blocks_from_the_pool", "not bridged"))
        return;
    r = cuPointerGetAttribute(&cap, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, b);
    t_check(r == CUDA_SUCCESS && cap == 1, "bridge/ipc/block_is_legacy_ipc_capable",
            "result %d, capable %d", (int)r, cap);
    memset((void *)(uintptr_t)a, 0xa1, SMALL);
    memset((void *)(uintptr_t)b, 0xb2, SMALL);
    memset((void *)(uintptr_t)c, 0xc3, LARGE);
    if (!t_check(!cuIpcGetMemHandle(&ha, a) && !cuIpcGetMemHandle(&hb, b + 100) &&
                 !cuIpcGetMemHandle(&hc, c), "bridge/ipc/get_handles", "cuIpcGetMemHandle failed"))
        return;
    bad = hb;
    ((unsigned char *)&bad)[8] ^= 0xff; /* another exporter's nonce: no such process */
    memcpy(va, "IPC_A=", 6), to_hex(&ha, sizeof(ha), va + 6);
    memcpy(vb, "IPC_B=", 6), to_hex(&hb, sizeof(hb), vb + 6);
    memcpy(vc, "IPC_C=", 6), to_hex(&hc, sizeof(hc), vc + 6);
    memcpy(vbad, "IPC_BAD=", 8), to_hex(&bad, sizeof(bad), vbad + 8);
    snprintf(vdist, sizeof(vdist), "IPC_DIST=%ld", (long)(b - a));
    env[0] = va, env[1] = vb, env[2] = vc, env[3] = vbad, env[4] = vdist, env[5] = NULL;
    st = t_run_self("import", env, out, sizeof(out), &sig);
    fputs(out, stdout);
    t_check(st == 0, "bridge/ipc/importer_ran", "status %d signal %d", st, sig);
    t_check(all_are(b, 16, 0x5c) && all_are(b + 16, SMALL - 16, 0xb2) && all_are(a, SMALL, 0xa1),
            "bridge/ipc/importer_writes_reach_the_block", "b[0] %#x b[16] %#x a[0] %#x",
            ((unsigned char *)(uintptr_t)b)[0], ((unsigned char *)(uintptr_t)b)[16],
            ((unsigned char *)(uintptr_t)a)[0]);
    snprintf(vlib, sizeof(vlib), "LD_LIBRARY_PATH=%s", fake_dir);
    env[0] = vb, env[1] = vlib, env[2] = NULL;
    st = t_run_self("import_plain", env, out, sizeof(out), &sig);
    fputs(out, stdout);
    t_check(st == 0, "bridge/ipc/plain_importer_ran", "status %d signal %d", st, sig);
    cuMemFree(a);
    cuMemFree(b);
    cuMemFree(c);
}

int main(int argc, char **argv)
{
    const char *child = t_child_mode(argc, argv);

    if (child && !strcmp(child, "import"))
        importer();
    else if (child && !strcmp(child, "import_plain"))
        importer_plain();
    else if (argc > 1)
        exporter(argv[1]);
    else
        t_fail("bridge/ipc/usage", "ipc_client FAKE_DIR");
    return t_status();
}

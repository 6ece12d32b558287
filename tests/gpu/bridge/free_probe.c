// SPDX-License-Identifier: MIT
/*
 * free_probe.c - the CUDA driver's answers where a bridged block must answer alike, printed as
 * "= NAME RESULT" lines (run by tests/gpu/run_bridge_on_gpu.sh without and under vramio-run,
 * which compares the two sets): a free of an interior pointer, a double free, and the pointer
 * attributes of a freed block (RANGE_START_ADDR through cuPointerGetAttribute and
 * cuPointerGetAttributes, and of NULL, which the bridge asks the driver about in a freed
 * block's place: bridge/bridge_attr.c). Small blocks (one slab under the bridge) and a large
 * one. Asserts nothing itself.
 */
#include <cuda.h>
#include <stdio.h>

static void one(const char *kind, size_t size)
{
    CUpointer_attribute which = CU_POINTER_ATTRIBUTE_RANGE_START_ADDR;
    CUdeviceptr d = 0, keep = 0, start = 0;
    void *data = &start;
    CUresult r;

    /* A live neighbour keeps the slab (and its mapping) after d is freed. */
    if (cuMemAlloc(&keep, size) || cuMemAlloc(&d, size)) {
        printf("= %s_alloc failed\n", kind);
        return;
    }
    printf("= %s_interior_free %d\n", kind, (int)cuMemFree(d + 256));
    printf("= %s_free %d\n", kind, (int)cuMemFree(d));
    printf("= %s_double_free %d\n", kind, (int)cuMemFree(d));
    r = cuPointerGetAttribute(&start, which, d + 16);
    printf("= %s_freed_attribute %d%s\n", kind, (int)r, r ? "" : " (a range start)");
    start = 0;
    r = cuPointerGetAttributes(1, &which, &data, d + 16);
    printf("= %s_freed_attributes %d start_%s\n", kind, (int)r, start ? "set" : "0");
    cuMemFree(keep);
}

int main(void)
{
    CUpointer_attribute which = CU_POINTER_ATTRIBUTE_RANGE_START_ADDR;
    CUdeviceptr start = 0;
    CUcontext ctx;
    CUdevice dev;
    void *data = &start;

    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx)) {
        printf("= setup failed\n");
        return 1;
    }
    one("small", 4096);
    one("large", 3u << 20);
    printf("= null_attribute %d\n", (int)cuPointerGetAttribute(&start, which, 0));
    printf("= null_attributes %d\n", (int)cuPointerGetAttributes(1, &which, &data, 0));
    return 0;
}

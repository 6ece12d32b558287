// SPDX-License-Identifier: MIT
/*
 * runtime_client.c - one cudaMalloc through NVIDIA's own CUDA runtime (linked shared or
 * static by test_bridge.sh), against the stand-in driver: the runtime cannot start on it,
 * but before it gives up it has looked up its driver entry points, which is the path the
 * bridge must catch (its log shows what it handed out).
 */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, 1000);

    printf("cudaMalloc: %d (%s)\n", (int)e, cudaGetErrorString(e));
    if (e == cudaSuccess)
        cudaFree(p);
    return 0;
}

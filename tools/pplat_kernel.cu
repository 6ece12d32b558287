// SPDX-License-Identifier: MIT
// pplat_kernel.cu - the GPU side of gdrcopy_pplat's ping-pong.
//
// The CPU writes the sequence number i into `req` (GPU memory written through a gdr mapping,
// or mapped host memory for the raw ping-pong); one thread spins until it sees i and answers
// by writing i into `ack` (mapped host memory), which the CPU spins on. Other threads of the
// launch (-B/-T) only poll, to show the cost of contention on the flag.
#include <stdint.h>

extern "C" __global__ void pplat_pingpong(const volatile uint32_t *req, volatile uint32_t *ack,
                                          uint32_t iters)
{
    const bool answerer = blockIdx.x == 0 && threadIdx.x == 0;

    for (uint32_t i = 1; i <= iters; i++) {
        // ">=": a polling thread may see i + 1 before it ever saw i, and must not wait forever.
        while (*req < i)
            ;
        if (answerer) {
            *ack = i;
            // Push the answer out of the SM to host memory now rather than when evicted.
            __threadfence_system();
        }
    }
}

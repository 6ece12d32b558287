# SPDX-License-Identifier: MIT
"""tests/gpu/nccl_gdrcopy.py - one rank of the two-process NCCL run of
tests/gpu/run_multigpu_on_gpu.sh: torch.distributed with the NCCL backend, one GPU per
process (GPU = rank), rendezvous through MASTER_ADDR/MASTER_PORT, RANK and WORLD_SIZE from
the environment. The transport and GDRCopy settings come from the caller's environment.

All-reduce (sum) and all-gather of 1 KiB to 64 MiB (every power of two), 100 iterations each,
checked exactly against the values every rank can compute (small integers in float32, so the
sums are exact); then the median latency of small all-reduces. Prints result lines
(ok / not ok NAME: why) and '# ' figure lines; rank 0 prints the figures. Every collective
has the process group's timeout (TIMEOUT_S, default 120 s), so a hang becomes a failure.
"""
import datetime
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

ITERS = int(os.environ.get("ITERS", "100"))
TIMEOUT_S = int(os.environ.get("TIMEOUT_S", "120"))
LABEL = os.environ.get("LABEL", "nccl")


def say(line):
    print(line, flush=True)


def values(n, rank, it, dev):
    # Small integers: exact in float32 however they are summed.
    base = torch.arange(n, device=dev, dtype=torch.int64) % 1021
    return (base + 7 * rank + it).to(torch.float32)


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=TIMEOUT_S),
                            device_id=dev)
    sizes = [1 << k for k in range(10, 27)]  # bytes: 1 KiB .. 64 MiB
    bad = {"all_reduce": [], "all_gather": []}
    t0 = time.time()
    for nbytes in sizes:
        n = nbytes // 4
        base = torch.arange(n, device=dev, dtype=torch.int64) % 1021
        for it in range(ITERS):
            x = values(n, rank, it, dev)
            dist.all_reduce(x)
            want = (base * world + 7 * sum(range(world)) + world * it).to(torch.float32)
            if not torch.equal(x, want) and len(bad["all_reduce"]) < 5:
                bad["all_reduce"].append("%d B iteration %d" % (nbytes, it))
            y = values(n, rank, it, dev)
            out = [torch.empty_like(y) for _ in range(world)]
            dist.all_gather(out, y)
            for r in range(world):
                if not torch.equal(out[r], values(n, r, it, dev)) and len(bad["all_gather"]) < 5:
                    bad["all_gather"].append("%d B iteration %d from rank %d" % (nbytes, it, r))
        torch.cuda.synchronize()
    span = time.time() - t0
    for op, errs in bad.items():
        if errs:
            say("not ok %s/%s_exact_rank%d: wrong results at %s" % (LABEL, op, rank, "; ".join(errs)))
        else:
            say("ok %s/%s_exact_rank%d" % (LABEL, op, rank))

    # Small-message latency: median of 500 back-to-back all-reduces per size, after warm-up.
    lat = {}
    for nbytes in (1 << 10, 1 << 12, 1 << 14):
        x = torch.ones(nbytes // 4, device=dev)
        for _ in range(50):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(500):
            a = time.perf_counter()
            dist.all_reduce(x)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - a) * 1e6)
        lat[nbytes] = statistics.median(times)
    dist.barrier()
    if rank == 0:
        say("# %s: sizes 1 KiB-64 MiB x %d iterations in %.1f s" % (LABEL, ITERS, span))
        say("# %s latency all_reduce median us: %s" % (
            LABEL, ", ".join("%d B %.1f" % (k, v) for k, v in sorted(lat.items()))))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # a failure is a result line, never a silent exit
        say("not ok %s/rank%s: %s: %s" % (LABEL, os.environ.get("RANK", "?"), type(e).__name__, e))
        sys.exit(1)

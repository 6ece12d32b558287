# SPDX-License-Identifier: MIT
"""A CUDA tensor shared with another process (run by tests/gpu/run_bridge_on_gpu.sh).

  python3 torch_ipc.py bridged   under vramio-run (the bridge makes the IPC handles)
  python3 torch_ipc.py control   without it (the driver's own legacy IPC)

torch.multiprocessing hands a CUDA tensor to another process by a CUDA IPC handle of its
allocation (cudaIpcGetMemHandle / cudaIpcOpenMemHandle): that process must read the tensor's
values, and its writes must come back. Small tensors live in a 2 MiB segment of PyTorch's
caching allocator, large ones in one of their own. The other process is started with "spawn"
(CUDA cannot be used after fork); it runs under the same environment, so under vramio-run too.
A file of its own, with the __main__ guard that "spawn" needs.
"""
import sys

import torch
import torch.multiprocessing as mp

from gpu_results import Results


def reader(inbox, outbox):
    """The other process: the tensor's sum, then 1 added to every element; it keeps the
    tensor until the parent has looked (the parent's word)."""
    t = inbox.get(timeout=120)
    s = int(t.to(torch.int64).sum().item())
    t.add_(1)
    torch.cuda.synchronize()
    outbox.put(s)
    inbox.get(timeout=120)
    del t


def share(check, n):
    ctx = mp.get_context("spawn")
    t = torch.full((n,), 2, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    inbox, outbox = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=reader, args=(inbox, outbox))
    proc.start()
    why = ""
    try:
        inbox.put(t)
        s = outbox.get(timeout=150)
        torch.cuda.synchronize()
        wrong = int((t != 3).sum().item())
        if s != 2 * n or wrong:
            why = "the other process summed %d (want %d); %d bytes not written back" % (s, 2 * n, wrong)
        inbox.put(None)
    except Exception as e:  # a queue timed out, or the other process failed
        why = "%s: %s" % (type(e).__name__, e)
    proc.join(60)
    if proc.is_alive():
        proc.kill()
        why = why or "the other process hung"
    elif proc.exitcode != 0 and not why:
        why = "the other process exited with %s" % proc.exitcode
    check(not why, "tensor_shared_with_process_%d" % n, why)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "bridged"
    R = Results("torch_ipc/" + mode)
    for n in (4096, 24 << 20):
        share(R.check, n)
    sys.exit(1 if R.failed else 0)

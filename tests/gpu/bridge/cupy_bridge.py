# SPDX-License-Identifier: MIT
"""CuPy and the bridge (run by tests/gpu/run_bridge_on_gpu.sh).

  python3 cupy_bridge.py default     under vramio-run: arrays of CuPy's default pool pin
  python3 cupy_bridge.py allocator   cupy.cuda.set_allocator(vramio.cupy_allocator())
Both: data correct, a side stream's block not reused while in use, a pinned array deleted
stays the pin's.
"""
import sys

import cupy

import vramio
from gpu_results import Results

mode = sys.argv[1] if len(sys.argv) > 1 else "default"
R = Results("cupy/" + mode)
check = R.check


if mode == "allocator":
    cupy.cuda.set_allocator(vramio.cupy_allocator())

for n in (100, 4096, 1 << 20, 16 << 20):
    a = cupy.zeros(n, dtype=cupy.uint8)
    cupy.cuda.Device().synchronize()
    try:
        p = vramio.pin(a)
    except vramio.VramioError as e:
        check(False, "pin_%d" % n, str(e))
        continue
    with p:
        p.copy_to(bytes([3]) * n)
        s = int(a.astype(cupy.int64).sum())
        check(s == 3 * n, "kernel_sees_cpu_write_%d" % n, "sum %d" % s)
        a.fill(5)
        cupy.cuda.Device().synchronize()
        check(p.copy_from() == bytes([5]) * n, "cpu_sees_kernel_write_%d" % n, "differs")
    del a
# A block used by a side stream, freed while the default stream is current: the next
# allocation must not get it while the side stream still writes it.
side = cupy.cuda.Stream(non_blocking=True)
bad = 0
for _ in range(3):
    n = 64 << 20
    with side:
        a = cupy.zeros(n, dtype=cupy.uint8)
        for _ in range(40):
            a += 1
    del a
    b = cupy.full(n, 3, dtype=cupy.uint8)
    cupy.cuda.Device().synchronize()
    bad += int((b != 3).sum())
    del b
check(bad == 0, "side_stream_block_not_reused", "%d bytes overwritten" % bad)

# A pinned array deleted: its memory stays the pin's.
a = cupy.zeros(1 << 20, dtype=cupy.uint8)
cupy.cuda.Device().synchronize()
p = vramio.pin(a)
del a
u = [cupy.full(1 << 20, 5, dtype=cupy.uint8) for _ in range(4)]
cupy.cuda.Device().synchronize()
p.copy_to(bytes([9]) * (1 << 20))
check(sum(int((v != 5).sum()) for v in u) == 0, "pin_keeps_deleted_array")
p.close()

x = cupy.random.rand(512, 512)
check(abs(float((x @ x.T).trace()) - float((x * x).sum())) < 1e-6 * float((x * x).sum()),
      "matmul_correct")
sys.exit(1 if R.failed else 0)

# SPDX-License-Identifier: MIT
"""alloc_frameworks.py MODE - what memory a framework's allocator hands out (run by
tests/gpu/run_bridge_on_gpu.sh, plainly and under vramio-run): one 4 MiB buffer of the
framework's own, described by the driver (range, mapping, allowed handle types, pool), then
pinned, written by the CPU and read back by the framework. Then a fixed workload in the
framework's own arrays (a matrix product and elementwise work, whose temporaries come from the
allocator under test every step): its result, its median step time, and the GPU memory in use
before the program exits, for the runner to hold the bridged run to the plain one. Lines
"# probe MODE/KEY: VALUE", "# work MODE/KEY: VALUE" and "ok"/"not ok"/"skip" result lines.

MODE: torch (default allocator), torch_expandable (expandable_segments:True), torch_async
(backend:cudaMallocAsync), cupy (default pool), cupy_async (MemoryAsyncPool), jax (its default
preallocation), jax_small (the same at XLA_PYTHON_CLIENT_MEM_FRACTION=0.10), jax_async
(XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async). The environment a mode
needs is set here before the framework is imported.
"""
import ctypes
import os
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "torch"
ENV = {
    "torch_expandable": ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),
    "torch_async": ("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync"),
    "jax_async": ("XLA_PYTHON_CLIENT_ALLOCATOR", "cuda_async"),
    # The default preallocation, at 10% of GPU memory instead of 75%: one allocation that the
    # vulkan backend can import whole (the README's recipe for pinning JAX's arrays).
    "jax_small": ("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.10"),
}
if MODE in ENV:
    os.environ[ENV[MODE][0]] = ENV[MODE][1]

N = 4 << 20
cuda = ctypes.CDLL("libcuda.so.1")


def attr(ptr, which, ctype=ctypes.c_ulonglong):
    v = ctype(0)
    r = cuda.cuPointerGetAttribute(ctypes.byref(v), which, ctypes.c_ulonglong(ptr))
    return v.value if r == 0 else "error %d" % r


def describe(ptr):
    base, size = ctypes.c_ulonglong(0), ctypes.c_size_t(0)
    r = cuda.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_ulonglong(ptr))
    print("# probe %s/range: 0x%x in [0x%x, +%d) (%d); mapping +%s; handle types %s; pool %s; legacy ipc %s"
          % (MODE, ptr, base.value, size.value, r, attr(ptr, 18), attr(ptr, 14), attr(ptr, 17),
             attr(ptr, 10)))


def pin_and_write(ptr, read_back):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
    try:
        import vramio
    except Exception as e:  # noqa: BLE001 - the reason is the result
        print("skip %s/pin: python/vramio not importable: %s" % (MODE, e))
        return
    try:
        pin = vramio.pin(ptr, N)
    except Exception as e:  # noqa: BLE001 - the reason is the result
        print("# probe %s/pin: refused (%s)" % (MODE, e))
        print("skip %s/pin: refused: %s" % (MODE, e))
        return
    with pin:
        pin.copy_to(bytes([0x5A]) * 4096)
    got = read_back()
    print(("ok %s/cpu_write_seen" % MODE) if got == 0x5A else
          ("not ok %s/cpu_write_seen: read 0x%x" % (MODE, got)))


STEPS, WARM, DIM = 40, 5, 2048


def report_work(result, times):
    """The workload's result (exact, for comparison with the other run), its median step
    time, and the device memory in use now (the context, the framework's pools, the bridge's)."""
    times = sorted(times)
    free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
    cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
    print("# work %s/result: %r" % (MODE, result))
    print("# work %s/steptime_ms: %.4f" % (MODE, times[len(times) // 2] * 1e3))
    print("# work %s/mem_used_mib: %d" % (MODE, (total.value - free.value) >> 20))


def timed(step, sync):
    import time
    out, times = None, []
    for i in range(WARM + STEPS):
        t0 = time.perf_counter()
        out = step()
        sync()
        if i >= WARM:
            times.append(time.perf_counter() - t0)
    return out, times


def main():
    try:
        if MODE.startswith("torch"):
            import torch
            t = torch.zeros(N, dtype=torch.uint8, device="cuda")
            torch.cuda.synchronize()
            print("# probe %s/version: torch %s" % (MODE, torch.__version__))
            describe(t.data_ptr())
            pin_and_write(t.data_ptr(), lambda: int(t[0].item()))
            x = (torch.arange(DIM * DIM, device="cuda", dtype=torch.float32) % 97 / 97).reshape(DIM, DIM)
            out, times = timed(lambda: float(((x * 2 + 1) @ x).relu().sum()), torch.cuda.synchronize)
            report_work(out, times)
        elif MODE.startswith("cupy"):
            import cupy
            if MODE == "cupy_async":
                cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc)
            a = cupy.zeros(N, dtype=cupy.uint8)
            cupy.cuda.Device().synchronize()
            print("# probe %s/version: cupy %s" % (MODE, cupy.__version__))
            describe(a.data.ptr)
            pin_and_write(a.data.ptr, lambda: int(a[0].get()))
            x = (cupy.arange(DIM * DIM, dtype=cupy.float32) % 97 / 97).reshape(DIM, DIM)
            out, times = timed(lambda: float(cupy.maximum((x * 2 + 1) @ x, 0).sum()),
                               cupy.cuda.Device().synchronize)
            report_work(out, times)
        elif MODE.startswith("jax"):
            import jax
            import jax.numpy as jnp
            a = jnp.zeros(N, dtype=jnp.uint8)
            a.block_until_ready()
            ptr = a.unsafe_buffer_pointer()
            print("# probe %s/version: jax %s" % (MODE, jax.__version__))
            describe(ptr)
            pin_and_write(ptr, lambda: int(a[0]))
            x = (jnp.arange(DIM * DIM, dtype=jnp.float32) % 97 / 97).reshape(DIM, DIM)
            f = jax.jit(lambda x: jnp.maximum((x * 2 + 1) @ x, 0).sum())
            out, times = timed(lambda: float(f(x)), lambda: None)   # float() waits for it
            report_work(out, times)
    except ImportError as e:
        print("skip %s/import: %s" % (MODE, e))


main()

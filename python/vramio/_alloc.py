# SPDX-License-Identifier: MIT
"""vramio_alloc memory as PyTorch's and CuPy's allocator: every tensor or array pinnable."""
import ctypes

from . import _lib


def torch_allocator():
    """A torch.cuda.memory.CUDAPluggableAllocator over vramio_alloc's pool. Install it with
    torch.cuda.memory.change_current_allocator() before the first CUDA allocation. It does
    not cache: each free waits for all queued work of the tensor's GPU (so a block that
    record_stream() gave to a side stream is not reused while that stream may still use it;
    the pluggable interface never reports such streams), then returns the memory to the pool
    (whose small blocks and cached slabs make that cheap)."""
    import torch

    return torch.cuda.memory.CUDAPluggableAllocator(
        _lib.library_path(), "vramio_pluggable_alloc", "vramio_pluggable_free")


class _Owner:
    """Frees one allocation when CuPy drops its memory object: after all queued work of the
    block's GPU (whatever stream used it, whatever stream or device is current then)."""

    def __init__(self, ptr, size, device):
        self.ptr, self.size, self.device = ptr, size, device

    def __del__(self):
        _lib.load().vramio_pluggable_free(self.ptr, self.size, self.device, None)


def cupy_allocator():
    """An allocator for cupy.cuda.set_allocator(): vramio_alloc memory, freed after the
    queued work of its GPU. Wrap it in cupy.cuda.MemoryPool(...).malloc to cache."""
    import cupy

    lib = _lib.load()

    def alloc(size):
        dev = cupy.cuda.Device().id
        p = ctypes.c_ulonglong(0)
        n = max(int(size), 1)
        rc = lib.vramio_alloc(dev, n, ctypes.byref(p))
        if rc:
            raise cupy.cuda.memory.OutOfMemoryError(n, 0, 0) if rc == 12 else \
                _lib.VramioError(rc, "vramio_alloc(%d): %s" % (n, lib.vramio_last_error().decode()))
        mem = cupy.cuda.UnownedMemory(p.value, n, _Owner(p.value, n, dev), dev)
        return cupy.cuda.MemoryPointer(mem, 0)

    return alloc

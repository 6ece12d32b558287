# SPDX-License-Identifier: MIT
"""vramio from Python: pin and map GPU memory for the CPU through libgdrapi.so.2 (ctypes).

pin(obj, size=None)   a CUDA tensor/array or a pointer: a Pin with copy_to/copy_from
torch_allocator()     PyTorch allocator whose memory every backend can pin
cupy_allocator()      the same for cupy.cuda.set_allocator
"""
from ._lib import VramioError, library_path
from ._alloc import cupy_allocator, torch_allocator
from ._pin import Pin, pin

__all__ = ["Pin", "VramioError", "cupy_allocator", "library_path", "pin", "torch_allocator"]
__version__ = "2.6"

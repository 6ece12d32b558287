# SPDX-License-Identifier: MIT
"""The package without a GPU: argument handling, every kind of host buffer, and real pins,
maps and copies through the library's dma-buf backend over the stand-in CUDA driver of
tests/dmabuf (its "device memory" is host memory, so each copy is checked directly)."""
import array
import ctypes
import os
import unittest

import vramio
from vramio import _pin as pinmod

FAKE = os.environ.get("VRAMIO_TEST_FAKE_CUDA")


class DLManaged(ctypes.Structure):
    _fields_ = [("t", pinmod._DLTensor), ("ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class FakeDLPack:
    """A DLPack producer over a ctypes buffer (as a torch CPU tensor would be)."""
    NAME = b"dltensor"

    def __init__(self, n, device_type=1, strides=None):
        self.buf = (ctypes.c_uint8 * n)()
        self.shape = (ctypes.c_int64 * 1)(n)
        self.strides = (ctypes.c_int64 * 1)(strides) if strides else None
        m = self.m = DLManaged()
        m.t.data = ctypes.addressof(self.buf)
        m.t.device.device_type = device_type
        m.t.ndim = 1
        m.t.dtype.code, m.t.dtype.bits, m.t.dtype.lanes = 1, 8, 1
        m.t.shape = self.shape
        if self.strides:
            m.t.strides = self.strides

    def __dlpack__(self, stream=None):
        return _capsule_new(ctypes.addressof(self.m), self.NAME, None)


class HostBuffers(unittest.TestCase):
    def test_bytes_without_copy(self):
        b = b"abcdef"
        addr, n, keep = pinmod._host_view(b, False)
        self.assertEqual((ctypes.string_at(addr, n), n), (b, 6))

    def test_writable_kinds(self):
        for buf in (bytearray(16), memoryview(bytearray(16)), array.array("i", [0] * 4)):
            addr, n, keep = pinmod._host_view(buf, True)
            self.assertEqual(n, 16)
            ctypes.memset(addr, 7, n)
            self.assertEqual(bytes(memoryview(buf).cast("B")), b"\x07" * 16)

    def test_readonly_destination_refused(self):
        with self.assertRaisesRegex(ValueError, "read-only"):
            pinmod._host_view(b"xx", True)

    def test_noncontiguous_refused(self):
        with self.assertRaisesRegex(ValueError, "contiguous"):
            pinmod._host_view(memoryview(bytearray(16))[::2], False)

    def test_other_types_refused(self):
        with self.assertRaisesRegex(TypeError, "buffer-protocol"):
            pinmod._host_view(3.5, False)

    def test_dlpack_cpu(self):
        d = FakeDLPack(32)
        addr, n, keep = pinmod._host_view(d, True)
        self.assertEqual((addr, n), (ctypes.addressof(d.buf), 32))

    def test_dlpack_gpu_refused(self):
        with self.assertRaisesRegex(ValueError, "not in CPU memory"):
            pinmod._host_view(FakeDLPack(32, device_type=2), False)

    def test_dlpack_strided_refused(self):
        with self.assertRaisesRegex(ValueError, "C-contiguous"):
            pinmod._host_view(FakeDLPack(32, strides=2), False)


class Arguments(unittest.TestCase):
    def test_pointer_needs_size(self):
        with self.assertRaisesRegex(ValueError, "size is needed"):
            vramio.pin(0x10000)

    def test_unknown_object(self):
        with self.assertRaisesRegex(TypeError, "CUDA tensor"):
            vramio.pin("not memory", 10)

    def test_library_path(self):
        self.assertIn("libgdrapi.so", vramio.library_path())


@unittest.skipUnless(FAKE, "needs the stand-in CUDA driver (run through tests/python/test_python.sh)")
class PinThroughFakeDriver(unittest.TestCase):
    N = 65536

    def setUp(self):
        self.cu = ctypes.CDLL(FAKE)
        self.cu.cuInit(0)
        p = ctypes.c_ulonglong(0)
        self.assertEqual(self.cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(self.N)), 0)
        self.ptr = p.value

    def tearDown(self):
        self.cu.cuMemFree_v2(ctypes.c_ulonglong(self.ptr))

    def test_copy_both_ways(self):
        data = bytes(range(256)) * 16
        with vramio.pin(self.ptr, self.N) as p:
            self.assertEqual(p.copy_to(data, offset=100), len(data))
            self.assertEqual(ctypes.string_at(self.ptr + 100, len(data)), data)
            self.assertEqual(p.copy_from(offset=100, size=len(data)), data)
            out = bytearray(300)
            p.copy_from(out, offset=200)
            self.assertEqual(bytes(out), data[100:400])

    def test_array_and_dlpack(self):
        src = array.array("d", [1.5, 2.5, 3.5])
        d = FakeDLPack(24)
        with vramio.pin(self.ptr, self.N) as p:
            p.copy_to(src)
            p.copy_from(d)
            self.assertEqual(bytes(d.buf), src.tobytes())
            p.copy_to(d, offset=1000)
            self.assertEqual(ctypes.string_at(self.ptr + 1000, 24), src.tobytes())

    def test_bounds(self):
        with vramio.pin(self.ptr, self.N) as p:
            with self.assertRaisesRegex(ValueError, "do not fit"):
                p.copy_to(b"x" * 10, offset=self.N - 5)
            with self.assertRaisesRegex(ValueError, "do not fit"):
                p.copy_from(offset=-1, size=1)

    def test_closed_pin_refuses_copies(self):
        p = vramio.pin(self.ptr, self.N)
        p.close()
        p.close()
        with self.assertRaisesRegex(ValueError, "closed"):
            p.copy_to(b"x")

    def test_pin_keeps_its_array_alive(self):
        import gc
        import weakref

        class Arr:  # a CUDA array whose memory lives as long as the object
            def __init__(self, ptr, n):
                self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (n,),
                                                 "typestr": "|u1", "strides": None,
                                                 "version": 3}

        a = Arr(self.ptr, 4096)
        gone = weakref.ref(a)
        p = vramio.pin(a)
        del a
        gc.collect()
        self.assertIsNotNone(gone(), "the array was collected while pinned")
        p.close()
        gc.collect()
        self.assertIsNone(gone(), "the closed pin still holds the array")

    def test_bad_pointer_clear_error(self):
        with self.assertRaises(vramio.VramioError) as e:
            vramio.pin(0x1000, 4096)
        self.assertIn("pin 0x1000", str(e.exception))


class Frameworks(unittest.TestCase):
    def test_torch_allocator(self):
        try:
            import torch
        except ImportError:
            self.skipTest("PyTorch is not installed (tests/gpu/run_bridge_on_gpu.sh runs it)")
        self.assertIsInstance(vramio.torch_allocator(), torch.cuda.memory.CUDAPluggableAllocator)

    def test_cupy_allocator(self):
        try:
            import cupy
        except ImportError:
            self.skipTest("CuPy is not installed (tests/gpu/run_bridge_on_gpu.sh runs it)")
        if cupy.cuda.runtime.getDeviceCount() == 0:
            self.skipTest("no GPU")
        a = cupy.cuda.MemoryPointer  # a real allocation needs a GPU: the GPU script runs it
        self.assertTrue(callable(vramio.cupy_allocator()) and a)

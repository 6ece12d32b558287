# SPDX-License-Identifier: MIT
"""pin(): GPU memory pinned and mapped for the CPU, with copies to and from host buffers."""
import ctypes
import struct
import threading

from . import _lib

_gdr = None
_gdr_lock = threading.Lock()


def _handle():
    """One gdr_t for the process, opened at the first pin (as GDRCopy users do)."""
    global _gdr
    with _gdr_lock:
        if _gdr is None:
            lib = _lib.load()
            g = lib.gdr_open()
            if not g:
                why = (lib.vramio_last_error() or b"").decode()
                raise _lib.VramioError(19, "gdr_open found no usable backend: " + why)
            _gdr = g
        return _gdr


def _device_range(obj, size):
    """(device address, bytes) of a tensor, a CUDA array or a plain pointer."""
    if isinstance(obj, int):
        if size is None:
            raise ValueError("pin(pointer, size): the size is needed with a pointer")
        return obj, int(size)
    if hasattr(obj, "data_ptr") and hasattr(obj, "element_size"):  # torch.Tensor
        if not getattr(obj, "is_cuda", False):
            raise ValueError("pin: the tensor is not on a CUDA device")
        if not obj.is_contiguous():
            raise ValueError("pin: the tensor is not contiguous")
        n = obj.numel() * obj.element_size()
        return obj.data_ptr(), n if size is None else int(size)
    cai = getattr(obj, "__cuda_array_interface__", None)  # CuPy, Numba, ...
    if cai is not None:
        if cai.get("strides") is not None:
            raise ValueError("pin: the array is not C-contiguous")
        n = int(cai["typestr"][2:]) if cai["typestr"][1] in "iufcbV" else 1
        for d in cai["shape"]:
            n *= d
        return cai["data"][0], n if size is None else int(size)
    raise TypeError("pin: expected a CUDA tensor/array or an integer pointer, not %s"
                    % type(obj).__name__)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_K_DL_CPU, _K_DL_CUDA_HOST = 1, 3
_capsule_ptr = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_ptr.restype = ctypes.c_void_p
_capsule_ptr.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _dlpack_view(obj):
    """(address, bytes, keep-alive) of a DLPack-capable CPU array."""
    cap = obj.__dlpack__()
    t = _DLTensor.from_address(_capsule_ptr(cap, b"dltensor"))  # DLManagedTensor starts so
    if t.device.device_type not in (_K_DL_CPU, _K_DL_CUDA_HOST):
        raise ValueError("the DLPack array is not in CPU memory (device type %d)"
                         % t.device.device_type)
    n = (t.dtype.bits * t.dtype.lanes + 7) // 8
    expect = n
    for i in reversed(range(t.ndim)):
        if t.strides and t.shape[i] > 1 and t.strides[i] * n != expect:
            raise ValueError("the DLPack array is not C-contiguous")
        expect *= t.shape[i]
    return (t.data or 0) + t.byte_offset, expect, cap


def _host_view(buf, writable):
    """(address, bytes, keep-alive) of bytes, a buffer-protocol object or a DLPack array."""
    try:
        mv = memoryview(buf)
    except TypeError:
        if hasattr(buf, "__dlpack__"):
            return _dlpack_view(buf)
        raise TypeError("expected bytes, a buffer-protocol object or a DLPack CPU array, not %s"
                        % type(buf).__name__)
    if not mv.c_contiguous:
        raise ValueError("the host buffer is not C-contiguous")
    mv = mv.cast("B") if mv.ndim != 1 or mv.format != "B" else mv
    if mv.readonly:
        if writable:
            raise ValueError("the destination buffer is read-only")
        if isinstance(buf, bytes):
            return ctypes.cast(ctypes.c_char_p(buf), ctypes.c_void_p).value, len(buf), buf
        c = (ctypes.c_char * mv.nbytes).from_buffer_copy(mv)
        return ctypes.addressof(c), mv.nbytes, c
    c = (ctypes.c_char * mv.nbytes).from_buffer(mv)
    return ctypes.addressof(c), mv.nbytes, (c, mv)


class Pin:
    """A pinned, CPU-mapped range of GPU memory. Use as a context manager, or close().
    owner: the tensor or array whose memory it is, kept alive until close(): were it freed,
    its allocator could hand the memory to another tensor, which the pin would then write."""

    def __init__(self, ptr, size, owner=None):
        if size <= 0:
            raise ValueError("pin: the size must be positive")
        lib = _lib.load()
        self._g = _handle()
        self._mh = None
        self._owner = owner
        self._lock = threading.Lock()
        mh = ctypes.c_ulong(0)
        rc = lib.gdr_pin_buffer(self._g, ptr, size, 0, 0, ctypes.byref(mh))
        if rc:
            _lib.fail(rc, "pin 0x%x + %d" % (ptr, size))
        self._mh = mh.value
        info = (ctypes.c_char * 48)()
        rc = lib.gdr_get_info_v2(self._g, self._mh, info)
        va, mapped = struct.unpack_from("QQ", bytes(info))
        base = ctypes.c_void_p()
        if not rc:
            rc = lib.gdr_map(self._g, self._mh, ctypes.byref(base), mapped)
        if rc:
            lib.gdr_unpin_buffer(self._g, self._mh)
            self._mh = None
            _lib.fail(rc, "map 0x%x + %d" % (ptr, size))
        self._map, self._mapped = base.value, mapped
        self.ptr, self.size = ptr, size
        self.cpu = base.value + (ptr - va)  # the CPU address of ptr

    def _range(self, offset, n):
        if self._mh is None:
            raise ValueError("the pin is closed")
        if offset < 0 or n < 0 or offset + n > self.size:
            raise ValueError("%d bytes at offset %d do not fit in the %d pinned bytes"
                             % (n, offset, self.size))
        return self.cpu + offset

    def _copy(self, to_gpu, host, offset, size):
        addr, n, keep = _host_view(host, not to_gpu)
        if size is not None:
            n = min(n, size)
        with self._lock:
            m = self._range(offset, n)
            lib = _lib.load()
            if to_gpu:
                rc = lib.gdr_copy_to_mapping(self._mh, m, addr, n)
            else:
                rc = lib.gdr_copy_from_mapping(self._mh, addr, m, n)
        del keep
        if rc:
            _lib.fail(rc, "copy_to" if to_gpu else "copy_from")
        return n

    def copy_to(self, src, offset=0):
        """Copy a host buffer into the GPU memory at offset; returns the bytes copied."""
        return self._copy(True, src, offset, None)

    def copy_from(self, dst=None, offset=0, size=None):
        """Copy GPU memory at offset into dst (a writable buffer), or into new bytes."""
        if dst is None:
            out = bytearray(max(self.size - offset if size is None else size, 0))
            self._copy(False, out, offset, None)
            return bytes(out)
        self._copy(False, dst, offset, size)
        return dst

    def close(self):
        """Unmap and unpin (a second close does nothing)."""
        with self._lock:
            if self._mh is None:
                return
            lib = _lib.load()
            lib.gdr_unmap(self._g, self._mh, self._map, self._mapped)
            rc = lib.gdr_unpin_buffer(self._g, self._mh)
            self._mh = None
            self._owner = None
        if rc:
            _lib.fail(rc, "unpin")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def pin(obj, size=None):
    """Pin and map a CUDA tensor/array (whole, or its first size bytes) or pointer + size."""
    ptr, n = _device_range(obj, size)
    return Pin(ptr, n, None if isinstance(obj, int) else obj)

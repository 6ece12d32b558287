# SPDX-License-Identifier: MIT
"""Loading libgdrapi.so.2 and declaring the functions this package calls."""
import ctypes
import os
import threading

_lock = threading.Lock()
_lib = None


class VramioError(OSError):
    """A libgdrapi call failed: errno and the library's one-line reason."""


def _declare(lib):
    c = ctypes
    sig = {
        "gdr_open": (c.c_void_p, []),
        "gdr_close": (c.c_int, [c.c_void_p]),
        "gdr_pin_buffer": (c.c_int, [c.c_void_p, c.c_ulong, c.c_size_t, c.c_uint64, c.c_uint32,
                                     c.POINTER(c.c_ulong)]),
        "gdr_unpin_buffer": (c.c_int, [c.c_void_p, c.c_ulong]),
        "gdr_map": (c.c_int, [c.c_void_p, c.c_ulong, c.POINTER(c.c_void_p), c.c_size_t]),
        "gdr_unmap": (c.c_int, [c.c_void_p, c.c_ulong, c.c_void_p, c.c_size_t]),
        "gdr_get_info_v2": (c.c_int, [c.c_void_p, c.c_ulong, c.c_void_p]),
        "gdr_copy_to_mapping": (c.c_int, [c.c_ulong, c.c_void_p, c.c_void_p, c.c_size_t]),
        "gdr_copy_from_mapping": (c.c_int, [c.c_ulong, c.c_void_p, c.c_void_p, c.c_size_t]),
        "vramio_last_error": (c.c_char_p, []),
        "vramio_strerror": (c.c_char_p, [c.c_int]),
        "vramio_alloc": (c.c_int, [c.c_int, c.c_size_t, c.POINTER(c.c_ulonglong)]),
        "vramio_free": (c.c_int, [c.c_ulonglong]),
        "vramio_pluggable_free": (None, [c.c_void_p, c.c_ssize_t, c.c_int, c.c_void_p]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args


def load():
    """The loaded library (once per process)."""
    global _lib
    with _lock:
        if _lib is None:
            name = os.environ.get("VRAMIO_LIB") or "libgdrapi.so.2"
            try:
                lib = ctypes.CDLL(name)
            except OSError as e:
                raise VramioError(2, "cannot load %s: %s (set VRAMIO_LIB to its path)" % (name, e))
            _declare(lib)
            _lib = lib
        return _lib


def library_path():
    """The file the library was loaded from (what PyTorch's pluggable allocator dlopens)."""
    load()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                if "/libgdrapi.so" in path:
                    return path
    except OSError:
        pass
    return os.environ.get("VRAMIO_LIB") or "libgdrapi.so.2"


def fail(rc, what):
    lib = load()
    why = lib.vramio_last_error() or b""
    raise VramioError(rc, "%s: %s (%s)" % (what, lib.vramio_strerror(rc).decode(), why.decode()))

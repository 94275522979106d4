"""Buffers: any object exposing the buffer protocol or DLPack, held while weft may touch it.

A Buffer takes the object's buffer with PyObject_GetBuffer (as C extensions do), which gives the
address of read-only memory as well, and pins it: a bytearray cannot be resized and a numpy
array's memory cannot go away while it is held. release() gives it back; requests call it once
their call has completed. The element type comes from the buffer's struct format (numpy
dtypes export theirs), so float16 ('e'), int8 ('b') and friends map directly to weft's types.
"""

import ctypes
import sys

from ._dlpack import DLPackTensor
from ._errors import InvalidArgumentError

_PyBUF_WRITABLE = 0x0001
_PyBUF_FORMAT = 0x0004
_PyBUF_ND = 0x0008
_PyBUF_STRIDES = 0x0010 | _PyBUF_ND


class _PyBuffer(ctypes.Structure):
    """CPython's Py_buffer (stable since Python 3.3)."""
    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
        ("strides", ctypes.POINTER(ctypes.c_ssize_t)),
        ("suboffsets", ctypes.POINTER(ctypes.c_ssize_t)),
        ("internal", ctypes.c_void_p),
    ]


_api = ctypes.pythonapi
_api.PyObject_GetBuffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_api.PyObject_GetBuffer.restype = ctypes.c_int
_api.PyBuffer_Release.argtypes = [ctypes.POINTER(_PyBuffer)]
_api.PyBuffer_Release.restype = None
_api.PyBuffer_IsContiguous.argtypes = [ctypes.POINTER(_PyBuffer), ctypes.c_char]
_api.PyBuffer_IsContiguous.restype = ctypes.c_int

# weftDataType_t values, with the numpy names used in messages.
INT8, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, FLOAT32, FLOAT64, BFLOAT16 = range(10)
TYPE_NAMES = {INT8: "int8", UINT8: "uint8", INT32: "int32", UINT32: "uint32", INT64: "int64",
              UINT64: "uint64", FLOAT16: "float16", FLOAT32: "float32", FLOAT64: "float64",
              BFLOAT16: "bfloat16"}

_SIGNED = {1: INT8, 4: INT32, 8: INT64}
_UNSIGNED = {1: UINT8, 4: UINT32, 8: UINT64}
_FLOATS = {"e": FLOAT16, "f": FLOAT32, "d": FLOAT64}
_NATIVE_ORDER = "<" if sys.byteorder == "little" else ">"


def datatype_of(fmt, itemsize):
    """weftDataType_t for a struct format, or None when weft has no such type."""
    if fmt[:1] in ("@", "=", _NATIVE_ORDER):
        fmt = fmt[1:]
    elif fmt[:1] in ("<", ">", "!"):
        return None  # the other byte order
    if fmt in _FLOATS:
        return _FLOATS[fmt]
    if fmt in ("b", "h", "i", "l", "q", "n"):
        return _SIGNED.get(itemsize)
    if fmt in ("B", "H", "I", "L", "Q", "N", "c"):
        return _UNSIGNED.get(itemsize)
    return None


class Buffer:
    """One argument's memory: its address, size, weft datatype and element count.

    `where` ("all_reduce: x") prefixes every message, so errors name the argument.
    """

    def __init__(self, obj, where, writable):
        self.obj = obj
        self._view = None
        self._tensor = None  # a DLPack tensor, when the object has no buffer protocol
        if obj is None:
            raise InvalidArgumentError(f"{where}: is None")
        view = _PyBuffer()
        flags = _PyBUF_STRIDES | _PyBUF_FORMAT
        try:
            ctypes.pythonapi.PyObject_GetBuffer(obj, ctypes.byref(view), flags)
        except (TypeError, BufferError) as e:
            if hasattr(obj, "__dlpack__"):  # a torch tensor, say: no buffer protocol
                self._take_dlpack(obj, where)
                return
            raise InvalidArgumentError(
                f"{where}: {type(obj).__name__} offers neither the buffer protocol ({e}) nor "
                "DLPack; pass a numpy array, memoryview, bytearray, array.array or a CPU "
                "tensor") from None
        self._view = view
        try:
            if writable and view.readonly:
                raise InvalidArgumentError(f"{where}: is read-only, but weft writes the result "
                                           "into it")
            if not _api.PyBuffer_IsContiguous(ctypes.byref(view), b"C"):
                raise InvalidArgumentError(f"{where}: is not C-contiguous (pass a contiguous "
                                           "copy, e.g. numpy.ascontiguousarray)")
            fmt = (view.format or b"B").decode()
            self.datatype = datatype_of(fmt, view.itemsize)
            if self.datatype is None:
                raise InvalidArgumentError(
                    f"{where}: element format {fmt!r} ({view.itemsize} bytes) is not a weft "
                    "datatype (int8, uint8, int32, uint32, int64, uint64, float16, float32, "
                    "float64)")
            self.address = view.buf
            self.nbytes = view.len
            self.itemsize = view.itemsize
            self.count = view.len // view.itemsize
        except BaseException:
            self.release()
            raise

    def _take_dlpack(self, obj, where):
        # DLPack has no read-only flag: a producer that hands out a tensor lets it be written.
        self._tensor = DLPackTensor(obj, where, sys.modules[__name__])
        for name in ("datatype", "address", "nbytes", "itemsize", "count"):
            setattr(self, name, getattr(self._tensor, name))

    def offset(self, elements):
        """The address `elements` elements into the buffer."""
        return self.address + elements * self.itemsize

    def release(self):
        """Gives the buffer back to its object (idempotent)."""
        if self._view is not None:
            _api.PyBuffer_Release(ctypes.byref(self._view))
            self._view = None
        if self._tensor is not None:
            self._tensor.release()
            self._tensor = None

    def __del__(self):
        self.release()

"""DLPack: tensors that offer `__dlpack__` instead of the buffer protocol (torch tensors).

The producer hands over a PyCapsule named "dltensor" holding a DLManagedTensor (DLPack 0.x, the
form torch 1.13 and numpy export). Taking it renames the capsule "used_dltensor", so that the
capsule no longer frees the tensor; the taker calls the tensor's deleter when done, which is what
the producer's tensor stays alive for. DLPack also carries bfloat16, which no buffer format does.
"""

import ctypes

from ._errors import InvalidArgumentError

_KDL_CPU, _KDL_CUDA_HOST = 1, 3  # device types with host-addressable memory
_KDL_INT, _KDL_UINT, _KDL_FLOAT, _KDL_BFLOAT = 0, 1, 2, 4


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    pass


# PYFUNCTYPE: the deleter runs with the GIL held, as the producer may expect.
_Deleter = ctypes.PYFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [
    ("dl_tensor", _DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _Deleter),
]

_api = ctypes.pythonapi
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int


def _datatype_of(dtype, types):
    """weftDataType_t for a DLPack dtype, or None."""
    if dtype.lanes != 1:
        return None
    table = {
        (_KDL_INT, 8): types.INT8, (_KDL_INT, 32): types.INT32, (_KDL_INT, 64): types.INT64,
        (_KDL_UINT, 8): types.UINT8, (_KDL_UINT, 32): types.UINT32, (_KDL_UINT, 64): types.UINT64,
        (_KDL_FLOAT, 16): types.FLOAT16, (_KDL_FLOAT, 32): types.FLOAT32,
        (_KDL_FLOAT, 64): types.FLOAT64, (_KDL_BFLOAT, 16): types.BFLOAT16,
    }
    return table.get((dtype.code, dtype.bits))


class DLPackTensor:
    """A DLPack tensor's memory, held until release(): address, size and element type."""

    def __init__(self, obj, where, types):
        self._managed = None
        try:
            capsule = obj.__dlpack__()
        except Exception as e:  # the producer's own refusal (a GPU tensor in a stream, ...)
            raise InvalidArgumentError(f"{where}: __dlpack__() failed: {e}") from None
        if not _api.PyCapsule_IsValid(capsule, b"dltensor"):
            raise InvalidArgumentError(f"{where}: __dlpack__() returned no unused DLPack capsule")
        pointer = _api.PyCapsule_GetPointer(capsule, b"dltensor")
        managed = ctypes.cast(pointer, ctypes.POINTER(_DLManagedTensor))
        _api.PyCapsule_SetName(capsule, b"used_dltensor")
        self._managed = managed
        try:
            self._describe(managed.contents.dl_tensor, where, types)
        except BaseException:
            self.release()
            raise

    def _describe(self, tensor, where, types):
        if tensor.device.device_type not in (_KDL_CPU, _KDL_CUDA_HOST):
            raise InvalidArgumentError(
                f"{where}: is on DLPack device type {tensor.device.device_type}; weft's Python "
                "module takes host memory (a CPU tensor)")
        self.datatype = _datatype_of(tensor.dtype, types)
        if self.datatype is None:
            raise InvalidArgumentError(
                f"{where}: DLPack dtype (code {tensor.dtype.code}, {tensor.dtype.bits} bits, "
                f"{tensor.dtype.lanes} lanes) is not a weft datatype")
        shape = [tensor.shape[i] for i in range(tensor.ndim)]
        count = 1
        for extent in shape:
            count *= extent
        if tensor.strides and count > 0:
            expected = 1
            for axis in reversed(range(tensor.ndim)):
                if shape[axis] != 1 and tensor.strides[axis] != expected:
                    raise InvalidArgumentError(f"{where}: is not contiguous (pass a contiguous "
                                               "copy, e.g. t.contiguous())")
                expected *= shape[axis]
        self.itemsize = tensor.dtype.bits // 8
        self.count = count
        self.nbytes = count * self.itemsize
        self.address = (tensor.data or 0) + tensor.byte_offset

    def release(self):
        """Calls the producer's deleter (idempotent)."""
        managed, self._managed = self._managed, None
        if managed and managed.contents.deleter:
            managed.contents.deleter(managed)

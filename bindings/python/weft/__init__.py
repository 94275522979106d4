"""weft from Python, without torch and without a compiler: ctypes over libweft's C API.

    import numpy as np
    import weft

    with weft.Comm.from_env() as comm:        # weftrun, torchrun, mpirun, srun...
        x = np.full(4, comm.rank, dtype=np.float32)
        comm.all_reduce(x)                    # in place, blocking; the GIL is released meanwhile
        req = comm.all_gather(x, out=np.empty(4 * comm.size, np.float32), async_op=True)
        gathered = req.wait()

Buffers are any objects with the buffer protocol (numpy arrays, memoryview, bytearray,
array.array) or DLPack (torch CPU tensors, bfloat16 included); their format gives the datatype. Errors are
WeftError subclasses carrying weft's message. docs/PYTHON.md is the reference.
"""

import ctypes

from . import _lib
from ._errors import (AbortedError, InternalError, InvalidArgumentError, InvalidUsageError,
                      RemoteError, SystemCallError, WeftError, WeftTimeoutError)
from .comm import Comm, ReduceOp, get_unique_id
from .group import group, group_end, group_start
from .request import Request

SUM = ReduceOp.SUM
PROD = ReduceOp.PROD
MAX = ReduceOp.MAX
MIN = ReduceOp.MIN
AVG = ReduceOp.AVG

UNIQUE_ID_BYTES = _lib.UNIQUE_ID_BYTES


def version_code():
    """The loaded libweft's WEFT_VERSION_CODE (major * 10000 + minor * 100 + patch)."""
    code = ctypes.c_int()
    _lib.lib.weftGetVersion(ctypes.byref(code))
    return code.value


def version():
    """The loaded libweft's version, "major.minor.patch"."""
    code = version_code()
    return f"{code // 10000}.{code // 100 % 100}.{code % 100}"


def library_path():
    """The libweft that was loaded (a path, or the name the dynamic loader resolved)."""
    return _lib.path


__version__ = version()

__all__ = [
    "AVG", "AbortedError", "Comm", "InternalError", "InvalidArgumentError", "InvalidUsageError",
    "MAX", "MIN", "PROD", "ReduceOp", "RemoteError", "Request", "SUM", "SystemCallError",
    "UNIQUE_ID_BYTES", "WeftError", "WeftTimeoutError", "get_unique_id", "group", "group_end",
    "group_start", "library_path", "version", "version_code",
]

"""Finding and loading libweft, and declaring the C prototypes of include/weft/weft.h.

The library is looked up, in order, next to this package (the copy a pip install puts there),
at the path in the WEFT_LIBRARY environment variable, and then where the system's dynamic
loader finds it (ctypes.util.find_library, then libweft.so). Calls go through ctypes.CDLL,
which releases the GIL for the duration of every foreign call: a thread blocked in a collective
or in weftWait never stops the interpreter's other threads.
"""

import ctypes
import ctypes.util
import glob
import os

UNIQUE_ID_BYTES = 128  # WEFT_UNIQUE_ID_BYTES
CONFIG_MAGIC = 0x77656674  # WEFT_CONFIG_MAGIC
CONFIG_UNDEF_INT = -(2 ** 31)  # WEFT_CONFIG_UNDEF_INT
SPLIT_NOCOLOR = -1  # WEFT_SPLIT_NOCOLOR

# weftResult_t
SUCCESS = 0
IN_PROGRESS = 7
TIMEOUT = 8


class UniqueId(ctypes.Structure):
    """weftUniqueId: passed by value to weftCommInitRank."""
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


class Config(ctypes.Structure):
    """weftConfig_v1. Only the fields a caller sets differ from WEFT_CONFIG_INITIALIZER."""
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("magic", ctypes.c_uint),
        ("version", ctypes.c_uint),
        ("timeoutMs", ctypes.c_int),
        ("nSocks", ctypes.c_int),
        ("transport", ctypes.c_char_p),
        ("hostId", ctypes.c_char_p),
        ("commName", ctypes.c_char_p),
        ("checkMode", ctypes.c_int),
        ("buffers", ctypes.c_int),
    ]


comm_t = ctypes.c_void_p
request_t = ctypes.c_void_p
_result = ctypes.c_int
_p = ctypes.c_void_p
_sz = ctypes.c_size_t
_i = ctypes.c_int

# name: (argument types); every function returns weftResult_t unless listed in _RESTYPES.
_PROTOTYPES = {
    "weftGetVersion": [ctypes.POINTER(_i)],
    "weftGetErrorString": [_i],
    "weftGetLastError": [comm_t],
    "weftGetUniqueId": [ctypes.POINTER(UniqueId)],
    "weftCommInitRankConfig": [ctypes.POINTER(comm_t), _i, UniqueId, _i, ctypes.POINTER(Config)],
    "weftCommInitFromEnv": [ctypes.POINTER(comm_t), ctypes.POINTER(Config)],
    "weftCommSplit": [comm_t, _i, _i, ctypes.POINTER(comm_t), ctypes.POINTER(Config)],
    "weftCommDestroy": [comm_t],
    "weftCommAbort": [comm_t],
    "weftCommGetAsyncError": [comm_t, ctypes.POINTER(_i)],
    "weftCommCount": [comm_t, ctypes.POINTER(_i)],
    "weftCommUserRank": [comm_t, ctypes.POINTER(_i)],
    "weftTest": [ctypes.POINTER(request_t), ctypes.POINTER(_i)],
    "weftWait": [ctypes.POINTER(request_t), _i],
    "weftAllReduce": [_p, _p, _sz, _i, _i, comm_t, ctypes.POINTER(request_t)],
    "weftBroadcast": [_p, _p, _sz, _i, _i, comm_t, ctypes.POINTER(request_t)],
    "weftReduce": [_p, _p, _sz, _i, _i, _i, comm_t, ctypes.POINTER(request_t)],
    "weftAllGather": [_p, _p, _sz, _i, comm_t, ctypes.POINTER(request_t)],
    "weftReduceScatter": [_p, _p, _sz, _i, _i, comm_t, ctypes.POINTER(request_t)],
    "weftAlltoAll": [_p, _p, _sz, _i, comm_t, ctypes.POINTER(request_t)],
    "weftGather": [_p, _p, _sz, _i, _i, comm_t, ctypes.POINTER(request_t)],
    "weftScatter": [_p, _p, _sz, _i, _i, comm_t, ctypes.POINTER(request_t)],
    "weftBarrier": [comm_t, ctypes.POINTER(request_t)],
    "weftSend": [_p, _sz, _i, _i, comm_t, ctypes.POINTER(request_t)],
    "weftRecv": [_p, _sz, _i, _i, comm_t, ctypes.POINTER(request_t)],
    "weftGroupStart": [],
    "weftGroupEnd": [],
}
_RESTYPES = {"weftGetErrorString": ctypes.c_char_p, "weftGetLastError": ctypes.c_char_p}


def _candidates():
    """Paths or names to try, most specific first, with where each came from."""
    here = os.path.dirname(os.path.abspath(__file__))
    bundled = sorted(glob.glob(os.path.join(here, "libweft.so.*")))
    for path in bundled:
        yield path, "the copy inside the weft package"
    override = os.environ.get("WEFT_LIBRARY")
    if override:
        yield override, "WEFT_LIBRARY"
    found = ctypes.util.find_library("weft")
    if found:
        yield found, "the system's library path"
    yield "libweft.so", "the dynamic loader's search path"


def _load():
    tried = []
    for name, origin in _candidates():
        try:
            lib = ctypes.CDLL(name)
        except OSError as e:
            tried.append(f"{name} ({origin}): {e}")
            if origin == "WEFT_LIBRARY":
                # An explicit choice that fails must not silently fall back to another copy.
                break
            continue
        for fn, argtypes in _PROTOTYPES.items():
            f = getattr(lib, fn)
            f.argtypes = argtypes
            f.restype = _RESTYPES.get(fn, _result)
        return lib, name
    raise ImportError("weft: cannot load libweft; tried " + "; ".join(tried) +
                      ". Install the package with pip, or set WEFT_LIBRARY to libweft.so's path")


lib, path = _load()


def default_config():
    """A weftConfig_t as WEFT_CONFIG_INITIALIZER makes it."""
    version = ctypes.c_int()
    lib.weftGetVersion(ctypes.byref(version))
    return Config(ctypes.sizeof(Config), CONFIG_MAGIC, version.value, CONFIG_UNDEF_INT,
                  CONFIG_UNDEF_INT, None, None, None, CONFIG_UNDEF_INT, CONFIG_UNDEF_INT)

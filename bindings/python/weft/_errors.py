"""weft's result codes as Python exceptions.

Every failing call raises a WeftError subclass whose `code` is the weftResult_t and whose message
is weftGetLastError's text (naming the argument, peer or operation at fault). Argument errors
found in Python before calling the library (an unsupported dtype, a read-only output, sizes that
do not fit) raise InvalidArgumentError too, naming the argument.
"""

import builtins

from . import _lib


class WeftError(RuntimeError):
    """Base of weft's exceptions; `code` is the weftResult_t value."""
    code = None

    def __init__(self, message, code=None):
        super().__init__(message)
        if code is not None:
            self.code = code


class SystemCallError(WeftError):
    """A system call failed (weftSystemError)."""
    code = 2


class InternalError(WeftError):
    """A bug in weft (weftInternalError); please report it with the message."""
    code = 3


class InvalidArgumentError(WeftError, ValueError):
    """An argument is wrong (weftInvalidArgument); the communicator is unaffected."""
    code = 4


class InvalidUsageError(WeftError):
    """The call is wrong in this state, or the ranks disagree (weftInvalidUsage)."""
    code = 5


class RemoteError(WeftError):
    """A peer failed or vanished (weftRemoteError); the communicator has failed."""
    code = 6


class WeftTimeoutError(WeftError, builtins.TimeoutError):
    """A wait passed its deadline (weftTimeout)."""
    code = 8


class AbortedError(WeftError):
    """The communicator was aborted (weftAborted)."""
    code = 9


_BY_CODE = {cls.code: cls for cls in (SystemCallError, InternalError, InvalidArgumentError,
                                      InvalidUsageError, RemoteError, WeftTimeoutError,
                                      AbortedError)}


def error_for(code, comm_handle=None):
    """The exception for a failed call's result, carrying weftGetLastError's message."""
    message = _lib.lib.weftGetLastError(comm_handle) or b""
    if not message:
        message = _lib.lib.weftGetErrorString(code) or b"unknown error"
    cls = _BY_CODE.get(code, WeftError)
    return cls("weft: " + message.decode(errors="replace"), code)


def check(code, comm_handle=None):
    """Raises the exception for `code` unless it is weftSuccess."""
    if code != _lib.SUCCESS:
        raise error_for(code, comm_handle)

"""Request: a non-blocking call in flight, and the buffers it keeps alive until it completes."""

import ctypes
import threading

from . import _lib
from ._errors import AbortedError, WeftTimeoutError, error_for


class Request:
    """Returned by every call made with async_op=True.

    The request holds the call's buffers until the call has completed, so the arrays passed to it
    may be dropped by the caller. `wait()` returns the call's result buffer (None for barrier,
    send and recv-less calls) or raises the call's error as a WeftError. The communicator also
    tracks its requests: destroying it completes them first; aborting it fails them.
    """

    def __init__(self, comm, handle, buffers, result):
        self._comm = comm
        self._handle = handle
        self._buffers = buffers
        self._result = result
        self._error = None
        self._done = False
        self._lock = threading.Lock()

    @property
    def done(self):
        """True once the call has completed (successfully or not) and was collected."""
        return self._done

    def test(self):
        """True when the call has completed (raising its error if it failed), False while it
        runs. Never blocks."""
        if not self._poll():
            return False
        if self._error is not None:
            raise self._error
        return True

    def _poll(self):
        """Collects the call if it has completed, recording its error; True when done."""
        with self._lock:
            if not self._done:
                done = ctypes.c_int(0)
                code = _lib.lib.weftTest(ctypes.byref(self._handle), ctypes.byref(done))
                if not done.value and code == _lib.SUCCESS:
                    return False
                self._finish(code)
        return True

    def wait(self, timeout=None):
        """Blocks (with the GIL released) until the call completes and returns its result buffer.

        timeout: seconds, or None for no limit of the request's own (the communicator's deadline,
        WEFT_TIMEOUT, still holds). When it passes first, WeftTimeoutError is raised and the
        request stays valid: the call keeps running and may be waited for again. The limit is
        not exact: weftWait may run the queued call on this thread and return when it ends.
        """
        with self._lock:
            if not self._done:
                ms = -1 if timeout is None else max(0, int(timeout * 1000))
                code = _lib.lib.weftWait(ctypes.byref(self._handle), ms)
                if code == _lib.TIMEOUT and self._handle.value is not None:
                    raise WeftTimeoutError(
                        f"weft: Request.wait: the call did not complete within {timeout} s "
                        "(it is still running)", _lib.TIMEOUT)
                self._finish(code)
        return self._outcome()

    def _outcome(self):
        if self._error is not None:
            raise self._error
        return self._result

    def _finish(self, code):
        """Records a completed call's result and lets go of its buffers. Caller holds _lock."""
        if code != _lib.SUCCESS:
            self._error = error_for(code)
        self._complete()

    def _complete(self):
        self._done = True
        self._handle = _lib.request_t()
        for buf in self._buffers:
            buf.release()
        self._buffers = ()
        if self._comm is not None:
            self._comm._forget(self)
            self._comm = None

    def _abandon(self):
        """The communicator was aborted: weft has freed the call without completing the request,
        so it must not be touched again."""
        with self._lock:
            if not self._done:
                self._error = AbortedError("weft: the communicator was aborted", 9)
                self._complete()

    def _drain(self):
        """The communicator is being destroyed: wait for the call (weft's deadline bounds it)."""
        try:
            self.wait()
        except Exception:  # the error stays recorded for a later wait()
            pass

    def __repr__(self):
        return f"<weft.Request {'done' if self._done else 'in flight'}>"

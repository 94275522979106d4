"""Groups: weftGroupStart/weftGroupEnd, and the buffers blocking calls leave in a group.

Inside a group, a call made without async_op returns at once and completes at the outermost
group_end, so its buffers must outlive the Python call: they are parked here, per thread (groups
are per thread in weft too), and released when the outermost group_end returns.
"""

import contextlib
import threading

from . import _lib
from ._errors import check

_state = threading.local()


def _parked():
    if not hasattr(_state, "depth"):
        _state.depth = 0
        _state.buffers = []
    return _state


def in_group():
    """True between group_start() and the matching outermost group_end() on this thread."""
    return _parked().depth > 0


def park(buffers):
    """Keeps a group's blocking-call buffers until the outermost group_end."""
    _parked().buffers.extend(buffers)


def group_start():
    """Starts (or nests) a group: calls until the matching group_end are issued together, so
    point-to-point calls of a group progress concurrently (send to and receive from one peer)."""
    check(_lib.lib.weftGroupStart())
    _parked().depth += 1


def group_end():
    """Ends a group; the outermost one issues the calls and returns once those made without
    async_op have completed (the others complete through their requests)."""
    state = _parked()
    if state.depth == 0:
        raise RuntimeError("weft.group_end: no group was started on this thread")
    state.depth -= 1
    try:
        check(_lib.lib.weftGroupEnd())
    finally:
        if state.depth == 0:
            buffers, state.buffers = state.buffers, []
            for buf in buffers:
                buf.release()


@contextlib.contextmanager
def group():
    """`with weft.group(): ...` is group_start() ... group_end()."""
    group_start()
    try:
        yield
    finally:
        group_end()

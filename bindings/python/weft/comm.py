"""Comm: a weft communicator and its collectives over buffer-protocol objects.

Conventions shared by every collective:

- `x` is the input, `out` the output. Without `out` a call works in place on `x` (which must then
  be writable and, for all_gather and reduce_scatter, hold all nranks blocks: this rank's block
  at index rank). gather and scatter have no in-place form: their `out` (gather: the root's
  nranks blocks; scatter: every rank's block) is required where it is written.
- Counts and the datatype come from the buffers; `out` must have x's datatype and the size the
  call implies, or InvalidArgumentError names the argument and says what was expected.
- A blocking call returns its result buffer (`out`, or `x` in place) once the result is there,
  with the GIL released while it waits. With async_op=True it returns a Request at once; the
  request keeps the buffers alive until the call completes.
"""

import ctypes
import enum
import threading

from . import _lib, group as _group
from ._buffers import TYPE_NAMES, Buffer
from ._errors import InvalidArgumentError, InvalidUsageError, check, error_for
from .request import Request

# Requests in flight past which issuing another collects the completed ones (fire and forget).
_REAP_AT = 64


class ReduceOp(enum.IntEnum):
    """weftRedOp_t. AVG sums, then divides (integers, truncating) or scales by 1/nranks."""
    SUM = 0
    PROD = 1
    MAX = 2
    MIN = 3
    AVG = 4


def _op(op, where):
    if isinstance(op, str):
        try:
            return ReduceOp[op.upper()]
        except KeyError:
            pass
    else:
        try:
            return ReduceOp(op)
        except ValueError:
            pass
    raise InvalidArgumentError(f"{where}: op {op!r} is not one of sum, prod, max, min, avg")


def get_unique_id():
    """Creates a unique id (WEFT_UNIQUE_ID_BYTES bytes) and makes this process the rendezvous
    root until every rank of the communicator has joined. Share the bytes privately: they hold
    the secret that authenticates every connection."""
    uid = _lib.UniqueId()
    check(_lib.lib.weftGetUniqueId(ctypes.byref(uid)))
    return ctypes.string_at(ctypes.addressof(uid), _lib.UNIQUE_ID_BYTES)


def _config(timeout=None, nsocks=None, transport=None, host_id=None, comm_name=None,
            check_mode=None):
    """A weftConfig_t from keyword options (None leaves a field to the environment/default),
    plus the bytes objects its string fields point into (to keep alive)."""
    cfg = _lib.default_config()
    keep = []
    if timeout is not None:
        cfg.timeoutMs = int(timeout * 1000)
    if nsocks is not None:
        cfg.nSocks = int(nsocks)
    if check_mode is not None:
        cfg.checkMode = int(bool(check_mode))
    for field, value in (("transport", transport), ("hostId", host_id),
                         ("commName", comm_name)):
        if value is not None:
            encoded = value.encode()
            keep.append(encoded)
            setattr(cfg, field, encoded)
    return cfg, keep


class Comm:
    """A communicator. Make one with Comm.from_env() or Comm.init_rank(); free it with destroy()
    (or a `with` block, which aborts instead when the block raises).

    Config keywords of the constructors: timeout (seconds, every internal wait; WEFT_TIMEOUT
    wins), nsocks, transport ("tcp", "shm"), host_id, comm_name, check_mode (WEFT_CHECK).
    Calls on one communicator run in the order they are issued; abort() may be called from another
    thread to release a blocked call.
    """

    def __init__(self, handle, keep=()):
        self._handle = _lib.comm_t(handle)
        self._keep = keep  # config strings weft may still point to
        self._pending = set()
        self._lock = threading.Lock()
        value = ctypes.c_int()
        check(_lib.lib.weftCommUserRank(self._handle, ctypes.byref(value)))
        self.rank = value.value
        check(_lib.lib.weftCommCount(self._handle, ctypes.byref(value)))
        self.size = value.value

    # ---- Creation and teardown ----------------------------------------------------------------

    @classmethod
    def from_env(cls, **config):
        """Rank, size and rendezvous from the launcher (weftrun, torchrun, mpirun, srun...):
        weftCommInitFromEnv. Without launcher variables, a communicator of one rank."""
        cfg, keep = _config(**config)
        handle = _lib.comm_t()
        check(_lib.lib.weftCommInitFromEnv(ctypes.byref(handle), ctypes.byref(cfg)))
        return cls(handle.value, keep)

    @classmethod
    def init_rank(cls, nranks, unique_id, rank, **config):
        """Joins a communicator of nranks ranks whose id (from get_unique_id) every rank passes."""
        if not isinstance(unique_id, (bytes, bytearray)) or \
                len(unique_id) != _lib.UNIQUE_ID_BYTES:
            raise InvalidArgumentError(f"Comm.init_rank: unique_id must be the "
                                       f"{_lib.UNIQUE_ID_BYTES} bytes of get_unique_id()")
        uid = _lib.UniqueId.from_buffer_copy(bytes(unique_id))
        cfg, keep = _config(**config)
        handle = _lib.comm_t()
        check(_lib.lib.weftCommInitRankConfig(ctypes.byref(handle), int(nranks), uid, int(rank),
                                              ctypes.byref(cfg)))
        return cls(handle.value, keep)

    def split(self, color, key=None, **config):
        """Collective: ranks with the same color form a new communicator ordered by key (default:
        this rank). color None (or WEFT_SPLIT_NOCOLOR) joins none and returns None."""
        cfg, keep = _config(**config)
        handle = _lib.comm_t()
        color = _lib.SPLIT_NOCOLOR if color is None else int(color)
        key = self.rank if key is None else int(key)
        check(_lib.lib.weftCommSplit(self._live("split"), color, key, ctypes.byref(handle),
                                     ctypes.byref(cfg)))
        return None if handle.value is None else Comm(handle.value, keep)

    def destroy(self):
        """Completes the calls in flight (their requests keep their results), then frees the
        communicator. Does nothing when it is already gone."""
        for req in self._take_pending():
            req._drain()
        handle, self._handle = self._handle, None
        if handle is not None:
            check(_lib.lib.weftCommDestroy(handle))

    def abort(self):
        """Fails the calls queued and running (a blocked call on another thread raises
        AbortedError) and frees the communicator without waiting on peers."""
        handle, self._handle = self._handle, None
        if handle is not None:
            check(_lib.lib.weftCommAbort(handle))
        for req in self._take_pending():
            req._abandon()

    def async_error(self):
        """None while the communicator is healthy, else the WeftError that failed it."""
        code = ctypes.c_int()
        check(_lib.lib.weftCommGetAsyncError(self._live("async_error"), ctypes.byref(code)))
        if code.value in (_lib.SUCCESS, _lib.IN_PROGRESS):
            return None
        return error_for(code.value)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        # After an error the peers may never join the queued calls that destroy would wait for.
        if exc_type is None:
            self.destroy()
        else:
            self.abort()
        return False

    def __repr__(self):
        state = "destroyed" if self._handle is None else f"rank {self.rank} of {self.size}"
        return f"<weft.Comm {state}>"

    # ---- Collectives --------------------------------------------------------------------------

    def all_reduce(self, x, out=None, op=ReduceOp.SUM, async_op=False):
        """Every rank gets the reduction of all ranks' x (in x, or in out)."""
        send, recv = self._send_recv("all_reduce", x, out, len_ratio=1)
        return self._issue(_lib.lib.weftAllReduce, (send.address, recv.address, send.count,
                           send.datatype, _op(op, "all_reduce")), (send, recv),
                           out if out is not None else x, async_op)

    def broadcast(self, x, out=None, root=0, async_op=False):
        """Every rank gets root's x (in x, or in out; x is read on root only)."""
        send, recv = self._send_recv("broadcast", x, out, len_ratio=1)
        return self._issue(_lib.lib.weftBroadcast, (send.address, recv.address, send.count,
                           send.datatype, int(root)), (send, recv),
                           out if out is not None else x, async_op)

    def reduce(self, x, out=None, op=ReduceOp.SUM, root=0, async_op=False):
        """Root gets the reduction of all ranks' x (in x, or in out: written on root only, and
        optional elsewhere)."""
        on_root = self.rank == root
        if out is None and not on_root:
            send = Buffer(x, "reduce: x", writable=False)
            recv = send
        else:
            send, recv = self._send_recv("reduce", x, out, len_ratio=1)
        return self._issue(_lib.lib.weftReduce, (send.address, recv.address, send.count,
                           send.datatype, _op(op, "reduce"), int(root)), (send, recv),
                           out if out is not None else x, async_op)

    def all_gather(self, x, out=None, async_op=False):
        """out (nranks blocks of len(x)) gets every rank's x, rank r's at block r. In place: x
        holds the nranks blocks, this rank's filled in."""
        if out is None:
            buf = self._whole("all_gather", x)
            count = buf.count // self.size
            send, recv, bufs = buf.offset(self.rank * count), buf.address, (buf,)
        else:
            sbuf, rbuf = self._send_recv("all_gather", x, out, len_ratio=self.size)
            count, send, recv, bufs = sbuf.count, sbuf.address, rbuf.address, (sbuf, rbuf)
        return self._issue(_lib.lib.weftAllGather, (send, recv, count, bufs[0].datatype),
                           bufs, out if out is not None else x, async_op)

    def reduce_scatter(self, x, out=None, op=ReduceOp.SUM, async_op=False):
        """x holds nranks blocks; rank r gets the reduction of every rank's block r (in out, or
        in place in x's block r)."""
        if out is None:
            buf = self._whole("reduce_scatter", x)
            count = buf.count // self.size
            send, recv, bufs = buf.address, buf.offset(self.rank * count), (buf,)
        else:
            sbuf = self._whole("reduce_scatter", x, writable=False)
            rbuf = self._output("reduce_scatter", sbuf, out, sbuf.count // self.size)
            count, send, recv, bufs = rbuf.count, sbuf.address, rbuf.address, (sbuf, rbuf)
        return self._issue(_lib.lib.weftReduceScatter, (send, recv, count, bufs[0].datatype,
                           _op(op, "reduce_scatter")), bufs,
                           out if out is not None else x, async_op)

    def all_to_all(self, x, out=None, async_op=False):
        """Block j of x goes to rank j; block i of out (or of x, in place) comes from rank i."""
        sbuf = self._whole("all_to_all", x, writable=out is None)
        rbuf = sbuf if out is None else self._output("all_to_all", sbuf, out, sbuf.count)
        return self._issue(_lib.lib.weftAlltoAll, (sbuf.address, rbuf.address,
                           sbuf.count // self.size, sbuf.datatype), (sbuf, rbuf),
                           out if out is not None else x, async_op)

    def gather(self, x, out=None, root=0, async_op=False):
        """Root's out (nranks blocks of len(x), required on root, ignored elsewhere) gets rank
        r's x at block r."""
        sbuf = Buffer(x, "gather: x", writable=False)
        bufs, recv = (sbuf,), None
        if self.rank == root:
            if out is None:
                raise InvalidArgumentError("gather: out is None on the root (it receives "
                                           f"{self.size} x {sbuf.count} elements)")
            rbuf = self._output("gather", sbuf, out, sbuf.count * self.size)
            bufs, recv = (sbuf, rbuf), rbuf.address
        return self._issue(_lib.lib.weftGather, (sbuf.address, recv, sbuf.count, sbuf.datatype,
                           int(root)), bufs, out if self.rank == root else None, async_op)

    def scatter(self, x, out, root=0, async_op=False):
        """Every rank's out gets block r of root's x (nranks blocks of len(out); x is ignored,
        and may be None, on other ranks)."""
        rbuf = Buffer(out, "scatter: out", writable=True)
        bufs, send = (rbuf,), None
        if self.rank == root:
            sbuf = self._whole("scatter", x, writable=False)
            if sbuf.datatype != rbuf.datatype or sbuf.count != rbuf.count * self.size:
                rbuf.release()
                sbuf.release()
                raise InvalidArgumentError(
                    f"scatter: x has {sbuf.count} {TYPE_NAMES[sbuf.datatype]} elements, "
                    f"expected {self.size} x {rbuf.count} {TYPE_NAMES[rbuf.datatype]} "
                    "(nranks times out's)")
            bufs, send = (sbuf, rbuf), sbuf.address
        return self._issue(_lib.lib.weftScatter, (send, rbuf.address, rbuf.count,
                           rbuf.datatype, int(root)), bufs, out, async_op)

    def barrier(self, async_op=False):
        """Returns once every rank has entered the barrier."""
        return self._issue(_lib.lib.weftBarrier, (), (), None, async_op)

    def send(self, x, peer, async_op=False):
        """Sends x to peer (matched, in posting order, by that peer's recv of the same size)."""
        buf = Buffer(x, "send: x", writable=False)
        return self._issue(_lib.lib.weftSend, (buf.address, buf.count, buf.datatype, int(peer)),
                           (buf,), None, async_op)

    def recv(self, x, peer, async_op=False):
        """Receives into x from peer; returns x."""
        buf = Buffer(x, "recv: x", writable=True)
        return self._issue(_lib.lib.weftRecv, (buf.address, buf.count, buf.datatype, int(peer)),
                           (buf,), x, async_op)

    # ---- Internals ----------------------------------------------------------------------------

    def _live(self, what):
        handle = self._handle
        if handle is None:
            raise InvalidUsageError(f"weft: {what}: the communicator was destroyed or aborted", 5)
        return handle

    def _whole(self, name, x, writable=True):
        """x as a buffer of nranks equal blocks."""
        buf = Buffer(x, f"{name}: x", writable)
        if buf.count % self.size:
            buf.release()
            raise InvalidArgumentError(f"{name}: x has {buf.count} elements, not a multiple of "
                                       f"the {self.size} ranks")
        return buf

    def _output(self, name, src, out, count):
        """out as a writable buffer of count elements of src's datatype."""
        try:
            buf = Buffer(out, f"{name}: out", writable=True)
        except InvalidArgumentError:
            src.release()
            raise
        if buf.datatype != src.datatype or buf.count != count:
            buf.release()
            src.release()
            raise InvalidArgumentError(
                f"{name}: out has {buf.count} {TYPE_NAMES[buf.datatype]} elements, expected "
                f"{count} {TYPE_NAMES[src.datatype]} (x's datatype)")
        return buf

    def _send_recv(self, name, x, out, len_ratio):
        """x and out (or x twice, in place), out holding len_ratio times x's elements."""
        if out is None:
            buf = Buffer(x, f"{name}: x", writable=True)
            return buf, buf
        send = Buffer(x, f"{name}: x", writable=False)
        return send, self._output(name, send, out, send.count * len_ratio)

    def _issue(self, fn, args, buffers, result, async_op):
        """Makes the C call; blocking, or with a Request holding the buffers."""
        buffers = tuple({id(b): b for b in buffers}.values())
        try:
            handle = self._live(fn.__name__)
        except InvalidUsageError:
            for buf in buffers:
                buf.release()
            raise
        if async_op:
            request = _lib.request_t()
            code = fn(*args, handle, ctypes.byref(request))
        else:
            code = fn(*args, handle, None)
        if code != _lib.SUCCESS:
            for buf in buffers:
                buf.release()
            raise error_for(code)
        if async_op:
            req = Request(self, request, buffers, result)
            with self._lock:
                self._pending.add(req)
                reap = len(self._pending) >= _REAP_AT
            if reap:
                self._reap()
            return req
        if _group.in_group():
            _group.park(buffers)  # the call completes at the outermost group_end
        else:
            for buf in buffers:
                buf.release()
        return result

    def _reap(self):
        """Collects completed requests nobody waits for, so that their buffers go."""
        with self._lock:
            pending = list(self._pending)
        for req in pending:
            req._poll()

    def _forget(self, request):
        with self._lock:
            self._pending.discard(request)

    def _take_pending(self):
        with self._lock:
            pending, self._pending = list(self._pending), set()
        return pending

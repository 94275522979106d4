"""Launching and supervising the rank processes of a torch.distributed test.

The parent side, `launch()`, starts N copies of a test script on 127.0.0.1, each as
`script --rank R --nranks N --parent-pid P [extra args]` in a session of its own with its output
in a log file, and waits for them. A rank that fails prints "FAIL rank R case C" and exits 1 (see
`fail_rank`); the parent then stops the others, and kills every rank at the timeout, at SIGTERM
(ctest's way of ending a test that overruns) or when the parent itself fails. Ranks still running
at the end get SIGUSR1 first, on which faulthandler prints where they are stuck. A rank may be
expected to exit with a given nonzero status (a rank that dies on purpose): that status is then
its success, and any other one a failure.

The rank side, `rank_setup()`, makes a rank die with its parent and dump its stacks on SIGUSR1.

Only the standard library is imported here: the parent never loads torch.
"""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback


def free_port():
    # Port 0 lets the kernel choose; the tiny window until rank 0's store binds it is acceptable
    # on a test machine.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_log(path):
    with open(path, errors="replace") as f:
        return f.read()


def launch(script, nranks, timeout, name, extra_args=(), expected_exit=None):
    """Runs `script` as ranks 0..nranks-1 and reports on them; returns the exit status (0 or 1).

    `expected_exit` maps a rank to the exit status that counts as its success (0 otherwise).
    `name` prefixes the parent's own messages.
    """
    expected_exit = dict(expected_exit or {})

    def expected(rank):
        return expected_exit.get(rank, 0)

    port = free_port()
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               WORLD_SIZE=str(nranks))
    # Python block-buffers output to a file; the logs must be complete when a rank is killed.
    env["PYTHONUNBUFFERED"] = "1"
    procs = []
    started = time.monotonic()
    failed_first = None
    timed_out = False

    def terminate(signum, frame):
        raise SystemExit(f"{name}: got signal {signum}, stopping the ranks")

    # ctest ends a test that overruns with SIGTERM; the ranks must go with it.
    previous_handler = signal.signal(signal.SIGTERM, terminate)
    with tempfile.TemporaryDirectory(prefix="weft_torch_test.") as logdir:
        logs = [os.path.join(logdir, f"rank{r}.log") for r in range(nranks)]
        try:
            for rank in range(nranks):
                with open(logs[rank], "w") as log:
                    # A session of its own per rank: killpg then reaches anything it started.
                    procs.append(subprocess.Popen(
                        [sys.executable, os.path.abspath(script), "--rank", str(rank),
                         "--nranks", str(nranks), "--parent-pid", str(os.getpid())]
                        + list(extra_args),
                        env=dict(env, RANK=str(rank)), stdout=log, stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL, start_new_session=True))
            deadline = started + timeout
            grace_end = None
            while True:
                states = [p.poll() for p in procs]
                if None not in states:
                    break
                now = time.monotonic()
                for rank, state in enumerate(states):
                    if failed_first is None and state not in (None, expected(rank)):
                        failed_first = rank
                        # The survivors are most likely blocked in a collective with the failed
                        # rank; give them a moment to report failures of their own.
                        grace_end = now + 3
                if now > deadline:
                    timed_out = True
                    break
                if grace_end is not None and now > grace_end:
                    break
                time.sleep(0.05)
            running = [r for r, p in enumerate(procs) if p.poll() is None]
            if running:
                # faulthandler in each rank prints where it is stuck before the kill.
                for r in running:
                    try:
                        procs[r].send_signal(signal.SIGUSR1)
                    except ProcessLookupError:
                        pass
                time.sleep(1)
        finally:
            # Only ranks not yet reaped: their pid (the group's id) cannot have been reused.
            for p in procs:
                if p.poll() is None:
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            for p in procs:
                p.wait()
            signal.signal(signal.SIGTERM, previous_handler)
        elapsed = time.monotonic() - started
        texts = [read_log(path) for path in logs]

    ok = not timed_out and all(p.returncode == expected(r) for r, p in enumerate(procs))
    for rank, (p, text) in enumerate(zip(procs, texts)):
        if ok:
            summary = [line for line in text.splitlines() if line.startswith("PASS")]
            print(summary[-1] if summary else f"rank {rank}: exited {p.returncode}")
        else:
            note = f", expected {expected(rank)}" if p.returncode != expected(rank) else ""
            print(f"===== rank {rank} (exit status {p.returncode}{note}) =====")
            print(text.rstrip())
    if ok:
        print(f"{name}: {nranks} ranks passed in {elapsed:.1f} s")
        return 0
    if timed_out:
        print(f"{name}: timed out after {timeout} s; ranks still running were "
              "killed (see their tracebacks above)")
    for rank, text in enumerate(texts):
        for line in text.splitlines():
            if line.startswith("FAIL"):
                print(f"{name}: {line}")
    if failed_first is not None:
        print(f"{name}: rank {failed_first} failed first; ranks still running after "
              "it were killed")
    return 1


def set_parent_death_signal(parent_pid):
    # A rank must not outlive the launcher, even one killed with SIGKILL.
    import ctypes
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:
        os._exit(1)


def rank_setup(parent_pid):
    """First thing in a rank, before torch is imported."""
    set_parent_death_signal(parent_pid)
    import faulthandler
    faulthandler.enable()
    faulthandler.register(signal.SIGUSR1, all_threads=True)


def fail_rank(rank, case, exc):
    """Reports a rank's failure the way launch() expects it, and ends the rank at once."""
    print(f"FAIL rank {rank} case {case}: {type(exc).__name__}: {exc}", flush=True)
    traceback.print_exception(type(exc), exc, exc.__traceback__)
    sys.stdout.flush()
    sys.stderr.flush()
    # A clean exit would wait for calls other ranks will never join.
    os._exit(1)

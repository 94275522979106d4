"""Shared pieces of the numpy tests of the `weft` module: the launcher and the rank's start.

The launcher is tests/torch/rank_launcher.py (standard library only, despite its folder): it
starts N ranks of a script on 127.0.0.1 with torchrun's variables (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT), which weft.Comm.from_env() reads.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "torch"))

import rank_launcher  # noqa: E402

SKIP = 77  # ctest's SKIP_RETURN_CODE


def launch(script, nranks, timeout, name, extra_args=(), expected_exit=None):
    """rank_launcher.launch with weft's own rendezvous port and secret.

    Under torchrun's variables weft would listen on MASTER_PORT+1, which nothing reserved; a port
    the kernel just handed out (WEFT_ROOT_ADDR) is less likely to be taken meanwhile.
    """
    os.environ["WEFT_ROOT_ADDR"] = f"127.0.0.1:{rank_launcher.free_port()}"
    os.environ["WEFT_SECRET"] = os.urandom(32).hex()
    return rank_launcher.launch(script, nranks, timeout, name, extra_args, expected_exit)


def rank_parser(doc, timeout, nranks=None):
    """The arguments every test script takes: --nranks (required unless given a default) and
    --timeout for the parent, and --rank and --parent-pid, which the launcher adds for a rank."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--nranks", type=int, default=nranks, required=nranks is None)
    parser.add_argument("--timeout", type=float, default=timeout)
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)
    return parser


def numpy_or_skip(name):
    """Exits with SKIP when numpy is missing (the module itself does not need it)."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        print(f"{name}: SKIP: numpy is not installed for {sys.executable}")
        sys.exit(SKIP)


__all__ = ["SKIP", "launch", "numpy_or_skip", "rank_launcher", "rank_parser"]

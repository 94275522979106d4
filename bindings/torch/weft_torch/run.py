"""torchrun, with the fix that Debian 12's torch 1.13 needs to start any worker.

    python3 -m weft_torch.run --nnodes 3 --nproc_per_node 2 --rdzv_backend c10d \\
        --rdzv_endpoint node0:29400 train.py

takes exactly torchrun's arguments. On Python 3.11, iterating an IntFlag skips its zero member,
so torch 1.13's `Std.from_str("0")` returns None and torchrun dies before it starts a worker
("'NoneType' object has no attribute 'get'"). Where that happens this replaces from_str with one
that converts the value directly, then runs torchrun's own main; elsewhere it changes nothing.
"""

import re

from torch.distributed.elastic.multiprocessing import api as _api


def _std_from_str(cls, text):
    if re.match(_api._VALUE_REGEX, text):
        return cls(int(text))
    if re.match(_api._MAPPING_REGEX, text):
        return {int(i): cls(int(v)) for i, v in (item.split(":") for item in text.split(","))}
    raise ValueError(f"{text} does not match: {_api._VALUE_REGEX} or {_api._MAPPING_REGEX}")


def fix_std_from_str():
    """Patches torch's Std.from_str where it is broken; returns whether it was."""
    if _api.Std.from_str("0") is not None:
        return False
    _api.Std.from_str = classmethod(_std_from_str)
    return True


def main():
    fix_std_from_str()
    from torch.distributed.run import main as torchrun_main

    torchrun_main()


if __name__ == "__main__":
    main()

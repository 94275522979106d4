"""weft as a torch.distributed backend.

    import torch.distributed as dist
    import weft_torch  # registers the backend "weft"
    dist.init_process_group("weft", init_method="env://")

Rendezvous goes through torch's store (env://, tcp://, file://): rank 0 of each group publishes
weft's unique id there. The group's timeout becomes weft's deadline for every wait (WEFT_TIMEOUT,
when set, wins). Every other WEFT_* variable applies as in C programs.
"""

import inspect

import torch
import torch.distributed as dist

from . import _C  # noqa: E402  (needs torch loaded first)

__all__ = ["BACKEND", "ProcessGroupWeft", "empty", "version"]

BACKEND = "weft"
ProcessGroupWeft = _C.ProcessGroupWeft


def version():
    """weft's version code (major * 10000 + minor * 100 + patch)."""
    return _C.weft_version()


def empty(*size, dtype=torch.float32):
    """An uninitialised (in fact zero-filled) CPU tensor in weftMemAlloc memory, like
    torch.empty(*size, dtype=dtype): where every rank's tensors of a collective come from here,
    the shared-memory algorithms read them in place (docs/MEMORY.md). Its memory is freed when
    its storage is."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    count = 1
    for extent in size:
        count *= int(extent)
    itemsize = torch.empty((), dtype=dtype).element_size()
    return _C.empty_bytes(count * itemsize).view(dtype).view(size)


def _create(store, rank, size, timeout):
    return _C.create_process_group(store, rank, size, timeout)


def _register():
    if BACKEND.upper() in getattr(dist.Backend, "_plugins", {}):
        return
    # torch 2.x takes the devices the backend serves; 1.x has no such argument.
    if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
        dist.Backend.register_backend(BACKEND, _create, devices=["cpu"])
    else:
        dist.Backend.register_backend(BACKEND, _create)


_register()

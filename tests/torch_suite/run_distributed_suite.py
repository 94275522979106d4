"""Runs PyTorch's own distributed test suite against the weft backend.

torch ships torch/testing/_internal/distributed/distributed_test.py (the suite behind
test_distributed_spawn.py for gloo and nccl). This driver does what that file does for its
backends, as torch_ucc did for ucc: it declares weft's capabilities in DistTestCases before the
suite is imported, builds the spawn test class, and runs it with BACKEND=weft.

    BACKEND=weft WORLD_SIZE=2 PYTHONPATH=<build>/python /usr/bin/python3 \
        tests/torch_suite/run_distributed_suite.py [--ci] [-v] [-k pattern]

--ci runs the short selection CI uses (CI_SELECTION in suite_skips.py); otherwise every test
runs (about 10 minutes here). summarize_log.py turns a -v log into the table of outcomes.

Every spawned rank imports this module again (multiprocessing's spawn), so the backend is
registered in each of them by the import below. Tests known not to apply to weft are skipped
with their reason (SKIPS); the report lists every outcome.
"""

import os
import sys

# Our own flag goes before torch's test utilities parse the command line.
CI_ONLY = "--ci" in sys.argv
if CI_ONLY:
    sys.argv.remove("--ci")

# torch's test utilities switch to XML reports when CI is set (they import xmlrunner, which
# Debian does not package); the outcome is read from the exit status and the -v log instead.
os.environ.pop("CI", None)
os.environ.setdefault("BACKEND", "weft")
os.environ.setdefault("WORLD_SIZE", "2")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import weft_torch  # noqa: E402,F401  (registers "weft")
from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

# What weft supports, in the suite's own vocabulary: DDP, subgroups, and "plugin" (a third-party
# backend counts as available). No receive from any source; no CUDA in this build.
DistTestCases.skip_collective["sendrecv anysource"].add("weft")
DistTestCases.backend_feature["ddp"].add("weft")
DistTestCases.backend_feature["subgroup"].add("weft")
DistTestCases.backend_feature["plugin"].add("weft")

# Debian's torch 1.13 cannot import torch.distributed._shard on Python 3.11 (a dataclass with a
# mutable default, fixed in torch 2.0), and the suite's ranks switch DDP into its experimental
# ReplicatedTensor mode, which imports it. The switch is kept off, so DDP tests run DDP's
# ordinary path (the one training code uses); the failure is torch's, with any backend.
import torch.nn.parallel._replicated_tensor_ddp_utils as _replicated  # noqa: E402

_replicated._set_ddp_with_replicated_tensor = lambda enabled: None

from torch.testing._internal.common_utils import run_tests  # noqa: E402
from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest,
    TestDistBackend,
)

from suite_skips import CI_SELECTION, SKIPS, UNGATED  # noqa: E402


def _ungated(test):
    """The test without the suite's backend-name gate: unittest.skip wraps the function (the
    original is __wrapped__), torch's sandcastle_skip_if only marks it."""
    while getattr(test, "__unittest_skip__", False):
        if getattr(test, "__name__", "") == "skip_wrapper" or (
            hasattr(test, "__wrapped__") and test.__code__.co_name == "skip_wrapper"
        ):
            test = test.__wrapped__
        else:
            test.__unittest_skip__ = False
    return test


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        name = self._testMethodName
        if name in SKIPS:
            self.skipTest(SKIPS[name])
        super().setUp()
        self._spawn_processes()


for _name in UNGATED:
    setattr(TestDistBackendWithSpawn, _name, _ungated(getattr(TestDistBackendWithSpawn, _name)))


if __name__ == "__main__":
    # torch's utilities parsed the command line at import; what they left for unittest is
    # UNITTEST_ARGS, to which the selection's test names are added.
    from torch.testing._internal import common_utils

    selection = [f"TestDistBackendWithSpawn.{name}" for name in CI_SELECTION] if CI_ONLY else []
    run_tests(argv=common_utils.UNITTEST_ARGS + selection)

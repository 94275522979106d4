"""pip install . : builds libweft with CMake and packages it with the `weft` Python module.

The wheel carries its own libweft.so.<major> inside the `weft` package (found there first by
weft/_lib.py), so it needs no system install of weft. When the Python running pip imports torch,
the torch.distributed backend is built too and `weft_torch` is packaged beside `weft`, its _C
extension finding libweft through an RPATH of $ORIGIN/../weft. The version is read from
include/weft/weft.h, the one place it is written.

CMake runs in <build_base>/cmake (incremental across runs). Extra CMake arguments: CMAKE_ARGS;
parallel jobs: CMAKE_BUILD_PARALLEL_LEVEL (default: all cores).
"""

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))
# Not build/: that is where the README's CMake build lives.
BUILD_BASE = "build-pip"


def header_version():
    with open(os.path.join(ROOT, "include", "weft", "weft.h")) as f:
        text = f.read()
    parts = [re.search(rf"^#define WEFT_VERSION_{name} (\d+)$", text, re.M)
             for name in ("MAJOR", "MINOR", "PATCH")]
    if not all(parts):
        sys.exit("setup.py: include/weft/weft.h does not define WEFT_VERSION_MAJOR/MINOR/PATCH")
    return ".".join(p.group(1) for p in parts)


def python_has_torch():
    probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True)
    return probe.returncode == 0


class BinaryDistribution(Distribution):
    """The wheel holds a shared library: platform-specific, not pure Python."""

    def has_ext_modules(self):
        return True


class BuildWithCMake(build_py):
    """build_py, plus libweft (and weft_torch) built by CMake and copied into build_lib."""

    def run(self):
        super().run()
        build_dir = os.path.abspath(os.path.join(BUILD_BASE, "cmake"))
        torch = python_has_torch()
        self.cmake(build_dir, torch)
        target = os.path.join(self.build_lib, "weft")
        self.copy_library(build_dir, target)
        if torch:
            self.copy_weft_torch(build_dir)

    def cmake(self, build_dir, torch):
        args = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                "-DWEFT_BUILD_TESTS=OFF", "-DWEFT_BUILD_PERF=OFF", "-DWEFT_BUILD_EXAMPLES=OFF",
                "-DWEFT_BUILD_TOOLS=OFF", "-DWEFT_CUDA=OFF", "-DWEFT_UNITY_BUILD=ON",
                # The copies in the wheel find each other, wherever pip puts them.
                "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON", "-DCMAKE_INSTALL_RPATH=$ORIGIN/../weft",
                "-DCMAKE_INSTALL_RPATH_USE_LINK_PATH=ON"]
        if torch:
            args += ["-DWEFT_TORCH=AUTO", f"-DWEFT_PYTHON={sys.executable}"]
        else:
            args += ["-DWEFT_TORCH=OFF"]
        args += shlex.split(os.environ.get("CMAKE_ARGS", ""))
        self.announce_run(args)
        targets = ["weft"] + (["weft_torch_ext"] if torch and self.torch_configured(build_dir)
                              else [])
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        self.announce_run(["cmake", "--build", build_dir, "-j", jobs, "--target"] + targets)

    @staticmethod
    def torch_configured(build_dir):
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            return "WEFT_TORCH_EXTENSION_H:PATH=/" in f.read()

    def announce_run(self, args):
        print("setup.py: " + " ".join(shlex.quote(a) for a in args), flush=True)
        subprocess.run(args, check=True)

    def copy_library(self, build_dir, target):
        """libweft.so.<major> (the name it is loaded by), as a file: wheels have no links."""
        real = [p for p in glob.glob(os.path.join(build_dir, "libweft.so.*.*.*"))
                if not os.path.islink(p)]
        if len(real) != 1:
            sys.exit(f"setup.py: expected one libweft.so.X.Y.Z in {build_dir}, found {real}")
        major = header_version().split(".")[0]
        os.makedirs(target, exist_ok=True)
        for old in glob.glob(os.path.join(target, "libweft.so*")):
            os.remove(old)
        shutil.copyfile(real[0], os.path.join(target, f"libweft.so.{major}"))

    def copy_weft_torch(self, build_dir):
        package = os.path.join(build_dir, "python", "weft_torch")
        if not glob.glob(os.path.join(package, "_C*.so")):
            print("setup.py: weft_torch was not built (torch's C++ headers, pybind11 or "
                  "Python.h missing; Debian: libtorch-dev pybind11-dev python3-dev); "
                  "installing weft alone", flush=True)
            return
        target = os.path.join(self.build_lib, "weft_torch")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(package, target)


os.makedirs(os.path.join(ROOT, BUILD_BASE), exist_ok=True)
setup(
    name="weft",
    version=header_version(),
    description="weft collective communication: the ctypes module `weft` (and `weft_torch`)",
    license="MIT",
    python_requires=">=3.8",
    packages=["weft"],
    package_dir={"weft": "bindings/python/weft"},
    distclass=BinaryDistribution,
    cmdclass={"build_py": BuildWithCMake},
    options={"build": {"build_base": BUILD_BASE}, "egg_info": {"egg_base": BUILD_BASE}},
    zip_safe=False,
)

"""Shared fixtures of the Python tests (tests/python, docs/python.md).

CTest runs them as `/usr/bin/python3 -m pytest tests/python` with DCCC set
to the driver it built; by hand:

    DCCC=build/tools/dccc PYTHONPATH=python /usr/bin/python3 -m pytest tests/python -rs
"""

import os
import subprocess
import sys

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
EXAMPLES = os.path.join(ROOT, "examples")
EXAMPLE_NAMES = sorted(f[:-4] for f in os.listdir(EXAMPLES) if f.endswith(".toy"))


def dccc_binary():
    exe = os.environ.get("DCCC") or os.path.join(ROOT, "build", "tools", "dccc")
    if not os.access(exe, os.X_OK):
        # A missing driver is a failure, never a skip.
        raise RuntimeError(f"no dccc driver at {exe}; set DCCC")
    return exe


@pytest.fixture(scope="session")
def dccc_exe():
    return dccc_binary()


@pytest.fixture(scope="session")
def lib_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("libs")


_built = {}


@pytest.fixture(scope="session")
def build_lib(dccc_exe, lib_dir):
    """build_lib("mha") -> path of examples/mha.toy compiled for the CPU."""

    def build(name, *flags):
        key = (name, flags)
        if key not in _built:
            out = lib_dir / f"{name}{len(_built)}" / f"{name}.so"
            out.parent.mkdir()
            r = subprocess.run([dccc_exe, *flags, os.path.join(EXAMPLES, name + ".toy"), "-o", str(out)],
                               capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            _built[key] = str(out)
        return _built[key]

    return build


@pytest.fixture(scope="session")
def load_example(build_lib):
    import dccc

    def load(name):
        return dccc.load(build_lib(name))

    return load

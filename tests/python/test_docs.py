"""Every ```python block of README.md and docs/python.md runs, as written,
from the repository root (a fresh interpreter per block, the library cache
in a temporary folder); and the NumPy example of examples/python runs.
Blocks that use PyTorch are reported as skipped where PyTorch has no
custom operators or jagged nested tensors; blocks that use CUDA where there
is no GPU."""

import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

DOCS = ["README.md", os.path.join("docs", "python.md")]


def blocks():
    out = []
    for doc in DOCS:
        text = open(os.path.join(ROOT, doc)).read()
        for m in re.finditer(r"^```python\n(.*?)^```", text, re.M | re.S):
            line = text.count("\n", 0, m.start()) + 1
            out.append(pytest.param(m.group(1), id=f"{doc}:{line}"))
    return out


def test_the_docs_have_examples():
    ids = [b.id for b in blocks()]
    assert sum(i.startswith("README.md") for i in ids) >= 2, "the README's NumPy and PyTorch examples"
    assert sum(i.startswith("docs/python.md") for i in ids) >= 5


def torch_skip_reason(code):
    if "torch" not in code:
        return None
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    from dccc import torch_ops

    why = torch_ops.supported()
    if why:
        return why
    if "jagged" in code and not hasattr(torch, "jagged"):
        return "no jagged nested tensors"
    if "cuda" in code and not torch.cuda.is_available():
        return "no CUDA device"
    return None


def run(args, tmp_path, dccc_exe):
    env = dict(os.environ, DCCC=dccc_exe, DCCC_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.path.join(ROOT, "python"), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("code", blocks())
def test_doc_block_runs(code, tmp_path, dccc_exe):
    why = torch_skip_reason(code)
    if why:
        pytest.skip(why)
    script = tmp_path / "block.py"
    script.write_text(code)
    r = run([str(script)], tmp_path, dccc_exe)
    assert r.returncode == 0, f"the block failed:\n{code}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"


def test_numpy_example(tmp_path, dccc_exe):
    r = run([os.path.join(ROOT, "examples", "python", "numpy_mha.py")], tmp_path, dccc_exe)
    assert r.returncode == 0, r.stderr
    assert "max |dccc - float64|" in r.stdout and "rejected:" in r.stdout

"""What the stdlib differential tests (nn_diff.py, attention_diff.py) share:
DCC literals of the inputs, running a program with `dccc run`, reading the
values it prints, and comparing them with float64 references."""
import json
import os
import subprocess
import tempfile

import numpy as np


def lit(a):
    """A DCC literal for a nested list of floats."""
    if isinstance(a, list):
        return "[" + ", ".join(lit(v) for v in a) + "]"
    return "%.6f" % a


def run_program(dccc, src, name):
    """`dccc run` of the program text `src` (written as NAME.toy)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name + ".toy")
        with open(path, "w") as f:
            f.write(src)
        return subprocess.run([dccc, "run", path], capture_output=True, text=True, timeout=300)


def parse_values(text):
    """The values `print` wrote, in order (each a JSON value)."""
    dec = json.JSONDecoder()
    vals, i = [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return vals
        v, i = dec.raw_decode(text, i)
        vals.append(v)


def compare(name, got, want, where):
    """Errors where `got` differs from the float64 `want` by more than 2e-4
    relative + 2e-5 absolute, or has another shape; a list `want` is ragged:
    one array per sequence."""
    if isinstance(want, list):
        if len(got) != len(want):
            return [f"{where} {name}: {len(got)} sequences, expected {len(want)}"]
        errs = []
        for b, (gs, ws) in enumerate(zip(got, want)):
            errs += compare(name, gs, ws, f"{where} b={b}")
        return errs
    g = np.array(got, dtype=np.float64).reshape(want.shape) if np.size(got) == want.size else None
    if g is None:
        return [f"{where} {name}: shape of {got!r} is not {want.shape}"]
    bad = ~np.isclose(g, want, rtol=2e-4, atol=2e-5)
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        return [f"{where} {name}: at {idx} got {g[idx]!r}, float64 reference {want[idx]!r}"]
    return []

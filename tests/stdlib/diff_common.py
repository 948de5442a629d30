"""What the stdlib differential tests (nn_diff.py, attention_diff.py,
ragged_diff.py) share: DCC literals of the inputs, running a program with
`dccc run`, reading the values it prints, comparing them with float64
references, and the report."""
import json
import os
import re
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
    # DCC prints non-finite values as inf, -inf and nan (docs/language.md).
    text = re.sub(r"(?<![\w.])(-?)inf\b", r"\1Infinity", text)
    text = re.sub(r"(?<![\w.])nan\b", "NaN", text)
    dec = json.JSONDecoder()
    vals, i = [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return vals
        v, i = dec.raw_decode(text, i)
        vals.append(v)


def round_to(x, elem):
    """Values rounded to the element type `elem` (f32, f16 or bf16, round
    to nearest even), as float64: what a program reading them as `elem`
    computes with."""
    a = np.asarray(x, dtype=np.float64)
    if elem == "f64":
        return a
    if elem == "f16":
        return a.astype(np.float16).astype(np.float64)
    f = a.astype(np.float32)
    if elem == "bf16":
        u = np.atleast_1d(f).view(np.uint32).astype(np.uint64)
        one, half, mask = np.uint64(1), np.uint64(0x7FFF), np.uint64(0xFFFF0000)
        u = (u + half + ((u >> np.uint64(16)) & one)) & mask
        f = u.astype(np.uint32).view(np.float32).reshape(np.shape(f))
    return f.astype(np.float64)


def rounded_list(x, elem):
    """A nested list of floats with every value rounded to `elem`."""
    if isinstance(x, list):
        return [rounded_list(v, elem) for v in x]
    return float(round_to(x, elem))


# Tolerances per element type of the result (relative, absolute): f32 as
# before; a 16-bit result is one rounding of an f32 value (bf16: 8
# significant bits, f16: 11), plus the rounding of the inputs the reference
# already includes.
TOLERANCES = {"f32": (2e-4, 2e-5), "f16": (2e-3, 2e-3), "bf16": (1.6e-2, 1.6e-2)}


def compare(name, got, want, where, elem="f32", tol=None):
    """Errors where `got` differs from the float64 `want` by more than the
    tolerance of `elem` (f32: 2e-4 relative + 2e-5 absolute) or `tol`
    (relative, absolute), or has
    another shape; a list `want` is ragged: one array per sequence."""
    if isinstance(want, list):
        if len(got) != len(want):
            return [f"{where} {name}: {len(got)} sequences, expected {len(want)}"]
        errs = []
        for b, (gs, ws) in enumerate(zip(got, want)):
            errs += compare(name, gs, ws, f"{where} b={b}", elem, tol)
        return errs
    g = np.array(got, dtype=np.float64).reshape(want.shape) if np.size(got) == want.size else None
    if g is None:
        return [f"{where} {name}: shape of {got!r} is not {want.shape}"]
    rtol, atol = tol or TOLERANCES[elem]
    bad = ~np.isclose(g, want, rtol=rtol, atol=atol)
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        return [f"{where} {name}: at {idx} got {g[idx]!r}, float64 reference {want[idx]!r}"]
    return []


def check_program(dccc, src, name, where, names, reference, elem="f32", tol=None):
    """Runs the program text `src` with `dccc run` and compares the values it
    prints, in order, with `reference()` (float64, one entry per name in
    `names`; called only when the run succeeds). Returns (errors, how many
    results were compared)."""
    r = run_program(dccc, src, name)
    if r.returncode != 0:
        return [f"{where} dccc run exited {r.returncode}:\n{r.stderr}\n{src}"], 0
    got = parse_values(r.stdout)
    want = reference()
    if len(got) != len(want):
        return [f"{where} {len(got)} printed values, expected {len(want)}:\n{r.stdout}"], 0
    errs, checked = [], 0
    for n, g, w in zip(names, got, want):
        errs += compare(n, g, w, where, elem, tol)
        checked += 1
    return errs, checked


def report(name, failures, checked):
    """Prints every failure (exit status 1) or the OK line (0)."""
    for f in failures:
        print("FAIL", f)
    if failures:
        return 1
    print(f"{name}: OK ({checked} function results against float64 NumPy)")
    return 0

"""What the stdlib differential tests (nn_diff.py, attention_diff.py,
ragged_diff.py) share: DCC literals of the inputs, running a program with
`dccc run`, reading the values it prints, comparing them with float64
references, and the report."""
import json
import os
import re
import subprocess
import sys
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


# ---- The library variant: `X_diff.py DCCC SEEDS --target=cpu|cuda` ----
#
# The same inputs and float64 references, but the std functions are
# compiled into a library (`dccc -o`, for the CPU or, with --target=cuda,
# for the GPU with nvcc) and called through the C ABI by the Python package
# (python/dccc) with PyTorch tensors (on the GPU for cuda). Exit status 77
# (CTest: skipped, with the reason printed) when PyTorch, a GPU or nvcc is
# missing.

SKIP = 77
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def target_arg(argv):
    """The --target=cpu|cuda argument (None: the `dccc run` variant), and
    argv without it."""
    target, rest = None, []
    for a in argv:
        if a.startswith("--target="):
            target = a.split("=", 1)[1]
        else:
            rest.append(a)
    if target not in (None, "cpu", "cuda"):
        raise SystemExit(f"unknown {target!r}: --target=cpu or --target=cuda")
    return target, rest


class Skip(Exception):
    """The library variant cannot run here (the message says why)."""


class Libraries:
    """Libraries built from .toy files (paths relative to the repository),
    called with PyTorch tensors on the target's device."""

    def __init__(self, dccc, target, sources, tmp):
        try:
            import torch
        except ImportError as e:
            raise Skip(f"no PyTorch ({e})")
        if target == "cuda" and not torch.cuda.is_available():
            raise Skip("no CUDA GPU visible to PyTorch")
        if target == "cuda" and not (os.environ.get("DCCC_NVCC") or os.path.exists("/usr/local/cuda/bin/nvcc")
                                     or any(os.path.exists(os.path.join(d, "nvcc"))
                                            for d in os.environ.get("PATH", "").split(os.pathsep))):
            raise Skip("no nvcc")
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import dccc as pkg
        self.torch, self.target = torch, target
        self.device = "cuda" if target == "cuda" else "cpu"
        self.libs = {}
        # `std/...` from the stdlib/ next to these tests (also in a GPU
        # bundle, where dccc's own standard library may not be): -I a folder
        # whose `std` is it.
        inc = os.path.join(tmp, "include")
        if not os.path.exists(inc):
            os.makedirs(inc)
            os.symlink(os.path.join(ROOT, "stdlib"), os.path.join(inc, "std"))
        for key, rel in sources.items():
            so = os.path.join(tmp, key + ".so")
            r = subprocess.run([dccc, "--target=" + target, "-I", inc, "-o", so, os.path.join(ROOT, rel)],
                               capture_output=True, text=True, timeout=1800)
            if r.returncode != 0:
                raise RuntimeError(f"dccc --target={target} -o {rel} exited {r.returncode}:\n{r.stderr}")
            self.libs[key] = pkg.load(so)

    DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16"}

    def dense(self, a, elem):
        """A tensor of `elem` values on the device from the nested list `a`
        (rounded to `elem` as the reference's inputs are: round_to)."""
        t = self.torch.tensor(round_to(a, elem), dtype=self.torch.float64)
        return t.to(getattr(self.torch, self.DTYPES[elem])).to(self.device)

    def ints(self, a):
        return self.torch.tensor(list(a), dtype=self.torch.int32, device=self.device)

    def rows(self, seqs, tail, elem):
        """The packed rows of ragged nested lists (one per sequence), each row of shape `tail`."""
        flat = [row for s in seqs for row in s]
        a = np.array(round_to(flat, elem), dtype=np.float64).reshape((len(flat),) + tuple(tail))
        t = self.torch.tensor(a, dtype=self.torch.float64)
        return t.to(getattr(self.torch, self.DTYPES[elem])).to(self.device)

    def seqs(self, seqs, lens, tail, elem, field="data"):
        return {field: self.rows(seqs, tail, elem), "seqlen": self.ints(lens)}

    def call(self, key, fn, elem, *args):
        return getattr(self.libs[key], f"{fn}__{elem}")(*args)

    def host(self, t):
        """A result as float64 NumPy (a number stays a number)."""
        if isinstance(t, (int, float)):
            return float(t)
        return t.detach().to("cpu").to(self.torch.float64).numpy()

    def split(self, t, lens):
        """Packed result rows (a tensor, or float64 NumPy) split into one
        float64 array per sequence."""
        a = t if isinstance(t, np.ndarray) else self.host(t)
        if a.shape[0] != sum(lens):
            raise ValueError(f"{a.shape[0]} packed rows, lengths {list(lens)} sum to {sum(lens)}")
        out, off = [], 0
        for n in lens:
            out.append(a[off:off + n])
            off += n
        return out


def check_library(where, names, results, reference, elem="f32", tol=None):
    """Compares `results()` (one value per name; None: not run on this
    target) with `reference()`, as check_program does. Returns (errors,
    how many results were compared)."""
    try:
        got = results()
    except Exception as e:  # a failed call, a shape the reference does not have
        return [f"{where} {type(e).__name__}: {e}"], 0
    want = reference()
    errs, checked = [], 0
    for n, g, w in zip(names, got, want):
        if g is None:
            continue
        errs += compare(n, g, w, where, elem, tol)
        checked += 1
    return errs, checked


def run_variant(name, argv, run_cases):
    """main() of a differential test: `run_cases(dccc, seeds, libs)` with
    libs None for the `dccc run` variant, else a function making Libraries
    for the target; prints the report or the reason for a skip."""
    target, args = target_arg(argv[1:])
    dccc = args[0]
    seeds = int(args[1]) if len(args) > 1 else 3
    if target is None:
        failures, checked = run_cases(dccc, seeds, None)
        return report(name, failures, checked)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            failures, checked = run_cases(dccc, seeds, lambda sources: Libraries(dccc, target, sources, tmp))
        except Skip as e:
            print(f"{name} --target={target}: SKIPPED ({e})")
            return SKIP
    return report(f"{name} --target={target}", failures, checked)

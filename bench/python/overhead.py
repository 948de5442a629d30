#!/usr/bin/python3
"""Overhead of calling a generated function from Python (issue 18): a tiny
CPU multi-head attention (examples/mha.toy, B = 1, one query and one key
row, H = 2, D = 16) called from C (bench/python/overhead_c.c: outputs
allocated once, `mha` per call) and from Python through the dccc package
(NumPy: checks, `mha_meta`, the output allocated, `mha`; with `out=`; with
PyTorch tensors; through the custom operator when PyTorch has them). The
target: Python at most 2x the C call plus 15 us.

    DCCC=build/tools/dccc PYTHONPATH=python bench/python/overhead.py [--threads 1]

Prints the median time per call of each way (median of --rounds rounds of
--calls calls) and the Python/C comparison; exits 1 when the NumPy call
misses the target.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
import dccc  # noqa: E402


def median_per_call(f, calls, rounds):
    """(median, minimum) over the rounds of the time per call in us."""
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        per.append((time.perf_counter() - t0) / calls * 1e6)
    per.sort()
    return per[len(per) // 2], per[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--H", type=int, default=2)
    ap.add_argument("--D", type=int, default=16)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--threads", type=int, default=1, help="DCC_NUM_THREADS for both (default 1)")
    a = ap.parse_args()
    os.environ["DCC_NUM_THREADS"] = str(a.threads)
    H, D = a.H, a.D
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.environ.get("DCCC") or os.path.join(ROOT, "build", "tools", "dccc")
        so = os.path.join(tmp, "mha.so")
        subprocess.run([exe, os.path.join(ROOT, "examples", "mha.toy"), "-o", so], check=True, capture_output=True)
        cbin = os.path.join(tmp, "overhead_c")
        subprocess.run(["cc", "-O2", "-I", tmp, os.path.join(HERE, "overhead_c.c"), so, "-Wl,-rpath," + tmp,
                        "-o", cbin], check=True)
        c_us = tuple(float(x) for x in subprocess.run([cbin, str(H), str(D), str(a.calls), str(a.rounds)], check=True,
                                                      capture_output=True, text=True).stdout.split())
        lib = dccc.load(so)
        lib.set_num_threads(a.threads)
        q = np.linspace(0, 1, H * D, dtype=np.float32).reshape(1, H, D)
        k, v = q.copy(), q.copy()
        ql, kl = np.array([1], np.int32), np.array([1], np.int32)
        qd, kvd = {"data": q, "seqlen": ql}, {"k": k, "v": v, "seqlen": kl}
        buf = {"data": np.empty((1, H, D), np.float32)}
        rows = [("C (mha, outputs allocated once)", c_us)]
        rows.append(("Python, NumPy", median_per_call(lambda: lib.mha(qd, kvd), a.calls, a.rounds)))
        rows.append(("Python, NumPy, out=", median_per_call(lambda: lib.mha(qd, kvd, out=buf), a.calls, a.rounds)))
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None:
            tq = {"data": torch.from_numpy(q), "seqlen": torch.from_numpy(ql)}
            tkv = {"k": torch.from_numpy(k), "v": torch.from_numpy(v), "seqlen": torch.from_numpy(kl)}
            rows.append((f"Python, PyTorch {torch.__version__} tensors",
                         median_per_call(lambda: lib.mha(tq, tkv), a.calls, a.rounds)))
            from dccc import torch_ops
            if torch_ops.supported() is None:
                opslib = dccc.load(so, torch_namespace="dccc_bench")
                rows.append(("Python, PyTorch custom operator",
                             median_per_call(lambda: opslib.ops.mha(tq, tkv), a.calls // 4, a.rounds)))
    print(f"# mha, B = 1, lengths 1 and 1, H = {H}, D = {D}, {a.threads} thread(s); median of {a.rounds} rounds "
          f"of {a.calls} calls")
    print(f"{'way':<44}{'median us':>10}{'min us':>9}{'vs C':>8}{'target 2C+15':>14}")
    target = 2 * c_us[0] + 15
    for name, (med, low) in rows:
        print(f"{name:<44}{med:>10.2f}{low:>9.2f}{med / c_us[0]:>7.1f}x{'ok' if med <= target else 'MISSED':>14}")
    np_us = rows[1][1][0]
    print(f"NumPy call: {np_us:.2f} us = {np_us / c_us[0]:.1f}x the C call; target 2 x {c_us[0]:.2f} + 15 = "
          f"{target:.2f} us: {'met' if np_us <= target else 'missed'} (medians)")
    sys.exit(0 if np_us <= target else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Overhead of calling a generated function from Python (issue 18): a tiny
CPU multi-head attention (examples/mha.toy, B = 1, one query and one key
row, H = 2, D = 16) called from C (bench/python/overhead_c.c: outputs
allocated once, `mha` per call) and from Python through the dccc package
(NumPy: checks, `mha_meta`, the output allocated, `mha`; with `out=`; with
PyTorch tensors; through the custom operator when PyTorch has them). The
target: Python at most 2x the C call plus 15 us.

    DCCC=build/tools/dccc PYTHONPATH=python bench/python/overhead.py [--threads 1]

Prints the time per call of each way (median and minimum wall time, median
CPU time of the process, over --rounds rounds of --calls calls) and the
Python/C comparison by wall and by CPU time (on a shared machine the wall
times grow with the load, the target's 15 us does not); exits 1 when the
NumPy call misses the target by either.
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
    """(median wall, minimum wall, median CPU) over the rounds, us per call."""
    per, cpu = [], []
    for _ in range(rounds):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(calls):
            f()
        per.append((time.perf_counter() - t0) / calls * 1e6)
        cpu.append((time.process_time() - c0) / calls * 1e6)
    per.sort()
    cpu.sort()
    return per[len(per) // 2], per[0], cpu[len(cpu) // 2]


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
        # --cpu=native: timed on this machine (-o's default is the portable x86-64-v2).
        subprocess.run([exe, os.path.join(ROOT, "examples", "mha.toy"), "--cpu=native", "-o", so], check=True,
                       capture_output=True)
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
    print(f"{'way':<40}{'wall median':>12}{'wall min':>9}{'CPU median':>11}{'CPU vs C':>9}")
    for name, (med, low, cpu) in rows:
        print(f"{name:<40}{med:>12.2f}{low:>9.2f}{cpu:>11.2f}{cpu / c_us[2]:>8.1f}x")
    ok = True
    for clock, k in (("wall", 0), ("CPU", 2)):
        c, py = c_us[k], rows[1][1][k]
        target = 2 * c + 15
        ok &= py <= target
        print(f"NumPy call ({clock} medians): {py:.2f} us = {py / c:.1f}x the C call's {c:.2f} us; "
              f"target 2 x {c:.2f} + 15 = {target:.2f} us: {'met' if py <= target else 'missed'}")
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

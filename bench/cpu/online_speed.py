#!/usr/bin/python3
"""Speed of the online-reductions form of examples/mha.toy against the
materialised form, on every shared length batch, at 1 and 2 threads, in one
run (issue 15; bench/RESULTS.md, "Online reductions").

  bench/cpu/online_speed.py [--dccc build/tools/dccc] [--datasets race,wiki512,squad,wiki128,mrpc,xnli,mnli,cola]
                            [--threads 1,2] [--batch 32] [--warmup 2] [--repeat 15]
                            [--cpus 0,1] [--clock wall|cpu] [--cpu CPU]

Builds the two libraries with the given dccc: `--online-reductions` (the
fused, one-pass form) and the same with `materialize(scores)` (the chain as
written, the [s, s] scores stored), both for --cpu (default: -o's portable
x86-64-v2; `native` for this machine's vector units). Every batch (H = 8, D = 64, f32, lengths
from /work/shared/bench/seqlens/NAME.txt, line B = 32) gets one set of random
inputs; both libraries must agree within 1e-5 (else it stops). Timing is
paired and interleaved: each round runs materialised then fused (the order
alternating between rounds), so a change in the machine's load hits both;
it prints, per batch and thread count, the min and median ms of each and the
ratios fused / materialised of the minima and of the medians, and the median
of the per-round ratios. The process pins itself to --cpus (default: the
first N CPUs for N threads) and prints the load average before and after,
since the development machine is shared. `--clock=cpu` times the CPU time
the process's threads used (time.process_time: with 2 threads the sum of
both) instead of the wall clock: on a loaded machine it leaves out the time
other processes hold the CPUs, which the wall clock counts in whichever
library happened to run.
"""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from ab_libs import PackedKV, PackedQueries, read_lengths  # noqa: E402

H, D = 8, 64


def build(dccc, out_dir, cpu):
    toy = os.path.join(ROOT, "examples", "mha.toy")
    libs = {}
    for form, extra in (("materialised", ["--online-reductions", "--schedule=schedule mha { materialize(scores); }"]),
                        ("fused", ["--online-reductions"])):
        so = os.path.join(out_dir, f"mha_{form}.so")
        target = [f"--cpu={cpu}"] if cpu else []
        r = subprocess.run([dccc, toy, "-o", so, "--explain"] + target + extra, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"dccc failed:\n{r.stdout}{r.stderr}")
        fired = "online reductions: one pass over" in r.stdout + r.stderr
        if fired != (form == "fused"):
            sys.exit(f"{form}: the online rewrite {'fired' if fired else 'did not fire'}")
        libs[form] = so
    return libs


def load(path):
    lib = ctypes.CDLL(os.path.abspath(path))
    lib.mha.argtypes = [ctypes.POINTER(PackedQueries), ctypes.POINTER(PackedKV), ctypes.POINTER(PackedQueries)]
    lib.mha_meta.argtypes = lib.mha.argtypes
    lib.mha.restype = lib.mha_meta.restype = ctypes.c_int
    lib.dcc_set_num_threads.argtypes = [ctypes.c_int]
    return lib


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dccc", default=os.path.join(ROOT, "build", "tools", "dccc"))
    ap.add_argument("--seqlens", default="/work/shared/bench/seqlens")
    ap.add_argument("--datasets", default="race,wiki512,squad,wiki128,mrpc,xnli,mnli,cola")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--cpus", default=None, help="CPUs to pin to (default: 0 .. threads-1)")
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench-online"))
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    ap.add_argument("--cpu", default=None, help="dccc --cpu= for both libraries (default: -o's, x86-64-v2)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    paths = build(a.dccc, a.work, a.cpu)
    libs = {form: load(p) for form, p in paths.items()}
    clock = time.perf_counter if a.clock == "wall" else time.process_time
    print(f"# mha H = {H}, D = {D}, B = {a.batch}, f32; {a.repeat} paired rounds after {a.warmup} warm-up; "
          f"{a.clock} clock; --cpu={a.cpu or 'default'}; "
          f"load average before: {os.getloadavg()[0]:.2f}, {os.getloadavg()[1]:.2f}, {os.getloadavg()[2]:.2f}")
    print("| batch | threads | materialised min / median ms | fused min / median ms | ratio of minima | "
          "ratio of medians | median per-round ratio | max abs diff |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    for name in a.datasets.split(","):
        lens = read_lengths(os.path.join(a.seqlens, name + ".txt"), a.batch)
        n = sum(lens) * H * D
        q, k, v = (rng.uniform(-1, 1, n).astype(np.float32) for _ in range(3))
        ptr = lambda x: x.ctypes.data_as(ctypes.POINTER(ctypes.c_float))  # noqa: E731
        sl = np.array(lens, dtype=np.int32)
        slp = sl.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
        qs = PackedQueries(ptr(q), n, slp, a.batch, a.batch, H, D)
        kvs = PackedKV(ptr(k), n, ptr(v), n, slp, a.batch, a.batch, H, D)
        outs = {f: np.zeros(n, dtype=np.float32) for f in libs}
        ress = {f: PackedQueries(ptr(outs[f]), n, slp, a.batch, a.batch, H, D) for f in libs}
        for f, lib in libs.items():
            if lib.mha_meta(ctypes.byref(qs), ctypes.byref(kvs), ctypes.byref(ress[f])) != 0:
                sys.exit("mha_meta failed")
        for threads in [int(t) for t in a.threads.split(",")]:
            cpus = [int(c) for c in a.cpus.split(",")] if a.cpus else list(range(threads))
            os.sched_setaffinity(0, cpus)
            for lib in libs.values():
                lib.dcc_set_num_threads(threads)
            for f, lib in libs.items():
                outs[f][:] = 0
                if lib.mha(ctypes.byref(qs), ctypes.byref(kvs), ctypes.byref(ress[f])) != 0:
                    sys.exit("mha failed")
            diff = float(np.max(np.abs(outs["fused"] - outs["materialised"]))) if n else 0.0
            if diff > 1e-5:
                sys.exit(f"{name}: the two forms differ by {diff}")
            times = {f: [] for f in libs}
            order = list(libs)
            for r in range(a.warmup + a.repeat):
                for f in (order if r % 2 == 0 else order[::-1]):
                    t0 = clock()
                    libs[f].mha(ctypes.byref(qs), ctypes.byref(kvs), ctypes.byref(ress[f]))
                    t = clock() - t0
                    if r >= a.warmup:
                        times[f].append(t * 1e3)
            m, fu = times["materialised"], times["fused"]
            per_round = statistics.median(x / y for x, y in zip(fu, m))
            print(f"| {name} | {threads} | {min(m):.3f} / {statistics.median(m):.3f} | "
                  f"{min(fu):.3f} / {statistics.median(fu):.3f} | {min(fu) / min(m):.3f} | "
                  f"{statistics.median(fu) / statistics.median(m):.3f} | {per_round:.3f} | {diff:.1e} |", flush=True)
    la = os.getloadavg()
    print(f"# load average after: {la[0]:.2f}, {la[1]:.2f}, {la[2]:.2f}; CPUs pinned: "
          f"{a.cpus or '0 .. threads-1'}")


if __name__ == "__main__":
    main()

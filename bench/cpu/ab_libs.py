#!/usr/bin/python3
"""A/B timing of several builds of examples/mha.toy (e.g. with and without
the default padding), dccc only, interleaved in one process.

  dccc examples/mha.toy --cpu=native --default-pad=0 -o /tmp/pad0.so
  dccc examples/mha.toy --cpu=native -o /tmp/pad4.so
  bench/cpu/ab_libs.py /tmp/pad0.so /tmp/pad4.so [--datasets cola,mnli]
                       [--batch 32] [--threads 1] [--repeat 31]

Build every library with --cpu=native (-o's default, x86-64-v2, is portable,
not this machine's fastest code). Every library gets the same random packed inputs (H = 8, D = 64); the
outputs must agree within 1e-5 (else it stops). Each round runs every
library once, in turn, so a change in the machine's load hits all alike;
it prints the median and the minimum ms per library and each median's
ratio to the first library's.
"""
import argparse
import ctypes
import os
import random
import statistics
import sys
import time


class PackedQueries(ctypes.Structure):
    _fields_ = [("data", ctypes.POINTER(ctypes.c_float)), ("data_len", ctypes.c_int64),
                ("seqlen", ctypes.POINTER(ctypes.c_int32)), ("seqlen_len", ctypes.c_int64),
                ("B", ctypes.c_int64), ("H", ctypes.c_int64), ("D", ctypes.c_int64)]


class PackedKV(ctypes.Structure):
    _fields_ = [("k", ctypes.POINTER(ctypes.c_float)), ("k_len", ctypes.c_int64),
                ("v", ctypes.POINTER(ctypes.c_float)), ("v_len", ctypes.c_int64),
                ("seqlen", ctypes.POINTER(ctypes.c_int32)), ("seqlen_len", ctypes.c_int64),
                ("B", ctypes.c_int64), ("H", ctypes.c_int64), ("D", ctypes.c_int64)]


def read_lengths(path, batch):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _, rest = line.partition(":")
            if int(key) == batch:
                return [int(x) for x in rest.split()]
    sys.exit(f"{path}: no line for B = {batch}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("libs", nargs="+")
    ap.add_argument("--seqlens", default="/work/shared/bench/seqlens")
    ap.add_argument("--datasets", default="cola,mnli,squad")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=31)
    a = ap.parse_args()
    H, D = 8, 64
    libs = []
    for path in a.libs:
        lib = ctypes.CDLL(os.path.abspath(path))
        lib.mha.argtypes = [ctypes.POINTER(PackedQueries), ctypes.POINTER(PackedKV), ctypes.POINTER(PackedQueries)]
        lib.mha_meta.argtypes = lib.mha.argtypes
        lib.mha.restype = lib.mha_meta.restype = ctypes.c_int
        lib.dcc_set_num_threads.argtypes = [ctypes.c_int]
        lib.dcc_set_num_threads(a.threads)
        libs.append(lib)
    print(f"# mha H = {H}, D = {D}, B = {a.batch}, threads {a.threads}, {a.repeat} rounds; "
          f"median (min) ms per library, ratio of medians to the first")
    print(f"{'batch':<8}" + "".join(f"{os.path.basename(p):>26}" for p in a.libs))
    rng = random.Random(0)
    for name in a.datasets.split(","):
        lens = read_lengths(os.path.join(a.seqlens, name + ".txt"), a.batch)
        n = sum(lens) * H * D
        FA = ctypes.c_float * n
        q, k, v = (FA(*[rng.uniform(-1, 1) for _ in range(n)]) for _ in range(3))
        sl = (ctypes.c_int32 * a.batch)(*lens)
        qs = PackedQueries(q, n, sl, a.batch, a.batch, H, D)
        kvs = PackedKV(k, n, v, n, sl, a.batch, a.batch, H, D)
        outs = [FA() for _ in libs]
        ress = [PackedQueries(o, n, sl, a.batch, a.batch, H, D) for o in outs]
        for lib, res in zip(libs, ress):
            if lib.mha_meta(ctypes.byref(qs), ctypes.byref(kvs), ctypes.byref(res)) != 0:
                sys.exit("mha_meta failed")
            if lib.mha(ctypes.byref(qs), ctypes.byref(kvs), ctypes.byref(res)) != 0:
                sys.exit("mha failed")
        for o in outs[1:]:
            err = max(abs(x - y) for x, y in zip(outs[0], o))
            if err > 1e-5:
                sys.exit(f"{name}: outputs differ by {err}")
        times = [[] for _ in libs]
        for r in range(a.warmup + a.repeat):
            for j, (lib, res) in enumerate(zip(libs, ress)):
                t0 = time.perf_counter()
                lib.mha(ctypes.byref(qs), ctypes.byref(kvs), ctypes.byref(res))
                if r >= a.warmup:
                    times[j].append(time.perf_counter() - t0)
        med = [statistics.median(t) * 1e3 for t in times]
        cells = [f"{m:.3f} ({min(t) * 1e3:.3f}) x{m / med[0]:.3f}" for m, t in zip(med, times)]
        print(f"{name:<8}" + "".join(f"{c:>26}" for c in cells))


if __name__ == "__main__":
    main()

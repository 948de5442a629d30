#!/usr/bin/python3
"""Peak resident memory of examples/mha.toy on one long sequence (issue 15).

  bench/cpu/online_memory.py --dccc build/tools/dccc [--tokens 8192,32768]
                             [--materialised] [--heads 8] [--dim 64]
                             [--threads 2] [--limit-mib 512]

For each length N, compiles mha.toy with `dccc --cpu=native --online-reductions -o` (the
online form, ir/online_reductions.h; with --materialised also with
`materialize(scores)`, the form before the pass, which stores 2 * 4 * H *
N^2 bytes of scores and weights: 4 GiB at N = 8,192), then runs it in a
fresh child process on one sequence of N query and key tokens (B = 1,
float32 inputs uniform in [-1, 1)) and prints the child's peak resident
set (getrusage ru_maxrss) after the call, the inputs' and output's share
of it, the call's seconds and the library's kept temporaries
(dcc_alloc_kept_bytes). The online form must stay under --limit-mib (exit 1
otherwise). A spot check compares 4 output rows with a float64 NumPy
reference (max abs error printed; must be under 1e-5).
"""
import argparse
import ctypes
import os
import resource
import subprocess
import sys
import tempfile
import time

CHILD = r'''
import ctypes, resource, sys, time, math
import numpy as np
so, N, H, D, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
lib = ctypes.CDLL(so)
P, I64 = ctypes.c_void_p, ctypes.c_int64
class Q(ctypes.Structure):
    _fields_ = [("data", P), ("data_len", I64), ("seqlen", P), ("seqlen_len", I64), ("B", I64), ("H", I64), ("D", I64)]
class KV(ctypes.Structure):
    _fields_ = [("k", P), ("k_len", I64), ("v", P), ("v_len", I64), ("seqlen", P), ("seqlen_len", I64),
                ("B", I64), ("H", I64), ("D", I64)]
lib.mha.argtypes = [ctypes.POINTER(Q), ctypes.POINTER(KV), ctypes.POINTER(Q)]
lib.mha.restype = ctypes.c_int
lib.dcc_last_error.restype = ctypes.c_char_p
lib.dcc_alloc_kept_bytes.restype = ctypes.c_size_t
lib.dcc_set_num_threads(threads)
rng = np.random.default_rng(0)
q, k, v = (rng.uniform(-1, 1, (N, H, D)).astype(np.float32) for _ in range(3))
out = np.zeros((N, H, D), dtype=np.float32)
lens = np.array([N], dtype=np.int32)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
qs = Q(q.ctypes.data, q.size, lens.ctypes.data, 1, 1, H, D)
kvs = KV(k.ctypes.data, k.size, v.ctypes.data, v.size, lens.ctypes.data, 1, 1, H, D)
res = Q(out.ctypes.data, out.size, None, 0, 0, 0, 0)
t0 = time.perf_counter()
st = lib.mha(ctypes.byref(qs), ctypes.byref(kvs), ctypes.byref(res))
dt = time.perf_counter() - t0
if st != 0:
    sys.exit("mha: " + lib.dcc_last_error().decode())
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
err = 0.0
for i in (0, 1, N // 2, N - 1):
    s = np.einsum("hd,jhd->hj", q[i].astype(np.float64), k.astype(np.float64)) / math.sqrt(D)
    w = np.exp(s - s.max(axis=1, keepdims=True))
    ref = np.einsum("hj,jhd->hd", w / w.sum(axis=1, keepdims=True), v.astype(np.float64))
    err = max(err, float(np.abs(out[i] - ref).max()))
print(f"{peak} {base} {dt:.3f} {lib.dcc_alloc_kept_bytes()} {err:.3g}")
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dccc", required=True)
    ap.add_argument("--example", default=os.path.join(os.path.dirname(__file__), "..", "..", "examples", "mha.toy"))
    ap.add_argument("--tokens", default="8192,32768")
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit-mib", type=float, default=512)
    ap.add_argument("--materialised", action="store_true", help="also run the materialised form (needs 8 H N^2 bytes)")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="dccc-online-mem-")
    forms = [("online", ["--online-reductions"])]
    if a.materialised:
        forms.append(("materialised", ["--online-reductions", "--schedule=schedule mha { materialize(scores); }"]))
    print(f"# mha, B = 1, H = {a.heads}, D = {a.dim}, f32, {a.threads} thread(s); peak RSS of a fresh process "
          f"(ru_maxrss), inputs and output {3 + 1} x N x H x D x 4 bytes; load average {os.getloadavg()[0]:.2f}")
    print(f"{'form':<13}{'tokens':>8}{'peak MiB':>10}{'before call':>13}{'in+out MiB':>12}{'kept MiB':>10}"
          f"{'seconds':>9}{'max err':>10}")
    status = 0
    for form, extra in forms:
        so = os.path.join(work, f"mha_{form}.so")
        # --cpu=native: timed on this machine (-o's default is the portable x86-64-v2).
        subprocess.run([a.dccc, a.example, "--cpu=native", "-o", so] + extra, check=True, capture_output=True)
        for n in (int(x) for x in a.tokens.split(",")):
            r = subprocess.run(["/usr/bin/python3", "-c", CHILD, so, str(n), str(a.heads), str(a.dim), str(a.threads)],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{form:<13}{n:>8}  failed: {r.stderr.strip()[-300:]}")
                status = 1
                continue
            peak, base, dt, kept, err = r.stdout.split()
            peak_mib, base_mib = int(peak) / 1024, int(base) / 1024
            io_mib = 4 * n * a.heads * a.dim * 4 / 2**20
            print(f"{form:<13}{n:>8}{peak_mib:>10.0f}{base_mib:>13.0f}{io_mib:>12.0f}{int(kept) / 2**20:>10.0f}"
                  f"{float(dt):>9.2f}{float(err):>10.2g}")
            if form == "online" and peak_mib >= a.limit_mib:
                print(f"FAIL: the online form peaks at {peak_mib:.0f} MiB >= {a.limit_mib} MiB")
                status = 1
            if float(err) > 1e-5:
                print(f"FAIL: max abs error {err}")
                status = 1
    sys.exit(status)


if __name__ == "__main__":
    main()

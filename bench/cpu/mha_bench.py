#!/usr/bin/env python3
"""Multi-head attention on the CPU: dccc's generated kernel against PyTorch.

Runs examples/mha.toy, compiled by `dccc mha.toy --cpu=native -o mha.so`, through its C
ABI (ctypes, docs/abi.md) on ragged batches whose lengths come from
/work/shared/bench/seqlens/<name>.txt (the line for B), and in the same
process PyTorch 1.13 (Debian's python3-torch, which has no
scaled_dot_product_attention) in two forms:

  padded:   softmax(q @ k^T / sqrt(D) + mask) @ v on the zero-padded batch
            [B, H, S_max, D], mask = -inf on padded keys;
  per-seq:  the same per sequence, in a Python loop over the batch.

All three get the same random data (float32, uniform in [-1, 1)); before
timing, outputs are cross-checked (max abs error over the valid rows) and
the run stops if they disagree by more than 1e-4. Each form is run
--warmup times, then timed --repeat times, the three forms taking turns
(one run of each per round, so a slow phase of the machine hits all of
them alike). The table shows each form's minimum and median time, and each
ratio as the median of the per-round ratios (a peer's time over dccc's in
the same round) with their range. Both sides use --threads threads
(torch.set_num_threads, dcc_set_num_threads).

--threads-ab A,B compares dccc with itself instead: the same kernel with A
and with B pool threads (dcc_set_num_threads before each run), taking turns
in one process, e.g. `taskset -c 0 ... --threads-ab 1,2` for one thread
against two threads pinned to one core.
GFLOP/s counts useful work only: 4 * H * D * sum_b len_b^2 (q k^T and p v,
a multiply-add counting 2), the same for every form.
"""
import argparse
import ctypes
import math
import os
import statistics
import sys
import time


def threads_from_argv():
    for i, arg in enumerate(sys.argv):
        if arg == "--threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if arg.startswith("--threads="):
            return arg.split("=", 1)[1]
    return "2"


# PyTorch's BLAS (OpenBLAS) and OpenMP read these when they load: set them
# before importing torch so that every library uses --threads threads.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = threads_from_argv()

import torch  # noqa: E402


def read_lengths(path, batch):
    """The lengths on the line `batch: l0 l1 ...` of a seqlens file."""
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _, rest = line.partition(":")
            if int(key) == batch:
                lengths = [int(x) for x in rest.split()]
                if len(lengths) != batch:
                    sys.exit(f"{path}: line {batch} has {len(lengths)} lengths")
                return lengths
    sys.exit(f"{path}: no line for B = {batch}")


class PackedQueries(ctypes.Structure):
    _fields_ = [("data", ctypes.POINTER(ctypes.c_float)), ("data_len", ctypes.c_int64),
                ("seqlen", ctypes.POINTER(ctypes.c_int32)), ("seqlen_len", ctypes.c_int64),
                ("B", ctypes.c_int64), ("H", ctypes.c_int64), ("D", ctypes.c_int64)]


class PackedKV(ctypes.Structure):
    _fields_ = [("k", ctypes.POINTER(ctypes.c_float)), ("k_len", ctypes.c_int64),
                ("v", ctypes.POINTER(ctypes.c_float)), ("v_len", ctypes.c_int64),
                ("seqlen", ctypes.POINTER(ctypes.c_int32)), ("seqlen_len", ctypes.c_int64),
                ("B", ctypes.c_int64), ("H", ctypes.c_int64), ("D", ctypes.c_int64)]


def fptr(t):
    return ctypes.cast(t.data_ptr(), ctypes.POINTER(ctypes.c_float))


def iptr(t):
    return ctypes.cast(t.data_ptr(), ctypes.POINTER(ctypes.c_int32))


def timed(fns, warmup, repeat):
    """Seconds of each function per round; the runs are interleaved (one of
    each per round), so a change in the machine's load hits all alike and
    round k of one function pairs with round k of another."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return times


def paired(num, den):
    """Per-round ratios num[k] / den[k]: (median, min, max)."""
    r = [n / d for n, d in zip(num, den)]
    return statistics.median(r), min(r), max(r)


def ratio_text(num, den):
    med, lo, hi = paired(num, den)
    return f"{med:.2f} [{lo:.2f}-{hi:.2f}]"


def ms_text(t):
    return f"{min(t) * 1e3:.2f}/{statistics.median(t) * 1e3:.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True, help="mha.so written by `dccc examples/mha.toy --cpu=native -o mha.so`")
    ap.add_argument("--seqlens", default="/work/shared/bench/seqlens")
    ap.add_argument("--datasets", default="race,squad,mnli,cola")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads-ab", default="", help="A,B: dccc with A pool threads against dccc with B, no peers")
    a = ap.parse_args()
    ab = [int(x) for x in a.threads_ab.split(",")] if a.threads_ab else []
    if ab and (len(ab) != 2 or min(ab) < 1):
        sys.exit("--threads-ab takes two thread counts, e.g. 1,2")

    torch.set_num_threads(a.threads)
    lib = ctypes.CDLL(os.path.abspath(a.lib))
    lib.mha.argtypes = [ctypes.POINTER(PackedQueries), ctypes.POINTER(PackedKV), ctypes.POINTER(PackedQueries)]
    lib.mha_meta.argtypes = lib.mha.argtypes
    lib.mha.restype = lib.mha_meta.restype = ctypes.c_int
    lib.dcc_last_error.restype = ctypes.c_char_p
    lib.dcc_set_num_threads.argtypes = [ctypes.c_int]
    lib.dcc_set_num_threads(a.threads)
    lib.dcc_get_num_threads.restype = ctypes.c_int
    dcc_threads = lib.dcc_get_num_threads()

    H, D = a.heads, a.dim
    blas = "?"
    try:
        blas = next(line.split("=", 1)[1].strip() for line in torch.__config__.show().splitlines()
                    if "BLAS_INFO" in line).split(",")[0]
    except StopIteration:
        pass
    print(f"# mha, H = {H}, D = {D}, f32, B = {a.batch}; threads: dccc {dcc_threads}, torch "
          f"{torch.get_num_threads()}; torch {torch.__version__} (BLAS_INFO {blas}, libblas.so.3 -> "
          f"{os.path.realpath('/usr/lib/x86_64-linux-gnu/libblas.so.3')}); {a.repeat} interleaved rounds "
          f"after {a.warmup} warm-up rounds; ms as min/median; ratios: median of per-round ratios [range]; "
          f"CPUs allowed: {sorted(os.sched_getaffinity(0))}; load average {os.getloadavg()[0]:.2f}")
    if ab:
        print(f"# dccc with {ab[0]} thread(s) (A) against {ab[1]} (B); B/A > 1: A is faster")
        header = (f"{'batch':<7}{'mean len':>9}{'A ms':>16}{'B ms':>16}{'A GF/s':>9}{'B/A':>18}")
    else:
        header = (f"{'batch':<7}{'mean len':>9}{'dccc ms':>16}{'padded ms':>18}{'loop ms':>16}"
                  f"{'dccc GF/s':>11}{'pad/dccc':>18}{'loop/dccc':>18}{'max err':>10}")
    print(header)
    all_faster = True
    for name in a.datasets.split(","):
        lengths = read_lengths(os.path.join(a.seqlens, name + ".txt"), a.batch)
        B, total, smax = len(lengths), sum(lengths), max(lengths)
        gen = torch.Generator().manual_seed(a.seed)
        q, k, v = (torch.rand(total, H, D, generator=gen) * 2 - 1 for _ in range(3))
        seqlen = torch.tensor(lengths, dtype=torch.int32)
        offsets = [0]
        for n in lengths:
            offsets.append(offsets[-1] + n)

        # dccc: the packed buffers themselves (no copy).
        out = torch.empty(total, H, D)
        qs = PackedQueries(fptr(q), q.numel(), iptr(seqlen), B, B, H, D)
        kvs = PackedKV(fptr(k), k.numel(), fptr(v), v.numel(), iptr(seqlen), B, B, H, D)
        res = PackedQueries()
        if lib.mha_meta(ctypes.byref(qs), ctypes.byref(kvs), ctypes.byref(res)) != 0:
            sys.exit("mha_meta: " + lib.dcc_last_error().decode())
        assert res.data_len == out.numel(), (res.data_len, out.numel())
        res.data = fptr(out)

        def run_dccc():
            if lib.mha(ctypes.byref(qs), ctypes.byref(kvs), ctypes.byref(res)) != 0:
                sys.exit("mha: " + lib.dcc_last_error().decode())

        # PyTorch, padded: [B, H, S, D] and an additive key mask.
        def pad(x):
            p = torch.zeros(B, smax, H, D)
            for b in range(B):
                p[b, :lengths[b]] = x[offsets[b]:offsets[b + 1]]
            return p.transpose(1, 2).contiguous()

        qp, kp, vp = pad(q), pad(k), pad(v)
        mask = torch.zeros(B, 1, 1, smax)
        for b in range(B):
            mask[b, :, :, lengths[b]:] = float("-inf")
        scale = 1.0 / math.sqrt(D)

        def run_padded():
            return torch.softmax(qp @ kp.transpose(-1, -2) * scale + mask, dim=-1) @ vp

        # PyTorch, per sequence: [H, len, D] views of the packed data.
        qh = [q[offsets[b]:offsets[b + 1]].transpose(0, 1) for b in range(B)]
        kh = [k[offsets[b]:offsets[b + 1]].transpose(0, 1) for b in range(B)]
        vh = [v[offsets[b]:offsets[b + 1]].transpose(0, 1) for b in range(B)]

        def run_loop():
            return [torch.softmax(qh[b] @ kh[b].transpose(-1, -2) * scale, dim=-1) @ vh[b] for b in range(B)]

        with torch.no_grad():
            run_dccc()
            padded = run_padded()
            looped = run_loop()
            err = 0.0
            for b in range(B):
                mine = out[offsets[b]:offsets[b + 1]]  # [len, H, D]
                err = max(err, (mine - padded[b, :, :lengths[b]].transpose(0, 1)).abs().max().item() if lengths[b] else 0,
                          (mine - looped[b].transpose(0, 1)).abs().max().item() if lengths[b] else 0)
            if not err <= 1e-4:
                sys.exit(f"{name}: outputs disagree, max abs error {err}")
            if ab:
                def with_threads(n):
                    def run():
                        lib.dcc_set_num_threads(n)
                        run_dccc()
                    return run
                t_a, t_b = timed([with_threads(ab[0]), with_threads(ab[1])], a.warmup, a.repeat)
                lib.dcc_set_num_threads(a.threads)
            else:
                t_dccc, t_pad, t_loop = timed([run_dccc, run_padded, run_loop], a.warmup, a.repeat)
        flops = 4.0 * H * D * sum(n * n for n in lengths)
        gf = lambda t: flops / statistics.median(t) / 1e9
        if ab:
            print(f"{name:<7}{total / B:>9.1f}{ms_text(t_a):>16}{ms_text(t_b):>16}{gf(t_a):>9.2f}"
                  f"{ratio_text(t_b, t_a):>18}")
            continue
        all_faster &= paired(t_pad, t_dccc)[0] > 1 and paired(t_loop, t_dccc)[0] > 1
        print(f"{name:<7}{total / B:>9.1f}{ms_text(t_dccc):>16}{ms_text(t_pad):>18}{ms_text(t_loop):>16}"
              f"{gf(t_dccc):>11.2f}{ratio_text(t_pad, t_dccc):>18}{ratio_text(t_loop, t_dccc):>18}{err:>10.1e}")
    if not ab:
        print("# ratios > 1: dccc is faster. aim (faster than both forms on every batch, median ratio): "
              + ("met" if all_faster else "NOT met"))


if __name__ == "__main__":
    main()

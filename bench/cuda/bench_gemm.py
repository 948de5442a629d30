#!/usr/bin/env python3
"""Grouped GEMM on a GPU: dccc's tensor-core kernels (examples/batched_gemm.toy
and batched_gemm_bf16.toy built with `dccc --target=cuda -o`) against PyTorch
on the same data, in one run:

  grouped    torch._grouped_mm (bf16; one launch over all groups)
  loop       torch.matmul per group (bf16, and f32: cuBLAS SGEMM, TF32 off)

Groups: M per group from a length batch of ../shared/bench/seqlens (the line
for B), K = 1024 and 4096, N = 1024 (the issue-16 sizes). Every result is
first checked against a float64 reference (max abs error, also divided by
sqrt(K)); then the implementations are timed in interleaved repetitions
(one call of each per round, in a random order each round,
dccc's libraries writing into a pool of output buffers taken in turn,
CUDA events, after warm-up), and the min and
median over the rounds are printed with TFLOP/s (2 * sum(M) * K * N) and
ratios peer / dccc (above 1: dccc is faster).

usage: bench_gemm.py --dir DIR --out RESULTS.txt [--seqlens DIR]
                     [--batches race,squad] [--B 128] [--K 1024,4096] [--N 1024] [--reps 20]
                     [--variants NAME=DIR,...] [--f32-variants NAME=DIR,...] [--bf16-only] [--check-only]
DIR holds batched_gemm_bf16.so (grouped_gemm_bf16) and batched_gemm.so
(grouped_gemm, --fp32-math=3xtf32), and optionally batched_gemm_tf32.so and
batched_gemm_ieee.so (the same with --fp32-math=tf32 / ieee), as
scripts/gpu_bundle.sh builds them. --variants: other builds' batched_gemm_bf16.so
(DIR/batched_gemm_bf16.so), checked and timed in the same rounds, with the
ratio dccc median / variant median (above 1: the variant is faster);
--f32-variants likewise for other builds' batched_gemm.so (3xTF32), against
dccc f32 3xtf32; --bf16-only leaves out the f32 ones.
--check-only: no timing; the bf16 libraries (and variants) on ragged groups
of every size class -- M, K, N of 0, 1, 15, 16, 17, 64, 130, 520 and one of
4,096, unaligned K and N included -- against float64 (cheap enough to run
under compute-sanitizer). Exits 2 with a message when there is no CUDA GPU
(or no PyTorch).
"""
import argparse
import ctypes
import math
import os
import random
import statistics
import sys

import time

torch = None  # imported by main(): without PyTorch the script says so instead of a traceback

DEVICE = "cuda"


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def timed(run):
    """Milliseconds of one call: CUDA events on the GPU, the wall clock on the CPU."""
    if DEVICE != "cuda":
        t = time.perf_counter()
        run()
        return (time.perf_counter() - t) * 1e3
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


class GemmBatch(ctypes.Structure):
    _fields_ = [("a", ctypes.c_void_p), ("a_len", ctypes.c_int64), ("b", ctypes.c_void_p), ("b_len", ctypes.c_int64),
                ("m", ctypes.c_void_p), ("m_len", ctypes.c_int64), ("k", ctypes.c_void_p), ("k_len", ctypes.c_int64),
                ("n", ctypes.c_void_p), ("n_len", ctypes.c_int64), ("G", ctypes.c_int64)]


class GemmOut(ctypes.Structure):
    _fields_ = [("c", ctypes.c_void_p), ("c_len", ctypes.c_int64), ("m", ctypes.c_void_p), ("m_len", ctypes.c_int64),
                ("n", ctypes.c_void_p), ("n_len", ctypes.c_int64), ("G", ctypes.c_int64)]


def read_lengths(path, batch):
    for line in open(path):
        if line.startswith("#") or ":" not in line:
            continue
        b, values = line.split(":", 1)
        if int(b) == batch:
            return [int(x) for x in values.split()]
    raise SystemExit(f"{path}: no line for B = {batch}")


def dccc_fn(path, name):
    """The library's entry point `name`, or None when the library is absent."""
    if not os.path.exists(path):
        return None, None
    lib = ctypes.CDLL(os.path.abspath(path))
    fn = getattr(lib, name)
    fn.argtypes = [ctypes.POINTER(GemmBatch), ctypes.POINTER(GemmOut)]
    fn.restype = ctypes.c_int
    lib.dcc_last_error.restype = ctypes.c_char_p
    return fn, lib


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=".", help="folder of the batched_gemm*.so libraries")
    ap.add_argument("--out", required=True, help="file the results table is written to (also printed)")
    ap.add_argument("--seqlens", default=os.path.join(here, "../../../shared/bench/seqlens"))
    ap.add_argument("--batches", default="race,squad")
    ap.add_argument("--B", default="128")
    ap.add_argument("--K", default="1024,4096")
    ap.add_argument("--N", default="1024")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--variants", default="", help="NAME=DIR,...: more bf16 libraries timed in the same rounds")
    ap.add_argument("--f32-variants", default="", help="NAME=DIR,...: more batched_gemm.so (3xTF32) libraries timed in the same rounds")
    ap.add_argument("--bf16-only", action="store_true", help="only the bf16 implementations")
    ap.add_argument("--check-only", action="store_true", help="ragged odd sizes against float64, no timing")
    ap.add_argument("--device", default="cuda",
                    help="cpu: a smoke test of this script on libraries built for the CPU target (tiny sizes)")
    args = ap.parse_args()
    global DEVICE, torch
    DEVICE = args.device
    try:
        import torch as torch_module
    except ImportError:
        print("bench_gemm: no CUDA GPU (no PyTorch here: run it on the GPU machine)", file=sys.stderr)
        return 2
    torch = torch_module
    if DEVICE == "cuda" and not torch.cuda.is_available():
        print("bench_gemm: no CUDA GPU (run it on the GPU machine: build-gpu/run_gpu.sh)", file=sys.stderr)
        return 2

    out_lines = []

    def emit(line):
        print(line, flush=True)
        out_lines.append(line)

    libs = {}
    for key, so, fn in [("bf16", "batched_gemm_bf16.so", "grouped_gemm_bf16"),
                        ("3xtf32", "batched_gemm.so", "grouped_gemm"),
                        ("tf32", "batched_gemm_tf32.so", "grouped_gemm"),
                        ("ieee", "batched_gemm_ieee.so", "grouped_gemm")]:
        f, lib = dccc_fn(os.path.join(args.dir, so), fn)
        if f is not None:
            libs[key] = (f, lib)
    if args.bf16_only:
        libs = {k: v for k, v in libs.items() if k == "bf16"}
    if "bf16" not in libs or ("3xtf32" not in libs and not args.bf16_only):
        raise SystemExit(f"{args.dir}: needs batched_gemm_bf16.so and batched_gemm.so")
    for item in [v for v in args.variants.split(",") if v]:
        vname, vdir = item.split("=", 1)
        f, lib = dccc_fn(os.path.join(vdir, "batched_gemm_bf16.so"), "grouped_gemm_bf16")
        if f is None:
            raise SystemExit(f"{vdir}: no batched_gemm_bf16.so for variant {vname}")
        libs["variant " + vname] = (f, lib)
    for item in [v for v in args.f32_variants.split(",") if v and not args.bf16_only]:
        vname, vdir = item.split("=", 1)
        f, lib = dccc_fn(os.path.join(vdir, "batched_gemm.so"), "grouped_gemm")
        if f is None:
            raise SystemExit(f"{vdir}: no batched_gemm.so for f32 variant {vname}")
        libs["f32variant " + vname] = (f, lib)
    if args.check_only:
        return check_odd(libs)
    torch.backends.cuda.matmul.allow_tf32 = False  # the f32 loop is IEEE SGEMM
    dev = torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu (smoke test)"
    emit(f"# device: {dev}; torch {torch.__version__}; command: {' '.join(sys.argv)}")
    emit(f"# times in ms over {args.reps} interleaved rounds (min / median); TFLOP/s from the median; "
         "ratio = peer median / dccc median")
    failed = False
    for name in args.batches.split(","):
        for batch in [int(b) for b in args.B.split(",")]:
            lens = read_lengths(os.path.join(args.seqlens, name + ".txt"), batch)
            for K in [int(k) for k in args.K.split(",")]:
                for N in [int(n) for n in args.N.split(",")]:
                    failed |= run_case(name, batch, lens, K, N, libs, args.reps, emit)
    with open(args.out, "w") as f:
        f.write("\n".join(out_lines) + "\n")
    return 1 if failed else 0


def check_odd(libs):
    """Every library on ragged groups of odd sizes against float64: the bf16
    ones within their output's rounding, the f32 ones (3xTF32, IEEE: 1e-4
    sqrt(K); TF32: 1e-2 sqrt(K), values N(0, 1))."""
    shapes = [(0, 16, 16), (1, 1, 1), (15, 17, 16), (16, 15, 17), (17, 16, 15), (64, 64, 64), (130, 520, 136),
              (520, 130, 17), (129, 463, 130), (1, 4096, 8), (300, 1024, 1024), (17, 0, 40), (64, 72, 0)]
    torch.manual_seed(1)
    m = torch.tensor([s[0] for s in shapes], dtype=torch.int32, device=DEVICE)
    k = torch.tensor([s[1] for s in shapes], dtype=torch.int32, device=DEVICE)
    n = torch.tensor([s[2] for s in shapes], dtype=torch.int32, device=DEVICE)
    G = len(shapes)
    a32_parts = [torch.randn(M, K, device=DEVICE) for M, K, _ in shapes]
    b32_parts = [torch.randn(K, N, device=DEVICE) for _, K, N in shapes]
    data = {}
    for dt in (torch.bfloat16, torch.float32):
        a_parts = [x.to(dt) for x in a32_parts]
        b_parts = [x.to(dt) for x in b32_parts]
        data[dt] = (torch.cat([x.reshape(-1) for x in a_parts]), torch.cat([x.reshape(-1) for x in b_parts]),
                    [x.double() @ y.double() for x, y in zip(a_parts, b_parts)])
    total_c = sum(M * N for M, _, N in shapes)
    failed = False
    for key, (fn, lib) in libs.items():
        f32 = not (key == "bf16" or key.startswith("variant "))
        dt = torch.float32 if f32 else torch.bfloat16
        a, b, ref = data[dt]
        c = torch.full((total_c,), float("nan"), device=DEVICE, dtype=dt)
        x = GemmBatch(a.data_ptr(), a.numel(), b.data_ptr(), b.numel(), m.data_ptr(), G, k.data_ptr(), G,
                      n.data_ptr(), G, G)
        res = GemmOut(c.data_ptr(), c.numel(), 0, 0, 0, 0, 0)
        st = fn(ctypes.byref(x), ctypes.byref(res))
        sync()
        if st != 0:
            print(f"{key}: status {st}: {lib.dcc_last_error().decode()}: FAILED")
            failed = True
            continue
        at, worst = 0, 0.0
        for (M, K, N), r in zip(shapes, ref):
            got = c[at:at + M * N].double().reshape(M, N)
            at += M * N
            if M * N == 0:
                continue
            if f32:
                err = (got - r).abs().max().item()
                bound = (1e-2 if key == "tf32" else 1e-4) * math.sqrt(max(K, 1))
            else:
                # bf16 output: within 2^-8 of the exact sum (one rounding) plus f32 accumulation.
                err = ((got - r).abs() - 2 ** -8 * r.abs()).max().item()
                bound = 1e-3 * math.sqrt(max(K, 1))
            worst = max(worst, err)
            if not (err <= bound):  # NaN (an element never written) fails too
                print(f"{key}: M={M} K={K} N={N}: error {err:.3e} beyond {bound:.3e}: FAILED")
                failed = True
        print(f"{key}: {G} groups (M, K, N in {shapes}): worst error{'' if f32 else ' beyond bf16 rounding'} {worst:.3e}"
              f"{'' if not failed else ' (see above)'}")
    print("check: FAILED" if failed else "check: OK")
    return 1 if failed else 0


def run_case(name, batch, lens, K, N, libs, reps, emit):
    G, total = len(lens), sum(lens)
    flop = 2.0 * total * K * N
    torch.manual_seed(0)
    a32 = torch.randn(total, K, device=DEVICE)
    b32 = torch.randn(G, K, N, device=DEVICE)
    a16, b16 = a32.bfloat16(), b32.bfloat16()
    m = torch.tensor(lens, dtype=torch.int32, device=DEVICE)
    k = torch.full((G,), K, dtype=torch.int32, device=DEVICE)
    n = torch.full((G,), N, dtype=torch.int32, device=DEVICE)
    starts = [0]
    for L in lens:
        starts.append(starts[-1] + L)
    offs = torch.tensor(starts[1:], dtype=torch.int32, device=DEVICE)
    c32 = torch.empty(total, N, device=DEVICE)

    # dccc's libraries write into a pool of output buffers, one per library
    # of the dtype, and library i takes buffer (i + round) % pool in each
    # round: the same library timed into a buffer of its own had measured
    # 1.07-1.20x faster into one buffer than into another (session 24, e1_),
    # so every library now sees every buffer equally often.
    rnd = [0]

    def dccc(key, a, b, pool, pos):
        fn, lib = libs[key]
        x = GemmBatch(a.data_ptr(), a.numel(), b.data_ptr(), b.numel(), m.data_ptr(), G, k.data_ptr(), G,
                      n.data_ptr(), G, G)
        outs = [GemmOut(c.data_ptr(), c.numel(), 0, 0, 0, 0, 0) for c in pool]

        def run():
            at = (pos + rnd[0]) % len(pool)
            st = fn(ctypes.byref(x), ctypes.byref(outs[at]))
            if st != 0:
                raise RuntimeError(f"{key}: status {st}: {lib.dcc_last_error().decode()}")
            return pool[at]
        return run

    keys16 = ["bf16"] + [k for k in libs if k.startswith("variant ")]
    keys32 = [k for k in ("3xtf32", "tf32", "ieee") if k in libs] + [k for k in libs if k.startswith("f32variant ")]
    pool16 = [torch.empty(total, N, device=DEVICE, dtype=torch.bfloat16) for _ in keys16]
    pool32 = [torch.empty(total, N, device=DEVICE) for _ in keys32]
    c16 = pool16[0]
    impls = {}
    for pos, key in enumerate(keys16):
        impls["dccc bf16" if key == "bf16" else key] = (dccc(key, a16, b16, pool16, pos), True)
    for pos, key in enumerate(keys32):
        impls[key if key.startswith("f32variant ") else f"dccc f32 {key}"] = (dccc(key, a32, b32, pool32, pos), True)

    grouped_out = {}

    b_grouped = [b16]

    def run_grouped():
        grouped_out["c"] = torch._grouped_mm(a16, b_grouped[0], offs=offs)

    def loop(a, b, c):
        def run():
            for g in range(G):
                torch.matmul(a[starts[g]:starts[g + 1]], b[g], out=c[starts[g]:starts[g + 1]])
        return run

    try:
        try:
            run_grouped()
        except RuntimeError:  # some versions want B column-major (the same values)
            b_grouped[0] = b16.transpose(-2, -1).contiguous().transpose(-2, -1)
            run_grouped()
        sync()
        impls["torch._grouped_mm bf16"] = (run_grouped, None)
    except Exception as e:  # not in this PyTorch, or not for this GPU
        emit(f"# {name} B={batch} K={K}: torch._grouped_mm unavailable: {str(e).splitlines()[0]}")
    impls["torch.matmul loop bf16"] = (loop(a16, b16, torch.empty_like(c16)), None)
    if "3xtf32" in libs:
        impls["torch.matmul loop f32"] = (loop(a32, b32, c32), c32)

    # Correctness against float64, per group.
    ref = torch.empty(total, N, device=DEVICE, dtype=torch.float64)
    for g in range(G):
        ref[starts[g]:starts[g + 1]] = a32[starts[g]:starts[g + 1]].double() @ b32[g].double()
    ref16 = torch.empty_like(ref)
    for g in range(G):
        ref16[starts[g]:starts[g + 1]] = a16[starts[g]:starts[g + 1]].double() @ b16[g].double()
    errs = {}
    for label, (run, out) in impls.items():
        got = run()
        sync()
        if label.startswith("torch._grouped_mm"):
            out = grouped_out["c"]
        elif label == "torch.matmul loop bf16":
            continue
        elif out is True:  # dccc: the pool buffer it wrote
            out = got
        want = ref16 if "bf16" in label or label.startswith("variant ") else ref
        errs[label] = (out.double() - want).abs().max().item()
    # bf16 results are rounded to 8 bits: |err| <= 2^-8 |ref| per element;
    # f32 ones: 3xTF32 and IEEE within 1e-5 * sqrt(K) * 10 of the float64 sum
    # of N(0,1) products (|ref| ~ sqrt(K)); TF32 within 1e-2 * sqrt(K).
    scale = math.sqrt(K)
    bounds = {"dccc bf16": 2 ** -8 * ref16.abs().max().item(), "dccc f32 3xtf32": 1e-4 * scale,
              "dccc f32 ieee": 1e-4 * scale, "dccc f32 tf32": 1e-2 * scale}
    for label in errs:
        if label.startswith("variant "):
            bounds[label] = bounds["dccc bf16"]
        if label.startswith("f32variant "):
            bounds[label] = bounds["dccc f32 3xtf32"]
    failed = False
    for label, err in errs.items():
        if label in bounds and err > bounds[label]:
            emit(f"# {name} B={batch} K={K} N={N}: {label} max error {err:.3e} > {bounds[label]:.3e}: FAILED")
            failed = True
    # Interleaved timing.
    times = {label: [] for label in impls}
    for _ in range(3):
        for run, _out in impls.values():
            run()
    sync()
    # Each round runs the implementations in a random order (fixed seed): in
    # a fixed order the first one measured 4-8% slower than the same library
    # as a variant (session 23), and with the order only rotated each round
    # the same library measured 1.09-1.18x faster right after itself than
    # right after the f32 matmul loop (session 24, g1_): what runs before a
    # call moves its time, so no implementation keeps a neighbour.
    labels = list(impls)
    order = random.Random(24)
    for r in range(reps):
        rnd[0] = r
        for label in order.sample(labels, len(labels)):
            times[label].append(timed(impls[label][0]))
    emit(f"## {name} B={batch} (sum M = {total}, max M = {max(lens)}), K = {K}, N = {N}")
    emit(f"{'implementation':>24} {'min ms':>9} {'median ms':>10} {'TFLOP/s':>8} {'max err':>9} {'err/sqrtK':>9}")
    med = {label: statistics.median(t) for label, t in times.items()}
    for label, t in times.items():
        e = errs.get(label)
        es = f"{e:9.2e} {e / scale:9.2e}" if e is not None else f"{'-':>9} {'-':>9}"
        emit(f"{label:>24} {min(t):9.3f} {med[label]:10.3f} {flop / med[label] / 1e9:8.1f} {es}")
    pairs = [("torch._grouped_mm bf16", "dccc bf16"), ("torch.matmul loop bf16", "dccc bf16"),
             ("torch.matmul loop f32", "dccc f32 3xtf32"), ("torch.matmul loop f32", "dccc f32 tf32"),
             ("torch.matmul loop f32", "dccc f32 ieee")]
    pairs += [("dccc bf16", label) for label in impls if label.startswith("variant ")]
    pairs += [("torch._grouped_mm bf16", label) for label in impls if label.startswith("variant ")]
    pairs += [("dccc f32 3xtf32", label) for label in impls if label.startswith("f32variant ")]
    pairs += [("torch.matmul loop f32", label) for label in impls if label.startswith("f32variant ")]
    for peer, ours in pairs:
        if peer in med and ours in med:
            emit(f"{'ratio ' + peer + ' / ' + ours:>60}: {med[peer] / med[ours]:6.3f}")
    return failed


if __name__ == "__main__":
    sys.exit(main())

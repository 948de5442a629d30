#!/usr/bin/env python3
"""The seed's examples/flash_attention.toy on a GPU (issue 17: the headline
program as one fused kernel). Its scores are summed over every head and head
dim (one [q, k] score matrix per sequence, shared by the heads), and its
keys are its values, so it is attention with one head of dim H x D = 512
(H = 8, D = 64) and scale 1 / sqrt(D). Compared, in one run:

  fused    fa.so: `dccc flash_attention.toy --target=cuda` (the default: the
           (h, d) loops collapse to one index and the fused kernel streams
           head dims above 256 in chunks of 64, `--explain` says so)
  stored   fa_materialized.so: the same with --materialize, the chain as
           written with its [s, s] scores stored (what the seed compiled)
  eff      torch.ops.aten._efficient_attention_forward with cu_seqlens on the
           same computation (q, k = v as [1, total, 1, H D], scale 1 / sqrt(D))

dccc's libraries are called through flash_attention_on_stream with host
lengths, without waiting (--entry wait: flash_attention). Every result is
checked against a float64 reference first (one sequence at a time); --long N also runs one sequence of N tokens (checked on 256 sampled
rows). Repetitions interleave the three (fused, stored, eff, fused, ...),
each timed with CUDA events; prints min and median ms and the ratios of the
medians (peer / fused: above 1, the fused kernel is faster).

usage: bench_flash.py --dir DIR [--seqlens DIR] [--batches race,...] [--B 128] [--H 8] [--D 64]
                      [--reps 10] [--long 32768] [--out FILE]
       bench_flash.py --dir DIR --check-only   (lengths 0, 1, 17, 300, 65, 0 against float64)
Exits 2 with a message when there is no CUDA GPU.
"""
import argparse
import ctypes
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_fused import read_lengths, time_interleaved  # noqa: E402 (the benchmark's own folder)


class Packed(ctypes.Structure):  # PackedQueries and PackedKV have the same fields
    _fields_ = [("data", ctypes.c_void_p), ("data_len", ctypes.c_int64), ("seqlen", ctypes.c_void_p),
                ("seqlen_len", ctypes.c_int64), ("B", ctypes.c_int64), ("H", ctypes.c_int64), ("D", ctypes.c_int64)]


def load(folder, so):
    path = os.path.join(folder, so)
    if not os.path.exists(path):
        return None
    lib = ctypes.CDLL(os.path.abspath(path))
    f = lib.flash_attention
    f.argtypes = [ctypes.POINTER(Packed)] * 3
    f.restype = ctypes.c_int
    fs = lib.flash_attention_on_stream
    fs.argtypes = [ctypes.c_void_p] + [ctypes.POINTER(Packed)] * 3 + [ctypes.c_void_p]
    fs.restype = ctypes.c_int
    lib.dcc_last_error.restype = ctypes.c_char_p
    return f, fs, lib


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="folder with fa.so (and fa_materialized.so)")
    ap.add_argument("--seqlens", default=os.path.join(here, "../../../shared/bench/seqlens"))
    ap.add_argument("--batches", default="race,squad,wiki128,mnli,cola")
    ap.add_argument("--B", type=int, default=128)
    ap.add_argument("--H", type=int, default=8)
    ap.add_argument("--D", type=int, default=64)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--long", type=int, default=0, help="also one sequence of this many tokens")
    ap.add_argument("--out", default=None)
    ap.add_argument("--check-only", action="store_true", help="the check batch only (a GPU test)")
    ap.add_argument("--entry", default="stream", choices=["stream", "wait"],
                    help="stream (default): flash_attention_on_stream with host lengths on PyTorch's stream, no "
                         "wait (as the peer gets a host max_seqlen); wait: flash_attention (device lengths copied to "
                         "the host, returns after the kernels)")
    ap.add_argument("--variants", default="",
                    help="NAME=DIR,...: other builds of fa.so (e.g. other tiles), each checked and timed in the same "
                         "interleaving; one more line per variant")
    ap.add_argument("--dccc-only", action="store_true",
                    help="no peer (under compute-sanitizer: PyTorch's own kernels report racecheck hazards)")
    a = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("bench_flash: no CUDA GPU (no PyTorch here: run it on the GPU machine)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("bench_flash: no CUDA GPU", file=sys.stderr)
        return 2
    fused = load(a.dir, "fa.so")
    if fused is None:
        raise SystemExit(f"bench_flash: {a.dir}/fa.so is missing")
    stored = load(a.dir, "fa_materialized.so")
    variants = []
    for v in (x for x in a.variants.split(",") if x):
        if "=" not in v:
            ap.error("--variants takes NAME=DIR pairs, comma-separated")
        n, d = v.split("=", 1)
        lib = load(d, "fa.so")
        if lib is None:
            raise SystemExit(f"bench_flash: {d}/fa.so is missing")
        variants.append((n, lib))
    H, D, W = a.H, a.D, a.H * a.D
    lines = [f"# device: {torch.cuda.get_device_name()}; torch {torch.__version__}; flash_attention.toy, f32, H = {H}, "
             f"D = {D} (scores over H x D = {W}); reps {a.reps} interleaved; ratios: peer median / fused median",
             f"{'batch':>8} {'B':>5} {'fused min':>9} {'fused med':>9} {'stored med':>10} {'eff med':>8} "
             f"{'stored/fused':>12} {'eff/fused':>9} {'fused err':>9} {'eff err':>8}"]
    for l in lines:
        print(l, flush=True)
    runs = [("check", 6, [0, 1, 17, 300, 65, 0])]
    if a.check_only:
        a.batches, a.long = "", 0
    runs += [(n, a.B, read_lengths(os.path.join(a.seqlens, n + ".txt"), a.B)) for n in a.batches.split(",") if n]
    if a.long:
        runs.append((f"long", 1, [a.long]))
    failed = False
    for name, batch, lens in runs:
        if lens is None:
            continue
        total, lmax = sum(lens), max(max(lens), 1)
        torch.manual_seed(0)
        q = torch.randn(total, H, D, device="cuda")
        kv = torch.randn(total, H, D, device="cuda")
        seqlen = torch.tensor(lens, dtype=torch.int32, device="cuda")
        cu = torch.zeros(batch + 1, dtype=torch.int32, device="cuda")
        cu[1:] = torch.cumsum(seqlen, 0)
        out = torch.full_like(q, float("nan"))
        qs = Packed(q.data_ptr(), q.numel(), seqlen.data_ptr(), batch, batch, H, D)
        kvs = Packed(kv.data_ptr(), kv.numel(), seqlen.data_ptr(), batch, batch, H, D)
        res = Packed(out.data_ptr(), out.numel(), 0, 0, 0, 0, 0)
        host_lens = (ctypes.c_int32 * batch)(*lens)
        qs_h = Packed(q.data_ptr(), q.numel(), ctypes.addressof(host_lens), batch, batch, H, D)
        kvs_h = Packed(kv.data_ptr(), kv.numel(), ctypes.addressof(host_lens), batch, batch, H, D)
        stream = torch.cuda.current_stream().cuda_stream

        def caller(fl):
            fn, fn_stream, lib = fl

            def run():
                if a.entry == "wait":
                    st = fn(ctypes.byref(qs), ctypes.byref(kvs), ctypes.byref(res))
                else:
                    st = fn_stream(None, ctypes.byref(qs_h), ctypes.byref(kvs_h), ctypes.byref(res), stream)
                if st != 0:
                    raise RuntimeError(f"status {st}: {lib.dcc_last_error().decode()}")
            return run

        q1, kv1 = q.view(1, total, 1, W), kv.view(1, total, 1, W)

        def run_eff():
            return torch.ops.aten._efficient_attention_forward(q1, kv1, kv1, None, cu, cu, lmax, lmax, 0.0, 0, False,
                                                               scale=1.0 / math.sqrt(D))[0][0].view(total, H, D)

        # float64 reference: every row, or 256 sampled rows of a long sequence.
        def reference(s, n, rows):
            qb, kb = q[s:s + n].double().view(n, W), kv[s:s + n].double().view(n, W)
            sc = qb[rows] @ kb.T / math.sqrt(D)
            return (torch.softmax(sc, dim=-1) @ kb).view(-1, H, D)

        def error(got):
            worst = 0.0
            for s, n in zip(cu[:-1].tolist(), lens):
                if n == 0:
                    continue
                rows = torch.arange(n, device="cuda") if n <= 4096 else torch.randint(0, n, (256,), device="cuda")
                e = (got[s:s + n][rows].double() - reference(s, n, rows)).abs().max().item()
                worst = max(worst, e if not math.isnan(e) else math.inf)
            return worst

        peers = {"fused": caller(fused)}
        if stored is not None:
            peers["stored"] = caller(stored)
        if not a.dccc_only:
            peers["eff"] = run_eff
        for n, lib in variants:
            peers["v:" + n] = caller(lib)
        errs = {}
        for p, f in list(peers.items()):
            try:
                if p == "eff":
                    got = f()
                else:
                    out.fill_(float("nan"))
                    f()
                    got = out
                torch.cuda.synchronize()
                errs[p] = error(got)
                del got
            except Exception as e:  # noqa: BLE001 (out of memory; a shape the peer refuses)
                print(f"# {name}: {p} failed: {type(e).__name__}: {str(e).splitlines()[0]}", flush=True)
                if p == "fused":
                    failed = True
                del peers[p]
                torch.cuda.empty_cache()
        if "fused" not in peers:
            continue
        if errs["fused"] > 1e-3:
            print(f"{name:>8}: fused wrong: max err {errs['fused']:.2e}", flush=True)
            failed = True
            continue
        for n, _ in variants:
            if "v:" + n in errs and not errs["v:" + n] <= 1e-3:
                print(f"{name:>8}: variant {n} wrong: max err {errs['v:' + n]:.2e}", flush=True)
                failed = True
                del peers["v:" + n]
        if name == "check":
            line = f"{'check':>8} {batch:>5}  lengths {lens}: fused max err {errs['fused']:.1e}" + "".join(
                f", {p} {errs[p]:.1e}" for p in errs if p != "fused")
            print(line, flush=True)
            lines.append(line)
            continue
        times = time_interleaved(torch, peers, a.reps, name)
        if "fused" not in times:
            failed = True
            continue
        med = {p: statistics.median(t) for p, t in times.items()}
        nan = float("nan")
        line = (f"{name:>8} {batch:>5} {min(times['fused']):9.3f} {med['fused']:9.3f} {med.get('stored', nan):10.3f} "
                f"{med.get('eff', nan):8.3f} {med.get('stored', nan) / med['fused']:12.3f} "
                f"{med.get('eff', nan) / med['fused']:9.3f} {errs['fused']:9.1e} {errs.get('eff', nan):8.1e}")
        print(line, flush=True)
        lines.append(line)
        for n, _ in variants:
            if "v:" + n in med:
                vm = med["v:" + n]
                line = (f"{name:>8} {batch:>5}   variant {n}: min {min(times['v:' + n]):.3f} med {vm:.3f} ms, "
                        f"fused/variant {med['fused'] / vm:.3f}, eff/variant {med.get('eff', nan) / vm:.3f}, "
                        f"max err {errs['v:' + n]:.1e}")
                print(line, flush=True)
                lines.append(line)
        del q, kv, out
        torch.cuda.empty_cache()
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

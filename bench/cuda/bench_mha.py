#!/usr/bin/env python3
"""Multi-head attention (H = 8, D = 64) on a GPU: dccc's generated CUDA
kernels (examples/mha.toy built with `dccc --target=cuda -o mha.so`) against
PyTorch on the same data, in one run:

  sdpa-padded   torch.nn.functional.scaled_dot_product_attention on the
                padded batch with a boolean key mask
  efficient     torch.ops.aten._efficient_attention_forward with cu_seqlens
  flash         torch.ops.aten._flash_attention_forward with cu_seqlens (bf16)

For every length batch of ../shared/bench/seqlens (the line for B), the
results are cross-checked against each other (max abs difference against the
float64 reference, computed one sequence at a time) before anything is timed; times are
medians of CUDA-event timings after warm-up. Prints ms and ratios (peer time
/ dccc time: above 1 means dccc is faster).

usage: bench_mha.py --so mha.so [--dtype f32]       (examples/mha.toy)
       bench_mha.py --so mha_bf16.so --dtype bf16  (examples/mha_bf16.toy)
                    [--seqlens DIR] [--batches race,squad,...] [--B 32,128]

The reference is float64, computed one sequence at a time (so the long
batches of bench/make_long_seqlens.py -- docs2k, chat4k: sequences of up to
4,096 tokens, B = 128 -- fit); a (batch, B) pair whose file has no line for
B is skipped, and a peer (or dccc) that runs out of memory is reported as
`oom` instead of stopping the run. The online-reductions libraries
(scripts/gpu_bundle.sh's online/mha_cuda_online.so and
online/mha_bf16_cuda_online.so) run the long batches, where the
materialised form needs the [s, s] scores (9 GB a tensor for docs2k).
"""
import argparse
import ctypes
import math
import os
import statistics
import sys

import torch

H, D = 8, 64


class PackedQueries(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("data_len", ctypes.c_int64), ("seqlen", ctypes.c_void_p),
                ("seqlen_len", ctypes.c_int64), ("B", ctypes.c_int64), ("H", ctypes.c_int64), ("D", ctypes.c_int64)]


class PackedKV(ctypes.Structure):
    _fields_ = [("k", ctypes.c_void_p), ("k_len", ctypes.c_int64), ("v", ctypes.c_void_p), ("v_len", ctypes.c_int64),
                ("seqlen", ctypes.c_void_p), ("seqlen_len", ctypes.c_int64), ("B", ctypes.c_int64),
                ("H", ctypes.c_int64), ("D", ctypes.c_int64)]


def read_lengths(path, batch):
    for line in open(path):
        if line.startswith("#") or ":" not in line:
            continue
        b, values = line.split(":", 1)
        if int(b) == batch:
            return [int(x) for x in values.split()]
    return None


def reference(q, k, v, lens):
    """Attention in float64, one sequence at a time (no padded [B, s, s])."""
    out, start = [], 0
    for n in lens:
        qb, kb, vb = (x[start:start + n].double().transpose(0, 1) for x in (q, k, v))  # [H, n, D]
        w = torch.softmax(qb @ kb.transpose(1, 2) / math.sqrt(D), dim=-1)
        out.append((w @ vb).transpose(0, 1))
        start += n
    return torch.cat(out) if out else torch.zeros(0, H, D, dtype=torch.float64, device=q.device)


def guarded(fn):
    """fn() or None when it runs out of GPU memory."""
    try:
        return fn()
    except torch.cuda.OutOfMemoryError:
        torch.cuda.empty_cache()
        return None


def time_ms(fn, warmup=3, reps=10):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--so", required=True, help="mha.so built with dccc --target=cuda")
    ap.add_argument("--seqlens", default=os.path.join(here, "../../../shared/bench/seqlens"))
    ap.add_argument("--batches", default="race,squad,wiki128,mnli,cola")
    ap.add_argument("--B", default="32,128")
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    args = ap.parse_args()

    lib = ctypes.CDLL(os.path.abspath(args.so))
    dtype = torch.float32 if args.dtype == "f32" else torch.bfloat16
    mha = lib.mha if args.dtype == "f32" else lib.mha_bf16
    mha.argtypes = [ctypes.POINTER(PackedQueries), ctypes.POINTER(PackedKV), ctypes.POINTER(PackedQueries)]
    mha.restype = ctypes.c_int
    lib.dcc_last_error.restype = ctypes.c_char_p
    dev = torch.cuda.get_device_name()
    print(f"# device: {dev}; torch {torch.__version__}; H = {H}, D = {D}; dtype {args.dtype}")
    flash = args.dtype == "bf16"
    print(f"{'batch':>8} {'B':>4} {'dccc ms':>9} {'sdpa-pad ms':>11} {'effic. ms':>9} {'flash ms':>9} "
          f"{'sdpa/dccc':>9} {'effic/dccc':>10} {'flash/dccc':>10} {'max err':>9}")
    failed = False
    for name in args.batches.split(","):
        for batch in [int(b) for b in args.B.split(",")]:
            lens = read_lengths(os.path.join(args.seqlens, name + ".txt"), batch)
            if lens is None:
                continue
            total, lmax = sum(lens), max(lens)
            torch.manual_seed(0)
            q = torch.randn(total, H, D, device="cuda", dtype=dtype)
            k = torch.randn(total, H, D, device="cuda", dtype=dtype)
            v = torch.randn(total, H, D, device="cuda", dtype=dtype)
            seqlen = torch.tensor(lens, dtype=torch.int32, device="cuda")
            cu = torch.zeros(batch + 1, dtype=torch.int32, device="cuda")
            cu[1:] = torch.cumsum(seqlen, 0)
            out = torch.empty_like(q)

            qs = PackedQueries(q.data_ptr(), q.numel(), seqlen.data_ptr(), batch, batch, H, D)
            kvs = PackedKV(k.data_ptr(), k.numel(), v.data_ptr(), v.numel(), seqlen.data_ptr(), batch, batch, H, D)
            res = PackedQueries(out.data_ptr(), out.numel(), 0, 0, 0, 0, 0)

            def run_dccc():
                st = mha(ctypes.byref(qs), ctypes.byref(kvs), ctypes.byref(res))
                if st != 0:
                    raise RuntimeError(f"mha: status {st}: {lib.dcc_last_error().decode()}")

            # Padded batch and key mask.
            qp = torch.zeros(batch, lmax, H, D, device="cuda", dtype=dtype)
            kp, vp = torch.zeros_like(qp), torch.zeros_like(qp)
            mask = torch.zeros(batch, 1, 1, lmax, dtype=torch.bool, device="cuda")
            for b, (s, n) in enumerate(zip(cu[:-1].tolist(), lens)):
                qp[b, :n], kp[b, :n], vp[b, :n] = q[s:s + n], k[s:s + n], v[s:s + n]
                mask[b, 0, 0, :n] = True
            qt, kt, vt = (x.transpose(1, 2) for x in (qp, kp, vp))

            def run_sdpa():
                return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask)

            def sdpa_packed():
                o = run_sdpa().transpose(1, 2)
                return torch.cat([o[b, :n] for b, n in enumerate(lens)])

            def run_eff():
                return torch.ops.aten._efficient_attention_forward(
                    q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), None, cu, cu, lmax, lmax, 0.0, 0, False)[0]

            def run_flash():
                return torch.ops.aten._flash_attention_forward(q, k, v, cu, cu, lmax, lmax, 0.0, False, False)[0]

            # Cross-check against a float64 reference, one sequence at a time.
            ref_packed = reference(q, k, v, lens)
            try:
                run_dccc()
            except RuntimeError as e:
                print(f"{name:>8} {batch:>4}  dccc failed: {e}")
                failed = True
                continue
            torch.cuda.synchronize()
            err = (out.double() - ref_packed).abs().max().item()
            errs = {}
            for peer, fn in (("sdpa", sdpa_packed), ("efficient", lambda: run_eff()[0]),
                             ("flash", run_flash if flash else None)):
                got = guarded(fn) if fn else None
                errs[peer] = (got.double() - ref_packed).abs().max().item() if got is not None else None
            sdpa_err, eff_err, flash_err = (errs[p] or 0.0 for p in ("sdpa", "efficient", "flash"))
            worst = max(err, eff_err, sdpa_err, flash_err)
            # f32: all agree to 1e-3; bf16 (8 significant bits, values of
            # order 1): to 5e-2.
            if worst > (1e-3 if args.dtype == "f32" else 5e-2):
                print(f"{name:>8} {batch:>4}  results disagree: dccc {err:.2e}, sdpa {sdpa_err:.2e}, "
                      f"efficient {eff_err:.2e}, flash {flash_err:.2e}")
                failed = True
                continue
            t_dccc = time_ms(run_dccc)
            nan = float("nan")
            t_sdpa = guarded(lambda: time_ms(run_sdpa)) if errs["sdpa"] is not None else None
            t_eff = guarded(lambda: time_ms(run_eff)) if errs["efficient"] is not None else None
            t_flash = guarded(lambda: time_ms(run_flash)) if errs["flash"] is not None else None
            oom = [p for p, t in (("sdpa", t_sdpa), ("efficient", t_eff), ("flash", t_flash if flash else 0))
                   if t is None]
            t_sdpa, t_eff = t_sdpa or nan, t_eff or nan
            t_flash = t_flash or nan
            print(f"{name:>8} {batch:>4} {t_dccc:9.3f} {t_sdpa:11.3f} {t_eff:9.3f} {t_flash:9.3f} "
                  f"{t_sdpa / t_dccc:9.3f} {t_eff / t_dccc:10.3f} {t_flash / t_dccc:10.3f} {worst:9.1e}"
                  f"{'  oom: ' + ','.join(oom) if oom else ''}", flush=True)
            del qp, kp, vp, qt, kt, vt, ref_packed
            torch.cuda.empty_cache()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

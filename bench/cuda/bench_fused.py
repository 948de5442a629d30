#!/usr/bin/env python3
"""Fused attention (issue 17) on a GPU: dccc's fused bf16 kernel against
PyTorch's FlashAttention-2 varlen and SDPA (cuDNN) on the padded batch, in
one run, H = 8, B = 128, head dims 64 and 128, non-causal and causal:

  dccc     mha_bf16.so (examples/mha_bf16.toy) and mha_causal_bf16.so (the
           bf16 version of examples/mha_causal.toy, made by
           scripts/gpu_bundle.sh), built with `dccc --target=cuda` (the
           fused kernel is the default there; `dccc --explain` says so)
  fa2      torch.ops.aten._flash_attention_forward with cu_seqlens
  cudnn    scaled_dot_product_attention on the padded batch, cuDNN backend
           (causal: is_causal with the lengths' padding; non-causal: key mask)

dccc is called through FN_on_stream with the lengths in host memory, on
PyTorch's stream, without waiting (--entry stream, the default: the hot
path of docs/abi.md, as FlashAttention's varlen call gets a host
max_seqlen); --entry wait times FN, which copies the device lengths to the
host and waits for the kernels; --entry both times FN as a variant line.

Every result is checked against a float64 reference first (one sequence at a
time). Repetitions interleave dccc and the peers (dccc, fa2, cudnn, dccc,
...), each timed with CUDA events; prints min and median ms, the ratios
peer / dccc of the medians (above 1: dccc faster) and TFLOP/s of useful work
(4 H D sum_b q_b k_b multiply-adds x 2, causal: the keys j <= i only).
With --dtype f32: dccc's fused f32 kernel (3xTF32 tensor-core products by
default) from mha.so and mha_causal.so (examples/mha.toy, mha_causal.toy)
against the f32 peer, torch.ops.aten._efficient_attention_forward with
cu_seqlens (causal: custom_mask_type 1, top-left), and SDPA's
memory-efficient backend on the padded batch. With --dtype f16: mha_f16.so
and mha_causal_f16.so (mha_bf16.toy and the bf16 mha_causal.toy with every
bf16 made f16; scripts/gpu_bundle.sh builds them) against the same peers in f16.

usage: bench_fused.py --dir DIR [--dtype bf16|f16|f32] [--seqlens DIR] [--batches race,...] [--B 128]
                      [--D 64,128] [--mask full,causal] [--reps 20] [--out FILE] [--entry stream|wait|both]
       bench_fused.py --dir DIR --lengths 4096,0,1,17 --check-only   (a GPU test)
Exits 2 with a message when there is no CUDA GPU.
"""
import argparse
import ctypes
import math
import os
import statistics
import sys
import time

H = 8


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


def parse_args(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="folder with mha_bf16.so and mha_causal_bf16.so")
    ap.add_argument("--seqlens", default=os.path.join(here, "../../../shared/bench/seqlens"))
    ap.add_argument("--batches", default="race,squad,wiki128,mnli,cola")
    ap.add_argument("--B", default="128")
    ap.add_argument("--D", default="64,128")
    ap.add_argument("--mask", default="full,causal")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out", default=None, help="also write the table here")
    ap.add_argument("--lengths", default=None,
                    help="one batch of these lengths (e.g. 4096,0,1,17) instead of --batches / --B")
    ap.add_argument("--check-only", action="store_true", help="check against float64, time nothing")
    ap.add_argument("--dccc-only", action="store_true",
                    help="with --check-only: no peer's error (under compute-sanitizer, and head dims over 256, "
                         "which FlashAttention-2 refuses)")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f16", "f32"])
    ap.add_argument("--flex", action="store_true",
                    help="also time FlexAttention (torch.compile'd flex_attention over the packed batch with a "
                         "document block mask; causal: and key <= query), one more line per configuration")
    ap.add_argument("--floor", action="store_true",
                    help="also time two bounds in the same interleaving, a line each: `floor`, torch.addcmul(q, k, v) "
                         "into a tensor like the output (one elementwise kernel that reads Q, K and V and writes O "
                         "once: the least memory traffic of any attention kernel on the batch, without its work) and "
                         "`launch`, one kernel writing one element (what the timing adds to any kernel)")
    ap.add_argument("--entry", default="stream", choices=["stream", "wait", "both"],
                    help="dccc's entry point: stream (default): FN_on_stream with the lengths in host memory, on "
                         "PyTorch's current stream, no wait (what FlashAttention's varlen call gets: device "
                         "cu_seqlens and a host max_seqlen, computed before the timed call); wait: FN, which copies "
                         "the device lengths to the host and returns after the kernels; both: FN_on_stream as dccc "
                         "and FN as one more line (`variant wait`)")
    ap.add_argument("--flush-l2", action="store_true",
                    help="zero 256 MiB before every timed call (not timed): every peer starts with a cold L2 cache")
    ap.add_argument("--unchecked", default="",
                    help="NAME,...: variants timed without the float64 check (bounds measured with kernels wrong by "
                         "design, e.g. a step left out); their lines say `unchecked`")
    ap.add_argument("--variants", default="",
                    help="NAME=DIR,...: more builds of the same libraries (e.g. other --attention-tiles), each "
                         "checked and timed in the same interleaving; one more line per variant")
    a = ap.parse_args(argv)
    if a.lengths is not None:
        try:
            a.lengths = [int(x) for x in a.lengths.split(",")]
        except ValueError:
            ap.error("--lengths takes comma-separated integers")
        if any(n < 0 for n in a.lengths) or not a.lengths:
            ap.error("--lengths: non-negative lengths, at least one")
    a.D = [int(x) for x in a.D.split(",")]
    a.B = [int(x) for x in a.B.split(",")]
    a.mask = a.mask.split(",")
    a.variants = [tuple(v.split("=", 1)) for v in a.variants.split(",") if v]
    if any(len(v) != 2 for v in a.variants):
        ap.error("--variants takes NAME=DIR pairs, comma-separated")
    for m in a.mask:
        if m not in ("full", "causal"):
            ap.error(f"--mask takes full and causal, not {m!r}")
    if any(d < 1 for d in a.D):
        ap.error("--D: head dims from 1 (above 256 the fused kernel's streaming instantiation)")
    return a


def time_interleaved(torch, peers, reps, label, flush_l2=False):
    """{name: [ms, ...]}: `reps` rounds, each calling every peer once in order (dccc, peer, ...),
    each call timed with CUDA events after 3 warm-up calls; a peer whose warm-up fails is dropped
    (and removed from `peers`) with a line saying why. flush_l2: before each timed call (outside
    the events) 256 MiB are zeroed, so every call starts with its inputs out of the L2 cache (else a
    call right after one on the same inputs finds them there, and one after a call on other data
    does not: an order effect on the short batches)."""
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda") if flush_l2 else None
    for p, f in list(peers.items()):
        try:
            for _ in range(3):
                f()
        except Exception as e:  # noqa: BLE001 (cuDNN may refuse a shape)
            print(f"# {label}: {p} unavailable: {type(e).__name__}: {e}", flush=True)
            del peers[p]
    torch.cuda.synchronize()
    times = {p: [] for p in peers}
    for _ in range(reps):
        for p, f in peers.items():
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if flush is not None:
                flush.zero_()
            a.record()
            f()
            b.record()
            b.synchronize()
            times[p].append(a.elapsed_time(b))
    return times


_flex = None


def flex_peer(torch, q, k, v, seqlen, causal, ref):
    """FlexAttention on the packed batch as one sequence of all tokens, [1, H, total, D] (the
    transposes happen here, outside the timed call), with a document mask (a token sees the keys
    of its own sequence; causal: at or before it); the block mask is made once. Returns the call
    and its max error against the float64 reference."""
    global _flex
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    if _flex is None:
        _flex = torch.compile(flex_attention)
    total = q.shape[0]
    doc = torch.repeat_interleave(torch.arange(seqlen.numel(), device="cuda"), seqlen.long())

    def mask_mod(b, h, qi, ki):
        same = doc[qi] == doc[ki]
        return same & (ki <= qi) if causal else same

    bm = create_block_mask(mask_mod, None, None, total, total, device="cuda")
    qf, kf, vf = (x.transpose(0, 1).unsqueeze(0).contiguous() for x in (q, k, v))

    def run():
        return _flex(qf, kf, vf, block_mask=bm)

    got = run()[0].transpose(0, 1).double()
    return run, (got - ref).abs().max().item()


def libraries(args, folder=None):
    """(function, library) per mask, failing clearly when a library is missing."""
    folder = folder or args.dir
    out = {}
    # f16: mha_bf16.toy and the bf16 mha_causal.toy with every bf16 made f16 (function names kept).
    sos = ((("full", "mha_bf16.so", "mha_bf16"), ("causal", "mha_causal_bf16.so", "mha_causal")) if args.dtype == "bf16"
           else (("full", "mha_f16.so", "mha_bf16"), ("causal", "mha_causal_f16.so", "mha_causal")) if args.dtype == "f16"
           else (("full", "mha.so", "mha"), ("causal", "mha_causal.so", "mha_causal")))
    for mask, so, fn in sos:
        if mask not in args.mask:
            continue
        path = os.path.join(folder, so)
        if not os.path.exists(path):
            raise SystemExit(f"bench_fused: {path} is missing (scripts/gpu_bundle.sh builds it)")
        lib = ctypes.CDLL(os.path.abspath(path))
        f = getattr(lib, fn)
        f.argtypes = [ctypes.POINTER(PackedQueries), ctypes.POINTER(PackedKV), ctypes.POINTER(PackedQueries)]
        f.restype = ctypes.c_int
        fs = getattr(lib, fn + "_on_stream")
        fs.argtypes = [ctypes.c_void_p, ctypes.POINTER(PackedQueries), ctypes.POINTER(PackedKV),
                       ctypes.POINTER(PackedQueries), ctypes.c_void_p]
        fs.restype = ctypes.c_int
        lib.dcc_last_error.restype = ctypes.c_char_p
        out[mask] = (f, fs, lib)
    return out


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("bench_fused: no CUDA GPU (no PyTorch here: run it on the GPU machine)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("bench_fused: no CUDA GPU (run it on the GPU machine: build-gpu/run_gpu.sh)", file=sys.stderr)
        return 2
    libs = libraries(args)
    # About a second of matrix products first, so that the first batch is not
    # timed while the GPU's clocks ramp up (seen as a 20% slower FA2 on the
    # first configuration of a run, session 19).
    if not args.check_only:
        w = torch.randn(4096, 4096, device="cuda")
        torch.cuda.synchronize()
        t0 = time.time()
        while time.time() - t0 < 1.0:
            for _ in range(10):
                w = (w @ w).clamp_(-1, 1)
            torch.cuda.synchronize()
        del w
    variants = [(n, libraries(args, d)) for n, d in args.variants]
    f32 = args.dtype == "f32"
    dt = torch.float32 if f32 else torch.float16 if args.dtype == "f16" else torch.bfloat16
    p1, p2 = ("eff", "sdpa-eff") if f32 else ("fa2", "cudnn")
    lines = [f"# device: {torch.cuda.get_device_name()}; torch {torch.__version__}; H = {H}; {args.dtype}; reps {args.reps} "
             f"interleaved; dccc entry {args.entry}{'; L2 flushed before each call' if args.flush_l2 else ''}; "
             f"ratios: peer median / dccc median",
             f"{'batch':>8} {'B':>4} {'D':>4} {'mask':>6} {'dccc min':>9} {'dccc med':>9} {p1 + ' med':>8} "
             f"{p2 + ' med':>9} {p1 + '/dccc':>8} {p2 + '/dccc':>10} {'dccc TF/s':>9} {p1 + ' TF/s':>8} {'max err':>8}"]
    for l in lines:
        print(l, flush=True)
    failed = False
    if args.lengths is not None:
        runs = [("lengths", len(args.lengths), args.lengths)]
    else:
        runs = [(name, batch, read_lengths(os.path.join(args.seqlens, name + ".txt"), batch))
                for name in args.batches.split(",") for batch in args.B]
    for name, batch, lens in runs:
            if lens is None:
                continue
            for D in args.D:
                for mask in args.mask:
                    fn, fn_stream, lib = libs[mask]
                    causal = mask == "causal"
                    total, lmax = sum(lens), max(max(lens), 1)
                    torch.manual_seed(0)
                    q, k, v = (torch.randn(total, H, D, device="cuda", dtype=dt) for _ in range(3))
                    seqlen = torch.tensor(lens, dtype=torch.int32, device="cuda")
                    cu = torch.zeros(batch + 1, dtype=torch.int32, device="cuda")
                    cu[1:] = torch.cumsum(seqlen, 0)
                    out = torch.empty_like(q)
                    qs = PackedQueries(q.data_ptr(), q.numel(), seqlen.data_ptr(), batch, batch, H, D)
                    kvs = PackedKV(k.data_ptr(), k.numel(), v.data_ptr(), v.numel(), seqlen.data_ptr(), batch, batch, H, D)
                    res = PackedQueries(out.data_ptr(), out.numel(), 0, 0, 0, 0, 0)

                    # The stream entry's structs: the same device data, the lengths in host memory.
                    host_lens = (ctypes.c_int32 * batch)(*lens)
                    qs_h = PackedQueries(q.data_ptr(), q.numel(), ctypes.addressof(host_lens), batch, batch, H, D)
                    kvs_h = PackedKV(k.data_ptr(), k.numel(), v.data_ptr(), v.numel(), ctypes.addressof(host_lens), batch,
                                     batch, H, D)
                    stream = torch.cuda.current_stream().cuda_stream

                    def caller(fn, fn_stream, lib, entry=args.entry):
                        def run():
                            st = fn(ctypes.byref(qs), ctypes.byref(kvs), ctypes.byref(res))
                            if st != 0:
                                raise RuntimeError(f"status {st}: {lib.dcc_last_error().decode()}")

                        def run_stream():
                            st = fn_stream(None, ctypes.byref(qs_h), ctypes.byref(kvs_h), ctypes.byref(res), stream)
                            if st != 0:
                                raise RuntimeError(f"status {st}: {lib.dcc_last_error().decode()}")
                        return run if entry == "wait" else run_stream
                    run_dccc = caller(fn, fn_stream, lib)

                    def run_fa2():
                        if f32:
                            return torch.ops.aten._efficient_attention_forward(
                                q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), None, cu, cu, lmax, lmax, 0.0,
                                1 if causal else 0, False)[0][0]
                        return torch.ops.aten._flash_attention_forward(q, k, v, cu, cu, lmax, lmax, 0.0, causal, False)[0]

                    qp = torch.zeros(batch, lmax, H, D, device="cuda", dtype=dt)
                    kp, vp = torch.zeros_like(qp), torch.zeros_like(qp)
                    keymask = torch.zeros(batch, 1, lmax, lmax, dtype=torch.bool, device="cuda")
                    for b, (s, n) in enumerate(zip(cu[:-1].tolist(), lens)):
                        qp[b, :n], kp[b, :n], vp[b, :n] = q[s:s + n], k[s:s + n], v[s:s + n]
                        keymask[b, 0, :, :n] = True
                    if causal:
                        keymask &= torch.ones(lmax, lmax, dtype=torch.bool, device="cuda").tril()
                    qt, kt, vt = (x.transpose(1, 2) for x in (qp, kp, vp))

                    def run_cudnn():
                        from torch.nn.attention import SDPBackend, sdpa_kernel
                        with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION if f32 else SDPBackend.CUDNN_ATTENTION]):
                            return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, attn_mask=keymask)

                    # float64 reference, one sequence at a time.
                    ref, work = [], 0
                    for s, n in zip(cu[:-1].tolist(), lens):
                        qb, kb, vb = (x[s:s + n].double().transpose(0, 1) for x in (q, k, v))
                        sc = qb @ kb.transpose(1, 2) / math.sqrt(D)
                        if causal:
                            sc = sc.masked_fill(torch.ones(n, n, dtype=torch.bool, device="cuda").triu(1), -math.inf)
                        ref.append((torch.softmax(sc, dim=-1) @ vb).transpose(0, 1))
                        work += n * (n + 1) // 2 if causal else n * n
                    ref = torch.cat(ref)
                    flops = 4.0 * H * D * work
                    try:
                        run_dccc()
                    except RuntimeError as e:
                        print(f"{name:>8} {batch:>4} {D:>4} {mask:>6}  dccc failed: {e}", flush=True)
                        failed = True
                        continue
                    torch.cuda.synchronize()
                    err = (out.double() - ref).abs().max().item()
                    fa2_err = math.nan if args.dccc_only else (run_fa2().double() - ref).abs().max().item()
                    if err > (1e-3 if f32 else 1e-2 if args.dtype == "f16" else 5e-2) or math.isnan(err):
                        print(f"{name:>8} {batch:>4} {D:>4} {mask:>6}  dccc wrong: max err {err:.2e} (fa2 {fa2_err:.2e})",
                              flush=True)
                        failed = True
                        continue
                    if args.check_only:
                        line = f"{name:>8} {batch:>4} {D:>4} {mask:>6}  check OK: max err {err:.2e} (fa2 {fa2_err:.2e})"
                        print(line, flush=True)
                        lines.append(line)
                        continue
                    peers = {"dccc": run_dccc, p1: run_fa2, p2: run_cudnn}
                    if args.flex:
                        try:
                            run_flex, flex_err = flex_peer(torch, q, k, v, seqlen, causal, ref)
                            peers["flex"] = run_flex
                        except Exception as e:  # noqa: BLE001 (a torch without flex_attention, a failed compile)
                            print(f"# {name} {D} {mask}: flex unavailable: {type(e).__name__}: {e}", flush=True)
                    if args.floor:
                        sink = torch.empty_like(q)
                        peers["floor"] = lambda: torch.addcmul(q, k, v, out=sink)
                        peers["launch"] = lambda: sink[:1].zero_()
                    more = [(vn, caller(*vl[mask])) for vn, vl in variants]
                    if args.entry == "both":
                        more.append(("wait", caller(fn, fn_stream, lib, "wait")))
                    for vn, run_v in more:  # each checked like dccc, then timed with the others
                        out.zero_()
                        run_v()
                        torch.cuda.synchronize()
                        verr = (out.double() - ref).abs().max().item()
                        if vn in args.unchecked.split(","):
                            print(f"{name:>8} {batch:>4} {D:>4} {mask:>6}  variant {vn} unchecked (max err {verr:.2e})", flush=True)
                        elif verr > (1e-3 if f32 else 1e-2 if args.dtype == "f16" else 5e-2) or math.isnan(verr):
                            print(f"{name:>8} {batch:>4} {D:>4} {mask:>6}  variant {vn} wrong: max err {verr:.2e}", flush=True)
                            failed = True
                            continue
                        peers["v:" + vn] = run_v
                    times = time_interleaved(torch, peers, args.reps, f"{name} {D} {mask}", args.flush_l2)
                    med = {p: statistics.median(times[p]) if times.get(p) else float("nan") for p in ("dccc", p1, p2)}
                    line = (f"{name:>8} {batch:>4} {D:>4} {mask:>6} {min(times['dccc']):9.3f} {med['dccc']:9.3f} "
                            f"{med[p1]:8.3f} {med[p2]:9.3f} {med[p1] / med['dccc']:8.3f} "
                            f"{med[p2] / med['dccc']:10.3f} {flops / med['dccc'] / 1e9:9.1f} "
                            f"{flops / med[p1] / 1e9:8.1f} {err:8.1e} {p1} {fa2_err:8.1e}")
                    print(line, flush=True)
                    lines.append(line)
                    if times.get("flex"):
                        fm = statistics.median(times["flex"])
                        line = (f"{name:>8} {batch:>4} {D:>4} {mask:>6}   flex: min {min(times['flex']):.3f} med {fm:.3f} ms, "
                                f"flex/dccc {fm / med['dccc']:.3f}, {flops / fm / 1e9:.1f} TF/s, max err {flex_err:.1e}")
                        print(line, flush=True)
                        lines.append(line)
                    if args.floor:
                        fm, lm = statistics.median(times["floor"]), statistics.median(times["launch"])
                        gb = 4 * q.numel() * q.element_size() / 1e9
                        for line in (f"{name:>8} {batch:>4} {D:>4} {mask:>6}   floor (Q, K, V read, O written: {gb * 1e3:.1f} MB): "
                                     f"min {min(times['floor']):.3f} med {fm:.3f} ms ({gb / fm:.2f} TB/s), {p1}/floor "
                                     f"{med[p1] / fm:.3f}, dccc/floor {med['dccc'] / fm:.3f}",
                                     f"{name:>8} {batch:>4} {D:>4} {mask:>6}   launch (one kernel, one element): "
                                     f"min {min(times['launch']):.4f} med {lm:.4f} ms"):
                            print(line, flush=True)
                            lines.append(line)
                    for vn, _ in more:
                        if "v:" + vn not in times or not times["v:" + vn]:
                            continue
                        vm = statistics.median(times["v:" + vn])
                        line = (f"{name:>8} {batch:>4} {D:>4} {mask:>6}   variant {vn:>10}: min {min(times['v:' + vn]):.3f} "
                                f"med {vm:.3f} ms, {p1}/variant {med[p1] / vm:.3f}, dccc/variant {med['dccc'] / vm:.3f}"
                                f"{' (unchecked)' if vn in args.unchecked.split(',') else ''}")
                        print(line, flush=True)
                        lines.append(line)
                    del qp, kp, vp, qt, kt, vt, keymask, ref
                    torch.cuda.empty_cache()
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

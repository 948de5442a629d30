#!/usr/bin/python3
"""Differential test of the attention examples that dccc computes as online
reductions (ir/online_reductions.h) against a float64 NumPy reference.

  attention_diff.py DCCC EXAMPLE.toy WORKDIR [--target=cuda] [--fn=NAME]
  attention_diff.py --prebuilt DIR EXAMPLE [--target=cuda]

(--fn=NAME: the entry of EXAMPLES below to check, for a file with several
functions; default the file's name.)

Compiles EXAMPLE twice with `dccc -o`: as written (the online pass fuses the
softmax chain) and with `materialize(T)` (the scores stay stored, the form
before the pass); `--explain` must say the rewrite fired for the first and
not for the second. Both libraries run through the C ABI (ctypes,
docs/abi.md) on these length patterns (q lengths / kv lengths):

  zeros    sequences of length 0 among others, kv shorter than q and empty
  b1       B = 1
  long     one sequence of 4,096 (q and kv)
  small    B = 17, lengths 1..17 (shuffled), kv lengths shuffled apart
  random   B = 8, random lengths 0..40 drawn independently for q and kv

and each output is compared with a reference computed here in float64 from
the same inputs (for bf16, the inputs rounded to bf16). Rows whose every
score is masked (causal rows past the end of a shorter key sequence, empty
key sequences) must be exactly 0, and no output may be NaN.
Tolerances (max abs error, outputs are averages of values in [-1, 1)):
f32 1e-6 (both forms; observed about 1.5e-7 on sums of up to 4,096 terms), bf16 2e-2 (observed about 6e-3; every
operation rounds to 8 bits, as docs/language.md says; both forms). The
workspace the library keeps after a call (dcc_alloc_kept_bytes: temporaries
of 1 MiB or more) must be under 1 MiB for the online form on `long` (on the
CPU its temporaries are the keys transposed, O(s), and block rows per tile
of queries), where the materialised form keeps the [s, s] scores (128 MiB
at H = 2).

--prebuilt takes the two libraries from DIR (EXAMPLE_TARGET_online.so and
EXAMPLE_TARGET_materialised.so, as scripts/gpu_bundle.sh builds them for a
GPU machine without dccc) instead of compiling them.
With --target=cuda the libraries are built for CUDA (device pointers): the
test then needs a GPU (exit 77, SKIP, without one) and copies through
libcudart; CTest runs that variant under the `cuda` label.
"""
import ctypes
import math
import os
import subprocess
import sys

import numpy as np

SKIP = 77

# Per example: the function, the tensor `materialize` keeps, the key/value
# fields, whether scores sum over heads (flash_attention.toy), the mask and
# the transform of a score before the softmax.
EXAMPLES = {
    "mha": dict(fn="mha", keep="scores"),
    "mha_bf16": dict(fn="mha_bf16", keep="scores", dtype="bf16"),
    "flash_attention": dict(fn="flash_attention", keep="scores", kv="data", heads_summed=True),
    "mha_causal": dict(fn="mha_causal", keep="scores", mask=lambda i, j: j <= i),
    "mha_window": dict(fn="mha_window", keep="dot", mask=lambda i, j: (j <= i) & (i - j < 4)),
    "mha_softcap": dict(fn="mha_softcap", keep="raw", cap=30.0),
    "mha_scale_after_max": dict(fn="mha_scale_after_max", keep="s"),
    # FlashAttention-2's precision: f32 scores and sums, P rounded to bf16,
    # the output rounded once (half a bf16 step: 2e-3 on values below 1).
    "mha_bf16_f32_scores": dict(fn="mha_bf16_f32_scores", keep="scores", dtype="bf16", tol=5e-3),
    "mha_causal_bf16_f32_scores": dict(fn="mha_causal_bf16_f32_scores", keep="scores", dtype="bf16", tol=5e-3,
                                       mask=lambda i, j: j <= i),
}
TOL = {"f32": 1e-6, "bf16": 2e-2}
H, D = 2, 16


def bf16_round(x):
    """float32 -> nearest-even bfloat16 values (as float32) and their bits."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return (b.astype(np.uint32) << 16).view(np.float32), b


def reference(cfg, q, k, v, ql, kl):
    """float64 attention per (b, i, h); fully masked rows are 0."""
    out = np.zeros(q.shape, dtype=np.float64)
    qo = ko = 0
    mask = cfg.get("mask")
    for b in range(len(ql)):
        qb = q[qo:qo + ql[b]].astype(np.float64)
        kb = k[ko:ko + kl[b]].astype(np.float64)
        vb = v[ko:ko + kl[b]].astype(np.float64)
        if ql[b] and kl[b]:
            s = np.einsum("ihd,jhd->hij", qb, kb)  # [H, i, j]
            if cfg.get("heads_summed"):
                s = np.broadcast_to(s.sum(axis=0, keepdims=True), s.shape)
            s = s / math.sqrt(D)
            if "cap" in cfg:
                s = cfg["cap"] * np.tanh(s / cfg["cap"])
            if mask:
                ii, jj = np.meshgrid(np.arange(ql[b]), np.arange(kl[b]), indexing="ij")
                s = np.where(mask(ii, jj)[None], s, -np.inf)
            m = s.max(axis=2, keepdims=True)
            live = np.isfinite(m)
            e = np.where(live, np.exp(s - np.where(live, m, 0)), 0)
            l = e.sum(axis=2, keepdims=True)
            w = np.where(l > 0, e / np.where(l > 0, l, 1), 0)
            out[qo:qo + ql[b]] = np.einsum("hij,jhd->ihd", w, vb)
        qo += ql[b]
        ko += kl[b]
    return out


def masked_rows(cfg, ql, kl):
    """Boolean [total_q] of rows with no unmasked key."""
    rows = []
    mask = cfg.get("mask")
    for b in range(len(ql)):
        for i in range(ql[b]):
            js = np.arange(kl[b])
            rows.append(not (mask(i, js).any() if mask else kl[b] > 0))
    return np.array(rows, dtype=bool)


def patterns(rng):
    small = list(range(1, 18))
    rng.shuffle(small)
    small_kv = list(small)
    rng.shuffle(small_kv)
    return {
        "zeros": ([0, 3, 0, 5, 2, 0], [4, 0, 0, 2, 7, 1]),
        "b1": ([9], [9]),
        "long": ([4096], [4096]),
        "small": (small, small_kv),
        "random": (list(rng.integers(0, 41, 8)), list(rng.integers(0, 41, 8))),
    }


class Cuda:
    """Device copies through libcudart (the CUDA libraries take device pointers)."""

    def __init__(self):
        try:
            self.rt = ctypes.CDLL("libcudart.so")
        except OSError:
            for p in ("/usr/local/cuda/lib64/libcudart.so",):
                if os.path.exists(p):
                    self.rt = ctypes.CDLL(p)
                    break
            else:
                print("SKIP: no libcudart")
                sys.exit(SKIP)
        n = ctypes.c_int(0)
        if self.rt.cudaGetDeviceCount(ctypes.byref(n)) != 0 or n.value == 0:
            print("SKIP: no CUDA device")
            sys.exit(SKIP)
        self.ptrs = []

    def put(self, arr):
        p = ctypes.c_void_p()
        nbytes = max(arr.nbytes, 1)
        assert self.rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(nbytes)) == 0
        self.rt.cudaMemcpy(p, arr.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(arr.nbytes), 1)
        self.ptrs.append(p)
        return p.value

    def get(self, ptr, arr):
        assert self.rt.cudaMemcpy(arr.ctypes.data_as(ctypes.c_void_p), ctypes.c_void_p(ptr),
                                  ctypes.c_size_t(arr.nbytes), 2) == 0

    def free(self):
        for p in self.ptrs:
            self.rt.cudaFree(p)
        self.ptrs = []


def run_lib(path, cfg, q, k, v, ql, kl, cuda):
    lib = ctypes.CDLL(path)
    fn, meta = getattr(lib, cfg["fn"]), getattr(lib, cfg["fn"] + "_meta")
    P = ctypes.c_void_p
    I64 = ctypes.c_int64

    class Q(ctypes.Structure):
        _fields_ = [("data", P), ("data_len", I64), ("seqlen", P), ("seqlen_len", I64),
                    ("B", I64), ("H", I64), ("D", I64)]

    kv_fields = [("data", P), ("data_len", I64)] if cfg.get("kv") == "data" else \
        [("k", P), ("k_len", I64), ("v", P), ("v_len", I64)]

    class KV(ctypes.Structure):
        _fields_ = kv_fields + [("seqlen", P), ("seqlen_len", I64), ("B", I64), ("H", I64), ("D", I64)]

    fn.argtypes = meta.argtypes = [ctypes.POINTER(Q), ctypes.POINTER(KV), ctypes.POINTER(Q)]
    fn.restype = meta.restype = ctypes.c_int
    lib.dcc_last_error.restype = ctypes.c_char_p
    lib.dcc_alloc_kept_bytes.restype = ctypes.c_size_t
    lib.dcc_alloc_trim()
    B = len(ql)
    qla, kla = np.array(ql, dtype=np.int32), np.array(kl, dtype=np.int32)
    put = cuda.put if cuda else (lambda a: a.ctypes.data)
    qs = Q(put(q), q.size, put(qla), B, B, H, D)
    if cfg.get("kv") == "data":
        kvs = KV(put(k), k.size, put(kla), B, B, H, D)
    else:
        kvs = KV(put(k), k.size, put(v), v.size, put(kla), B, B, H, D)
    res = Q()
    if meta(ctypes.byref(qs), ctypes.byref(kvs), ctypes.byref(res)) != 0:
        sys.exit("meta: " + lib.dcc_last_error().decode())
    out = np.zeros(q.shape, dtype=q.dtype)
    assert res.data_len == out.size, (res.data_len, out.size)
    res.data = put(out)
    if fn(ctypes.byref(qs), ctypes.byref(kvs), ctypes.byref(res)) != 0:
        sys.exit(cfg["fn"] + ": " + lib.dcc_last_error().decode())
    if cuda:
        cuda.get(res.data, out)
        cuda.free()
    kept = lib.dcc_alloc_kept_bytes()
    if q.dtype == np.uint16:
        out = (out.astype(np.uint32) << 16).view(np.float32)
    return out.astype(np.float64), kept


def own_explain(text, fn):
    """The --explain lines under `fn FN:` headings (a file may hold other functions)."""
    mine, keep = [], False
    for line in text.splitlines():
        if line.startswith("fn "):
            keep = line.startswith(f"fn {fn}:")
        elif keep:
            mine.append(line)
    return "\n".join(mine)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    target = "cuda" if "--target=cuda" in sys.argv[4:] else "cpu"
    prebuilt = sys.argv[1] == "--prebuilt"
    if prebuilt:
        work, name = sys.argv[2:4]
    else:
        dccc, toy, work = sys.argv[1:4]
        name = os.path.splitext(os.path.basename(toy))[0]
        for a in sys.argv[4:]:
            if a.startswith("--fn="):
                name = a[5:]
    cfg = EXAMPLES[name]
    dtype = cfg.get("dtype", "f32")
    cuda = Cuda() if target == "cuda" else None
    os.makedirs(work, exist_ok=True)
    libs = {}
    for form in ("online", "materialised"):
        if prebuilt:
            libs[form] = os.path.abspath(os.path.join(work, f"{name}_{target}_{form}.so"))
            continue
        so = os.path.join(work, f"{name}_{target}_{form}.so")
        cmd = [dccc, toy, "-o", so, "--explain", f"--target={target}"]
        if form == "online":
            cmd.append("--online-reductions")
        if form == "materialised":
            cmd.append(f"--schedule=schedule {cfg['fn']} {{ materialize({cfg['keep']}); }}")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
        fired = "online reductions: one pass over" in own_explain(r.stdout + r.stderr, cfg["fn"])
        if fired != (form == "online"):
            sys.exit(f"{form}: the online rewrite {'fired' if fired else 'did not fire'}:\n{r.stdout}{r.stderr}")
        libs[form] = os.path.abspath(so)
    rng = np.random.default_rng(15)
    failures = 0
    for pname, (ql, kl) in patterns(rng).items():
        ql, kl = [int(x) for x in ql], [int(x) for x in kl]
        shape_q, shape_k = (sum(ql), H, D), (sum(kl), H, D)
        q, k, v = (rng.uniform(-1, 1, s).astype(np.float32) for s in (shape_q, shape_k, shape_k))
        if dtype == "bf16":
            (q, qb), (k, kb), (v, vb) = bf16_round(q), bf16_round(k), bf16_round(v)
        if cfg.get("kv") == "data":  # flash_attention.toy: the keys are the values
            v = k
        ref = reference(cfg, q, k, v, ql, kl)
        dead = masked_rows(cfg, ql, kl)
        args = (qb, kb, vb) if dtype == "bf16" else (q, k, v)
        if cfg.get("kv") == "data":
            args = (args[0], args[1], args[1])
        for form, so in libs.items():
            out, kept = run_lib(so, cfg, *args, ql, kl, cuda)
            err = float(np.max(np.abs(out - ref))) if out.size else 0.0
            bad = []
            if np.isnan(out).any():
                bad.append("NaN in the output")
            tol = cfg.get("tol", TOL[dtype])
            if err > tol:
                bad.append(f"max abs error {err:.3g} > {tol}")
            if dead.any() and np.any(out[dead] != 0):
                bad.append("a fully masked row is not 0")
            # The online form keeps no O(s^2) workspace: on the CPU its
            # temporaries are the keys transposed (512 KiB here) and block
            # rows per tile of queries, none of 1 MiB or more.
            if target == "cpu" and pname == "long" and form == "online" and kept >= (1 << 20):
                bad.append(f"the online form keeps {kept} bytes of workspace")
            if target == "cpu" and pname == "long" and form == "materialised" and kept < 4096 * 4096 * 4:
                bad.append(f"the materialised form keeps only {kept} bytes (expected the [s, s] scores)")
            print(f"{name} {target} {form:<12} {pname:<7} B={len(ql):<3} max err {err:.3g} "
                  f"masked rows {int(dead.sum())} kept {kept} bytes {'FAIL: ' + '; '.join(bad) if bad else 'ok'}")
            failures += bool(bad)
    if failures:
        sys.exit(f"{failures} check(s) failed")
    print(f"{name} {target}: OK")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Differential test of std/nn.toy against float64 NumPy references.

  nn_diff.py path/to/dccc [SEEDS] [--target=cpu|cuda]

For each seed, random packed sequences (a batch with a zero-length sequence,
and a batch of one) are written as literals into a program that imports
std/nn.toy and prints every function's result, once per element type of
the generic functions (f32, f64, f16, bf16: one instance each); `dccc run`
computes them, NumPy here in float64 from the same inputs rounded to that
type. The test fails when any element differs by more than the type's
tolerance (f32 and f64: 2e-4 relative + 2e-5 absolute; the 16-bit types
round every intermediate value, so NN_TOLERANCES allows a few roundings),
or when the shapes differ (empty sequences included).

With --target=cpu or --target=cuda, the same inputs go through the library
`dccc --target=... -o` makes of stdlib/nn.toy (every instance exported),
called with PyTorch tensors (diff_common.Libraries; on the GPU for cuda),
the scalar functions once per value. Exit 77 (skipped) without PyTorch, a
GPU or nvcc.
"""
import sys

import numpy as np

from diff_common import check_library, check_program, lit, round_to, rounded_list, run_variant

D, E = 4, 3
ELEMS = ["f32", "f64", "f16", "bf16"]
# 16-bit instances keep every intermediate (mean, variance, exp, sums) in
# the element type: a few roundings of 2^-11 (f16) or 2^-8 (bf16).
NN_TOLERANCES = {"f32": (2e-4, 2e-5), "f64": (2e-4, 2e-5), "f16": (6e-3, 6e-3), "bf16": (4e-2, 4e-2)}
EPS = 1e-5


def ragged(rng, lens, cols, scale=2.0):
    return [[[float("%.6f" % v) for v in rng.uniform(-scale, scale, cols)] for _ in range(n)] for n in lens]


RH, RK = 2, 2  # RoPE: heads, pairs per head


def rope_inputs(rng, lens):
    P = max(lens + [1])
    ang = [[i * 10000.0 ** (-k / RK) for k in range(RK)] for i in range(P)]
    cos_t = [[float("%.6f" % np.cos(a)) for a in row] for row in ang]
    sin_t = [[float("%.6f" % np.sin(a)) for a in row] for row in ang]
    r = [[[[[float("%.6f" % t) for t in rng.uniform(-1, 1, RK)] for _ in range(2)] for _ in range(RH)]
          for _ in range(n)] for n in lens]
    return cos_t, sin_t, r


def program(lens, x, g, w, bias, W, be, v, rope, elem):
    cos_t, sin_t, r = rope
    P = len(cos_t)
    # the interleaved input is the half-split one with its last two axes swapped
    ri = [[[[list(t) for t in zip(*head)] for head in row] for row in seq] for seq in r]
    return f"""import "std/nn.toy" as nn;
fn main() {{
    let x = nn.Rows<{elem}> {{ data: {lit(x)}, seqlen: [{", ".join(map(str, lens))}] }};
    let g = nn.Rows<{elem}> {{ data: {lit(g)}, seqlen: [{", ".join(map(str, lens))}] }};
    let w: [{D}]{elem} = {lit(w)};
    let bias: [{D}]{elem} = {lit(bias)};
    let W: [{D}, {E}]{elem} = {lit(W)};
    let be: [{E}]{elem} = {lit(be)};
    let v: [{len(v)}]{elem} = {lit(v)};
    let sm = nn.softmax(x);
    print(sm.data);
    let lsm = nn.log_softmax(x);
    print(lsm.data);
    let ln = nn.layernorm(x, w, bias, {EPS:.6f});
    print(ln.data);
    let rn = nn.rmsnorm(x, w, {EPS:.6f});
    print(rn.data);
    print(nn.linear(x, W, be));
    let sg: [b: {len(lens)}][g.seqlen[b], {D}]{elem};
    sg[b][i, d] = nn.swiglu(g.data[b][i, d], g.data[b][i, d] * 0.5 + 0.25);
    print(sg);
    let a1: [{len(v)}]{elem};
    a1[k] = nn.silu(v[k]);
    let a2: [{len(v)}]{elem};
    a2[k] = nn.gelu_erf(v[k]);
    let a3: [{len(v)}]{elem};
    a3[k] = nn.gelu_tanh(v[k]);
    print(a1);
    print(a2);
    print(a3);
    let ct: [{P}, {RK}]{elem} = {lit(cos_t)};
    let st: [{P}, {RK}]{elem} = {lit(sin_t)};
    let rh = nn.HalfSplit<{elem}> {{ data: {lit(r)}, seqlen: [{", ".join(map(str, lens))}] }};
    let ri = nn.Interleaved<{elem}> {{ data: {lit(ri)}, seqlen: [{", ".join(map(str, lens))}] }};
    let yh = nn.rope_half(rh, ct, st);
    print(yh.data);
    let yi = nn.rope_interleaved(ri, ct, st);
    print(yi.data);
}}
"""


def rope_ref(r, cos_t, sin_t):
    c, sn = np.array(cos_t), np.array(sin_t)
    out = []
    for seq in r:
        a = np.array(seq, dtype=np.float64).reshape(len(seq), RH, 2, RK)
        n = len(seq)
        y = np.empty_like(a)
        y[:, :, 0, :] = a[:, :, 0, :] * c[:n, None, :] - a[:, :, 1, :] * sn[:n, None, :]
        y[:, :, 1, :] = a[:, :, 1, :] * c[:n, None, :] + a[:, :, 0, :] * sn[:n, None, :]
        out.append(y)
    return out


def reference(lens, x, g, w, bias, W, be, v, rope):
    from math import erf, tanh, sqrt, pi
    seqs = [np.array(s, dtype=np.float64).reshape(len(s), D) for s in x]
    gates = [np.array(s, dtype=np.float64).reshape(len(s), D) for s in g]
    w, bias, W, be, v = (np.array(a, dtype=np.float64) for a in (w, bias, W, be, v))
    out = []
    out.append([np.exp(s - s.max(0)) / np.exp(s - s.max(0)).sum(0) if len(s) else s for s in seqs])
    out.append([s - s.max(0) - np.log(np.exp(s - s.max(0)).sum(0)) if len(s) else s for s in seqs])
    ln = []
    for s in seqs:
        mu = s.mean(1, keepdims=True)
        var = ((s - mu) ** 2).mean(1, keepdims=True)
        ln.append((s - mu) / np.sqrt(var + EPS) * w + bias)
    out.append(ln)
    out.append([s / np.sqrt((s * s).mean(1, keepdims=True) + EPS) * w for s in seqs])
    out.append([s @ W + be if len(s) else np.zeros((0, E)) for s in seqs])
    silu = lambda a: a / (1 + np.exp(-a))
    out.append([silu(gs) * (gs * 0.5 + 0.25) for gs in gates])
    gelu_erf = np.array([0.5 * t * (1 + erf(t / sqrt(2))) for t in v])
    gelu_tanh = 0.5 * v * (1 + np.tanh(sqrt(2 / pi) * (v + 0.044715 * v ** 3)))
    out += [silu(v), gelu_erf, gelu_tanh]
    cos_t, sin_t, r = rope
    half = rope_ref(r, cos_t, sin_t)
    out.append(half)
    out.append([h.transpose(0, 1, 3, 2) for h in half])
    return out


NAMES = ["softmax", "log_softmax", "layernorm", "rmsnorm", "linear", "swiglu", "silu", "gelu_erf", "gelu_tanh",
         "rope_half", "rope_interleaved"]


def lib_results(L, lens, x, g, w, bias, W, be, v, rope, elem):
    """NAMES' values through the library of std/nn.toy (every instance
    exported): the couplings as PyTorch tensors, the scalar functions called
    once per value."""
    X = L.seqs(x, lens, (D,), elem)
    wt, bt, Wt, bet = (L.dense(a, elem) for a in (w, bias, W, be))
    out = [L.split(L.call("nn", "softmax", elem, X)["data"], lens),
           L.split(L.call("nn", "log_softmax", elem, X)["data"], lens),
           L.split(L.call("nn", "layernorm", elem, X, wt, bt, EPS)["data"], lens),
           L.split(L.call("nn", "rmsnorm", elem, X, wt, EPS)["data"], lens),
           L.split(L.call("nn", "linear", elem, X, Wt, bet), lens)]
    # swiglu(g, g * 0.5 + 0.25) per element, the second argument rounded to
    # the element type as the `dccc run` program computes it there.
    sw = []
    for seq in g:
        rows = [[L.call("nn", "swiglu", elem, float(round_to(t, elem)), float(round_to(t * 0.5 + 0.25, elem)))
                 for t in row] for row in seq]
        sw.append(np.array(rows, dtype=np.float64).reshape(len(seq), D))
    out.append(sw)
    for fn in ("silu", "gelu_erf", "gelu_tanh"):
        out.append(np.array([L.call("nn", fn, elem, float(round_to(t, elem))) for t in v], dtype=np.float64))
    cos_t, sin_t, r = rope
    ct, st = L.dense(cos_t, elem), L.dense(sin_t, elem)
    ri = [[[[list(t) for t in zip(*head)] for head in row] for row in seq] for seq in r]
    out.append(L.split(L.call("nn", "rope_half", elem, L.seqs(r, lens, (RH, 2, RK), elem), ct, st)["data"], lens))
    out.append(L.split(L.call("nn", "rope_interleaved", elem, L.seqs(ri, lens, (RH, RK, 2), elem), ct, st)["data"],
                       lens))
    return out


def run_cases(dccc, seeds, make_libs):
    L = make_libs({"nn": "stdlib/nn.toy"}) if make_libs else None
    failures, checked = [], 0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        for lens in ([int(n) for n in rng.integers(0, 6, 3)] + [0], [int(rng.integers(1, 6))]):
            x = ragged(rng, lens, D)
            g = ragged(rng, lens, D)
            w = [float("%.6f" % t) for t in rng.uniform(0.5, 1.5, D)]
            bias = [float("%.6f" % t) for t in rng.uniform(-1, 1, D)]
            W = [[float("%.6f" % t) for t in row] for row in rng.uniform(-1, 1, (D, E))]
            be = [float("%.6f" % t) for t in rng.uniform(-1, 1, E)]
            v = [float("%.6f" % t) for t in rng.uniform(-4, 4, 6)]
            rope = rope_inputs(rng, lens)
            for elem in ELEMS:
                where = f"seed {seed} {elem} lens {lens}:"
                rx, rg, rw, rb, rW, rbe, rv = (rounded_list(a, elem) for a in (x, g, w, bias, W, be, v))
                cos_t, sin_t, rr = rope
                rrope = (rounded_list(cos_t, elem), rounded_list(sin_t, elem), rounded_list(rr, elem))
                ref = lambda: reference(lens, rx, rg, rw, rb, rW, rbe, rv, rrope)
                if L:
                    errs, n = check_library(where, NAMES, lambda: lib_results(L, lens, x, g, w, bias, W, be, v, rope,
                                                                              elem), ref, elem, NN_TOLERANCES[elem])
                else:
                    src = program(lens, x, g, w, bias, W, be, v, rope, elem)
                    errs, n = check_program(dccc, src, "nn_diff", where, NAMES, ref, elem, NN_TOLERANCES[elem])
                failures += errs
                checked += n
    return failures, checked


def main():
    return run_variant("nn_diff", sys.argv, run_cases)


if __name__ == "__main__":
    sys.exit(main())

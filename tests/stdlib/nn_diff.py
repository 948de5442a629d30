#!/usr/bin/python3
"""Differential test of std/nn.toy against float64 NumPy references.

  nn_diff.py path/to/dccc [SEEDS]

For each seed, random packed sequences (a batch with a zero-length sequence,
and a batch of one) are written as literals into a program that imports
std/nn.toy and prints every function's result; `dccc run` computes them in
f32, NumPy here in float64 from the same (printed, rounded) inputs. The
test fails when any element differs by more than 2e-4 relative + 2e-5
absolute, or when the shapes differ (empty sequences included).
"""
import sys

import numpy as np

from diff_common import compare, lit, parse_values, run_program

D, E = 4, 3
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


def program(lens, x, g, w, bias, W, be, v, rope):
    cos_t, sin_t, r = rope
    P = len(cos_t)
    # the interleaved input is the half-split one with its last two axes swapped
    ri = [[[[list(t) for t in zip(*head)] for head in row] for row in seq] for seq in r]
    return f"""import "std/nn.toy" as nn;
fn main() {{
    let x = nn.Rows {{ data: {lit(x)}, seqlen: [{", ".join(map(str, lens))}] }};
    let g = nn.Rows {{ data: {lit(g)}, seqlen: [{", ".join(map(str, lens))}] }};
    let w: [{D}]f32 = {lit(w)};
    let bias: [{D}]f32 = {lit(bias)};
    let W: [{D}, {E}]f32 = {lit(W)};
    let be: [{E}]f32 = {lit(be)};
    let v: [{len(v)}]f32 = {lit(v)};
    let sm = nn.softmax(x);
    print(sm.data);
    let lsm = nn.log_softmax(x);
    print(lsm.data);
    let ln = nn.layernorm(x, w, bias, {EPS:.6f});
    print(ln.data);
    let rn = nn.rmsnorm(x, w, {EPS:.6f});
    print(rn.data);
    print(nn.linear(x, W, be));
    let sg: [b: {len(lens)}][g.seqlen[b], {D}]f32;
    sg[b][i, d] = nn.swiglu(g.data[b][i, d], g.data[b][i, d] * 0.5 + 0.25);
    print(sg);
    let a1: [{len(v)}]f32;
    a1[k] = nn.silu(v[k]);
    let a2: [{len(v)}]f32;
    a2[k] = nn.gelu_erf(v[k]);
    let a3: [{len(v)}]f32;
    a3[k] = nn.gelu_tanh(v[k]);
    print(a1);
    print(a2);
    print(a3);
    let ct: [{P}, {RK}]f32 = {lit(cos_t)};
    let st: [{P}, {RK}]f32 = {lit(sin_t)};
    let rh = nn.HalfSplit {{ data: {lit(r)}, seqlen: [{", ".join(map(str, lens))}] }};
    let ri = nn.Interleaved {{ data: {lit(ri)}, seqlen: [{", ".join(map(str, lens))}] }};
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


def main():
    dccc = sys.argv[1]
    seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
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
            src = program(lens, x, g, w, bias, W, be, v, rope)
            r = run_program(dccc, src, "nn_diff")
            where = f"seed {seed} lens {lens}:"
            if r.returncode != 0:
                failures.append(f"{where} dccc run exited {r.returncode}:\n{r.stderr}\n{src}")
                continue
            got = parse_values(r.stdout)
            want = reference(lens, x, g, w, bias, W, be, v, rope)
            if len(got) != len(want):
                failures.append(f"{where} {len(got)} printed values, expected {len(want)}:\n{r.stdout}")
                continue
            for name, gv, wv in zip(NAMES, got, want):
                failures += compare(name, gv, wv, where)
                checked += 1
    for f in failures:
        print("FAIL", f)
    if failures:
        return 1
    print(f"nn_diff: OK ({checked} function results against float64 NumPy)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Differential test of std/attention.toy against float64 NumPy references.

  attention_diff.py path/to/dccc [SEEDS] [--target=cpu|cuda]

For each seed: random packed queries and keys/values with their own
lengths (zero-length sequences included; a key-less sequence only where it
has no query) and a batch of one; a program that imports std/attention.toy
prints every function's result (`dccc run`) for each element type of the
generic functions (f32, f16, bf16: one instance each), compared with
float64 NumPy from the same inputs rounded to that type (f32: 2e-4
relative + 2e-5 absolute; 16-bit types: diff_common.TOLERANCES).

With --target=cpu or --target=cuda, the same inputs go through the library
`dccc --target=... -o` makes of stdlib/attention.toy (every instance
exported), called with PyTorch tensors (diff_common.Libraries; on the GPU
for cuda). Exit 77 (skipped) without PyTorch, a GPU or nvcc.
"""
import sys

import numpy as np

from diff_common import check_library, check_program, lit, rounded_list, run_variant

H, D = 2, 3
G = 2  # query heads per key/value head (grouped-query attention)
MASKED = -1e30


def ragged(rng, lens):
    return [[[[float("%.6f" % t) for t in rng.uniform(-1.5, 1.5, D)] for _ in range(H)] for _ in range(n)] for n in lens]


def grouped(rng, lens):
    return [[[[[float("%.6f" % t) for t in rng.uniform(-1.5, 1.5, D)] for _ in range(G)] for _ in range(H)]
             for _ in range(n)] for n in lens]


ELEMS = ["f32", "f16", "bf16"]


def program(qlens, klens, q, k, v, scale, window, cap, gq, elem):
    ql = ", ".join(map(str, qlens))
    kl = ", ".join(map(str, klens))
    return f"""import "std/attention.toy" as at;
fn main() {{
    let q = at.Queries<{elem}> {{ data: {lit(q)}, seqlen: [{ql}] }};
    let kv = at.KV<{elem}> {{ k: {lit(k)}, v: {lit(v)}, seqlen: [{kl}] }};
    let a = at.attention(q, kv, {scale:.6f});
    print(a.data);
    let c = at.causal_attention(q, kv, {scale:.6f});
    print(c.data);
    let w = at.sliding_window_attention(q, kv, {scale:.6f}, {window});
    print(w.data);
    let s = at.softcap_attention(q, kv, {scale:.6f}, {cap:.6f});
    print(s.data);
    let gq = at.GroupedQueries<{elem}> {{ data: {lit(gq)}, seqlen: [{ql}] }};
    let r = at.grouped_query_attention(gq, kv, {scale:.6f});
    print(r.data);
}}
"""


def attend(q, k, v, scale, visible=None, cap=None):
    n, m = len(q), len(k)
    if n == 0:
        return np.zeros((0, H, D))
    s = np.einsum("ihd,jhd->ihj", q, k) * scale
    if cap is not None:
        s = cap * np.tanh(s / cap)
    if visible is not None:
        i = np.arange(n)[:, None, None]
        j = np.arange(m)[None, None, :]
        s = np.where(visible(i, j, n, m), s, MASKED)
    s = s - s.max(2, keepdims=True)
    p = np.exp(s)
    return np.einsum("ihj,jhd->ihd", p, v) / p.sum(2)[:, :, None]


def gqa_ref(gq, k, v, scale):
    out = []
    for a, b, c in zip(gq, k, v):
        qa = np.array(a, dtype=np.float64).reshape(len(a), H, G, D)
        kb = np.array(b, dtype=np.float64).reshape(len(b), H, D)
        vc = np.array(c, dtype=np.float64).reshape(len(c), H, D)
        y = np.stack([attend(qa[:, :, g, :], kb, vc, scale) for g in range(G)], axis=2) if len(a) else qa
        out.append(y)
    return out


def reference(qlens, klens, q, k, v, scale, window, cap, gq):
    qs = [np.array(x, dtype=np.float64).reshape(len(x), H, D) for x in q]
    ks = [np.array(x, dtype=np.float64).reshape(len(x), H, D) for x in k]
    vs = [np.array(x, dtype=np.float64).reshape(len(x), H, D) for x in v]
    causal = lambda i, j, n, m: j <= i + m - n
    local = lambda i, j, n, m: (j <= i + m - n) & (j > i + m - n - window)
    return [
        [attend(a, b, c, scale) for a, b, c in zip(qs, ks, vs)],
        [attend(a, b, c, scale, causal) for a, b, c in zip(qs, ks, vs)],
        [attend(a, b, c, scale, local) for a, b, c in zip(qs, ks, vs)],
        [attend(a, b, c, scale, cap=cap) for a, b, c in zip(qs, ks, vs)],
        gqa_ref(gq, k, v, scale),
    ]


NAMES = ["attention", "causal_attention", "sliding_window_attention", "softcap_attention",
         "grouped_query_attention"]


def lib_results(L, qlens, klens, q, k, v, scale, window, cap, gq, elem):
    """NAMES' values through the library of std/attention.toy (every
    instance exported), with PyTorch tensors."""
    Q = L.seqs(q, qlens, (H, D), elem)
    KV = {"k": L.rows(k, (H, D), elem), "v": L.rows(v, (H, D), elem), "seqlen": L.ints(klens)}
    run = lambda fn, *extra: L.split(L.call("attention", fn, elem, Q, KV, scale, *extra)["data"], qlens)
    out = [run("attention"), run("causal_attention"), run("sliding_window_attention", window),
           run("softcap_attention", cap)]
    GQ = L.seqs(gq, qlens, (H, G, D), elem)
    out.append(L.split(L.call("attention", "grouped_query_attention", elem, GQ, KV, scale)["data"], qlens))
    return out


def run_cases(dccc, seeds, make_libs):
    L = make_libs({"attention": "stdlib/attention.toy"}) if make_libs else None
    failures, checked = [], 0
    for seed in range(seeds):
        rng = np.random.default_rng(100 + seed)
        batches = []
        qlens = [int(n) for n in rng.integers(0, 5, 3)] + [0, 0]
        klens = [int(rng.integers(1, 6)) if n else int(rng.integers(0, 3)) for n in qlens]
        klens[-1] = 0  # no queries, no keys
        batches.append((qlens, klens))
        batches.append(([int(rng.integers(1, 5))], [int(rng.integers(1, 6))]))
        for qlens, klens in batches:
            q, k, v = ragged(rng, qlens), ragged(rng, klens), ragged(rng, klens)
            scale = float("%.6f" % (1 / np.sqrt(D)))
            window = int(rng.integers(1, 4))
            cap = float("%.6f" % rng.uniform(0.5, 2.0))
            gq = grouped(rng, qlens)
            for elem in ELEMS:
                where = f"seed {seed} {elem} q lens {qlens} kv lens {klens}:"
                rq, rk, rv, rg = (rounded_list(x, elem) for x in (q, k, v, gq))
                ref = lambda: reference(qlens, klens, rq, rk, rv, scale, window, cap, rg)
                if L:
                    errs, n = check_library(where, NAMES, lambda: lib_results(L, qlens, klens, q, k, v, scale, window,
                                                                              cap, gq, elem), ref, elem)
                else:
                    src = program(qlens, klens, q, k, v, scale, window, cap, gq, elem)
                    errs, n = check_program(dccc, src, "attention_diff", where, NAMES, ref, elem)
                failures += errs
                checked += n
    return failures, checked


def main():
    return run_variant("attention_diff", sys.argv, run_cases)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Differential test of std/ragged.toy against float64 NumPy references.

  ragged_diff.py path/to/dccc [SEEDS] [--target=cpu|cuda]

For each seed, random packed sequences (a batch with zero-length sequences
and a batch of one) are written as literals into a program that imports
std/ragged.toy and prints every function's result, once per element type
of the generic functions (f32, f64, f16, bf16); NumPy computes the same in
float64 from the inputs rounded to that type. The test fails when an
element differs by more than the type's tolerance (diff_common.TOLERANCES,
f64 as f32), or when shapes differ. An empty sequence's sum and mean are 0
and its max is -inf. The slicing functions get scalar and per-sequence
starts and counts, negative ones and ones past the end included (their
data and lengths are compared), concat_rows a second batch with its own
lengths (empty sequences on either side), concat_features a second batch
of width F.

With --target=cpu or --target=cuda, the same inputs go through libraries
(`dccc --target=... -o`) called with PyTorch tensors (diff_common.Libraries):
tests/stdlib/ragged_lib.toy, which exports every function but the slicing
ones and concat_rows, and ragged_slices_lib.toy, which exports those inside
shapes a library can return (on the CUDA target their lengths are computed
by a kernel and copied to the host, docs/cuda.md). Exit 77 (skipped)
without PyTorch, a GPU or nvcc.
"""
import sys

import numpy as np

from diff_common import TOLERANCES, check_library, check_program, lit, rounded_list, run_variant

D, E, F = 3, 2, 2  # F: the width of concat_features' second batch
ELEMS = ["f32", "f64", "f16", "bf16"]
# The 16-bit sums accumulate in f32 and round once; the mean divides the
# rounded sum (a second rounding), grouped GEMM rounds once.
TOL = dict(TOLERANCES, f64=TOLERANCES["f32"], bf16=(2.4e-2, 2.4e-2))


def ragged(rng, lens, cols):
    return [[[float("%.6f" % v) for v in rng.uniform(-2, 2, cols)] for _ in range(n)] for n in lens]


def program(lens, x, w, z, f, sl, elem):
    B = len(lens)
    zlens, k, start, count, starts, counts = sl
    ints = lambda a: "[" + ", ".join(map(str, a)) + "]"
    # A literal of empty sequences only does not give D: then fresh storage.
    zdecl = (f"let z = rg.Seqs<{elem}> {{ data: {lit(z)}, seqlen: {ints(zlens)} }};" if sum(zlens) else
             f"let zl: [{B}]i32 = {ints(zlens)};\n    let z = rg.Seqs<{elem}> {{ data: [b: {B}][zl[b], {D}]{elem}, seqlen: zl }};")
    return f"""import "std/ragged.toy" as rg;
fn main() {{
    let x = rg.Seqs<{elem}> {{ data: {lit(x)}, seqlen: {ints(lens)} }};
    let w: [{B}, {D}, {E}]{elem} = {lit(w)};
    print(rg.segment_sum(x));
    print(rg.segment_mean(x));
    print(rg.segment_max(x));
    print(rg.offsets(x));
    print(rg.grouped_matmul(x, w));
    let t = rg.take_rows(x, {k});
    print(t.data, t.seqlen);
    let s = rg.slice_rows(x, {start}, {count});
    print(s.data, s.seqlen);
    let st: [{B}]i32 = {ints(starts)};
    let ct: [{B}]i32 = {ints(counts)};
    let se = rg.slice_rows_each(x, st, ct);
    print(se.data, se.seqlen);
    {zdecl}
    let c = rg.concat_rows(x, z);
    print(c.data, c.seqlen);
    let f = rg.Seqs2<{elem}> {{ data: {lit(f)}, seqlen: {ints(lens)} }};
    print(rg.concat_features(x, f));
}}
"""


def slices(rng, lens):
    """Lengths of the second batch of concat_rows, and the slicing
    arguments: k, start, count (scalars, negative ones included) and a start
    and count per sequence."""
    B = len(lens)
    return ([int(n) for n in rng.integers(0, 4, B)], int(rng.integers(-1, 5)), int(rng.integers(-2, 4)),
            int(rng.integers(-1, 5)), [int(t) for t in rng.integers(-2, 6, B)], [int(t) for t in rng.integers(-1, 6, B)])


def sliced(seqs, starts, counts):
    """Rows start .. start + count - 1 of each sequence, clipped (a negative
    start counts as 0, a negative count as 0), with the new lengths."""
    out = [s[max(a, 0):max(a, 0) + max(c, 0)] for s, a, c in zip(seqs, starts, counts)]
    return out, np.array([len(o) for o in out], dtype=np.float64)


def reference(lens, x, w, z, f, sl):
    seqs = [np.array(s, dtype=np.float64).reshape(len(s), D) for s in x]
    w = np.array(w, dtype=np.float64)
    zlens, k, start, count, starts, counts = sl
    zs = [np.array(s, dtype=np.float64).reshape(len(s), D) for s in z]
    fs = [np.array(s, dtype=np.float64).reshape(len(s), F) for s in f]
    B = len(lens)
    take = sliced(seqs, [0] * B, [k] * B)
    window = sliced(seqs, [start] * B, [count] * B)
    each = sliced(seqs, starts, counts)
    cat = [np.concatenate([a, c]) for a, c in zip(seqs, zs)]
    return [
        np.array([s.sum(0) for s in seqs]),
        np.array([s.mean(0) if len(s) else np.zeros(D) for s in seqs]),
        np.array([s.max(0) if len(s) else np.full(D, -np.inf) for s in seqs]),
        np.array([sum(lens[:b]) for b in range(len(lens))], dtype=np.float64),
        [s @ w[b] if len(s) else np.zeros((0, E)) for b, s in enumerate(seqs)],
        take[0], take[1], window[0], window[1], each[0], each[1],
        cat, np.array([len(c) for c in cat], dtype=np.float64),
        [np.concatenate([a, c], axis=1) for a, c in zip(seqs, fs)],
    ]


NAMES = ["segment_sum", "segment_mean", "segment_max", "offsets", "grouped_matmul", "take_rows", "take_rows.seqlen",
         "slice_rows", "slice_rows.seqlen", "slice_rows_each", "slice_rows_each.seqlen", "concat_rows",
         "concat_rows.seqlen", "concat_features"]


def lib_results(L, lens, x, w, z, f, sl, elem):
    """NAMES' values through the libraries (None: not on this target)."""
    zlens, k, start, count, starts, counts = sl
    X = L.seqs(x, lens, (D,), elem)
    out = [L.call("ragged", fn, elem, X) for fn in ("segment_sum", "segment_mean", "segment_max")]
    out = [L.host(t) for t in out]
    out.append(L.host(L.call("ragged", "offsets", elem, X)))
    out.append(L.split(L.call("ragged", "grouped_matmul", elem, X, L.dense(w, elem)), lens))
    if "slices" in L.libs:  # (always: both targets build it)
        # The wrappers return the rows inside x's extents, 0 past the
        # result's length, and the lengths apart (ragged_slices_lib.toy).
        def sliced_rows(fn, *args, rows=lens):
            n = [int(v) for v in L.host(L.call("slices", fn + "_len", elem, *args))]
            padded = L.split(L.call("slices", fn, elem, *args), rows)
            for b, (p, m) in enumerate(zip(padded, n)):
                if m > len(p) or np.any(p[m:] != 0):
                    raise ValueError(f"{fn}: sequence {b} holds {len(p)} rows, length {m}, nonzero past it")
            return [p[:m] for p, m in zip(padded, n)], np.array(n, dtype=np.float64)
        Z = L.seqs(z, zlens, (D,), elem)
        out += sliced_rows("take_rows", X, k)
        out += sliced_rows("slice_rows", X, start, count)
        out += sliced_rows("slice_rows_each", X, L.ints(starts), L.ints(counts))
        out += sliced_rows("concat_rows", X, Z, rows=[a + b for a, b in zip(lens, zlens)])
    else:
        out += [None] * 8
    # (The Python package gives a field whose extent is `D + E` as one flat
    # dimension of values: rows of D + F here.)
    cf = L.host(L.call("ragged", "concat_features", elem, X, L.seqs(f, lens, (F,), elem)))
    out.append(L.split(cf.reshape(-1, D + F) if cf.size == sum(lens) * (D + F) else cf, lens))
    return out


def run_cases(dccc, seeds, make_libs):
    L = None
    if make_libs:
        # The slicing functions and concat_rows through their wrappers, on
        # both targets.
        L = make_libs({"ragged": "tests/stdlib/ragged_lib.toy", "slices": "tests/stdlib/ragged_slices_lib.toy"})
    failures, checked = [], 0
    for seed in range(seeds):
        rng = np.random.default_rng(300 + seed)
        for lens in ([int(n) for n in rng.integers(0, 6, 3)] + [0], [int(rng.integers(1, 6))]):
            x = ragged(rng, lens, D)
            w = [[[float("%.6f" % t) for t in row] for row in rng.uniform(-1, 1, (D, E))] for _ in lens]
            sl = slices(rng, lens)
            z = ragged(rng, sl[0], D)
            f = ragged(rng, lens, F)
            if L:
                # A library checks an integer array its result's lengths
                # derive from as lengths (>= 0): no negative per-sequence
                # start or count there (`dccc run` gets them).
                sl = sl[:4] + ([max(t, 0) for t in sl[4]], [max(t, 0) for t in sl[5]])
            for elem in ELEMS:
                where = f"seed {seed} {elem} lens {lens}:"
                ref = lambda: reference(lens, rounded_list(x, elem), rounded_list(w, elem),
                                        rounded_list(z, elem), rounded_list(f, elem), sl)
                if L:
                    errs, n = check_library(where, NAMES, lambda: lib_results(L, lens, x, w, z, f, sl, elem), ref,
                                            elem, TOL[elem])
                else:
                    src = program(lens, x, w, z, f, sl, elem)
                    errs, n = check_program(dccc, src, "ragged_diff", where, NAMES, ref, elem, TOL[elem])
                failures += errs
                checked += n
    return failures, checked


def main():
    return run_variant("ragged_diff", sys.argv, run_cases)


if __name__ == "__main__":
    sys.exit(main())

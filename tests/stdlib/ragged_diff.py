#!/usr/bin/python3
"""Differential test of std/ragged.toy against float64 NumPy references.

  ragged_diff.py path/to/dccc [SEEDS]

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
"""
import sys

import numpy as np

from diff_common import TOLERANCES, check_program, lit, report, rounded_list

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


def main():
    dccc = sys.argv[1]
    seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    failures, checked = [], 0
    for seed in range(seeds):
        rng = np.random.default_rng(300 + seed)
        for lens in ([int(n) for n in rng.integers(0, 6, 3)] + [0], [int(rng.integers(1, 6))]):
            x = ragged(rng, lens, D)
            w = [[[float("%.6f" % t) for t in row] for row in rng.uniform(-1, 1, (D, E))] for _ in lens]
            sl = slices(rng, lens)
            z = ragged(rng, sl[0], D)
            f = ragged(rng, lens, F)
            for elem in ELEMS:
                src = program(lens, x, w, z, f, sl, elem)
                where = f"seed {seed} {elem} lens {lens}:"
                errs, n = check_program(dccc, src, "ragged_diff", where, NAMES,
                                        lambda: reference(lens, rounded_list(x, elem), rounded_list(w, elem),
                                                          rounded_list(z, elem), rounded_list(f, elem), sl),
                                        elem, TOL[elem])
                failures += errs
                checked += n
    return report("ragged_diff", failures, checked)


if __name__ == "__main__":
    sys.exit(main())

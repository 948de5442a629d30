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
and its max is -inf.
"""
import sys

import numpy as np

from diff_common import TOLERANCES, check_program, lit, report, rounded_list

D, E = 3, 2
ELEMS = ["f32", "f64", "f16", "bf16"]
# The 16-bit sums accumulate in f32 and round once; the mean divides the
# rounded sum (a second rounding), grouped GEMM rounds once.
TOL = dict(TOLERANCES, f64=TOLERANCES["f32"], bf16=(2.4e-2, 2.4e-2))


def ragged(rng, lens, cols):
    return [[[float("%.6f" % v) for v in rng.uniform(-2, 2, cols)] for _ in range(n)] for n in lens]


def program(lens, x, w, elem):
    B = len(lens)
    return f"""import "std/ragged.toy" as rg;
fn main() {{
    let x = rg.Seqs<{elem}> {{ data: {lit(x)}, seqlen: [{", ".join(map(str, lens))}] }};
    let w: [{B}, {D}, {E}]{elem} = {lit(w)};
    print(rg.segment_sum(x));
    print(rg.segment_mean(x));
    print(rg.segment_max(x));
    print(rg.offsets(x));
    print(rg.grouped_matmul(x, w));
}}
"""


def reference(lens, x, w):
    seqs = [np.array(s, dtype=np.float64).reshape(len(s), D) for s in x]
    w = np.array(w, dtype=np.float64)
    return [
        np.array([s.sum(0) for s in seqs]),
        np.array([s.mean(0) if len(s) else np.zeros(D) for s in seqs]),
        np.array([s.max(0) if len(s) else np.full(D, -np.inf) for s in seqs]),
        np.array([sum(lens[:b]) for b in range(len(lens))], dtype=np.float64),
        [s @ w[b] if len(s) else np.zeros((0, E)) for b, s in enumerate(seqs)],
    ]


NAMES = ["segment_sum", "segment_mean", "segment_max", "offsets", "grouped_matmul"]


def main():
    dccc = sys.argv[1]
    seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    failures, checked = [], 0
    for seed in range(seeds):
        rng = np.random.default_rng(300 + seed)
        for lens in ([int(n) for n in rng.integers(0, 6, 3)] + [0], [int(rng.integers(1, 6))]):
            x = ragged(rng, lens, D)
            w = [[[float("%.6f" % t) for t in row] for row in rng.uniform(-1, 1, (D, E))] for _ in lens]
            for elem in ELEMS:
                src = program(lens, x, w, elem)
                where = f"seed {seed} {elem} lens {lens}:"
                errs, n = check_program(dccc, src, "ragged_diff", where, NAMES,
                                        lambda: reference(lens, rounded_list(x, elem), rounded_list(w, elem)),
                                        elem, TOL[elem])
                failures += errs
                checked += n
    return report("ragged_diff", failures, checked)


if __name__ == "__main__":
    sys.exit(main())

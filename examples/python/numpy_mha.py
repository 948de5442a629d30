#!/usr/bin/python3
"""Multi-head attention over packed sequences from NumPy: examples/mha.toy
compiled and called with arrays and length arrays (zero lengths included),
against a float64 reference written here.

    PYTHONPATH=python examples/python/numpy_mha.py
"""
import os

import numpy as np

import dccc

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def reference(q, k, v, q_lens, kv_lens):
    out, qo, ko = [], 0, 0
    for n, m in zip(q_lens, kv_lens):
        qb, kb, vb = (x.astype(np.float64) for x in (q[qo:qo + n], k[ko:ko + m], v[ko:ko + m]))
        s = np.einsum("ihd,jhd->ihj", qb, kb) / np.sqrt(q.shape[2])
        p = np.exp(s - s.max(axis=2, keepdims=True)) if n and m else s
        out.append(np.einsum("ihj,jhd->ihd", p / p.sum(axis=2, keepdims=True), vb) if m else np.zeros((n,) + q.shape[1:]))
        qo, ko = qo + n, ko + m
    return np.concatenate(out)


def main():
    lib = dccc.compile(os.path.join(ROOT, "examples", "mha.toy"))
    rng = np.random.default_rng(0)
    q_lens = np.array([3, 0, 5, 1], np.int32)
    kv_lens = np.array([4, 2, 7, 1], np.int32)
    H, D = 8, 64
    q = rng.standard_normal((q_lens.sum(), H, D)).astype(np.float32)
    k = rng.standard_normal((kv_lens.sum(), H, D)).astype(np.float32)
    v = rng.standard_normal((kv_lens.sum(), H, D)).astype(np.float32)
    out = lib.mha({"data": q, "seqlen": q_lens}, {"k": k, "v": v, "seqlen": kv_lens})
    err = np.abs(out["data"] - reference(q, k, v, q_lens, kv_lens)).max()
    print(f"mha from NumPy: out {out['data'].shape}, max |dccc - float64| = {err:.2e}")
    assert out["seqlen"] is q_lens and err < 1e-5
    try:  # lengths that do not sum to the rows: an error, nothing written
        lib.mha({"data": q, "seqlen": q_lens + 1}, {"k": k, "v": v, "seqlen": kv_lens})
    except dccc.Error as e:
        print("rejected:", e)


if __name__ == "__main__":
    main()

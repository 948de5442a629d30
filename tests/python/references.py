"""Float64 NumPy references of every function of examples/*.toy, written
from the programs' meaning (not from dccc's output), and random arguments
for them on a given length pattern.

CASES[name] = (example, make) where make(rng, lens) returns
(args, kwargs, expected, rtol, atol): `lens` is a list of B lengths (0 and
B = 1 included by the tests), `expected` a dict of float64 arrays for a
coupling result (the fresh fields; bound ones are checked by identity) or
one array for a tensor result.
"""

import numpy as np


def f32(a):
    return np.asarray(a, np.float32)


def rows(lens, H, D, rng, dtype=np.float32):
    n = int(np.sum(lens))
    return rng.uniform(-1, 1, (n, H, D) if D else (n, H)).astype(dtype)


def offsets(lens):
    return np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)


def softmax_rows(s, axis=-1):
    m = s.max(axis=axis, keepdims=True)
    e = np.exp(s - m)
    return e / e.sum(axis=axis, keepdims=True)


def attention(q, k, v):
    """q (n, H, D), k and v (m, H, D): softmax(q k^T / sqrt(D)) v per head."""
    n, H, D = q.shape
    if n == 0:
        return np.zeros((0, H, D))
    if k.shape[0] == 0:
        return np.full((n, H, D), np.nan)
    s = np.einsum("ihd,jhd->ihj", q, k) / np.sqrt(D)
    return np.einsum("ihj,jhd->ihd", softmax_rows(s), v)


def kv_lengths(rng, lens):
    # a query row needs a key; zero queries may meet zero keys
    return np.array([rng.integers(1, 6) if n else rng.integers(0, 3) for n in lens], np.int32)


def make_mha(rng, lens, H=2, D=8, dtype=np.float32):
    ql = np.array(lens, np.int32)
    kl = kv_lengths(rng, lens)
    q, k, v = rows(ql, H, D, rng, dtype), rows(kl, H, D, rng, dtype), rows(kl, H, D, rng, dtype)
    qo, ko = offsets(ql), offsets(kl)
    out = np.concatenate([attention(q[qo[b]:qo[b + 1]].astype(np.float64), k[ko[b]:ko[b + 1]].astype(np.float64),
                                    v[ko[b]:ko[b + 1]].astype(np.float64)) for b in range(len(lens))])
    return [{"data": q, "seqlen": ql}, {"k": k, "v": v, "seqlen": kl}], {}, {"data": out.reshape(q.shape)}


def masked_attention_ref(q, k, v, mask=None, softcap=None, scale_after_max=False):
    """The attention variants of the online-reductions examples, in float64:
    a masked score is -inf, and a row whose every score is masked gives 0
    (the masked-value rules of docs/language.md)."""
    n, H, D = q.shape
    m = k.shape[0]
    if n == 0 or m == 0:
        return np.zeros((n, H, D))
    s = np.einsum("ihd,jhd->ihj", q, k)
    if not scale_after_max:
        s = s / np.sqrt(D)
    if softcap is not None:
        s = softcap * np.tanh(s / softcap)
    if mask is not None:
        i = np.arange(n)[:, None, None]
        j = np.arange(m)[None, None, :]
        s = np.where(mask(i, j), s, -np.inf)
    mx = s.max(axis=-1, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    e = np.exp((s - mx) / (np.sqrt(D) if scale_after_max else 1.0))
    l = e.sum(axis=-1, keepdims=True)
    return np.einsum("ihj,jhd->ihd", e / np.where(l == 0, 1.0, l), v)


def make_attention_variant(**opts):
    def make(rng, lens, H=2, D=8):
        ql = np.array(lens, np.int32)
        kl = kv_lengths(rng, lens)
        q, k, v = rows(ql, H, D, rng), rows(kl, H, D, rng), rows(kl, H, D, rng)
        qo, ko = offsets(ql), offsets(kl)
        out = np.concatenate([masked_attention_ref(q[qo[b]:qo[b + 1]].astype(np.float64),
                                                   k[ko[b]:ko[b + 1]].astype(np.float64),
                                                   v[ko[b]:ko[b + 1]].astype(np.float64), **opts)
                              for b in range(len(lens))] or [np.zeros((0, H, D))])
        return [{"data": q, "seqlen": ql}, {"k": k, "v": v, "seqlen": kl}], {}, {"data": out.reshape(q.shape)}
    return make


# bf16 as bit patterns: round the f32 values to bf16 first (truncate the
# low 16 bits after rounding to nearest even), then the reference uses them.
def to_bf16(a):
    u = a.astype(np.float32).view(np.uint32)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return u


def from_bf16(u):
    return (u.astype(np.uint32) << 16).view(np.float32)


def make_mha_bf16(rng, lens):
    args, kw, exp = make_mha(rng, lens, H=2, D=4)
    q, kv = args
    qb, kb, vb = to_bf16(q["data"]), to_bf16(kv["k"]), to_bf16(kv["v"])
    ql, kl = q["seqlen"], kv["seqlen"]
    qo, ko = offsets(ql), offsets(kl)
    qf, kf, vf = (from_bf16(x).astype(np.float64) for x in (qb, kb, vb))
    out = np.concatenate([attention(qf[qo[b]:qo[b + 1]], kf[ko[b]:ko[b + 1]], vf[ko[b]:ko[b + 1]])
                          for b in range(len(lens))]).reshape(qf.shape)
    return [{"data": qb, "seqlen": ql}, {"k": kb, "v": vb, "seqlen": kl}], {}, {"data": out}


def make_bf16_attention(mask=None):
    """examples/mha_bf16_f32_scores.toy: bf16 inputs and output, the
    attention of the inputs' bf16 values in float64 (masked: -inf scores)."""
    def make(rng, lens, H=2, D=8):
        ql = np.array(lens, np.int32)
        kl = kv_lengths(rng, lens)
        qb, kb, vb = to_bf16(rows(ql, H, D, rng)), to_bf16(rows(kl, H, D, rng)), to_bf16(rows(kl, H, D, rng))
        qo, ko = offsets(ql), offsets(kl)
        qf, kf, vf = (from_bf16(x).astype(np.float64) for x in (qb, kb, vb))
        out = np.concatenate([masked_attention_ref(qf[qo[b]:qo[b + 1]], kf[ko[b]:ko[b + 1]], vf[ko[b]:ko[b + 1]],
                                                   mask=mask)
                              for b in range(len(lens))] or [np.zeros((0, H, D))])
        return [{"data": qb, "seqlen": ql}, {"k": kb, "v": vb, "seqlen": kl}], {}, {"data": out.reshape(qf.shape)}
    return make


def make_gqa_bf16(rng, lens, H=4, G=2, D=4):
    """examples/gqa_bf16.toy: query head h attends with K/V head h // G, G = H // KH."""
    KH = H // G
    ql = np.array(lens, np.int32)
    kl = kv_lengths(rng, lens)
    qb, kb, vb = to_bf16(rows(ql, H, D, rng)), to_bf16(rows(kl, KH, D, rng)), to_bf16(rows(kl, KH, D, rng))
    qo, ko = offsets(ql), offsets(kl)
    qf, kf, vf = (from_bf16(x).astype(np.float64) for x in (qb, kb, vb))
    heads = np.arange(H) // G
    out = np.concatenate([attention(qf[qo[b]:qo[b + 1]], kf[ko[b]:ko[b + 1]][:, heads], vf[ko[b]:ko[b + 1]][:, heads])
                          for b in range(len(lens))]).reshape(qf.shape)
    return [{"data": qb, "seqlen": ql}, {"k": kb, "v": vb, "seqlen": kl}], {}, {"data": out}


def make_flash(rng, lens, H=2, D=4):
    ql = np.array(lens, np.int32)
    kl = kv_lengths(rng, lens)
    q, k = rows(ql, H, D, rng), rows(kl, H, D, rng)
    v = k  # kv.data holds the keys and the values
    qo, ko = offsets(ql), offsets(kl)
    outs = []
    for b in range(len(lens)):
        qb, kb, vb = (x.astype(np.float64) for x in (q[qo[b]:qo[b + 1]], k[ko[b]:ko[b + 1]], v[ko[b]:ko[b + 1]]))
        if qb.shape[0] == 0:
            outs.append(np.zeros((0, H, D)))
            continue
        s = np.einsum("ihd,jhd->ij", qb, kb) / np.sqrt(D)
        outs.append(np.einsum("ij,jhd->ihd", softmax_rows(s), vb))
    return [{"data": q, "seqlen": ql}, {"data": k, "seqlen": kl}], {}, {"data": np.concatenate(outs).reshape(q.shape)}


def make_masked(rng, lens, H=2, D=4):
    ql = np.array(lens, np.int32)
    kl = kv_lengths(rng, lens)
    q, k, v = rows(ql, H, D, rng), rows(kl, H, D, rng), rows(kl, H, D, rng)
    masks, outs = [], []
    qo, ko = offsets(ql), offsets(kl)
    for b in range(len(lens)):
        n, m = int(ql[b]), int(kl[b])
        mask = rng.random((n, m)) < 0.7
        masks.append(mask.reshape(-1))
        qb, kb, vb = (x.astype(np.float64) for x in (q[qo[b]:qo[b + 1]], k[ko[b]:ko[b + 1]], v[ko[b]:ko[b + 1]]))
        if n == 0:
            continue
        s = np.einsum("ihd,jhd->ihj", qb, kb) / np.sqrt(D)
        s = np.where(mask[:, None, :], s, -1e9)
        outs.append(np.einsum("ihj,jhd->ihd", softmax_rows(s), vb))
    out = np.concatenate(outs) if outs else np.zeros((0, H, D))
    x = {"queries": q, "keys": k, "values": v, "q_seqlen": ql, "kv_seqlen": kl,
         "attention_mask": np.concatenate(masks).astype(np.bool_) if masks else np.zeros(0, np.bool_)}
    return [x], {}, {"data": out}


def gemm_shapes(rng, lens):
    m = np.array(lens, np.int32)
    k = rng.integers(0, 4, len(lens)).astype(np.int32)
    n = rng.integers(0, 4, len(lens)).astype(np.int32)
    return m, k, n


def packed_mats(rng, r, c):
    parts = [rng.uniform(-1, 1, int(a) * int(b)).astype(np.float32) for a, b in zip(r, c)]
    return np.concatenate(parts) if parts else np.zeros(0, np.float32), parts


def make_grouped(rng, lens):
    m, k, n = gemm_shapes(rng, lens)
    a, ap = packed_mats(rng, m, k)
    b, bp = packed_mats(rng, k, n)
    c = [ap[g].astype(np.float64).reshape(m[g], k[g]) @ bp[g].astype(np.float64).reshape(k[g], n[g])
         for g in range(len(lens))]
    return [{"a": a, "b": b, "m": m, "k": k, "n": n}], {}, {"c": np.concatenate([x.reshape(-1) for x in c])}


def make_grouped_16(bf16):
    """examples/batched_gemm_bf16.toy: the factors in bf16 (bit patterns) or
    f16, their products summed in float64."""
    def make(rng, lens):
        m, k, n = gemm_shapes(rng, lens)
        a, _ = packed_mats(rng, m, k)
        b, _ = packed_mats(rng, k, n)
        if bf16:
            a, b = to_bf16(a), to_bf16(b)
            av, bv = from_bf16(a).astype(np.float64), from_bf16(b).astype(np.float64)
        else:
            a, b = a.astype(np.float16), b.astype(np.float16)
            av, bv = a.astype(np.float64), b.astype(np.float64)
        ao, bo = np.concatenate([[0], np.cumsum(m * k)]), np.concatenate([[0], np.cumsum(k * n)])
        c = [av[ao[g]:ao[g + 1]].reshape(m[g], k[g]) @ bv[bo[g]:bo[g + 1]].reshape(k[g], n[g]) for g in range(len(lens))]
        return [{"a": a, "b": b, "m": m, "k": k, "n": n}], {}, {"c": np.concatenate([x.reshape(-1) for x in c])}
    return make


def make_pairs(rng, lens):
    m, k, n = gemm_shapes(rng, lens)
    a, ap = packed_mats(rng, m, k)
    b, bp = packed_mats(rng, k, n)
    c = [ap[g].astype(np.float64).reshape(m[g], k[g]) @ bp[g].astype(np.float64).reshape(k[g], n[g])
         for g in range(len(lens))]
    return ([{"data": a, "m": m, "k": k}, {"data": b, "k": k.copy(), "n": n}], {},
            {"c": np.concatenate([x.reshape(-1) for x in c])})


def causal_parts(rng, lens, H=3):
    sl = np.array(lens, np.int32)
    x = rows(sl, H, 0, rng)
    xo = offsets(sl)
    return sl, x, [x[xo[b]:xo[b + 1]].astype(np.float64) for b in range(len(lens))]


def tri_scores(xb):
    n = xb.shape[0]
    # row i holds columns 0..i, each H values
    return [xb[i][None, :] * xb[:i + 1] for i in range(n)]  # (i + 1, H)


def make_causal_scores(rng, lens):
    sl, x, xs = causal_parts(rng, lens)
    out = [r for xb in xs for r in tri_scores(xb)]
    H = x.shape[1]
    return [{"data": x, "seqlen": sl}], {}, {"scores": np.concatenate(out) if out else np.zeros((0, H))}


def make_causal_softmax(rng, lens, H=3):
    sl = np.array(lens, np.int32)
    n_rows = sum(n * (n + 1) // 2 for n in lens)
    s = rng.uniform(-2, 2, (n_rows, H)).astype(np.float32)
    out, at = [], 0
    for n in lens:
        for i in range(n):
            r = s[at:at + i + 1].astype(np.float64)
            out.append(softmax_rows(r, axis=0))
            at += i + 1
    return [{"scores": s, "seqlen": sl}], {}, {"scores": np.concatenate(out) if out else np.zeros((0, H))}


def make_causal_attention(rng, lens):
    sl, x, xs = causal_parts(rng, lens)
    out = []
    for xb in xs:
        for i in range(xb.shape[0]):
            s = xb[i][None, :] * xb[:i + 1]
            out.append((softmax_rows(s, axis=0) * xb[:i + 1]).sum(axis=0))
    H = x.shape[1]
    return [{"data": x, "seqlen": sl}], {}, {"data": np.array(out).reshape(-1, H) if out else np.zeros((0, H))}


def docs(rng, lens, H=2):
    nsent = np.array(lens, np.int32)
    ntok = rng.integers(0, 4, int(nsent.sum())).astype(np.int32)
    tokens = rng.uniform(-1, 1, (int(ntok.sum()), H)).astype(np.float32)
    to = offsets(ntok)
    sents = [tokens[to[k]:to[k + 1]].astype(np.float64) for k in range(len(ntok))]
    return {"tokens": tokens, "ntok": ntok, "nsent": nsent}, sents, H


def make_sentence_sums(rng, lens):
    x, sents, H = docs(rng, lens)
    out = np.array([s.sum(axis=0) for s in sents]).reshape(-1, H)
    return [x], {}, {"data": out}


def make_document_sums(rng, lens):
    x, sents, H = docs(rng, lens)
    so = offsets(x["nsent"])
    out = np.array([sum((s.sum(axis=0) for s in sents[so[d]:so[d + 1]]), np.zeros(H)) for d in range(len(lens))])
    return [x], {}, out.reshape(len(lens), H)


def make_sentence_softmax(rng, lens):
    x, sents, H = docs(rng, lens)
    out = [softmax_rows(s, axis=0) for s in sents if s.shape[0]]
    return [x], {}, {"tokens": np.concatenate(out) if out else np.zeros((0, H))}


def layer_norm(x, g, b):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * g + b


def make_layernorm(rng, lens, H=16, dtype=np.float32):
    sl = np.array(lens, np.int32)
    x = rng.uniform(-1, 1, (int(sl.sum()), H)).astype(dtype)
    g, b = rng.uniform(0.5, 1.5, H).astype(dtype), rng.uniform(-0.5, 0.5, H).astype(dtype)
    out = layer_norm(x.astype(np.float64), g.astype(np.float64), b.astype(np.float64))
    return [{"data": x, "seqlen": sl}, g, b], {}, {"data": out}


def make_mlp_block(rng, lens, D=6, F=10):
    """examples/rms_mlp.toy: x + (swiglu(rmsnorm(x) Wg, rmsnorm(x) Wu)) Wd, in float64."""
    sl = np.array(lens, np.int32)
    x = rng.uniform(-1, 1, (int(sl.sum()), D)).astype(np.float32)
    norm = rng.uniform(0.5, 1.5, D).astype(np.float32)
    wg, wu = (rng.uniform(-0.5, 0.5, (D, F)).astype(np.float32) for _ in range(2))
    wd = rng.uniform(-0.5, 0.5, (F, D)).astype(np.float32)
    zf, zd = np.zeros(F, np.float32), np.zeros(D, np.float32)
    x64 = x.astype(np.float64)
    n = x64 / np.sqrt((x64 * x64).mean(axis=-1, keepdims=True) + 1e-5) * norm
    g, u = n @ wg.astype(np.float64), n @ wu.astype(np.float64)
    h = g / (1.0 + np.exp(-g)) * u
    out = x64 + h @ wd.astype(np.float64)
    return [{"data": x, "seqlen": sl}, norm, wg, wu, wd, zf, zd], {}, {"data": out}


def make_transformer_block(rng, lens, D=6, H=2, E=4, F=8):
    """examples/transformer_block.toy in float64: rmsnorm -> per-head q, k, v
    projections -> RoPE on q and k (half-split: head feature f < K = E/2
    pairs with f + K, rotated by the angle of cos_t/sin_t[i, f] at the row's
    position i in its sequence) -> causal attention (scale 1/sqrt(E)) ->
    output projection + residual -> rmsnorm -> SwiGLU MLP + residual, per
    sequence."""
    sl = np.array(lens, np.int32)
    K = E // 2
    f32 = lambda *shape, lo=-0.5, hi=0.5: rng.uniform(lo, hi, shape).astype(np.float32)
    x = f32(int(sl.sum()), D, lo=-1, hi=1)
    norm1, norm2 = f32(D, lo=0.5, hi=1.5), f32(D, lo=0.5, hi=1.5)
    wq, wk, wv = f32(D, H, E), f32(D, H, E), f32(D, H, E)
    wo = f32(H, E, D)
    wg, wu, wd = f32(D, F), f32(D, F), f32(F, D)
    zf, zd = np.zeros(F, np.float32), np.zeros(D, np.float32)
    # The tables the caller makes, for P = the longest sequence (at least 1),
    # rounded to f32 as the library reads them.
    P = max(list(lens) + [1])
    ang = np.arange(P)[:, None] * 10000.0 ** (-np.arange(K) / K)
    cos_t, sin_t = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    w64 = [a.astype(np.float64) for a in (norm1, norm2, wq, wk, wv, wo, wg, wu, wd, cos_t, sin_t)]
    n1, n2, q_w, k_w, v_w, o_w, g_w, u_w, d_w, c64, s64 = w64

    def rms(t, w):
        return t / np.sqrt((t * t).mean(axis=-1, keepdims=True) + 1e-5) * w

    def rope(t):  # t: (n, H, E), half-split pairs (f, f + K)
        n = t.shape[0]
        c, s = c64[:n, None, :], s64[:n, None, :]
        lo, hi = t[:, :, :K], t[:, :, K:]
        return np.concatenate([lo * c - hi * s, hi * c + lo * s], axis=2)

    out, off = [], 0
    for n in lens:
        xs = x[off:off + n].astype(np.float64)
        off += n
        h = rms(xs, n1)
        q, k, v = (np.einsum("im,mhe->ihe", h, w) for w in (q_w, k_w, v_w))
        q, k = rope(q), rope(k)
        s = np.einsum("ihe,jhe->ihj", q, k) / np.sqrt(E)
        s = np.where(np.arange(n)[None, None, :] <= np.arange(n)[:, None, None], s, -1e30)
        if n:
            s = s - s.max(2, keepdims=True)
        p = np.exp(s)
        a = np.einsum("ihj,jhe->ihe", p, v) / (p.sum(2)[:, :, None] if n else 1)
        h1 = xs + np.einsum("ihe,hem->im", a, o_w)
        m = rms(h1, n2)
        g, u = m @ g_w, m @ u_w
        out.append(h1 + (g / (1.0 + np.exp(-g)) * u) @ d_w)
    y = np.concatenate(out) if out else np.zeros((0, D))
    return [{"data": x, "seqlen": sl}, norm1, wq, wk, wv, wo, norm2, wg, wu, wd, zf, zd, cos_t, sin_t], {}, {"data": y}


def make_layernorm_f16(rng, lens):
    return make_layernorm(rng, lens, H=16, dtype=np.float16)


def make_pack(rng, lens, H=2, D=3):
    seqs = [rng.uniform(-1, 1, (n, H, D)).astype(np.float32) for n in lens]
    return [seqs], {}, {"data": np.concatenate(seqs).astype(np.float64),
                        "seqlen": np.array(lens, np.float64)}


def make_softmax(rng, lens, H=3):
    sl = np.array(lens, np.int32)
    x = rows(sl, H, 0, rng)
    xo = offsets(sl)
    out = [softmax_rows(x[xo[b]:xo[b + 1]].astype(np.float64), axis=0) for b in range(len(lens)) if lens[b]]
    return [{"data": x, "seqlen": sl}], {}, {"data": np.concatenate(out) if out else np.zeros((0, H))}


def tril(rng, N):
    L = rng.uniform(-1, 1, N * (N + 1) // 2).astype(np.float32)
    dense = np.zeros((N, N))
    at = 0
    for i in range(N):
        dense[i, :i + 1] = L[at:at + i + 1]
        at += i + 1
    return L, dense


def make_tril_matvec(rng, lens):
    N = len(lens)
    L, dense = tril(rng, N)
    x = rng.uniform(-1, 1, N).astype(np.float32)
    return [L, x], {}, dense @ x.astype(np.float64)


def make_tril_matmul(rng, lens):
    N = len(lens)
    L, dense = tril(rng, N)
    X = rng.uniform(-1, 1, (N, 3)).astype(np.float32)
    return [L, X], {}, dense @ X.astype(np.float64)


def make_tril_diag(rng, lens):
    N = len(lens)
    L, dense = tril(rng, N)
    # N is not in any shape (L is N (N + 1) / 2 values): given as a size
    return [L], {"sizes": {"N": N}}, np.diag(dense)


def validated(rng, lens, H=2, D=3):
    sl = np.array([max(n, 1) for n in lens], np.int32)  # where: all(seqlen[b] > 0)
    x = rows(sl, H, D, rng)
    return sl, x, offsets(sl)


def make_first(rng, lens):
    sl, x, xo = validated(rng, lens)
    return [{"data": x, "seqlen": sl}], {}, x[xo[:-1]].astype(np.float64)


def make_last(rng, lens):
    sl, x, xo = validated(rng, lens)
    return [{"data": x, "seqlen": sl}], {}, x[xo[1:] - 1].astype(np.float64)


def make_scale(rng, lens, H=2, D=3):
    sl = np.array(lens, np.int32)
    x = rows(sl, H, D, rng)
    return [{"data": x, "seqlen": sl}, 2.5], {}, {"data": x.astype(np.float64) * 2.5}


def make_add(rng, lens, H=2, D=3):
    sl = np.array(lens, np.int32)
    a, b = rows(sl, H, D, rng), rows(sl, H, D, rng)
    return ([{"data": a, "seqlen": sl}, {"data": b, "seqlen": sl.copy()}], {},
            {"data": a.astype(np.float64) + b.astype(np.float64)})


def make_pool(rng, lens, D=5):
    """examples/ragged_pool.toy's pool in float64: layernorm (eps 1e-5) ->
    GELU, tanh form, per token; per sequence sum / 2 + mean + max, an empty
    sequence's max taken as 0 (its sum and mean are 0)."""
    sl = np.array(lens, np.int32)
    x = rows(sl, D, 0, rng)
    w = rng.uniform(0.5, 1.5, D).astype(np.float32)
    bias = rng.uniform(-1, 1, D).astype(np.float32)
    x64, w64, b64 = (a.astype(np.float64) for a in (x, w, bias))
    out, off = np.zeros((len(lens), D)), 0
    for b, n in enumerate(lens):
        t = x64[off:off + n]
        off += n
        if not n:
            continue
        mu = t.mean(1, keepdims=True)
        ln = (t - mu) / np.sqrt(((t - mu) ** 2).mean(1, keepdims=True) + 1e-5) * w64 + b64
        g = 0.5 * ln * (1 + np.tanh(np.sqrt(2 / np.pi) * (ln + 0.044715 * ln ** 3)))
        out[b] = g.sum(0) * 0.5 + g.mean(0) + g.max(0)
    return [{"data": x, "seqlen": sl}, w, bias], {}, out


def make_group_scores(rng, lens, D=4, E=3):
    """examples/ragged_pool.toy's group_scores in float64: sequence b's
    tokens times w[b], log-softmax over the sequence's tokens per output
    feature, SiLU."""
    sl = np.array(lens, np.int32)
    x = rows(sl, D, 0, rng)
    w = rng.uniform(-1, 1, (len(lens), D, E)).astype(np.float32)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    out, off = [], 0
    for b, n in enumerate(lens):
        p = x64[off:off + n] @ w64[b]
        off += n
        if n:
            m = p.max(0)
            p = p - m - np.log(np.exp(p - m).sum(0))
        out.append(p / (1 + np.exp(-p)))
    y = np.concatenate(out) if out else np.zeros((0, E))
    return [{"data": x, "seqlen": sl}, w], {}, y.reshape(-1, E)


# name: (example, make, rtol, atol)
CASES = {
    "mha": ("mha", make_mha, 1e-4, 1e-5),
    "mha_bf16": ("mha_bf16", make_mha_bf16, 0, 0.1),
    "gqa_bf16": ("gqa_bf16", make_gqa_bf16, 0, 0.1),
    # f32 scores and sums, P and the output rounded to bf16 (FlashAttention-2's
    # precision): within 1e-2 of float64 (mha_bf16 rounds every step: 0.1)
    "mha_bf16_f32_scores": ("mha_bf16_f32_scores", make_bf16_attention(), 0, 1e-2),
    "mha_causal_bf16_f32_scores": ("mha_bf16_f32_scores", make_bf16_attention(mask=lambda i, j: j <= i), 0, 1e-2),
    # examples/mha_generic.toy: mha<T: f32 | bf16>, one instance per type
    "mha__f32": ("mha_generic", make_mha, 1e-4, 1e-5),
    "mha__bf16": ("mha_generic", make_mha_bf16, 0, 0.1),
    # examples/mha_causal.toy, mha_window.toy (W = 4), mha_softcap.toy (C = 30),
    # mha_scale_after_max.toy: the online-reductions examples (issue 15)
    "mha_causal": ("mha_causal", make_attention_variant(mask=lambda i, j: j <= i), 1e-4, 1e-5),
    "mha_window": ("mha_window", make_attention_variant(mask=lambda i, j: (j <= i) & (i - j < 4)), 1e-4, 1e-5),
    "mha_softcap": ("mha_softcap", make_attention_variant(softcap=30.0), 1e-4, 1e-5),
    "mha_scale_after_max": ("mha_scale_after_max", make_attention_variant(scale_after_max=True), 1e-4, 1e-5),
    "flash_attention": ("flash_attention", make_flash, 1e-4, 1e-5),
    "masked_attention": ("attention_data", make_masked, 1e-4, 1e-5),
    "grouped_gemm": ("batched_gemm", make_grouped, 1e-5, 1e-5),
    "gemm_pairs": ("batched_gemm", make_pairs, 1e-5, 1e-5),
    # products exact in f32, sums in f32; the bf16 result rounded once (2^-8)
    "grouped_gemm_bf16": ("batched_gemm_bf16", make_grouped_16(True), 1e-2, 1e-6),
    "grouped_gemm_f16": ("batched_gemm_bf16", make_grouped_16(False), 1e-5, 1e-6),
    "causal_scores": ("causal_attention", make_causal_scores, 1e-6, 1e-6),
    "causal_softmax": ("causal_attention", make_causal_softmax, 1e-5, 1e-6),
    "causal_attention": ("causal_attention", make_causal_attention, 1e-4, 1e-5),
    "sentence_sums": ("documents", make_sentence_sums, 1e-5, 1e-5),
    "document_sums": ("documents", make_document_sums, 1e-5, 1e-5),
    "sentence_softmax": ("documents", make_sentence_softmax, 1e-5, 1e-6),
    "layernorm": ("layernorm", make_layernorm, 1e-4, 1e-4),
    "mlp_block": ("rms_mlp", make_mlp_block, 1e-4, 1e-5),
    "transformer_block": ("transformer_block", make_transformer_block, 1e-4, 1e-5),
    # examples/ragged_pool.toy (std/nn.toy and std/ragged.toy)
    "pool": ("ragged_pool", make_pool, 1e-4, 1e-5),
    "group_scores": ("ragged_pool", make_group_scores, 1e-4, 1e-5),
    "layernorm_f16": ("layernorm_f16", make_layernorm_f16, 0, 0.05),
    "pack_sequences": ("pack_sequences", make_pack, 0, 0),
    "softmax": ("softmax", make_softmax, 1e-5, 1e-6),
    "tril_matvec": ("tril_matmul", make_tril_matvec, 1e-5, 1e-5),
    "tril_matmul": ("tril_matmul", make_tril_matmul, 1e-5, 1e-5),
    "tril_diag": ("tril_matmul", make_tril_diag, 0, 0),
    "first_tokens": ("where_layout", make_first, 0, 0),
    "last_tokens": ("where_layout", make_last, 0, 0),
    "scale": ("where_layout", make_scale, 1e-6, 1e-6),
    "add_same_lengths": ("where_layout", make_add, 1e-6, 1e-6),
}

# Length patterns: B = 1, zero lengths, and random ones (seeded per test).
PATTERNS = [[1], [0], [4], [3, 0, 5], [0, 0], [2, 7, 1, 0, 3]]

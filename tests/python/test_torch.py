"""dccc from PyTorch on the CPU (tests/python/test_cuda.py has the GPU's):
tensors in and out, the checks of tensor arguments, and -- with PyTorch 2.4
or later -- the custom operators: opcheck of every example function,
torch.compile(fullgraph=True), nested (jagged) tensors passed without a
copy, and the ragged encoder layer of examples/python against SDPA.
Without PyTorch, or with an older one, these report SKIPPED with the reason."""

import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (Debian: python3-torch)")

import dccc  # noqa: E402
from dccc import _core, torch_ops  # noqa: E402
from conftest import ROOT  # noqa: E402
from references import CASES, PATTERNS  # noqa: E402

NO_OPS = torch_ops.supported()
needs_ops = pytest.mark.skipif(NO_OPS is not None, reason=f"custom operators: {NO_OPS}")
needs_jagged = pytest.mark.skipif(not hasattr(torch, "jagged"), reason=f"PyTorch {torch.__version__} has no jagged "
                                  f"nested tensors (torch.jagged, 2.3 or later)")


def to_torch(x, device="cpu"):
    if isinstance(x, np.ndarray):
        if x.dtype == np.uint16:  # bf16 bit patterns
            return torch.from_numpy(x.view(np.int16).copy()).view(torch.bfloat16).to(device)
        return torch.from_numpy(x.copy()).to(device)
    if isinstance(x, dict):
        return {k: to_torch(v, device) for k, v in x.items()}
    if isinstance(x, list):
        return [to_torch(v, device) for v in x]
    return x


def to_numpy(x):
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.dtype == torch.bfloat16:
            return x.view(torch.int16).numpy().view(np.uint16)
        return x.numpy()
    if isinstance(x, dict):
        return {k: to_numpy(v) for k, v in x.items()}
    return x


def mha_args(rng, qlens, klens, H=2, D=8, device="cpu"):
    q = torch.from_numpy(rng.standard_normal((sum(qlens), H, D)).astype(np.float32)).to(device)
    k = torch.from_numpy(rng.standard_normal((sum(klens), H, D)).astype(np.float32)).to(device)
    v = torch.from_numpy(rng.standard_normal((sum(klens), H, D)).astype(np.float32)).to(device)
    ql = torch.tensor(qlens, dtype=torch.int32, device=device)
    kl = torch.tensor(klens, dtype=torch.int32, device=device)
    return {"data": q, "seqlen": ql}, {"k": k, "v": v, "seqlen": kl}


# ---- tensors through lib.f (any PyTorch) ------------------------------------


@pytest.mark.parametrize("fname", sorted(CASES))
@pytest.mark.parametrize("pattern", [0, 1, 3])
def test_tensors_match_numpy(fname, pattern, load_example):
    example, make, _, _ = CASES[fname]
    fn = load_example(example).functions[fname]
    rng = np.random.default_rng(5)
    args, kwargs, _ = make(rng, PATTERNS[pattern])
    want = fn(*args, **kwargs)
    got = fn(*to_torch(args), **kwargs)
    if isinstance(want, dict):
        assert set(got) == set(want)
        for k in want:
            assert isinstance(got[k], torch.Tensor)
            np.testing.assert_array_equal(to_numpy(got[k]), want[k])
    else:
        assert isinstance(got, torch.Tensor)
        np.testing.assert_array_equal(to_numpy(got), want)


def test_tensor_argument_checks(load_example):
    mha = load_example("mha").mha
    q, kv = mha_args(np.random.default_rng(1), [2, 0, 3], [1, 2, 2])
    out = {"data": torch.full((5, 2, 8), 99.0)}
    cases = [
        (dict(q, data=q["data"].double()), kv, TypeError, "expected dtype torch.float32"),
        (dict(q, data=q["data"].transpose(1, 2).contiguous().transpose(1, 2)), kv, ValueError, "not contiguous"),
        (dict(q, data=q["data"].clone().requires_grad_()), kv, TypeError, "requires_grad=True"),
        (dict(q, seqlen=q["seqlen"].numpy()), kv, TypeError, "a NumPy array among PyTorch tensors"),
        (dict(q, seqlen=torch.tensor([2, 1, 3], dtype=torch.int32)), kv, dccc.Error, "DCC_ERR_SIZE_MISMATCH"),
        (q, dict(kv, seqlen=torch.tensor([3, -1, 3], dtype=torch.int32)), dccc.Error, "DCC_ERR_NEGATIVE_LENGTH"),
        (q, {"k": kv["k"], "seqlen": kv["seqlen"]}, TypeError, "missing field(s) `v`"),
    ]
    for qq, kk, exc, text in cases:
        with pytest.raises(exc) as e:
            mha(qq, kk, out=out)
        assert text in str(e.value)
        assert (out["data"] == 99.0).all()
    # cu_seqlens as a tensor, and the bound result field is the argument
    cu = torch.tensor([0, 2, 2, 5], dtype=torch.int64)
    res = mha({"data": q["data"], "cu_seqlens": cu}, kv)
    assert torch.equal(res["seqlen"], q["seqlen"])
    res2 = mha(q, kv)
    assert res2["seqlen"] is q["seqlen"]
    assert torch.equal(res["data"], res2["data"])


# ---- the operators' pieces, with any PyTorch ----------------------------------


@pytest.mark.parametrize("fname", sorted(CASES))
def test_operator_pieces(fname, load_example):
    """The operator's implementation and fake (meta) function, called
    directly: the implementation gives lib.f's fresh fields, the fake one
    their shapes and dtypes (where they follow from the shapes)."""
    example, make, _, _ = CASES[fname]
    fn = load_example(example).functions[fname]
    args, kwargs, _ = make(np.random.default_rng(9), PATTERNS[5])
    targs = to_torch(args)
    spec = torch_ops._OpSpec(fn)
    flat, fields_of, nested = spec.flatten(fn._bind(targs, {}), kwargs.get("sizes"))
    outs = torch_ops._impl(spec)(*flat)
    direct = fn(*targs, **kwargs)
    assembled = spec.assemble(outs, fields_of, nested)
    if isinstance(direct, dict):
        assert set(assembled) == set(direct)
        for f in fn.result.fields:
            if f.bound:
                assert assembled[f.name] is fields_of[f.bound["param"]][f.bound["field"]]
            else:
                assert torch.equal(assembled[f.name], direct[f.name])
    else:
        assert torch.equal(assembled, direct)
    if all(not f.ragged or f.name in fn.rows_like for f in spec.fresh):
        fake = torch_ops._fake_impl(spec)(*flat)
        fakes = fake if isinstance(fake, tuple) else (fake,)
        real = outs if isinstance(outs, tuple) else (outs,)
        assert [(tuple(a.shape), a.dtype) for a in fakes] == [(tuple(a.shape), a.dtype) for a in real]


def test_rows_follow_the_arguments(load_example):
    # the fake implementation knows these rows without reading lengths
    assert load_example("mha").mha.rows_like == {"data": ("q", "data")}
    assert load_example("documents").sentence_sums.rows_like == {"data": ("x", "ntok")}
    assert load_example("causal_attention").causal_scores.rows_like == {}  # triangular: data-dependent


# ---- custom operators (PyTorch >= 2.4) ----------------------------------------


_ops_libs = {}


def ops_lib(build_lib, example):
    """The example loaded with its functions registered under a namespace of
    its own (two examples both have a `PackedQueries`-style `mha`...)."""
    if example not in _ops_libs:
        _ops_libs[example] = dccc.load(build_lib(example), torch_namespace=f"dccc_test_{example}")
    return _ops_libs[example]


@needs_ops
@pytest.mark.parametrize("fname", sorted(CASES))
def test_opcheck_every_function(fname, build_lib):
    example, make, rtol, atol = CASES[fname]
    lib = ops_lib(build_lib, example)
    op = getattr(lib.ops, fname)
    rng = np.random.default_rng(11)
    args, kwargs, want = make(rng, PATTERNS[3])
    targs = to_torch(args)
    flat, _, _ = op.spec.flatten(lib.functions[fname]._bind(targs, {}), kwargs.get("sizes"))
    torch.library.opcheck(op.op, tuple(flat))
    got = op(*targs, **kwargs)
    direct = lib.functions[fname](*targs, **kwargs)
    if isinstance(direct, dict):
        for k in direct:
            assert torch.equal(got[k], direct[k])
    else:
        assert torch.equal(got, direct)


@needs_ops
def test_compile_fullgraph(build_lib):
    lib = ops_lib(build_lib, "mha")
    q, kv = mha_args(np.random.default_rng(2), [3, 0, 4], [2, 1, 5])

    def f(q, kv):
        out = lib.ops.mha(q, kv)
        return out["data"] * 2 + 1

    eager = f(q, kv)
    compiled = torch.compile(f, fullgraph=True)
    torch.testing.assert_close(compiled(q, kv), eager)
    # other lengths, same compiled function
    q2, kv2 = mha_args(np.random.default_rng(3), [1, 6], [4, 4])
    torch.testing.assert_close(compiled(q2, kv2), f(q2, kv2))


@needs_ops
def test_ops_reject_requires_grad(build_lib):
    lib = ops_lib(build_lib, "mha")
    q, kv = mha_args(np.random.default_rng(2), [3], [2])
    q["data"].requires_grad_()
    with pytest.raises(TypeError, match="no backward yet"):
        lib.ops.mha(q, kv)
    with torch.no_grad():
        lib.ops.mha(q, kv)


@needs_ops
@needs_jagged
def test_nested_tensor_is_zero_copy(build_lib):
    lib = ops_lib(build_lib, "mha")
    rng = np.random.default_rng(4)
    seqs = [torch.from_numpy(rng.standard_normal((n, 2, 8)).astype(np.float32)) for n in (3, 1, 4)]
    nt = torch.nested.nested_tensor(seqs, layout=torch.jagged)
    kv_lens = torch.tensor([2, 2, 3], dtype=torch.int32)
    k = torch.randn(7, 2, 8)
    v = torch.randn(7, 2, 8)
    _core.TRACE_POINTERS = []
    try:
        out = lib.ops.mha(nt, {"k": k, "v": v, "seqlen": kv_lens})
    finally:
        traced, _core.TRACE_POINTERS = _core.TRACE_POINTERS, None
    assert traced[-1][("q", "data")] == nt.values().data_ptr(), "the kernel did not read the nested tensor's storage"
    assert traced[-1][("kv", "k")] == k.data_ptr()
    assert out.is_nested and out.layout == torch.jagged
    assert torch.equal(out.offsets(), nt.offsets())
    want = lib.mha({"data": torch.cat(seqs), "seqlen": torch.tensor([3, 1, 4], dtype=torch.int32)},
                   {"k": k, "v": v, "seqlen": kv_lens})["data"]
    assert torch.equal(out.values(), want)


@needs_ops
@needs_jagged
def test_encoder_layer_example(build_lib):
    sys.path.insert(0, os.path.join(ROOT, "examples", "python"))
    try:
        import encoder_layer
    finally:
        sys.path.pop(0)
    err = encoder_layer.check(ops_lib(build_lib, "mha"), device="cpu")
    assert err < 1e-4

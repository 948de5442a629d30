"""dccc's CUDA libraries from PyTorch (a GPU machine: build-gpu/run_gpu.sh
runs these; elsewhere they report SKIPPED with the reason): every example
function on CUDA tensors against the float64 reference and the CPU
library, bad arguments, PyTorch's current stream, opcheck of every example
operator on CUDA, the encoder layer under torch.compile(fullgraph=True),
and nested tensors passed zero-copy (the data pointers the library gets).

The CUDA libraries come from $DCCC_CUDA_LIBS/NAME/NAME.so (run_gpu.sh
builds them there) or are compiled with `dccc --target=cuda`."""

import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import dccc  # noqa: E402
from dccc import _core, torch_ops  # noqa: E402
from conftest import EXAMPLES, ROOT  # noqa: E402
from references import CASES, PATTERNS  # noqa: E402
from test_torch import mha_args, to_numpy, to_torch  # noqa: E402

NO_OPS = torch_ops.supported()
needs_ops = pytest.mark.skipif(NO_OPS is not None, reason=f"custom operators: {NO_OPS}")

_cuda = {}

# Examples the CUDA target refuses, with the reason: the fixture checks the
# compiler still refuses them with [Unsupported] (so a test notices the day
# they compile) and skips their tests visibly.
CUDA_REFUSED = {"pack_sequences": "a `list` parameter on the CUDA target"}


@pytest.fixture(scope="session")
def cuda_lib(dccc_exe, lib_dir):
    def get(name, namespace=None):
        key = (name, namespace)
        if key in _cuda:
            return _cuda[key]
        if name in CUDA_REFUSED:
            r = subprocess.run([dccc_exe, "--target=cuda", "--check", os.path.join(EXAMPLES, name + ".toy")],
                               capture_output=True, text=True)
            r2 = subprocess.run([dccc_exe, "--target=cuda", os.path.join(EXAMPLES, name + ".toy"), "-o",
                                 str(lib_dir / f"refused_{name}.so")], capture_output=True, text=True)
            assert r2.returncode != 0 and CUDA_REFUSED[name] in r2.stderr and "[Unsupported]" in r2.stderr, \
                f"{name} is no longer refused on CUDA: remove it from CUDA_REFUSED\n{r2.stderr}"
            assert r.returncode == 0, r.stderr  # the program itself is fine
            pytest.skip(f"{name}: {CUDA_REFUSED[name]} is not supported by the CUDA code generator yet")
        pre = os.environ.get("DCCC_CUDA_LIBS")
        path = os.path.join(pre, name, name + ".so") if pre else None
        if not path or not os.path.exists(path):
            out = lib_dir / f"cuda_{name}" / f"{name}.so"
            if not out.exists():
                out.parent.mkdir(exist_ok=True)
                r = subprocess.run([dccc_exe, "--target=cuda", os.path.join(EXAMPLES, name + ".toy"), "-o", str(out)],
                                   capture_output=True, text=True)
                assert r.returncode == 0, r.stderr
            path = str(out)
        lib = dccc.load(path, torch_namespace=namespace)
        assert lib.target == "cuda"
        _cuda[key] = lib
        return lib

    return get


@pytest.mark.parametrize("fname", sorted(CASES))
@pytest.mark.parametrize("pattern", range(len(PATTERNS)))
def test_cuda_matches_reference_and_cpu(fname, pattern, cuda_lib, load_example):
    example, make, rtol, atol = CASES[fname]
    fn = cuda_lib(example).functions[fname]
    cpu = load_example(example).functions[fname]
    rng = np.random.default_rng(77 + pattern)
    args, kwargs, want = make(rng, PATTERNS[pattern])
    got = fn(*to_torch(args, "cuda"), **kwargs)
    host = cpu(*args, **kwargs)
    from test_numpy import compare

    if isinstance(want, dict):
        for f in fn.result.fields:
            if f.bound:
                continue
            assert got[f.name].is_cuda
            compare(to_numpy(got[f.name]), want[f.name], rtol, atol, f"{fname} (cuda) {f.name}")
            # and the CPU backend's result, as closely as the element type allows
            compare(to_numpy(got[f.name]), np.asarray(host[f.name], np.float64) if host[f.name].dtype != np.uint16
                    else (host[f.name].astype(np.uint32) << 16).view(np.float32).astype(np.float64),
                    max(rtol, 1e-5), max(atol, 1e-5), f"{fname} cuda vs cpu {f.name}")
    else:
        assert got.is_cuda
        compare(to_numpy(got), want, rtol, atol, f"{fname} (cuda)")
        compare(to_numpy(got), np.asarray(host, np.float64), max(rtol, 1e-5), max(atol, 1e-5), f"{fname} cuda vs cpu")


def test_cuda_bad_arguments(cuda_lib):
    mha = cuda_lib("mha").mha
    q, kv = mha_args(np.random.default_rng(1), [2, 0, 3], [1, 2, 2], device="cuda")
    out = {"data": torch.full((5, 2, 8), 99.0, device="cuda")}
    with pytest.raises(dccc.Error, match="DCC_ERR_NEGATIVE_LENGTH"):
        mha(q, dict(kv, seqlen=torch.tensor([3, -1, 3], dtype=torch.int32, device="cuda")), out=out)
    with pytest.raises(dccc.Error, match="DCC_ERR_SIZE_MISMATCH"):
        mha(dict(q, seqlen=torch.tensor([2, 1, 3], dtype=torch.int32, device="cuda")), kv, out=out)
    with pytest.raises(TypeError, match="target is cuda"):
        mha({k: v.cpu() for k, v in q.items()}, {k: v.cpu() for k, v in kv.items()}, out=out)
    with pytest.raises(TypeError, match="NumPy array for a CUDA library"):
        mha(to_numpy(q), to_numpy(kv))
    torch.cuda.synchronize()
    assert (out["data"] == 99.0).all()


def test_cuda_on_a_side_stream(cuda_lib):
    mha = cuda_lib("mha").mha
    q, kv = mha_args(np.random.default_rng(2), [64, 3, 100], [80, 5, 7], H=4, D=32, device="cuda")
    want = mha(q, kv)["data"]
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        # inputs produced on the side stream right before the call
        q2 = {"data": q["data"] * 1.0, "seqlen": q["seqlen"]}
        got = mha(q2, kv)["data"]
    torch.cuda.synchronize()
    assert torch.equal(got, want)


@needs_ops
@pytest.mark.parametrize("fname", sorted(CASES))
def test_opcheck_cuda(fname, cuda_lib):
    example, make, _, _ = CASES[fname]
    lib = cuda_lib(example, f"dccc_cuda_{example}")
    op = getattr(lib.ops, fname)
    args, kwargs, _ = make(np.random.default_rng(12), PATTERNS[3])
    targs = to_torch(args, "cuda")
    flat, _, _ = op.spec.flatten(lib.functions[fname]._bind(targs, {}), kwargs.get("sizes"))
    torch.library.opcheck(op.op, tuple(flat))


@needs_ops
@pytest.mark.skipif(not hasattr(torch, "jagged"), reason="no jagged nested tensors")
def test_nested_zero_copy_cuda(cuda_lib):
    lib = cuda_lib("mha", "dccc_cuda_mha")
    seqs = [torch.randn(n, 4, 16, device="cuda") for n in (5, 0, 9)]
    nt = torch.nested.nested_tensor(seqs, layout=torch.jagged)
    k, v = torch.randn(6, 4, 16, device="cuda"), torch.randn(6, 4, 16, device="cuda")
    cu = torch.tensor([0, 2, 3, 6], device="cuda")
    _core.TRACE_POINTERS = []
    try:
        out = lib.ops.mha(nt, {"k": k, "v": v, "cu_seqlens": cu})
    finally:
        traced, _core.TRACE_POINTERS = _core.TRACE_POINTERS, None
    assert traced[-1][("q", "data")] == nt.values().data_ptr(), "the library did not get the nested tensor's storage"
    assert traced[-1][("kv", "k")] == k.data_ptr() and traced[-1][("kv", "v")] == v.data_ptr()
    assert out.is_nested and out.values().is_cuda and torch.equal(out.offsets(), nt.offsets())


@needs_ops
@pytest.mark.skipif(not hasattr(torch, "jagged"), reason="no jagged nested tensors")
def test_encoder_layer_compiled_on_cuda(cuda_lib):
    sys.path.insert(0, os.path.join(ROOT, "examples", "python"))
    try:
        import encoder_layer
    finally:
        sys.path.pop(0)
    err = encoder_layer.check(cuda_lib("mha", "dccc_cuda_mha"), device="cuda", compile=True)
    assert err < 2e-4
